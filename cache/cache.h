/*
 * cache.h: the sqlite store of the SHA-256 <-> SHA-1 name mapping.
 *
 * The one public header of cache/.  One file per repository holds, for
 * every object the build has seen: both names (the SHA-1 one absent when
 * the object is untranslatable, with the reason), its type, and the size
 * of both forms (so that a file system can answer stat() and a pack
 * writer can plan without converting anything).  It also remembers which
 * packs have been fully processed, so that a later build only looks at
 * what is new, and the gitlinks the build resolved.
 *
 * Names are spoken of as SHA-256 (the repository's own, "primary") and
 * SHA-1 (their translation).  A SHA-1 repository's cache, opened with
 * hash_sha1, goes the other way round: its primary names are SHA-1 and
 * the fields and functions named "sha1" carry SHA-256 names (the cache's
 * `other` algorithm, hash_algo_other()).
 *
 * Where: by default `<git dir>/xlatefs-cache.sqlite` (beside the
 * repository's own files; for a linked worktree, in the main one's git
 * dir, since objects are shared), or, when that directory is not
 * writable, `$XDG_CACHE_HOME/xlatefs/<sha256 of the git dir path>.sqlite`
 * (default ~/.cache).  An explicit path overrides both.  Not under
 * objects/: `git clone --local` hard-links that whole tree, and two
 * repositories would share one file.
 *
 * Integrity: the file is sqlite in WAL mode, so readers (the daemon,
 * other commands) keep working while a build writes, and a build killed
 * at any point leaves the last committed batch intact.  On open the file
 * must carry our application id and schema version and pass a quick
 * check; a corrupt, truncated or foreign file is moved aside and
 * recreated, with a warning through the caller's callback, never
 * trusted.  The build records settings that change answers (the
 * unknown-header policy and the submodule map's digest); a cache made
 * under other settings is emptied and rebuilt.
 *
 * Threads: a struct cache may be shared; calls are serialised by its own
 * mutex (one connection, used by one thread at a time, as sqlite's
 * multi-thread mode requires).  Readers that need parallelism open
 * their own struct cache on the same file.
 */
#ifndef XLATEFS_CACHE_H
#define XLATEFS_CACHE_H

#include "../odb/odb.h"

#include <stdatomic.h>
#include <stdint.h>

struct cache;

/*
 * One object as the cache knows it.  sha256 is its primary name, sha1
 * its translated one, whichever algorithms they are (see above).
 */
struct cache_object {
	struct oid sha256;
	struct oid sha1;	/* sha1.algo == NULL: untranslatable */
	enum obj_type type;
	uint64_t size256;	/* bytes of the SHA-256 (stored) form */
	uint64_t size1;		/* bytes of the SHA-1 form; 0 if untranslatable */
	const char *reason;	/* why untranslatable; NULL otherwise.  For a
				   result of a lookup: borrowed until the next
				   call on the same cache by the same thread
				   (each thread has its own copy, so a shared
				   cache is safe; the memory lives until the
				   thread exits) */
	int retry;		/* untranslatable only: the refusal is not for
				   good (a reference was missing or could not be
				   read), and the next build looks again */
};

typedef void (*cache_warn_fn)(void *data, const char *message);

/*
 * Find the default location for a repository whose common git directory
 * (GIT_DIR of its main worktree) is `repo_dir`, into `out`; see the
 * header comment.  Creates the per-user directory if it falls back to
 * it.  Returns 0 or XL_EIO.
 */
int cache_default_path(const char *repo_dir, struct buf *out);

enum cache_open_flags {
	/*
	 * Also run sqlite's quick_check over the whole file.  It costs time
	 * in proportion to the file (0.15 s at 130k objects, 1.5 s at a
	 * million), so only verify asks for it here; a mount runs
	 * cache_check() once it serves.  Without it, opening costs the
	 * cheap checks (header, application id, schema, format, no mark
	 * of damage), and rows are checked as they are read.
	 */
	CACHE_OPEN_CHECK_ALL = 1 << 0,
	/*
	 * Read the file through a map (sqlite's mmap_size) instead of
	 * copying each page in: a build after a fetch, which looks up tens
	 * of thousands of old names in a big file, runs 14% faster (0.57 s
	 * against 0.67 s at a million objects).  The price: a process that
	 * cuts the file short under the map ends this one with SIGBUS, and
	 * sqlite cannot catch it.  So only the short-lived commands ask for
	 * it; the daemon must outlive whatever is done to its cache.
	 */
	CACHE_OPEN_MAP = 1 << 1,
};

/*
 * sqlite's quick_check over the whole file of an open cache, which is
 * what CACHE_OPEN_CHECK_ALL runs at open, for a caller that cannot wait
 * for it there: a mount comes up at once and checks while it serves
 * (1.5 s at a million objects, and growing with the file).  `cancel`
 * (may be NULL) set to nonzero stops it within moments.
 *
 * A file that fails is marked damaged in meta, so that the next
 * cache_open() sets it aside and starts afresh, as it does any bad
 * file; meanwhile readers still check every row they use.  Returns 0,
 * XL_ECORRUPT (marked; the reason in err_msg()), or XL_EIO / XL_ENOMEM
 * when the check could not run (cancelled, locked, a read error),
 * which says nothing about the file.  Not inside a batch.
 */
int cache_check(struct cache *cache, const atomic_int *cancel);

/*
 * Open (creating if needed) the cache at `path` for a repository whose
 * objects use `algo` (only SHA-256 repositories are translated, but the
 * store itself does not care).  A bad file is moved aside to
 * "<path>.corrupt" and replaced; `warn` (may be NULL) hears about it.
 * Returns 0, XL_EIO (cannot create or open), XL_ENOMEM.
 */
int cache_open(struct cache **out, const char *path,
	       const struct hash_algo *algo, unsigned flags,
	       cache_warn_fn warn, void *warn_data);
void cache_close(struct cache *cache);	/* rolls back an open batch */
/*
 * Page cache per connection, in KiB (a negative cache_size).  A batch
 * of 130k objects dirties about 20 MiB of table and index pages; when
 * they fit, sqlite writes each page once, at commit, instead of spilling
 * and rewriting it mid-batch.  Pages are only allocated as used, so a
 * reader connection stays small unless it walks the whole store.
 */
#define CACHE_PAGE_CACHE_KIB 65536

/*
 * The most this connection's page cache may hold, in KiB (at least 64;
 * cache_open() gives CACHE_PAGE_CACHE_KIB, 64 MiB, which a build's
 * batches want).  Pages are taken as used.  Returns 0 or XL_EIO.
 */
int cache_set_page_cache(struct cache *cache, unsigned kib);
/*
 * Let go of the pages the page cache holds and no statement is using,
 * before a phase that would not reuse them; the limit stays, and the
 * cache refills as it is read.
 */
void cache_release_memory(struct cache *cache);
/*
 * Checkpoints copy what the WAL holds into the file and sync both; the
 * connection runs one after a commit that leaves the WAL over
 * CACHE_WAL_AUTOCHECKPOINT pages (sqlite's way), before the commit
 * returns.  cache_defer_checkpoints(cache, 1) stops that; with 0 it
 * checkpoints now and goes back to it.  cache_checkpoint_aside() runs
 * one on a connection of its own, so that it can go on while this
 * connection writes (a checkpoint copies only what is committed, and
 * does not stop a writer): how a first build has its rows copied into
 * the file while its packs' layout goes into the WAL.  0, or XL_EIO
 * (XL_ENOMEM, XL_ECORRUPT as sqlite says); a checkpoint that finds the
 * file busy is not an error (the next one copies what this one could
 * not).
 */
#define CACHE_WAL_AUTOCHECKPOINT 1000	/* pages: sqlite's default */
int cache_defer_checkpoints(struct cache *cache, int defer);
int cache_checkpoint_aside(struct cache *cache);
const char *cache_path(const struct cache *cache);	/* borrowed, until close */
/* The algorithm of the translated names: hash_algo_other() of the cache's. */
const struct hash_algo *cache_other(const struct cache *cache);

/*
 * Settings that change the answers.  cache_check_settings() compares
 * `settings` (any short text; the build uses
 * "unknown-headers=fail;submodules=<digest>") with what the cache was
 * built under: if they differ, every object and pack record is dropped
 * (with a warning) and the new settings stored.  So is a cache that has
 * rows but no settings recorded; an empty one just records them.  Inside
 * a batch the change is part of the batch.  Returns 0, 1 if it emptied
 * the cache (a reader that remembers names must forget them), or XL_EIO.
 */
int cache_check_settings(struct cache *cache, const char *settings);

/*
 * Lookups.  Return 0, XL_ENOTFOUND, or XL_EIO (a sqlite failure); also
 * XL_EINVALID for a name of the wrong algorithm, XL_ECORRUPT for a row
 * that breaks the schema (only a tampered file has one), and, from
 * cache_get_by_sha1(), XL_EAMBIGUOUS if two stored objects share the
 * SHA-1 name (a collision: we do not pick one).  `out` is empty on
 * failure.
 */
int cache_get(struct cache *cache, const struct oid *sha256,
	      struct cache_object *out);
int cache_get_by_sha1(struct cache *cache, const struct oid *sha1,
		      struct cache_object *out);

/*
 * An abbreviated name (4..hexsz hex digits, either case) of `algo`
 * (the cache's own algorithm, or SHA-1): the one object whose name in
 * that algorithm starts with it.  Untranslatable objects have no SHA-1
 * name to match.  Returns 0, XL_ENOTFOUND, XL_EAMBIGUOUS, XL_EINVALID
 * (and XL_EIO, XL_ECORRUPT as the lookups above).
 */
int cache_resolve_prefix(struct cache *cache, const struct hash_algo *algo,
			 const char *hex, size_t len, struct cache_object *out);

/*
 * Writes come in batches: cache_begin(), any number of cache_put() and
 * cache_put_gitlink(), then cache_commit() (or cache_rollback()).
 * Putting an object that is already stored replaces it.  A put outside
 * a batch commits on its own (correct, but one transaction per object).
 * A batch belongs to the struct cache, not to a thread: threads sharing
 * one cache share its batch.  cache_begin() waits up to the busy timeout
 * (10 s) for another process's batch.  After a failed put, roll back.
 *
 * cache_put() stores the canonical form: size1 only with a SHA-1 name,
 * reason and retry only without one (the others are ignored).  cache_put_gitlink()
 * takes a path without NUL bytes, and commit1 NULL (or with a NULL algo)
 * when the SHA-1 name is not known.
 *
 * Returns 0 or XL_EIO; XL_EINVALID for bad arguments (names of the
 * wrong algorithm, a type that is not a base type, a size over 2^63,
 * nested begin, commit without begin).
 */
int cache_begin(struct cache *cache);
int cache_put(struct cache *cache, const struct cache_object *obj);
/*
 * cache_put() stores a new row in a small table of recent rows, not in
 * the big one: a build after a fetch then writes a few hundred pages,
 * not a page per row.  Fold them into the big table (one transaction,
 * in name order) once they pass an eighth of it, or whenever `force`;
 * *folded says how many moved (0: not due).  Not inside a batch; a
 * build calls it when it is done.  Readers see no difference.
 */
int cache_fold(struct cache *cache, int force, uint64_t *folded);
int cache_put_gitlink(struct cache *cache, const struct oid *tree,
		      const char *path, size_t path_len,
		      const struct oid *commit256, const struct oid *commit1);
int cache_commit(struct cache *cache);
void cache_rollback(struct cache *cache);

/*
 * Many new names at once, inside a batch: cache_bulk_begin() sets the
 * index by SHA-1 name aside, and cache_bulk_end() makes it again from
 * the rows, by a sort.  Between the two, put rows in name order: the
 * table then takes them at its end, where at random each insert into
 * the two B-trees costs a descent and, once they outgrow the page
 * cache, disk reads (xlate/build.c, "a first build").  Lookups by SHA-1
 * name in between scan the table.  A batch rolled back meanwhile has
 * the index back.  0, XL_EIO, or XL_EINVALID outside a batch.
 */
int cache_bulk_begin(struct cache *cache);
int cache_bulk_end(struct cache *cache);

/*
 * Rows that are all new, in one statement: for i from 0 to nr - 1,
 * row(data, i, &obj) fills obj and returns 1, or returns 0 to skip i
 * (or a negative XL_E* code, which ends the put).  It is what
 * cache_put() does nr times, in one statement instead of a statement
 * per row; between cache_bulk_begin() and cache_bulk_end(), in name
 * order, it is the end of a first build.  A row that is there already
 * fails the put with XL_EIO; a failed put leaves none of its rows, and
 * the caller rolls the batch back.  The lock is held throughout; row() must
 * not call the cache.  0, XL_EIO, or XL_EINVALID (outside a batch, or a
 * row cache_put() would refuse).
 */
typedef int (*cache_row_fn)(void *data, size_t i, struct cache_object *out);
int cache_put_all(struct cache *cache, size_t nr, cache_row_fn row,
		  void *data);

/*
 * Packs whose every object is in the cache, by the pack's checksum hex
 * (the name in pack-<hex>.pack).  cache_pack_done() is written inside a
 * batch.  cache_pack_known() returns 1 or 0; a failure to look counts
 * as 0 (the pack is processed again: slower, never wrong).
 */
int cache_pack_done(struct cache *cache, const char *checksum_hex,
		    uint32_t objects);
int cache_pack_known(struct cache *cache, const char *checksum_hex);

/*
 * Names from the map (--map) for objects the repository lacks, as the
 * build used them in converting what refers to them, so that readers
 * convert alike.  cache_get_known() looks up by either name (`in` of the
 * cache's algorithm gives the SHA-1 name, a SHA-1 `in` the other) and
 * returns 0, XL_ENOTFOUND, XL_EAMBIGUOUS (a map that gave two objects
 * one SHA-1 name), XL_EIO or XL_ECORRUPT (a row that is not what we
 * wrote); cache_put_known() 0 or XL_EIO, inside the open batch if there
 * is one.  Emptied with the rest when the settings (which include the
 * map) change.
 */
int cache_put_known(struct cache *cache, const struct oid *sha256,
		    const struct oid *sha1);
int cache_get_known(struct cache *cache, const struct oid *in,
		    struct oid *out);

/*
 * Small facts a build keeps for the next one (build.c: "retry" and
 * "missing"), as text by key.  cache_meta_get() puts the value into out
 * (reset first): 0, XL_ENOTFOUND, or XL_EIO.  cache_meta_put() stores
 * one, inside the open batch if there is one; the keys the cache keeps
 * for itself ("format", "settings", "damaged", and the counts "objects"
 * and "untranslatable") are refused with XL_EINVALID.
 * Emptying the cache for new settings drops them all.
 */
int cache_meta_get(struct cache *cache, const char *key, struct buf *out);
int cache_meta_put(struct cache *cache, const char *key, const char *value);

/*
 * Counts: all objects, and how many are untranslatable, the open
 * batch's included.  They are kept in meta and change with the rows,
 * so this costs two lookups; a file whose counts are missing or
 * impossible has them made again from a scan.  cache_count_rows()
 * always scans (verify compares the two).
 */
int cache_count_rows(struct cache *cache, uint64_t *objects,
		     uint64_t *untranslatable);
int cache_count(struct cache *cache, uint64_t *objects,
		uint64_t *untranslatable);

/*
 * Every stored object in SHA-256 name order (fn's struct is borrowed for
 * the call), or only those without a SHA-1 name, or only the refusals
 * marked retry (a partial index keeps that walk in proportion to them,
 * not to the store).  A non-zero return from fn stops the walk and is
 * returned.
 *
 * The walk holds the cache's lock throughout (one sqlite read snapshot),
 * so fn must not call any function on the same struct cache: such a
 * call fails with XL_EINVALID (it would otherwise deadlock).  Other
 * threads' calls wait for the walk; use a second struct cache to read
 * or write alongside one.
 */
enum cache_each_filter {
	CACHE_EACH_ALL = 0,
	CACHE_EACH_UNTRANSLATABLE = 1,
	CACHE_EACH_RETRY = 2,
};
typedef int (*cache_each_fn)(const struct cache_object *obj, void *data);
int cache_for_each(struct cache *cache, enum cache_each_filter filter,
		   cache_each_fn fn, void *data);

/*
 * The objects whose name in `algo` (the cache's own, or SHA-1) starts
 * with the `len` hex digits at `hex` (0..hexsz; 2 lists one fan-out
 * directory), in that name's order, under the same rules as
 * cache_for_each().  Untranslatable objects have no SHA-1 name to list.
 * Returns 0, XL_EINVALID, XL_EIO, XL_ECORRUPT or fn's return.
 */
int cache_for_each_prefix(struct cache *cache, const struct hash_algo *algo,
			  const char *hex, size_t len, cache_each_fn fn,
			  void *data);

/*
 * The other name recorded for a gitlink target (a commit of another
 * repository, named by the submodule map the build used): given its
 * SHA-256 name, its SHA-1 name, and the other way round (by `in`'s
 * algorithm).  Returns 0, XL_ENOTFOUND, XL_EIO; also XL_EINVALID for a
 * name of neither algorithm, and XL_EAMBIGUOUS (fail closed) if the
 * records disagree, as only a tampered file or a bug could make them.
 * A gitlink stored without a SHA-1 name does not count.  `out` is empty
 * on failure.
 */
int cache_get_gitlink(struct cache *cache, const struct oid *in,
		      struct oid *out);

/*
 * Every gitlink recorded, in tree-name order then path order (byte-wise).
 * commit1 is NULL when no SHA-1 name was recorded; the arguments are
 * borrowed for the call.  The same rules as cache_for_each() apply.
 */
typedef int (*cache_gitlink_fn)(const struct oid *tree, const char *path,
				const struct oid *commit256,
				const struct oid *commit1, void *data);
int cache_for_each_gitlink(struct cache *cache, cache_gitlink_fn fn,
			   void *data);

/*
 * Every pair the cache holds for an object the repository lacks: the
 * gitlink targets the builds named (from the map) and the known names
 * conversions used, each pair once, in SHA-256 name order.  These are
 * what a converter needs beyond the objects table to convert what the
 * repository holds.  The same rules as cache_for_each() apply.
 */
typedef int (*cache_pair_fn)(const struct oid *sha256, const struct oid *sha1,
			     void *data);
int cache_for_each_pair(struct cache *cache, cache_pair_fn fn, void *data);

/*
 * The ref names: the SHA-1 names of what the refs (and their peeled
 * tags) pointed at when the last build ended, copied from the objects,
 * so that a fresh mount learns them all in one scan of a small table.
 * cache_ref_names_set() replaces them, inside a batch, with `nr` pairs
 * (pairs[2i] a primary name, pairs[2i + 1] its SHA-1 name).  A row
 * leaves when cache_put() stores its object as untranslatable, and all
 * of them when the settings empty the cache, so every row is what the
 * objects table says.  cache_for_each_ref_name() calls fn for each, in
 * no set order (the rules of cache_for_each() apply).
 */
int cache_ref_names_set(struct cache *cache, const struct oid *pairs,
			size_t nr);
typedef int (*cache_ref_name_fn)(const struct oid *sha256,
				 const struct oid *sha1, void *data);
int cache_for_each_ref_name(struct cache *cache, cache_ref_name_fn fn,
			    void *data);

/*
 * The synthesized packs (xlate/pack1.c makes them): for a native pack,
 * the layout of the translated pack made from it (SHA-1, or SHA-256 for
 * a SHA-1 store), so that a reader can answer stat() and any read
 * without building the rest.  A pack is laid
 * out in one batch: cache_pack1_add(), its entries and its .idx chunks,
 * then commit.  Emptying the cache for other settings drops them too.
 */
struct cache_pack1 {
	int64_t id;
	char native[OID_HEXSZ_MAX + 1];	/* the native pack's checksum hex */
	unsigned char checksum[OID_RAWSZ_MAX];	/* the translated pack's trailer
					   (its name), cache_other()'s length */
	uint32_t objects;
	uint64_t pack_size, idx_size;
};

/*
 * One entry of a translated pack: `len` bytes at `offset`, which are
 * `hdr`, then either (sha256.algo NULL) the native pack's bytes from
 * `src` on, or, as a zlib stream of stored blocks, the translated form
 * of native object `sha256` (base.algo NULL) or the delta that makes it
 * from base's.  Small payloads are kept (`data`), so that a read only
 * copies them.  A header is a type and size (up to 10 bytes) and a
 * REF_DELTA's base name.
 */
struct cache_pack1_entry {
	uint64_t offset, len, src;
	unsigned char hdr[10 + OID_RAWSZ_MAX];
	size_t hdr_len;
	struct oid sha256;
	struct oid base;
	const unsigned char *data;	/* that payload, if the cache keeps it */
	size_t data_len;
	uint32_t crc;			/* of the entry's bytes */
};

/* The .idx is kept in rows of this many bytes (the last may be shorter). */
#define CACHE_PACK1_IDX_CHUNK 16384
/* A run of entries ends after this many, or once it holds this many bytes. */
#define CACHE_PACK1_CHUNK_ENTRIES 64
#define CACHE_PACK1_CHUNK_BYTES 32768

/* Every synthesized pack (malloc'd array, by id).  0, XL_EIO, XL_ECORRUPT. */
int cache_pack1_list(struct cache *cache, struct cache_pack1 **out, size_t *nr);
/*
 * Record a pack (inside a batch); sets p->id.  Its checksum and sizes
 * are known only once its entries are: cache_pack1_finish() sets them,
 * in the same batch.
 */
int cache_pack1_add(struct cache *cache, struct cache_pack1 *p);
int cache_pack1_finish(struct cache *cache, const struct cache_pack1 *p);
/*
 * Record an entry (inside the batch of its pack).  Entries are put in
 * pack order and kept in runs, a row of the file a run (the rows are
 * written as runs fill up, by cache_pack1_finish() and by
 * cache_commit()); an entry that does not start where the last ended
 * starts a new run.  Its objects are named in the store's own
 * algorithm.  A pack may reach 1 TiB.  0, XL_EINVALID (a bad entry),
 * XL_ETOOBIG, XL_EIO.
 */
int cache_pack1_put_entry(struct cache *cache, int64_t pack,
			  const struct cache_pack1_entry *e);
/*
 * Runs of entries made apart from any connection: a layout that may not
 * write yet (its batch would wait for another) holds its entries here,
 * and puts them once it may, as cache_pack1_put_entry() would have put
 * them (it is that function's encoder).  Entries are added in pack
 * order, of one pack.  _add(): 0, XL_EINVALID (a bad entry), XL_ETOOBIG,
 * XL_ENOMEM.  _put(): writes the whole runs held, and the one being
 * made too if `all`, as rows of pack `pack` (inside its batch), and
 * forgets them; 0, XL_EINVALID, XL_EIO.
 */
struct cache_pack1_runs {
	struct buf done;	/* whole runs: (first offset, length, bytes) */
	struct buf run;		/* the run being made */
	uint64_t first, next;	/* offsets: its first entry's, the next's */
	uint32_t entries;	/* in it */
};
void cache_pack1_runs_init(struct cache_pack1_runs *r);
void cache_pack1_runs_reset(struct cache_pack1_runs *r);
void cache_pack1_runs_release(struct cache_pack1_runs *r);
int cache_pack1_runs_add(struct cache_pack1_runs *r,
			 const struct cache_pack1_entry *e);
/* The bytes it holds (what its rows will take, near enough). */
size_t cache_pack1_runs_bytes(const struct cache_pack1_runs *r);
int cache_pack1_runs_put(struct cache *cache, int64_t pack,
			 struct cache_pack1_runs *r, int all);
int cache_pack1_put_idx(struct cache *cache, int64_t pack, uint32_t chunk,
			const void *data, size_t len);
/* Forget a pack, its entries and its .idx. */
int cache_pack1_drop(struct cache *cache, int64_t pack);
/*
 * The entries of pack `pack` holding any byte of [from, to), in order
 * (malloc'd array; none past the last entry); their kept payloads point
 * into `payloads` (reset first).  0, XL_EIO, XL_ECORRUPT.
 */
int cache_pack1_entries(struct cache *cache, int64_t pack, uint64_t from,
			uint64_t to, struct cache_pack1_entry **out, size_t *nr,
			struct buf *payloads);
/* Chunk `chunk` of a pack's .idx into out.  0, XL_EIO, XL_ECORRUPT. */
int cache_pack1_idx(struct cache *cache, int64_t pack, uint32_t chunk,
		    struct buf *out);

#endif
