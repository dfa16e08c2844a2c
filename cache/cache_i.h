/*
 * cache_i.h: the inside of cache/.  Only the cache sources and the unit tests
 * include this; other modules use cache.h.
 *
 * The split: schema.c owns the file (where it lives, opening it, deciding
 * whether it can be trusted, moving a bad one aside, creating the tables)
 * and cache.c owns the queries.  Both work on struct cache below.
 */
#ifndef XLATEFS_CACHE_I_H
#define XLATEFS_CACHE_I_H

#include "cache.h"

#include <pthread.h>
#include <sqlite3.h>

/* "xlfs" in the database header's application id field (offset 68). */
#define CACHE_APP_ID 2020370035
_Static_assert(CACHE_APP_ID == 0x786c6673, "application id is \"xlfs\"");

/*
 * PRAGMA user_version: bump with every incompatible schema change, and
 * teach schema.c to migrate the previous ones (version 1 had no `retry`
 * column, version 2 no synthesized packs, version 3 no ref names,
 * version 4 a row per pack entry, version 7 no objects_recent).
 */
#define CACHE_SCHEMA_VERSION 9

/*
 * How long a statement waits for another process's lock before failing
 * with SQLITE_BUSY.  In WAL mode only writers wait for writers (and
 * everyone for the rare recovery or checkpoint), so this is the longest a
 * second build waits for the first one's batch to commit.
 */
#define CACHE_BUSY_TIMEOUT_MS 10000

/* The index by SHA-1 name: the schema's, and cache_bulk_end()'s. */
#define CACHE_OBJECTS_SHA1_INDEX "CREATE INDEX objects_sha1 ON objects(sha1)"


/* The prepared statements, one set per connection (see stmt_sql[]). */
enum cache_stmt {
	ST_GET,			/* by primary (sha256) name */
	ST_GET1,		/* by SHA-1 name */
	ST_RANGE,		/* primary name range, for prefixes */
	ST_RANGE1,		/* SHA-1 name range */
	ST_PUT,			/* a new row: ignored if there is one */
	ST_PUT_REPLACE,		/* over the row there is, in objects */
	ST_PUT_REPLACE_RECENT,	/* in objects_recent */
	ST_UNTRANSLATABLE_OF,	/* is the row by that name untranslatable? */
	ST_GITLINK_PUT,
	ST_GITLINK_GET,		/* a target's SHA-1 name by its primary name */
	ST_GITLINK_GET1,	/* and the other way */
	ST_PACK_PUT,
	ST_PACK_GET,
	ST_COUNT,		/* a scan: what meta's counts are made from */
	ST_COUNT_ADD,		/* add to one of meta's counts */
	ST_EACH,
	ST_EACH_UNTRANSLATABLE,
	ST_EACH_RETRY,
	ST_EACH_GITLINK,
	ST_EACH_PAIR,		/* gitlinks and known names, as one set */
	ST_EACH_RANGE,		/* primary names in a range, in order */
	ST_EACH_RANGE1,		/* SHA-1 names in a range, in order */
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_META_GET,
	ST_META_PUT,
	ST_CLEAR_META,
	ST_KNOWN_PUT,
	ST_KNOWN_GET,
	ST_KNOWN_GET1,
	ST_CLEAR_KNOWN,
	ST_NONEMPTY,
	ST_CLEAR_OBJECTS,
	ST_CLEAR_RECENT,	/* objects_recent's rows, once folded */
	ST_RECENT_COUNT,
	ST_FOLD,		/* objects_recent's rows into objects */
	ST_CLEAR_PACKS,
	ST_CLEAR_GITLINKS,
	ST_CLEAR_PACKS1,
	ST_CLEAR_PACK1_CHUNKS,
	ST_CLEAR_PACK1_IDX,
	ST_PACK1_LIST,		/* the synthesized packs */
	ST_PACK1_PUT,
	ST_PACK1_FINISH,
	ST_PACK1_DROP,
	ST_PACK1_DROP_CHUNKS,
	ST_PACK1_DROP_IDX,
	ST_PACK1_CHUNK_PUT,
	ST_PACK1_CHUNKS,	/* the runs of entries overlapping a byte range */
	ST_PACK1_IDX_PUT,
	ST_PACK1_IDX_GET,
	ST_CLEAR_REF_NAMES,
	ST_REF_NAME_PUT,
	ST_REF_NAME_DROP,
	ST_REF_NAMES,		/* all of them */
	ST__COUNT
};

extern const char *const cache_stmt_sql[ST__COUNT];

/*
 * One open cache.  Every field but `lock` is guarded by `lock`, which is
 * an error-checking mutex so that a call from inside a cache_for_each
 * callback fails with XL_EINVALID instead of deadlocking.  `path`,
 * `algo`, `other`, `warn` and `warn_data` are immutable after
 * cache_open().
 */
struct cache {
	pthread_mutex_t lock;
	sqlite3 *db;			/* opened SQLITE_OPEN_NOMUTEX */
	sqlite3_stmt *stmt[ST__COUNT];	/* prepared once, reset after use */
	char *path;
	const struct hash_algo *algo;	/* the primary names' format */
	const struct hash_algo *other;	/* the names they translate to */
	unsigned flags;			/* enum cache_open_flags */
	cache_warn_fn warn;
	void *warn_data;
	int in_batch;			/* between cache_begin and commit */
	/*
	 * What the open batch (or put) changed in the counts of rows and
	 * of untranslatable rows, added to meta's at commit
	 */
	int64_t d_objects, d_untranslatable;
	uint64_t serial;		/* names this cache's reason buffers;
					   immutable after cache_open */
	struct buf scratch;		/* backs gitlink paths in a walk */
	struct cache_feed *feed;	/* the rows of cache_put_all() */
	int feed_module;		/* its virtual table is registered */
	/*
	 * The pack entries being put (cache_pack1_put_entry) of pack
	 * run_pack, rows of pack1_chunks once a run is long enough, or at
	 * cache_pack1_finish or cache_commit; dropped by cache_rollback.
	 */
	struct cache_pack1_runs runs;
	int64_t run_pack;
};

/* A number no other cache of this process has had (for reason buffers). */
uint64_t cache_next_serial(void);

/*
 * Record a sqlite failure of `cache`'s connection as the thread's error:
 * "cache <path>: <what>: <sqlite message>".  `rc` picks the code:
 * XL_ENOMEM for SQLITE_NOMEM, XL_ECORRUPT for a malformed file, XL_EIO
 * for everything else.  Returns the code.
 */
int cache_db_err(struct cache *cache, int rc, const char *what);

/*
 * sqlite's quick_check(1) of the whole file (it stops at the first
 * problem, which is all a verdict needs): 0 if it passes, 1 with the
 * reason, on one line, in `why` if the file is bad, or an XL_E* code
 * when the check could not run, which says nothing about the file.
 * For cache_open() (CACHE_OPEN_CHECK_ALL) and cache_check().
 */
int cache_quick_check(struct cache *cache, struct buf *why);

#endif
