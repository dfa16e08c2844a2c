/*
 * cache.c: lookups, batches and walks over the name-mapping store.
 *
 * The file, its schema and the decision to trust it live in schema.c;
 * this file is the queries.  Every statement is prepared once per
 * connection (stmt_sql below, prepared by cache_open) and reused with
 * sqlite3_reset() and fresh bindings: at the rate a build writes (some
 * 100k objects a second) and the daemon reads (one lookup per stat()),
 * parsing SQL would cost more than the B-tree work.  Nothing ever
 * formats data into SQL.
 *
 * Locking: one connection per struct cache, opened SQLITE_OPEN_NOMUTEX,
 * so sqlite takes no mutex of its own and we must never let two threads
 * into it at once: every public function holds cache->lock for its
 * whole run.  A statement is reset before the lock is dropped, on every
 * path, because a statement left stepping holds a WAL read snapshot:
 * the connection would go on seeing old data and checkpoints could not
 * pass it.
 *
 * Expected workload: a build opens one cache, puts every object of the
 * repository in batches of thousands, and commits; the daemon and the
 * commands open their own and look names up one at a time, meanwhile.
 * WAL mode lets both proceed (schema.c); readers never wait for writers.
 *
 * Rows are read back with the same suspicion as any file: lengths,
 * types and ranges are checked again before they reach a struct oid,
 * and a row that breaks them is XL_ECORRUPT, never a wrong answer.
 */
#include "cache_i.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define OBJECT_COLUMNS "sha256, sha1, type, size256, size1, reason, retry"

/*
 * The same, for a search through the sha1 index of `table`.  sqlite
 * would read sha1 from the index entry that matched, which proves
 * nothing; the subquery reads it from the row itself (one more B-tree
 * descent, about a microsecond), so that same_name() compares the row
 * with the key.
 */
#define OBJECT_COLUMNS_BY_SHA1(table) \
	"sha256, (SELECT t.sha1 FROM " table " AS t WHERE t.sha256 = o.sha256) " \
	"AS sha1, type, size256, size1, reason, retry"

/*
 * The rows live in two tables (schema.c): `objects`, large and rarely
 * written, and `objects_recent`, the rows stored since the last fold
 * (cache_fold()).  A name is in at most one of them (ST_PUT sees to
 * it), so a query over both is the UNION ALL of the same query over
 * each: `sel` ("SELECT ... FROM") and `rest` (WHERE ...) are pasted
 * around each table's name, and `alias` (empty or " AS o") after it.
 */
#define BOTH(sel, alias, rest) \
	sel " objects" alias " " rest " UNION ALL " \
	sel " objects_recent" alias " " rest
/* No row of either table has the name in `col`: a descent of each. */
#define NOT_STORED(col) \
	"NOT EXISTS (SELECT 1 FROM objects WHERE sha256 = " col ") AND " \
	"NOT EXISTS (SELECT 1 FROM objects_recent WHERE sha256 = " col ")"
#define BOTH_BY_SHA1(rest) \
	"SELECT " OBJECT_COLUMNS_BY_SHA1("objects") " FROM objects AS o " rest \
	" UNION ALL SELECT " OBJECT_COLUMNS_BY_SHA1("objects_recent") \
	" FROM objects_recent AS o " rest

/* An update of the row by name ?1 in `table`, with put_row()'s bindings. */
#define UPDATE_ROW(table) \
	"UPDATE " table " SET sha1 = ?2, type = ?3, size256 = ?4, " \
	"size1 = ?5, reason = ?6, retry = ?7 WHERE sha256 = ?1"

/* The key column of a gitlink found through an index, read from its row. */
#define GITLINK_ROW(col) \
	"(SELECT t." col " FROM gitlinks AS t " \
	"WHERE t.tree = g.tree AND t.path = g.path) AS " col

const char *const cache_stmt_sql[ST__COUNT] = {
	[ST_GET] = BOTH("SELECT " OBJECT_COLUMNS " FROM", "", "WHERE sha256 = ?1"),
	/*
	 * Two rows with one SHA-1 name would be a SHA-1 collision between
	 * two stored objects: LIMIT 2 lets us see it and refuse to choose.
	 */
	[ST_GET1] = BOTH_BY_SHA1("WHERE sha1 = ?1") " LIMIT 2",
	[ST_RANGE] = BOTH("SELECT " OBJECT_COLUMNS " FROM", "",
			  "WHERE sha256 BETWEEN ?1 AND ?2") " LIMIT 2",
	[ST_RANGE1] = BOTH_BY_SHA1("WHERE sha1 BETWEEN ?1 AND ?2") " LIMIT 2",
	/*
	 * A row is new (the common case, told by sqlite3_changes()) or
	 * replaces one, whose table and old state replace_row() reads
	 * first.  A new row goes to objects_recent, unless objects has
	 * its name.
	 */
	[ST_PUT] = "INSERT OR IGNORE INTO objects_recent(" OBJECT_COLUMNS ") "
		   "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE NOT EXISTS "
		   "(SELECT 1 FROM objects WHERE sha256 = ?1)",
	[ST_PUT_REPLACE] = UPDATE_ROW("objects"),
	[ST_PUT_REPLACE_RECENT] = UPDATE_ROW("objects_recent"),
	[ST_UNTRANSLATABLE_OF] = "SELECT sha1 IS NULL, 0 FROM objects "
				 "WHERE sha256 = ?1 UNION ALL "
				 "SELECT sha1 IS NULL, 1 FROM objects_recent "
				 "WHERE sha256 = ?1",
	[ST_GITLINK_PUT] = "INSERT OR REPLACE INTO "
			   "gitlinks(tree, path, commit256, commit1) "
			   "VALUES (?1, ?2, ?3, ?4)",
	/*
	 * A submodule commit appears in many trees, always with the same
	 * other name (the map is part of the settings): DISTINCT folds the
	 * copies, and a second distinct answer means the records disagree.
	 */
	[ST_GITLINK_GET] = "SELECT DISTINCT commit1, " GITLINK_ROW("commit256")
			   " FROM gitlinks AS g WHERE commit256 = ?1 "
			   "AND commit1 IS NOT NULL LIMIT 2",
	[ST_GITLINK_GET1] = "SELECT DISTINCT commit256, " GITLINK_ROW("commit1")
			    " FROM gitlinks AS g WHERE commit1 = ?1 LIMIT 2",
	[ST_PACK_PUT] = "INSERT OR REPLACE INTO packs(checksum, objects) "
			"VALUES (?1, ?2)",
	[ST_PACK_GET] = "SELECT 1 FROM packs WHERE checksum = ?1",
	[ST_COUNT] = "SELECT sum(n), sum(u) FROM ("
		     BOTH("SELECT count(*) AS n, count(*) - count(sha1) AS u FROM",
			  "", "") ")",
	[ST_COUNT_ADD] = "UPDATE meta SET value = "
			 "CAST(CAST(value AS INTEGER) + ?2 AS TEXT) WHERE key = ?1",
	/*
	 * In order over both tables: sqlite merges the two ordered scans
	 * of a compound SELECT, with no sort.
	 */
	[ST_EACH] = BOTH("SELECT " OBJECT_COLUMNS " FROM", "", "") " ORDER BY 1",
	/* the sha1 indexes hold (NULL, sha256) in order */
	[ST_EACH_UNTRANSLATABLE] = BOTH("SELECT " OBJECT_COLUMNS " FROM", "",
					"WHERE sha1 IS NULL") " ORDER BY 1",
	/* the partial indexes (objects_retry...) hold exactly these rows */
	[ST_EACH_RETRY] = BOTH("SELECT " OBJECT_COLUMNS " FROM", "",
			       "WHERE retry = 1") " ORDER BY 1",
	[ST_EACH_GITLINK] = "SELECT tree, path, commit256, commit1 "
			    "FROM gitlinks ORDER BY tree, path",
	/*
	 * UNION drops a pair both tables hold; an object the repository
	 * has (one of its own commits as a gitlink, a blob fetched since)
	 * is named by the objects table instead.
	 */
	[ST_EACH_PAIR] = "SELECT commit256, commit1 FROM gitlinks "
			 "WHERE commit1 IS NOT NULL AND " NOT_STORED("commit256")
			 " UNION SELECT sha256, sha1 FROM known AS k WHERE "
			 NOT_STORED("k.sha256") " ORDER BY 1, 2",
	[ST_EACH_RANGE] = BOTH("SELECT " OBJECT_COLUMNS " FROM", "",
			       "WHERE sha256 BETWEEN ?1 AND ?2") " ORDER BY 1",
	[ST_EACH_RANGE1] = BOTH_BY_SHA1("WHERE sha1 BETWEEN ?1 AND ?2")
			   " ORDER BY 2",
	/*
	 * IMMEDIATE takes the write lock now (waiting out the busy timeout
	 * for another writer), so a batch never fails halfway with BUSY
	 * when it first writes.
	 */
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_META_GET] = "SELECT value FROM meta WHERE key = ?1",
	[ST_META_PUT] = "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
	[ST_CLEAR_META] = "DELETE FROM meta WHERE key NOT IN ('format', "
			  "'settings', 'damaged', 'objects', 'untranslatable')",
	[ST_KNOWN_PUT] = "INSERT OR REPLACE INTO known(sha256, sha1) VALUES (?1, ?2)",
	[ST_KNOWN_GET] = "SELECT sha1, sha256 FROM known WHERE sha256 = ?1",
	[ST_KNOWN_GET1] = "SELECT sha256, sha1 FROM known WHERE sha1 = ?1 LIMIT 2",
	[ST_CLEAR_KNOWN] = "DELETE FROM known",
	[ST_NONEMPTY] = "SELECT EXISTS (SELECT 1 FROM objects) OR "
			"EXISTS (SELECT 1 FROM objects_recent) OR "
			"EXISTS (SELECT 1 FROM packs) OR "
			"EXISTS (SELECT 1 FROM gitlinks)",
	[ST_CLEAR_OBJECTS] = "DELETE FROM objects",
	[ST_CLEAR_RECENT] = "DELETE FROM objects_recent",
	[ST_RECENT_COUNT] = "SELECT count(*) FROM objects_recent",
	/* in name order, which the big table's B-tree takes best */
	[ST_FOLD] = "INSERT INTO objects(" OBJECT_COLUMNS ") SELECT "
		    OBJECT_COLUMNS " FROM objects_recent ORDER BY sha256",
	[ST_CLEAR_PACKS] = "DELETE FROM packs",
	[ST_CLEAR_GITLINKS] = "DELETE FROM gitlinks",
	[ST_CLEAR_PACKS1] = "DELETE FROM packs1",
	[ST_CLEAR_PACK1_CHUNKS] = "DELETE FROM pack1_chunks",
	[ST_CLEAR_PACK1_IDX] = "DELETE FROM pack1_idx",
	[ST_PACK1_LIST] = "SELECT id, native, checksum, objects, pack_size, "
			  "idx_size FROM packs1 ORDER BY id",
	[ST_PACK1_PUT] = "INSERT INTO packs1(native, checksum, objects, "
			 "pack_size, idx_size) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_PACK1_FINISH] = "UPDATE packs1 SET checksum = ?2, objects = ?3, "
			    "pack_size = ?4, idx_size = ?5 WHERE id = ?1",
	[ST_PACK1_DROP] = "DELETE FROM packs1 WHERE id = ?1",
	[ST_PACK1_DROP_CHUNKS] = "DELETE FROM pack1_chunks WHERE key >= ?1 << 40 "
				 "AND key < (?1 + 1) << 40",
	[ST_PACK1_DROP_IDX] = "DELETE FROM pack1_idx WHERE key >= ?1 << 32 "
			      "AND key < (?1 + 1) << 32",
	[ST_PACK1_CHUNK_PUT] = "INSERT INTO pack1_chunks(key, entries) "
			       "VALUES (?1, ?2)",
	/* from the run holding byte ?2 (the last to start at or before it) */
	[ST_PACK1_CHUNKS] = "SELECT key, entries FROM pack1_chunks WHERE key >= "
			    "(SELECT coalesce(max(key), ?1 << 40) FROM pack1_chunks "
			    "WHERE key >= ?1 << 40 AND key <= (?1 << 40) + ?2) "
			    "AND key < (?1 << 40) + ?3 ORDER BY key",
	[ST_PACK1_IDX_PUT] = "INSERT INTO pack1_idx(key, data) VALUES (?1, ?2)",
	[ST_PACK1_IDX_GET] = "SELECT data FROM pack1_idx WHERE key = ?1",
	[ST_CLEAR_REF_NAMES] = "DELETE FROM ref_names",
	[ST_REF_NAME_PUT] = "INSERT OR REPLACE INTO ref_names(sha256, sha1) "
			    "VALUES (?1, ?2)",
	[ST_REF_NAME_DROP] = "DELETE FROM ref_names WHERE sha256 = ?1",
	[ST_REF_NAMES] = "SELECT sha256, sha1 FROM ref_names",
};

/* ---- helpers ---------------------------------------------------------- */

static int lock(struct cache *cache)
{
	int e = pthread_mutex_lock(&cache->lock);

	if (e == EDEADLK)
		return err_set(XL_EINVALID, "cache %s: called from inside its "
			       "own walk callback", cache->path);
	if (e) {
		errno = e;
		return err_errno("cache %s: lock", cache->path);
	}
	return 0;
}

static void unlock(struct cache *cache)
{
	pthread_mutex_unlock(&cache->lock);
}

/*
 * Step `st` once.  Returns SQLITE_ROW or SQLITE_DONE (positive), or a
 * negative XL_E* code with the message recorded (the statement is then
 * reset, which ends its read).
 */
static int step(struct cache *cache, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc;
	rc = cache_db_err(cache, rc, what);
	sqlite3_reset(st);
	return rc;
}

/* Run a statement that returns no rows, and reset it. */
static int run(struct cache *cache, enum cache_stmt which, const char *what)
{
	sqlite3_stmt *st = cache->stmt[which];
	int rc = step(cache, st, what);

	if (rc < 0)
		return rc;
	sqlite3_reset(st);
	return 0;
}

static int bind_oid(sqlite3_stmt *st, int col, const struct oid *oid)
{
	return sqlite3_bind_blob(st, col, oid->hash, (int)oid->algo->rawsz,
				 SQLITE_STATIC);
}

/*
 * A raw name from column `col` of `st`, which must be a BLOB of exactly
 * algo->rawsz bytes.  Returns 0, 1 (NULL, when `nullable`), or
 * XL_ECORRUPT.
 */
static int column_oid(struct cache *cache, sqlite3_stmt *st, int col,
		      const struct hash_algo *algo, int nullable,
		      struct oid *out)
{
	int type = sqlite3_column_type(st, col);
	const void *raw;

	if (type == SQLITE_NULL && nullable) {
		memset(out, 0, sizeof(*out));
		return 1;
	}
	raw = sqlite3_column_blob(st, col);
	if (type != SQLITE_BLOB || !raw ||
	    (size_t)sqlite3_column_bytes(st, col) != algo->rawsz)
		return ERR_CORRUPT("cache %s: column %s is not a %s name",
				   cache->path, sqlite3_column_name(st, col),
				   algo->name);
	oid_from_raw(out, algo, raw);
	return 0;
}

static int column_size(struct cache *cache, sqlite3_stmt *st, int col,
		       uint64_t *out)
{
	sqlite3_int64 v;

	if (sqlite3_column_type(st, col) != SQLITE_INTEGER ||
	    (v = sqlite3_column_int64(st, col)) < 0)
		return ERR_CORRUPT("cache %s: column %s is not a size",
				   cache->path, sqlite3_column_name(st, col));
	*out = (uint64_t)v;
	return 0;
}

/*
 * Where a lookup's reason text lives.  It is borrowed by the caller
 * until its next call on the same cache, and a struct cache may be
 * shared by threads: one buffer per cache would let thread B's lookup
 * realloc the text thread A is still printing.  So each thread keeps its
 * own small set of buffers, one per cache it used (told apart by
 * serial, which unlike an address is never reused), freed when the
 * thread exits.  A thread alternating among more than REASON_SLOTS
 * caches reuses the oldest buffer: the text changes under an old
 * pointer, but the memory stays valid.
 */
#define REASON_SLOTS 16

struct reason_slots {
	unsigned int next;			/* the slot to reuse next */
	struct {
		uint64_t serial;		/* 0: unused */
		struct buf text;
	} slot[REASON_SLOTS];
};

static pthread_key_t reason_key;
static pthread_once_t reason_once = PTHREAD_ONCE_INIT;
static int reason_key_ok;			/* written once, under reason_once */
static atomic_uint_fast64_t last_serial;

uint64_t cache_next_serial(void)
{
	return (uint64_t)atomic_fetch_add(&last_serial, 1) + 1;
}

static void reason_slots_free(void *data)
{
	struct reason_slots *r = data;

	for (int i = 0; i < REASON_SLOTS; i++)
		buf_release(&r->slot[i].text);
	free(r);
}

static void reason_key_init(void)
{
	reason_key_ok = !pthread_key_create(&reason_key, reason_slots_free);
}

/* This thread's reason buffer for `cache`, or NULL (out of memory). */
static struct buf *reason_buf(const struct cache *cache)
{
	struct reason_slots *r;
	unsigned int i;

	if (pthread_once(&reason_once, reason_key_init) || !reason_key_ok)
		return NULL;
	r = pthread_getspecific(reason_key);
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return NULL;
		for (i = 0; i < REASON_SLOTS; i++)
			buf_init(&r->slot[i].text);
		if (pthread_setspecific(reason_key, r)) {
			free(r);
			return NULL;
		}
	}
	for (i = 0; i < REASON_SLOTS; i++)
		if (r->slot[i].serial == cache->serial)
			return &r->slot[i].text;
	i = r->next++ % REASON_SLOTS;
	r->slot[i].serial = cache->serial;
	return &r->slot[i].text;
}

/*
 * The current row of an objects query (OBJECT_COLUMNS) into `out`, its
 * reason borrowed from this thread's buffer for the cache.  On failure
 * `out` is left empty.
 */
static int row_object(struct cache *cache, sqlite3_stmt *st,
		      struct cache_object *out)
{
	sqlite3_int64 type;
	int ret, untranslatable;

	memset(out, 0, sizeof(*out));
	if ((ret = column_oid(cache, st, 0, cache->algo, 0, &out->sha256)) < 0)
		goto fail;
	if ((ret = column_oid(cache, st, 1, cache->other, 1, &out->sha1)) < 0)
		goto fail;
	untranslatable = ret;
	type = sqlite3_column_int64(st, 2);
	if (sqlite3_column_type(st, 2) != SQLITE_INTEGER || type < OBJ_COMMIT ||
	    type > OBJ_TAG) {
		ret = ERR_CORRUPT("cache %s: bad object type", cache->path);
		goto fail;
	}
	out->type = (enum obj_type)type;
	if ((ret = column_size(cache, st, 3, &out->size256)))
		goto fail;
	if (untranslatable) {
		const unsigned char *text = sqlite3_column_text(st, 5);

		if (text) {
			struct buf *b = reason_buf(cache);

			if (!b) {
				ret = err_set(XL_ENOMEM, "out of memory");
				goto fail;
			}
			buf_reset(b);
			if ((ret = buf_add(b, text, sqlite3_column_bytes(st, 5))))
				goto fail;
			out->reason = b->buf;
		}
		if (sqlite3_column_type(st, 6) != SQLITE_INTEGER ||
		    sqlite3_column_int64(st, 6) < 0 ||
		    sqlite3_column_int64(st, 6) > 1) {
			ret = ERR_CORRUPT("cache %s: bad retry flag", cache->path);
			goto fail;
		}
		out->retry = (int)sqlite3_column_int64(st, 6);
	} else if ((ret = column_size(cache, st, 4, &out->size1))) {
		goto fail;
	}
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return ret;
}

static int check_oid(struct cache *cache, const struct oid *oid,
		     const struct hash_algo *algo, const char *what)
{
	if (!oid || oid->algo != algo)
		return err_set(XL_EINVALID, "cache %s: %s is not a %s name",
			       cache->path, what, algo->name);
	return 0;
}

/* ---- lookups -------------------------------------------------------- */

/*
 * Rows are checked against the key that found them.  quick_check, unlike
 * integrity_check, does not compare indexes with their tables, so a
 * damaged sha1 index could lead to the wrong row: that must be an
 * error, not another object's name.
 */
static int same_name(const struct oid *found, const struct oid *key)
{
	return found->algo == key->algo &&
	       !memcmp(found->hash, key->hash, key->algo->rawsz);
}

/*
 * Look up one name with `which` (ST_GET or ST_GET1).  The second row
 * only exists if two objects share a SHA-1 name.
 */
static int get(struct cache *cache, enum cache_stmt which,
	       const struct oid *name, struct cache_object *out)
{
	sqlite3_stmt *st = cache->stmt[which];
	char hex[OID_HEXSZ_MAX + 1];
	int ret;

	if ((ret = lock(cache)))
		return ret;
	bind_oid(st, 1, name);
	ret = step(cache, st, "lookup");
	if (ret == SQLITE_DONE) {
		ret = err_set(XL_ENOTFOUND, "%s is not in cache %s",
			      oid_to_hex_r(hex, name), cache->path);
	} else if (ret == SQLITE_ROW) {
		ret = row_object(cache, st, out);
		if (!ret && !same_name(which == ST_GET ? &out->sha256 : &out->sha1,
				       name))
			ret = ERR_CORRUPT("cache %s: the row found for %s has "
					  "another name", cache->path,
					  oid_to_hex_r(hex, name));
		if (!ret && (ret = step(cache, st, "lookup")) == SQLITE_ROW)
			ret = which == ST_GET ?
			      ERR_CORRUPT("cache %s: two rows for %s",
					  cache->path, oid_to_hex_r(hex, name)) :
			      err_set(XL_EAMBIGUOUS, "cache %s: two objects "
				      "have the SHA-1 name %s", cache->path,
				      oid_to_hex_r(hex, name));
		else if (ret == SQLITE_DONE)
			ret = 0;
		if (ret)
			memset(out, 0, sizeof(*out));
	}
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}

int cache_get(struct cache *cache, const struct oid *sha256,
	      struct cache_object *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = check_oid(cache, sha256, cache->algo, "lookup key")))
		return ret;
	return get(cache, ST_GET, sha256, out);
}

int cache_get_by_sha1(struct cache *cache, const struct oid *sha1,
		      struct cache_object *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = check_oid(cache, sha1, cache->other, "lookup key")))
		return ret;
	return get(cache, ST_GET1, sha1, out);
}

/*
 * The statement (of `range` for primary names, `range1` for SHA-1 ones)
 * and the bounds of every name of `algo` that starts with `hex`: the
 * prefix padded with 0x0 nibbles and padded with 0xf nibbles (an odd
 * last digit fills the high nibble of its byte).
 */
static int prefix_range(struct cache *cache, const struct hash_algo *algo,
			const char *hex, size_t len, size_t min_len,
			enum cache_stmt range, enum cache_stmt range1,
			enum cache_stmt *which, unsigned char *lo,
			unsigned char *hi)
{
	if (algo == cache->algo)
		*which = range;
	else if (algo == cache->other)
		*which = range1;
	else
		return err_set(XL_EINVALID, "cache %s: no %s names stored",
			       cache->path, algo ? algo->name : "(null)");
	if (len < min_len || len > algo->hexsz)
		return err_set(XL_EINVALID, "abbreviated %s name of %zu hex "
			       "digits (want %zu to %zu)", algo->name, len,
			       min_len, algo->hexsz);
	memset(lo, 0x00, algo->rawsz);
	memset(hi, 0xff, algo->rawsz);
	for (size_t i = 0; i < len; i++) {
		int v = hex_value((unsigned char)hex[i]);

		if (v < 0)
			return err_set(XL_EINVALID, "\"%.*s\" is not hex",
				       (int)len, hex);
		if (i & 1) {
			lo[i / 2] = (unsigned char)((lo[i / 2] & 0xf0) | v);
			hi[i / 2] = (unsigned char)((hi[i / 2] & 0xf0) | v);
		} else {
			lo[i / 2] = (unsigned char)(v << 4);
			hi[i / 2] = (unsigned char)(v << 4 | 0x0f);
		}
	}
	return 0;
}

int cache_resolve_prefix(struct cache *cache, const struct hash_algo *algo,
			 const char *hex, size_t len, struct cache_object *out)
{
	unsigned char lo[OID_RAWSZ_MAX], hi[OID_RAWSZ_MAX];
	enum cache_stmt which;
	sqlite3_stmt *st;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = prefix_range(cache, algo, hex, len, 4, ST_RANGE, ST_RANGE1,
				&which, lo, hi)))
		return ret;

	if ((ret = lock(cache)))
		return ret;
	st = cache->stmt[which];
	sqlite3_bind_blob(st, 1, lo, (int)algo->rawsz, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, hi, (int)algo->rawsz, SQLITE_STATIC);
	ret = step(cache, st, "prefix lookup");
	if (ret == SQLITE_DONE) {
		ret = err_set(XL_ENOTFOUND, "no object in cache %s has a %s "
			      "name starting with %.*s", cache->path,
			      algo->name, (int)len, hex);
	} else if (ret == SQLITE_ROW) {
		const struct oid *found;

		ret = row_object(cache, st, out);
		found = which == ST_RANGE ? &out->sha256 : &out->sha1;
		if (!ret && (found->algo != algo ||
			     memcmp(found->hash, lo, algo->rawsz) < 0 ||
			     memcmp(found->hash, hi, algo->rawsz) > 0))
			ret = ERR_CORRUPT("cache %s: the row found for prefix "
					  "%.*s does not match it", cache->path,
					  (int)len, hex);
		if (!ret && (ret = step(cache, st, "prefix lookup")) == SQLITE_ROW)
			ret = err_set(XL_EAMBIGUOUS, "%s name %.*s is ambiguous",
				      algo->name, (int)len, hex);
		else if (ret == SQLITE_DONE)
			ret = 0;
		if (ret)
			memset(out, 0, sizeof(*out));
	}
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}

/* ---- batches -------------------------------------------------------- */

static int run_flush(struct cache *cache, int all);
static void run_drop(struct cache *cache);
static int cache_pack1_runs_put_locked(struct cache *cache, int64_t pack,
				       struct cache_pack1_runs *r, int all);

/*
 * meta keeps the number of rows and of untranslatable rows, so that
 * counting (a mount's status, every build) costs two lookups, not a
 * scan of the table (0.6 s at a million objects).  They change in the
 * transaction that changes the rows: puts add to d_*, and commit adds
 * those to meta's.  A put knows whether its row is new, because
 * ST_PUT ignores a row that is there; so two builds that name the same
 * object, one after the other, count it once.
 */
static int count_add(struct cache *cache, const char *key, int64_t n)
{
	sqlite3_stmt *st = cache->stmt[ST_COUNT_ADD];

	if (!n)
		return 0;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, n);
	return run(cache, ST_COUNT_ADD, "counting");
}

static int counts_flush(struct cache *cache)
{
	int ret = count_add(cache, "objects", cache->d_objects) ?:
		  count_add(cache, "untranslatable", cache->d_untranslatable);

	cache->d_objects = cache->d_untranslatable = 0;
	return ret;
}

int cache_begin(struct cache *cache)
{
	int ret;

	if ((ret = lock(cache)))
		return ret;
	if (cache->in_batch)
		ret = err_set(XL_EINVALID, "cache %s: a batch is already open",
			      cache->path);
	else if (!(ret = run(cache, ST_BEGIN, "starting a batch")))
		cache->in_batch = 1;
	unlock(cache);
	return ret;
}

int cache_commit(struct cache *cache)
{
	int ret;

	if ((ret = lock(cache)))
		return ret;
	if (!cache->in_batch) {
		ret = err_set(XL_EINVALID, "cache %s: no batch to commit",
			      cache->path);
	} else if ((ret = run_flush(cache, 1)) || (ret = counts_flush(cache)) ||
		   (ret = run(cache, ST_COMMIT, "committing"))) {
		/*
		 * A failed COMMIT may leave the transaction open (sqlite
		 * rolls back by itself only for some errors): end it, so
		 * that the connection is usable and the failure is whole.
		 */
		if (!sqlite3_get_autocommit(cache->db))
			run(cache, ST_ROLLBACK, "rolling back");
		cache->in_batch = 0;
		run_drop(cache);
	} else {
		cache->in_batch = 0;
	}
	cache->d_objects = cache->d_untranslatable = 0;
	unlock(cache);
	return ret;
}

int cache_defer_checkpoints(struct cache *cache, int defer)
{
	int rc, ret;

	if ((ret = lock(cache)))
		return ret;
	if (defer) {
		rc = sqlite3_wal_autocheckpoint(cache->db, 0);
	} else {
		rc = sqlite3_wal_checkpoint_v2(cache->db, NULL,
					       SQLITE_CHECKPOINT_PASSIVE,
					       NULL, NULL);
		/* busy: a reader holds old pages; a later commit goes on */
		if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
			rc = SQLITE_OK;
		/* back to sqlite's way whatever the checkpoint said */
		if (sqlite3_wal_autocheckpoint(cache->db,
					       CACHE_WAL_AUTOCHECKPOINT) != SQLITE_OK &&
		    rc == SQLITE_OK)
			rc = SQLITE_ERROR;
	}
	if (rc != SQLITE_OK)
		ret = cache_db_err(cache, rc, defer ? "deferring checkpoints" :
				   "checkpointing");
	unlock(cache);
	return ret;
}

void cache_rollback(struct cache *cache)
{
	if (lock(cache))
		return;
	if (cache->in_batch && !sqlite3_get_autocommit(cache->db))
		run(cache, ST_ROLLBACK, "rolling back");
	cache->in_batch = 0;
	cache->d_objects = cache->d_untranslatable = 0;
	run_drop(cache);
	unlock(cache);
}

/* Run `sql` (constant) inside the open batch. */
static int bulk_exec(struct cache *cache, const char *sql, const char *what)
{
	int ret, rc;

	if ((ret = lock(cache)))
		return ret;
	if (!cache->in_batch)
		ret = err_set(XL_EINVALID, "cache %s: %s outside a batch",
			      cache->path, what);
	else if ((rc = sqlite3_exec(cache->db, sql, NULL, NULL, NULL)) != SQLITE_OK)
		ret = cache_db_err(cache, rc, what);
	unlock(cache);
	return ret;
}

int cache_bulk_begin(struct cache *cache)
{
	return bulk_exec(cache, "DROP INDEX objects_sha1",
			 "setting the SHA-1 index aside");
}

int cache_bulk_end(struct cache *cache)
{
	return bulk_exec(cache, CACHE_OBJECTS_SHA1_INDEX,
			 "making the SHA-1 index");
}

static int put_row(struct cache *cache, enum cache_stmt which,
		   const struct cache_object *obj, int translatable);
static int replace_row(struct cache *cache, const struct cache_object *obj,
		       int translatable);

/* What cache_put() refuses: 0 or XL_EINVALID. */
static int check_object(struct cache *cache, const struct cache_object *obj)
{
	int translatable = obj->sha1.algo != NULL, ret;

	if ((ret = check_oid(cache, &obj->sha256, cache->algo, "object name")))
		return ret;
	if (translatable &&
	    (ret = check_oid(cache, &obj->sha1, cache->other, "other name")))
		return ret;
	if (obj->type < OBJ_COMMIT || obj->type > OBJ_TAG)
		return err_set(XL_EINVALID, "cache %s: object type %d",
			       cache->path, (int)obj->type);
	if (obj->size256 > INT64_MAX || (translatable && obj->size1 > INT64_MAX))
		return err_set(XL_EINVALID, "cache %s: object size over 2^63",
			       cache->path);
	return 0;
}

/* ---- many rows at once: a virtual table of the caller's rows -------- */

/*
 * cache_put_all() runs one INSERT ... SELECT from xl_rows, an
 * eponymous virtual table whose rows are the caller's: sqlite then
 * steps one statement, where cache_put() costs a bind, step, reset and
 * halt per row.  A first build of a million objects stores its rows
 * (with the index by SHA-1 name made again) in 2.4 s this way, 2.8 s a
 * cache_put() each, and 1.9 s with the CHECKs left out (feed_run());
 * what is left is sqlite's own B-tree work and its sort for the index.  The
 * table exists only for this connection, only while a put holds the
 * lock (cache->feed), and only in top-level SQL
 * (SQLITE_VTAB_DIRECTONLY): the schema cannot name it.
 */
struct cache_feed {
	size_t nr;
	cache_row_fn row;
	void *data;
	int ret;			/* the XL_E* code that stopped the feed */
	int64_t added, untranslatable;
	struct oid *refused;		/* untranslatable names, for ref_names */
	size_t refused_nr, refused_alloc;
};

struct feed_vtab {
	sqlite3_vtab base;
	struct cache *cache;
};

struct feed_cursor {
	sqlite3_vtab_cursor base;
	struct cache *cache;
	size_t i;
	struct cache_object obj;
};

static int feed_connect(sqlite3 *db, void *aux, int argc,
			const char *const *argv, sqlite3_vtab **out, char **err)
{
	struct feed_vtab *vt;
	int rc;

	(void)argc, (void)argv, (void)err;
	rc = sqlite3_declare_vtab(db, "CREATE TABLE x(sha256 BLOB, sha1 BLOB, "
				  "type INTEGER, size256 INTEGER, size1 INTEGER, "
				  "reason TEXT, retry INTEGER)");
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
	if (!(vt = sqlite3_malloc(sizeof(*vt))))
		return SQLITE_NOMEM;
	memset(vt, 0, sizeof(*vt));
	vt->cache = aux;
	*out = &vt->base;
	return SQLITE_OK;
}

static int feed_disconnect(sqlite3_vtab *vt)
{
	sqlite3_free(vt);
	return SQLITE_OK;
}

static int feed_best_index(sqlite3_vtab *vt, sqlite3_index_info *info)
{
	(void)vt;
	info->estimatedCost = 1e6;	/* a scan, the only way there is */
	return SQLITE_OK;
}

static int feed_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
	struct feed_cursor *c = sqlite3_malloc(sizeof(*c));

	(void)vt;
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	*out = &c->base;
	return SQLITE_OK;
}

static int feed_close(sqlite3_vtab_cursor *cur)
{
	sqlite3_free(cur);
	return SQLITE_OK;
}

/* The next row the caller gives, from c->i + 1 on. */
static int feed_next(sqlite3_vtab_cursor *cur)
{
	struct feed_cursor *c = (struct feed_cursor *)cur;
	struct cache *cache = c->cache;
	struct cache_feed *f = cache->feed;
	int r;

	while (++c->i < f->nr) {
		memset(&c->obj, 0, sizeof(c->obj));
		if (!(r = f->row(f->data, c->i, &c->obj)))
			continue;
		if (r < 0 || (r = check_object(cache, &c->obj)))
			goto fail;
		f->added++;
		if (c->obj.sha1.algo)
			return SQLITE_OK;
		f->untranslatable++;
		if ((r = ARRAY_GROW(f->refused, f->refused_nr,
				    f->refused_alloc, 16)))
			goto fail;
		f->refused[f->refused_nr++] = c->obj.sha256;
		return SQLITE_OK;
	}
	return SQLITE_OK;
fail:
	f->ret = r;
	return SQLITE_ERROR;
}

static int feed_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str,
		       int argc, sqlite3_value **argv)
{
	struct feed_cursor *c = (struct feed_cursor *)cur;

	(void)idx, (void)idx_str, (void)argc, (void)argv;
	c->cache = ((struct feed_vtab *)cur->pVtab)->cache;
	c->i = (size_t)-1;
	return feed_next(cur);
}

static int feed_eof(sqlite3_vtab_cursor *cur)
{
	struct feed_cursor *c = (struct feed_cursor *)cur;

	return c->i >= c->cache->feed->nr;
}

static int feed_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int n)
{
	const struct cache_object *o = &((struct feed_cursor *)cur)->obj;
	int named = o->sha1.algo != NULL;

	switch (n) {
	case 0:
		sqlite3_result_blob(ctx, o->sha256.hash, (int)o->sha256.algo->rawsz,
				    SQLITE_TRANSIENT);
		break;
	case 1:
		if (named)
			sqlite3_result_blob(ctx, o->sha1.hash, (int)o->sha1.algo->rawsz,
					    SQLITE_TRANSIENT);
		break;
	case 2:
		sqlite3_result_int(ctx, (int)o->type);
		break;
	case 3:
		sqlite3_result_int64(ctx, (sqlite3_int64)o->size256);
		break;
	case 4:
		if (named)
			sqlite3_result_int64(ctx, (sqlite3_int64)o->size1);
		break;
	case 5:
		if (!named && o->reason)
			sqlite3_result_text(ctx, o->reason, -1, SQLITE_TRANSIENT);
		break;
	case 6:
		sqlite3_result_int(ctx, named ? 0 : !!o->retry);
		break;
	}
	return SQLITE_OK;	/* a column not set above is NULL */
}

static int feed_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out)
{
	*out = (sqlite3_int64)((struct feed_cursor *)cur)->i;
	return SQLITE_OK;
}

static const sqlite3_module feed_module = {
	.xConnect = feed_connect,	/* no xCreate: eponymous only */
	.xBestIndex = feed_best_index,
	.xDisconnect = feed_disconnect,
	.xOpen = feed_open,
	.xClose = feed_close,
	.xFilter = feed_filter,
	.xNext = feed_next,
	.xEof = feed_eof,
	.xColumn = feed_column,
	.xRowid = feed_rowid,
};

/* The rows of objects_recent (caller holds the lock). */
static int recent_count(struct cache *cache, uint64_t *out)
{
	sqlite3_stmt *st = cache->stmt[ST_RECENT_COUNT];
	int ret = step(cache, st, "counting recent rows");

	*out = 0;
	if (ret == SQLITE_ROW) {
		*out = (uint64_t)sqlite3_column_int64(st, 0);
		ret = 0;
	} else if (ret == SQLITE_DONE) {
		ret = 0;
	}
	sqlite3_reset(st);
	return ret;
}

/*
 * Caller holds the lock, inside a batch.  The rows go straight into
 * objects: only a first build calls this (objects_recent is empty, so
 * no name can be in both tables), and its rows come in name order.
 */
static int feed_run(struct cache *cache, struct cache_feed *f)
{
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if (!cache->feed_module) {
		rc = sqlite3_create_module_v2(cache->db, "xl_rows", &feed_module,
					      cache, NULL);
		if (rc != SQLITE_OK)
			return cache_db_err(cache, rc, "storing objects");
		cache->feed_module = 1;
	}
	/*
	 * The rows are made here from what check_object() let through:
	 * lengths from the algorithms, integers as integers, size1 and
	 * reason only where they belong.  So the table's CHECKs, which
	 * guard against a wrong row (and which quick_check runs again at
	 * every open), are left out of this statement: 0.26 -> 0.20 s for
	 * 131k rows.  Keys and NOT NULL still hold.
	 */
	if ((rc = sqlite3_exec(cache->db, "PRAGMA ignore_check_constraints = 1",
			       NULL, NULL, NULL)) != SQLITE_OK)
		return cache_db_err(cache, rc, "storing objects");
	rc = sqlite3_prepare_v2(cache->db,
				"INSERT INTO objects(" OBJECT_COLUMNS ") "
				"SELECT " OBJECT_COLUMNS " FROM xl_rows",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		cache->feed = f;
		rc = sqlite3_step(st);
		cache->feed = NULL;
		if (rc != SQLITE_DONE)
			ret = f->ret ? f->ret :
			      cache_db_err(cache, rc, "storing objects");
		sqlite3_finalize(st);
	} else {
		ret = cache_db_err(cache, rc, "storing objects");
	}
	/* every other statement checks again */
	if ((rc = sqlite3_exec(cache->db, "PRAGMA ignore_check_constraints = 0",
			       NULL, NULL, NULL)) != SQLITE_OK && !ret)
		ret = cache_db_err(cache, rc, "storing objects");
	/* as cache_put() does: a refused name keeps no ref name */
	for (size_t i = 0; i < f->refused_nr && !ret; i++) {
		bind_oid(cache->stmt[ST_REF_NAME_DROP], 1, &f->refused[i]);
		ret = run(cache, ST_REF_NAME_DROP, "dropping a ref name");
	}
	if (!ret) {
		cache->d_objects += f->added;
		cache->d_untranslatable += f->untranslatable;
	}
	return ret;
}

int cache_put_all(struct cache *cache, size_t nr, cache_row_fn row,
		  void *data)
{
	struct cache_feed f = { .nr = nr, .row = row, .data = data };
	uint64_t recent;
	int ret;

	if ((ret = lock(cache)))
		return ret;
	if (!cache->in_batch)
		ret = err_set(XL_EINVALID, "cache %s: storing objects outside "
			      "a batch", cache->path);
	else if (!(ret = recent_count(cache, &recent)) && recent)
		ret = err_set(XL_EINVALID, "cache %s: storing objects all at "
			      "once over recent rows", cache->path);
	else if (!ret)
		ret = feed_run(cache, &f);
	unlock(cache);
	free(f.refused);
	return ret;
}

/*
 * Why two tables.  A build after a fetch stores a few thousand rows
 * among a million: each lands on its own leaf page of the table and of
 * its sha1 index, so a commit of 6,307 rows wrote 12,600 pages (50 MB,
 * then as much again at the checkpoint), and the store took 0.18 s of
 * a 0.74 s build.  Into a table of their own, the same rows dirty a few
 * hundred pages: 0.006 s, and the build takes 0.545 s.  The price is a
 * second descent per lookup (of a small table, in memory) and the fold,
 * which moves objects_recent's rows into objects in name order once
 * they pass an eighth of it: each row is then written into the big
 * table once, with neighbours that share its pages, instead of a page
 * each: 1.3-1.5 s for 115,000 rows into a million, 11-13 us a row
 * against 27 us.
 */
#define FOLD_SHARE 8

static int count_get(struct cache *cache, const char *key, uint64_t *out);
static int counts_redo(struct cache *cache, uint64_t *objects,
		       uint64_t *untranslatable);
static int mark_damaged(struct cache *cache, const char *why);

/*
 * Are the recent rows due to be folded (caller holds the lock)?  *recent
 * says how many there are.
 */
static int fold_due(struct cache *cache, int force, uint64_t *recent,
		    int *due)
{
	uint64_t objects = 0, untranslatable = 0;
	int ret;

	*due = 0;
	if ((ret = recent_count(cache, recent)))
		return ret;
	/* a count lost or broken is made again */
	if ((ret = count_get(cache, "objects", &objects)) == XL_ENOTFOUND)
		ret = counts_redo(cache, &objects, &untranslatable);
	/* objects counts both tables */
	*due = !ret && *recent &&
	       (force || objects <= *recent ||
		*recent > (objects - *recent) / FOLD_SHARE);
	return ret;
}

int cache_fold(struct cache *cache, int force, uint64_t *folded)
{
	uint64_t recent = 0;
	int ret, due, damaged = 0;

	*folded = 0;
	if ((ret = lock(cache)))
		return ret;
	if (cache->in_batch) {
		unlock(cache);
		return err_set(XL_EINVALID, "cache %s: folding inside a batch",
			       cache->path);
	}
	/* asked without the write lock, which most builds then need not take */
	if ((ret = fold_due(cache, force, &recent, &due)) || !due)
		goto out;
	if ((ret = run(cache, ST_BEGIN, "folding recent rows")))
		goto out;
	/* and again under it: another build may have folded meanwhile */
	if ((ret = fold_due(cache, force, &recent, &due)) || !due)
		goto fail;	/* ends the transaction */
	if ((ret = run(cache, ST_FOLD, "folding recent rows"))) {
		/* only a hand that is not ours puts a name in both tables */
		damaged = (sqlite3_extended_errcode(cache->db) & 0xff) ==
			  SQLITE_CONSTRAINT;
		goto fail;
	}
	if ((ret = run(cache, ST_CLEAR_RECENT, "folding recent rows")) ||
	    (ret = run(cache, ST_COMMIT, "folding recent rows")))
		goto fail;
	*folded = recent;
	goto out;
fail:
	if (!sqlite3_get_autocommit(cache->db))
		run(cache, ST_ROLLBACK, "rolling back");
	if (damaged)
		ret = mark_damaged(cache, "a name in both objects and "
				   "objects_recent");
out:
	unlock(cache);
	return ret;
}

int cache_put(struct cache *cache, const struct cache_object *obj)
{
	int translatable = obj->sha1.algo != NULL, ret;

	if ((ret = check_object(cache, obj)))
		return ret;
	if ((ret = lock(cache)))
		return ret;
	/* outside a batch, the row and its count still go together */
	if (!cache->in_batch && (ret = run(cache, ST_BEGIN, "storing an object"))) {
		unlock(cache);
		return ret;
	}
	ret = put_row(cache, ST_PUT, obj, translatable);
	if (!ret && !sqlite3_changes(cache->db))
		ret = replace_row(cache, obj, translatable);
	else if (!ret)
		cache->d_objects++, cache->d_untranslatable += !translatable;
	/* a name refused after all (a collision) must not live on there */
	if (!ret && !translatable) {
		bind_oid(cache->stmt[ST_REF_NAME_DROP], 1, &obj->sha256);
		ret = run(cache, ST_REF_NAME_DROP, "dropping a ref name");
	}
	if (!cache->in_batch) {
		if (!ret && !(ret = counts_flush(cache)))
			ret = run(cache, ST_COMMIT, "storing an object");
		if (ret && !sqlite3_get_autocommit(cache->db))
			run(cache, ST_ROLLBACK, "rolling back");
		cache->d_objects = cache->d_untranslatable = 0;
	}
	unlock(cache);
	return ret;
}

/*
 * Bind `obj` to ST_PUT or an ST_PUT_REPLACE, and run it.  The stored
 * form is canonical: size1 and reason only where they mean something
 * (the schema's CHECKs insist).
 */
static int put_row(struct cache *cache, enum cache_stmt which,
		   const struct cache_object *obj, int translatable)
{
	sqlite3_stmt *st = cache->stmt[which];

	bind_oid(st, 1, &obj->sha256);
	if (translatable) {
		bind_oid(st, 2, &obj->sha1);
		sqlite3_bind_int64(st, 5, (sqlite3_int64)obj->size1);
		sqlite3_bind_null(st, 6);
	} else {
		sqlite3_bind_null(st, 2);
		sqlite3_bind_null(st, 5);
		if (obj->reason)
			sqlite3_bind_text(st, 6, obj->reason, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 6);
	}
	sqlite3_bind_int(st, 7, translatable ? 0 : !!obj->retry);
	sqlite3_bind_int(st, 3, (int)obj->type);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)obj->size256);
	return run(cache, which, "storing an object");
}

/*
 * The row is there already: a refusal looked at again, or an object
 * another build named meanwhile.  Replace it, counting the change.
 */
static int replace_row(struct cache *cache, const struct cache_object *obj,
		       int translatable)
{
	sqlite3_stmt *st = cache->stmt[ST_UNTRANSLATABLE_OF];
	int ret, was = 0, recent = 0;

	bind_oid(st, 1, &obj->sha256);
	ret = step(cache, st, "storing an object");
	if (ret == SQLITE_ROW) {
		was = sqlite3_column_int(st, 0);
		recent = sqlite3_column_int(st, 1);
	}
	if (ret < 0)
		return ret;
	sqlite3_reset(st);
	if (ret == SQLITE_DONE)	/* cannot be: ST_PUT found it */
		return err_set(XL_EIO, "cache %s: a row came and went",
			       cache->path);
	if ((ret = put_row(cache, recent ? ST_PUT_REPLACE_RECENT : ST_PUT_REPLACE,
			   obj, translatable)))
		return ret;
	cache->d_untranslatable += !translatable - was;
	return 0;
}

int cache_put_gitlink(struct cache *cache, const struct oid *tree,
		      const char *path, size_t path_len,
		      const struct oid *commit256, const struct oid *commit1)
{
	sqlite3_stmt *st = cache->stmt[ST_GITLINK_PUT];
	int ret;

	if ((ret = check_oid(cache, tree, cache->algo, "gitlink tree")) ||
	    (ret = check_oid(cache, commit256, cache->algo, "gitlink commit")))
		return ret;
	if (commit1 && commit1->algo &&
	    (ret = check_oid(cache, commit1, cache->other, "gitlink's other commit name")))
		return ret;
	/* paths come out as C strings, so they may not hold a NUL */
	if (!path || !path_len || path_len > INT32_MAX ||
	    memchr(path, '\0', path_len))
		return err_set(XL_EINVALID, "cache %s: bad gitlink path",
			       cache->path);

	if ((ret = lock(cache)))
		return ret;
	bind_oid(st, 1, tree);
	sqlite3_bind_blob(st, 2, path, (int)path_len, SQLITE_STATIC);
	bind_oid(st, 3, commit256);
	if (commit1 && commit1->algo)
		bind_oid(st, 4, commit1);
	else
		sqlite3_bind_null(st, 4);
	ret = run(cache, ST_GITLINK_PUT, "storing a gitlink");
	unlock(cache);
	return ret;
}

/*
 * A lookup in a table of name pairs (gitlinks, known) by either name:
 * `by_own` takes a name of the cache's algorithm and gives the SHA-1
 * name, `by_sha1` the other way round.  Rows that name `in` twice must
 * agree, or there is no answer (XL_EAMBIGUOUS); `what` names the table
 * in messages.
 */
static int pair_get(struct cache *cache, enum cache_stmt by_own,
		    enum cache_stmt by_sha1, const char *what,
		    const struct oid *in, struct oid *out)
{
	const struct hash_algo *out_algo;
	char hex[OID_HEXSZ_MAX + 1];
	sqlite3_stmt *st;
	int ret;

	memset(out, 0, sizeof(*out));
	if (in && in->algo == cache->algo) {
		st = cache->stmt[by_own];
		out_algo = cache->other;
	} else if (in && in->algo == cache->other) {
		st = cache->stmt[by_sha1];
		out_algo = cache->algo;
	} else {
		return err_set(XL_EINVALID, "cache %s: %s lookup by a name of "
			       "neither algorithm", cache->path, what);
	}
	if ((ret = lock(cache)))
		return ret;
	bind_oid(st, 1, in);
	ret = step(cache, st, what);
	if (ret == SQLITE_DONE) {
		ret = err_set(XL_ENOTFOUND, "no %s for %s with a %s name in "
			      "cache %s", what, oid_to_hex_r(hex, in),
			      out_algo->name, cache->path);
	} else if (ret == SQLITE_ROW) {
		struct oid key;

		/* the key comes back from the row, as same_name() asks */
		ret = column_oid(cache, st, 0, out_algo, 0, out);
		if (!ret)
			ret = column_oid(cache, st, 1, in->algo, 0, &key);
		if (!ret && !same_name(&key, in))
			ret = ERR_CORRUPT("cache %s: the %s found for %s has "
					  "another name", cache->path, what,
					  oid_to_hex_r(hex, in));
		if (!ret && (ret = step(cache, st, what)) == SQLITE_ROW)
			ret = err_set(XL_EAMBIGUOUS, "cache %s: the %s rows for "
				      "%s disagree on its %s name", cache->path,
				      what, oid_to_hex_r(hex, in), out_algo->name);
		else if (ret == SQLITE_DONE)
			ret = 0;
		if (ret)
			memset(out, 0, sizeof(*out));
	}
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}

int cache_get_gitlink(struct cache *cache, const struct oid *in,
		      struct oid *out)
{
	return pair_get(cache, ST_GITLINK_GET, ST_GITLINK_GET1, "gitlink", in,
			out);
}

/* ---- packs ---------------------------------------------------------- */

int cache_pack_done(struct cache *cache, const char *checksum_hex,
		    uint32_t objects)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK_PUT];
	int ret;

	if (!checksum_hex || !*checksum_hex)
		return err_set(XL_EINVALID, "cache %s: no pack checksum",
			       cache->path);
	if ((ret = lock(cache)))
		return ret;
	sqlite3_bind_text(st, 1, checksum_hex, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, objects);
	ret = run(cache, ST_PACK_PUT, "recording a pack");
	unlock(cache);
	return ret;
}

int cache_pack_known(struct cache *cache, const char *checksum_hex)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK_GET];
	int ret;

	/*
	 * Any failure answers "not known": the caller then processes the
	 * pack again, which costs time but never a wrong name.
	 */
	if (!checksum_hex || lock(cache))
		return 0;
	sqlite3_bind_text(st, 1, checksum_hex, -1, SQLITE_STATIC);
	ret = step(cache, st, "looking up a pack") == SQLITE_ROW;
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}

/* ---- counts and walks ----------------------------------------------- */

/* The table scanned: what meta's counts must equal. */
static int count_rows(struct cache *cache, uint64_t *objects,
		      uint64_t *untranslatable)
{
	sqlite3_stmt *st = cache->stmt[ST_COUNT];
	int ret = step(cache, st, "counting");

	if (ret == SQLITE_ROW) {
		*objects = (uint64_t)sqlite3_column_int64(st, 0);
		*untranslatable = (uint64_t)sqlite3_column_int64(st, 1);
		ret = 0;
	} else if (ret == SQLITE_DONE) {
		ret = err_set(XL_EIO, "cache %s: count gave no row",
			      cache->path);
	}
	sqlite3_reset(st);
	return ret;
}

/* One of meta's counts: 0, XL_ENOTFOUND (absent or not a count). */
static int count_get(struct cache *cache, const char *key, uint64_t *out)
{
	sqlite3_stmt *st = cache->stmt[ST_META_GET];
	int ret;

	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	ret = step(cache, st, "reading the counts");
	if (ret == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		char *end;

		errno = 0;
		*out = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
		ret = v && *v >= '0' && *v <= '9' && !*end && !errno ?
		      0 : XL_ENOTFOUND;
	} else if (ret == SQLITE_DONE) {
		ret = XL_ENOTFOUND;
	}
	sqlite3_reset(st);
	return ret;
}

/*
 * Put meta's counts right from a scan, as the migration to version 7
 * did: for a file whose counts were lost or broken, and after emptying.
 * In the open transaction if there is one (the scan then sees its rows,
 * so its deltas start again from nothing); else in one of its own, so
 * that no other writer's rows fall between the scan and the store.
 */
static int counts_redo(struct cache *cache, uint64_t *objects,
		       uint64_t *untranslatable)
{
	sqlite3_stmt *st = cache->stmt[ST_META_PUT];
	int own = sqlite3_get_autocommit(cache->db), ret;
	char n[24], u[24];

	if (own && (ret = run(cache, ST_BEGIN, "counting")))
		return ret;
	if (!(ret = count_rows(cache, objects, untranslatable))) {
		snprintf(n, sizeof(n), "%llu", (unsigned long long)*objects);
		snprintf(u, sizeof(u), "%llu", (unsigned long long)*untranslatable);
		sqlite3_bind_text(st, 1, "objects", -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, n, -1, SQLITE_STATIC);
		if (!(ret = run(cache, ST_META_PUT, "storing the counts"))) {
			sqlite3_bind_text(st, 1, "untranslatable", -1,
					  SQLITE_STATIC);
			sqlite3_bind_text(st, 2, u, -1, SQLITE_STATIC);
			ret = run(cache, ST_META_PUT, "storing the counts");
		}
	}
	cache->d_objects = cache->d_untranslatable = 0;
	if (own && !ret)
		ret = run(cache, ST_COMMIT, "counting");
	if (own && ret && !sqlite3_get_autocommit(cache->db))
		run(cache, ST_ROLLBACK, "rolling back");
	return ret;
}

int cache_count(struct cache *cache, uint64_t *objects,
		uint64_t *untranslatable)
{
	uint64_t n, u;
	int ret;

	*objects = *untranslatable = 0;
	if ((ret = lock(cache)))
		return ret;
	ret = count_get(cache, "objects", &n);
	if (!ret)
		ret = count_get(cache, "untranslatable", &u);
	/* the open batch's rows count too, as a scan would see them */
	if (!ret && ((int64_t)n + cache->d_objects < 0 ||
		     (int64_t)u + cache->d_untranslatable < 0 ||
		     u + cache->d_untranslatable > n + cache->d_objects))
		ret = XL_ENOTFOUND;
	if (ret == XL_ENOTFOUND) {
		ret = counts_redo(cache, &n, &u);
	} else if (!ret) {
		n += cache->d_objects;
		u += cache->d_untranslatable;
	}
	if (!ret) {
		*objects = n;
		*untranslatable = u;
	}
	unlock(cache);
	return ret;
}

int cache_count_rows(struct cache *cache, uint64_t *objects,
		     uint64_t *untranslatable)
{
	int ret;

	*objects = *untranslatable = 0;
	if ((ret = lock(cache)))
		return ret;
	ret = count_rows(cache, objects, untranslatable);
	unlock(cache);
	return ret;
}

/*
 * The walks hold the lock throughout: the statement stays open between
 * callbacks, and no other call may use the connection meanwhile.  That
 * is why fn may not call into the same cache (the error-checking mutex
 * turns that deadlock into XL_EINVALID).
 */

/*
 * Run an objects query (OBJECT_COLUMNS) and call fn for each row.  With
 * `algo`, the query takes the range lo..hi of that algorithm's names as
 * ?1 and ?2, and every row must fall in it.
 */
static int walk_objects(struct cache *cache, enum cache_stmt which,
			const struct hash_algo *algo, const unsigned char *lo,
			const unsigned char *hi, cache_each_fn fn, void *data)
{
	struct cache_object obj;
	sqlite3_stmt *st;
	int ret;

	if ((ret = lock(cache)))
		return ret;
	st = cache->stmt[which];
	if (algo) {
		sqlite3_bind_blob(st, 1, lo, (int)algo->rawsz, SQLITE_STATIC);
		sqlite3_bind_blob(st, 2, hi, (int)algo->rawsz, SQLITE_STATIC);
	}
	while ((ret = step(cache, st, "walking objects")) == SQLITE_ROW) {
		if ((ret = row_object(cache, st, &obj)))
			break;
		if (algo) {
			const struct oid *key = algo == cache->algo ?
				&obj.sha256 : &obj.sha1;

			if (key->algo != algo ||
			    memcmp(key->hash, lo, algo->rawsz) < 0 ||
			    memcmp(key->hash, hi, algo->rawsz) > 0) {
				ret = ERR_CORRUPT("cache %s: a row outside the "
						  "range asked for", cache->path);
				break;
			}
		}
		if ((ret = fn(&obj, data)))
			break;
	}
	if (ret == SQLITE_DONE)
		ret = 0;
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}

int cache_for_each(struct cache *cache, enum cache_each_filter filter,
		   cache_each_fn fn, void *data)
{
	if (filter == CACHE_EACH_RETRY)
		return walk_objects(cache, ST_EACH_RETRY, NULL, NULL, NULL, fn, data);
	if (filter == CACHE_EACH_UNTRANSLATABLE)
		return walk_objects(cache, ST_EACH_UNTRANSLATABLE, NULL, NULL, NULL,
				    fn, data);
	return walk_objects(cache, ST_EACH, NULL, NULL, NULL, fn, data);
}

int cache_for_each_prefix(struct cache *cache, const struct hash_algo *algo,
			  const char *hex, size_t len, cache_each_fn fn,
			  void *data)
{
	unsigned char lo[OID_RAWSZ_MAX], hi[OID_RAWSZ_MAX];
	enum cache_stmt which;
	int ret;

	if ((ret = prefix_range(cache, algo, hex, len, 0, ST_EACH_RANGE,
				ST_EACH_RANGE1, &which, lo, hi)))
		return ret;
	return walk_objects(cache, which, algo, lo, hi, fn, data);
}

int cache_for_each_gitlink(struct cache *cache, cache_gitlink_fn fn,
			   void *data)
{
	sqlite3_stmt *st = cache->stmt[ST_EACH_GITLINK];
	struct oid tree, c256, c1;
	int ret;

	if ((ret = lock(cache)))
		return ret;
	while ((ret = step(cache, st, "walking gitlinks")) == SQLITE_ROW) {
		const void *path = sqlite3_column_blob(st, 1);
		int len = sqlite3_column_bytes(st, 1), null1;

		if ((ret = column_oid(cache, st, 0, cache->algo, 0, &tree)) ||
		    (ret = column_oid(cache, st, 2, cache->algo, 0, &c256)))
			break;
		if ((null1 = column_oid(cache, st, 3, cache->other, 1, &c1)) < 0) {
			ret = null1;
			break;
		}
		if (sqlite3_column_type(st, 1) != SQLITE_BLOB || !path ||
		    memchr(path, '\0', len)) {
			ret = ERR_CORRUPT("cache %s: bad gitlink path",
					  cache->path);
			break;
		}
		buf_reset(&cache->scratch);
		if ((ret = buf_add(&cache->scratch, path, len)))
			break;
		if ((ret = fn(&tree, cache->scratch.buf, &c256,
			      null1 ? NULL : &c1, data)))
			break;
	}
	if (ret == SQLITE_DONE)
		ret = 0;
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}

/* Rows of (primary name, SHA-1 name) from statement `id`, each to fn. */
static int each_pair(struct cache *cache, enum cache_stmt id, const char *what,
		     cache_pair_fn fn, void *data)
{
	sqlite3_stmt *st = cache->stmt[id];
	struct oid o256, o1;
	int ret;

	if ((ret = lock(cache)))
		return ret;
	while ((ret = step(cache, st, what)) == SQLITE_ROW) {
		if ((ret = column_oid(cache, st, 0, cache->algo, 0, &o256)) ||
		    (ret = column_oid(cache, st, 1, cache->other, 0, &o1)) ||
		    (ret = fn(&o256, &o1, data)))
			break;
	}
	if (ret == SQLITE_DONE)
		ret = 0;
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}

int cache_for_each_pair(struct cache *cache, cache_pair_fn fn, void *data)
{
	return each_pair(cache, ST_EACH_PAIR, "walking known pairs", fn, data);
}

/* ---- ref names -------------------------------------------------------- */

int cache_ref_names_set(struct cache *cache, const struct oid *pairs,
			size_t nr)
{
	sqlite3_stmt *st = cache->stmt[ST_REF_NAME_PUT];
	int ret;

	for (size_t i = 0; i < nr; i++)
		if ((ret = check_oid(cache, &pairs[2 * i], cache->algo,
				     "ref name")) ||
		    (ret = check_oid(cache, &pairs[2 * i + 1], cache->other,
				     "other name")))
			return ret;
	if ((ret = lock(cache)))
		return ret;
	if (!cache->in_batch) {
		unlock(cache);
		return err_set(XL_EINVALID, "cache %s: ref names outside a batch",
			       cache->path);
	}
	ret = run(cache, ST_CLEAR_REF_NAMES, "replacing the ref names");
	for (size_t i = 0; i < nr && !ret; i++) {
		bind_oid(st, 1, &pairs[2 * i]);
		bind_oid(st, 2, &pairs[2 * i + 1]);
		ret = run(cache, ST_REF_NAME_PUT, "storing a ref name");
	}
	unlock(cache);
	return ret;
}

int cache_for_each_ref_name(struct cache *cache, cache_ref_name_fn fn,
			    void *data)
{
	return each_pair(cache, ST_REF_NAMES, "reading the ref names", fn, data);
}

/* ---- settings ------------------------------------------------------- */

/*
 * Read meta 'settings' into `out`; *found says whether it was there.
 * Called with the lock held.
 */
static int read_settings(struct cache *cache, struct buf *out, int *found)
{
	sqlite3_stmt *st = cache->stmt[ST_META_GET];
	int ret;

	*found = 0;
	buf_reset(out);
	sqlite3_bind_text(st, 1, "settings", -1, SQLITE_STATIC);
	ret = step(cache, st, "reading settings");
	if (ret == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);

		*found = 1;
		ret = v ? buf_add(out, v, sqlite3_column_bytes(st, 0)) : 0;
	} else if (ret == SQLITE_DONE) {
		ret = 0;
	}
	sqlite3_reset(st);
	return ret;
}

/*
 * Settings change rarely and are checked at every start, often by
 * processes that only read: compare first without a transaction, and
 * take the write lock only when something must change (then compare
 * again under it, since another process may have got there first).
 */
int cache_check_settings(struct cache *cache, const char *settings)
{
	struct buf old = BUF_INIT, msg = BUF_INIT;
	int ret, found, own_txn = 0, nonempty = 0;
	sqlite3_stmt *st;

	if (!settings)
		return err_set(XL_EINVALID, "cache %s: no settings", cache->path);
	if ((ret = lock(cache)))
		return ret;
	if ((ret = read_settings(cache, &old, &found)))
		goto out;
	if (found && !strcmp(old.buf, settings))
		goto out;
	if (!cache->in_batch) {
		if ((ret = run(cache, ST_BEGIN, "starting a transaction")))
			goto out;
		own_txn = 1;
		if ((ret = read_settings(cache, &old, &found)))
			goto out;
		if (found && !strcmp(old.buf, settings))
			goto out;
	}

	st = cache->stmt[ST_NONEMPTY];
	ret = step(cache, st, "checking for rows");
	if (ret == SQLITE_ROW) {
		nonempty = sqlite3_column_int(st, 0);
		ret = 0;
	} else if (ret == SQLITE_DONE) {
		ret = 0;
	}
	sqlite3_reset(st);
	if (ret)
		goto out;
	if (found || nonempty) {
		if ((ret = run(cache, ST_CLEAR_OBJECTS, "emptying")) ||
		    (ret = run(cache, ST_CLEAR_RECENT, "emptying")) ||
		    (ret = run(cache, ST_CLEAR_PACKS, "emptying")) ||
		    (ret = run(cache, ST_CLEAR_GITLINKS, "emptying")) ||
		    (ret = run(cache, ST_CLEAR_PACKS1, "emptying")) ||
		    (run_drop(cache), 0) ||
		    (ret = run(cache, ST_CLEAR_PACK1_CHUNKS, "emptying")) ||
		    (ret = run(cache, ST_CLEAR_PACK1_IDX, "emptying")) ||
		    (ret = run(cache, ST_CLEAR_REF_NAMES, "emptying")) ||
		    (ret = run(cache, ST_CLEAR_META, "emptying")) ||
		    (ret = run(cache, ST_CLEAR_KNOWN, "emptying")))
			goto out;
		cache->d_objects = cache->d_untranslatable = 0;
		if ((ret = counts_redo(cache, &(uint64_t){ 0 }, &(uint64_t){ 0 })))
			goto out;
		if (found)
			ret = buf_addf(&msg, "cache %s was built with settings "
				       "\"%s\", now \"%s\": emptied it to rebuild",
				       cache->path, old.buf, settings);
		else
			ret = buf_addf(&msg, "cache %s was built with unrecorded "
				       "settings, now \"%s\": emptied it to "
				       "rebuild", cache->path, settings);
		if (ret)
			goto out;
	}
	st = cache->stmt[ST_META_PUT];
	sqlite3_bind_text(st, 1, "settings", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, settings, -1, SQLITE_STATIC);
	if ((ret = run(cache, ST_META_PUT, "storing settings")))
		goto out;
	if (own_txn) {
		ret = run(cache, ST_COMMIT, "committing settings");
		own_txn = ret && !sqlite3_get_autocommit(cache->db);
	}
	if (!ret && msg.len)
		ret = 1;	/* emptied */
out:
	if (own_txn)
		run(cache, ST_ROLLBACK, "rolling back");
	unlock(cache);
	/* outside the lock: the callback may well log through the cache */
	if (ret == 1 && cache->warn)
		cache->warn(cache->warn_data, msg.buf);
	buf_release(&old);
	buf_release(&msg);
	return ret;
}

/* ---- names from the map ------------------------------------------- */

int cache_put_known(struct cache *cache, const struct oid *sha256,
		    const struct oid *sha1)
{
	sqlite3_stmt *st = cache->stmt[ST_KNOWN_PUT];
	int ret;

	if ((ret = check_oid(cache, sha256, cache->algo, "known name")) ||
	    (ret = check_oid(cache, sha1, cache->other, "known other name")))
		return ret;
	if ((ret = lock(cache)))
		return ret;
	bind_oid(st, 1, sha256);
	bind_oid(st, 2, sha1);
	ret = run(cache, ST_KNOWN_PUT, "storing a known name");
	unlock(cache);
	return ret;
}

int cache_get_known(struct cache *cache, const struct oid *in,
		    struct oid *out)
{
	/* two rows for one SHA-1 name: a map that gave two objects one */
	return pair_get(cache, ST_KNOWN_GET, ST_KNOWN_GET1, "known name", in,
			out);
}

/* ---- facts kept between builds ------------------------------------- */

/*
 * The keys cache_open(), cache_check_settings(), cache_check() and the
 * counts own.
 */
static int meta_reserved(const char *key)
{
	return !strcmp(key, "format") || !strcmp(key, "settings") ||
	       !strcmp(key, "damaged") || !strcmp(key, "objects") ||
	       !strcmp(key, "untranslatable");
}

int cache_meta_get(struct cache *cache, const char *key, struct buf *out)
{
	sqlite3_stmt *st = cache->stmt[ST_META_GET];
	int ret;

	buf_reset(out);
	if ((ret = lock(cache)))
		return ret;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	ret = step(cache, st, "reading meta");
	if (ret == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);

		ret = v ? buf_add(out, v, (size_t)sqlite3_column_bytes(st, 0)) : 0;
	} else if (ret == SQLITE_DONE) {
		ret = XL_ENOTFOUND;
	}
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}

int cache_meta_put(struct cache *cache, const char *key, const char *value)
{
	sqlite3_stmt *st = cache->stmt[ST_META_PUT];
	int ret;

	if (meta_reserved(key))
		return err_set(XL_EINVALID, "cache %s: meta key '%s' is not "
			       "for callers", cache->path, key);
	if ((ret = lock(cache)))
		return ret;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	ret = run(cache, ST_META_PUT, "storing meta");
	unlock(cache);
	return ret;
}

/* ---- the whole file ------------------------------------------------ */

/*
 * Mark the file damaged (caller holds the lock, outside a transaction):
 * the next cache_open() sets it aside and starts afresh.  Returns
 * XL_ECORRUPT, saying so.
 */
static int mark_damaged(struct cache *cache, const char *why)
{
	sqlite3_stmt *put = cache->stmt[ST_META_PUT];

	/* a write into a damaged file may fail too: then say so */
	sqlite3_bind_text(put, 1, "damaged", -1, SQLITE_STATIC);
	sqlite3_bind_text(put, 2, why, -1, SQLITE_STATIC);
	if (run(cache, ST_META_PUT, "marking it damaged"))
		return err_set(XL_ECORRUPT, "cache %s is damaged (%s), and "
			       "marking it so failed (%s): remove it",
			       cache->path, why, err_msg());
	return err_set(XL_ECORRUPT, "cache %s is damaged (%s); the next open "
		       "sets it aside and starts afresh", cache->path, why);
}

/* sqlite's progress handler: nonzero stops the statement. */
static int check_cancelled(void *data)
{
	return atomic_load((const atomic_int *)data) != 0;
}

int cache_check(struct cache *cache, const atomic_int *cancel)
{
	struct buf why = BUF_INIT;
	int ret;

	if ((ret = lock(cache)))
		return ret;
	if (cache->in_batch) {
		unlock(cache);
		return err_set(XL_EINVALID, "cache %s: checked inside a batch",
			       cache->path);
	}
	if (cancel)
		sqlite3_progress_handler(cache->db, 10000, check_cancelled,
					 (void *)cancel);
	ret = cache_quick_check(cache, &why);
	if (cancel)
		sqlite3_progress_handler(cache->db, 0, NULL, NULL);
	if (ret == 1)
		ret = mark_damaged(cache, why.buf);
	buf_release(&why);
	unlock(cache);
	return ret;
}

/* ---- synthesized SHA-1 packs ------------------------------------------ */

static int column_pack1(struct cache *cache, sqlite3_stmt *st,
			struct cache_pack1 *p)
{
	const unsigned char *native = sqlite3_column_text(st, 1);
	int nlen = sqlite3_column_bytes(st, 1);

	memset(p, 0, sizeof(*p));
	if (!native || nlen <= 0 || nlen > OID_HEXSZ_MAX ||
	    sqlite3_column_bytes(st, 2) != (int)cache->other->rawsz ||
	    sqlite3_column_int64(st, 3) < 0 || sqlite3_column_int64(st, 3) > UINT32_MAX ||
	    sqlite3_column_int64(st, 4) < 0 || sqlite3_column_int64(st, 5) < 0)
		return err_set(XL_ECORRUPT, "cache %s: a bad packs1 row",
			       cache->path);
	p->id = sqlite3_column_int64(st, 0);
	memcpy(p->native, native, (size_t)nlen);
	memcpy(p->checksum, sqlite3_column_blob(st, 2), cache->other->rawsz);
	p->objects = (uint32_t)sqlite3_column_int64(st, 3);
	p->pack_size = (uint64_t)sqlite3_column_int64(st, 4);
	p->idx_size = (uint64_t)sqlite3_column_int64(st, 5);
	return 0;
}

int cache_pack1_list(struct cache *cache, struct cache_pack1 **out, size_t *nr)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK1_LIST];
	struct cache_pack1 *list = NULL;
	size_t n = 0, alloc = 0;
	int ret;

	*out = NULL;
	*nr = 0;
	if ((ret = lock(cache)))
		return ret;
	while ((ret = step(cache, st, "listing packs")) == SQLITE_ROW) {
		if ((ret = ARRAY_GROW(list, n, alloc, 8)) ||
		    (ret = column_pack1(cache, st, &list[n])))
			break;
		n++;
	}
	sqlite3_reset(st);
	unlock(cache);
	if (ret != SQLITE_DONE) {
		free(list);
		return ret;
	}
	*out = list;
	*nr = n;
	return 0;
}

int cache_pack1_add(struct cache *cache, struct cache_pack1 *p)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK1_PUT];
	int ret;

	if ((ret = lock(cache)))
		return ret;
	sqlite3_bind_text(st, 1, p->native, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, p->checksum, (int)cache->other->rawsz,
			  SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, p->objects);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)p->pack_size);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)p->idx_size);
	if (!(ret = run(cache, ST_PACK1_PUT, "recording a pack")))
		p->id = sqlite3_last_insert_rowid(cache->db);
	unlock(cache);
	return ret;
}

int cache_pack1_finish(struct cache *cache, const struct cache_pack1 *p)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK1_FINISH];
	int ret;

	if ((ret = lock(cache)))
		return ret;
	if ((ret = run_flush(cache, 1))) {
		unlock(cache);
		return ret;
	}
	sqlite3_bind_int64(st, 1, p->id);
	sqlite3_bind_blob(st, 2, p->checksum, (int)cache->other->rawsz,
			  SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, p->objects);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)p->pack_size);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)p->idx_size);
	ret = run(cache, ST_PACK1_FINISH, "recording a pack");
	unlock(cache);
	return ret;
}

int cache_pack1_drop(struct cache *cache, int64_t pack)
{
	static const enum cache_stmt which[] = {
		ST_PACK1_DROP_CHUNKS, ST_PACK1_DROP_IDX, ST_PACK1_DROP,
	};
	int ret;

	if ((ret = lock(cache)))
		return ret;
	if (cache->run_pack == pack)
		run_drop(cache);
	for (size_t i = 0; !ret && i < sizeof(which) / sizeof(which[0]); i++) {
		sqlite3_bind_int64(cache->stmt[which[i]], 1, pack);
		ret = run(cache, which[i], "dropping a pack");
	}
	unlock(cache);
	return ret;
}

/* ---- runs of pack entries (pack1_chunks; see schema.c) ----------------- */

#define RUN_OFFSET_BITS 40
#define RUN_OFFSET_MAX ((uint64_t)1 << RUN_OFFSET_BITS)
#define RUN_PACK_MAX ((int64_t)1 << (63 - RUN_OFFSET_BITS))

enum run_flags {
	RUN_SHA256 = 1,
	RUN_BASE = 2,
	RUN_DATA = 4,
};

/*
 * cache->runs as rows, the run being made too if `all`.  Caller holds
 * the lock.
 */
static int run_flush(struct cache *cache, int all)
{
	return cache_pack1_runs_put_locked(cache, cache->run_pack, &cache->runs,
					   all);
}

/* Forget the runs being put (its batch is rolled back).  Caller holds the lock. */
static void run_drop(struct cache *cache)
{
	cache_pack1_runs_reset(&cache->runs);
}

void cache_pack1_runs_init(struct cache_pack1_runs *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->done);
	buf_init(&r->run);
}

void cache_pack1_runs_reset(struct cache_pack1_runs *r)
{
	buf_reset(&r->done);
	buf_reset(&r->run);
	r->entries = 0;
}

void cache_pack1_runs_release(struct cache_pack1_runs *r)
{
	buf_release(&r->done);
	buf_release(&r->run);
	r->entries = 0;
}

size_t cache_pack1_runs_bytes(const struct cache_pack1_runs *r)
{
	return r->done.len + r->run.len;
}

/* The run being made goes to the whole ones. */
static int runs_close(struct cache_pack1_runs *r)
{
	uint64_t len = r->run.len;
	size_t had = r->done.len;
	int ret;

	if (!r->entries)
		return 0;
	if ((ret = buf_add(&r->done, &r->first, sizeof(r->first))) ||
	    (ret = buf_add(&r->done, &len, sizeof(len))) ||
	    (ret = buf_add(&r->done, r->run.buf, r->run.len))) {
		r->done.len = had;	/* no run half in: it stays being made */
		return ret;
	}
	buf_reset(&r->run);
	r->entries = 0;
	return 0;
}

int cache_pack1_runs_add(struct cache_pack1_runs *r,
			 const struct cache_pack1_entry *e)
{
	struct buf *d = &r->run;
	unsigned char flags, crc[4];
	size_t had = d->len;
	int ret;

	if (!e->hdr_len || e->hdr_len > sizeof(e->hdr) || !e->len ||
	    (e->base.algo && (!e->sha256.algo || e->base.algo != e->sha256.algo)) ||
	    (e->data && (!e->sha256.algo || e->data_len > INT32_MAX)))
		return err_set(XL_EINVALID, "a bad pack entry at %llu",
			       (unsigned long long)e->offset);
	if (e->offset >= RUN_OFFSET_MAX || e->len >= RUN_OFFSET_MAX - e->offset)
		return err_set(XL_ETOOBIG, "a synthesized pack over 1 TiB");
	/* an entry that does not start where the last ended starts a run */
	if (r->entries && r->next != e->offset && (ret = runs_close(r)))
		return ret;
	if (!r->entries) {
		r->first = e->offset;
		had = 0;
	}
	flags = (unsigned char)((e->sha256.algo ? RUN_SHA256 : 0) |
				(e->base.algo ? RUN_BASE : 0) |
				(e->data ? RUN_DATA : 0));
	crc[0] = (unsigned char)(e->crc >> 24);
	crc[1] = (unsigned char)(e->crc >> 16);
	crc[2] = (unsigned char)(e->crc >> 8);
	crc[3] = (unsigned char)e->crc;
	if ((ret = buf_add_varint(d, e->len)) || (ret = buf_add_varint(d, e->src)) ||
	    (ret = buf_addch(d, (int)e->hdr_len)) ||
	    (ret = buf_add(d, e->hdr, e->hdr_len)) || (ret = buf_addch(d, flags)) ||
	    (e->sha256.algo &&
	     (ret = buf_add(d, e->sha256.hash, e->sha256.algo->rawsz))) ||
	    (e->base.algo && (ret = buf_add(d, e->base.hash, e->base.algo->rawsz))) ||
	    (e->data && ((ret = buf_add_varint(d, e->data_len)) ||
			 (ret = buf_add(d, e->data, e->data_len)))) ||
	    (ret = buf_add(d, crc, 4))) {
		d->len = had;	/* the entry is not half in */
		return ret;
	}
	r->entries++;
	r->next = e->offset + e->len;
	if (r->entries >= CACHE_PACK1_CHUNK_ENTRIES ||
	    d->len >= CACHE_PACK1_CHUNK_BYTES)
		return runs_close(r);
	return 0;
}

/* One run as a row of pack `pack`.  Caller holds the lock. */
static int run_put(struct cache *cache, int64_t pack, uint64_t first,
		   const void *data, size_t len)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK1_CHUNK_PUT];

	sqlite3_bind_int64(st, 1, (sqlite3_int64)((uint64_t)pack <<
						  RUN_OFFSET_BITS | first));
	sqlite3_bind_blob(st, 2, data, (int)len, SQLITE_STATIC);
	return run(cache, ST_PACK1_CHUNK_PUT, "recording pack entries");
}

static int cache_pack1_runs_put_locked(struct cache *cache, int64_t pack,
				       struct cache_pack1_runs *r, int all)
{
	const unsigned char *p, *end;
	int ret = 0;

	if (!r->done.len && !(all && r->entries))
		return 0;
	if (pack < 0 || pack >= RUN_PACK_MAX)
		return err_set(XL_EINVALID, "cache %s: a bad pack id %lld",
			       cache->path, (long long)pack);
	if (all && (ret = runs_close(r)))
		return ret;
	p = (const unsigned char *)r->done.buf;
	end = p + r->done.len;
	/* (done is ours alone: first and len as memcpy'd in runs_close) */
	while (p < end && !ret) {
		uint64_t first, len;

		memcpy(&first, p, sizeof(first));
		memcpy(&len, p + sizeof(first), sizeof(len));
		p += sizeof(first) + sizeof(len);
		ret = run_put(cache, pack, first, p, (size_t)len);
		p += len;
	}
	buf_reset(&r->done);
	return ret;
}

int cache_pack1_runs_put(struct cache *cache, int64_t pack,
			 struct cache_pack1_runs *r, int all)
{
	int ret;

	if ((ret = lock(cache)))
		return ret;
	if (!cache->in_batch)
		ret = err_set(XL_EINVALID, "cache %s: pack entries outside a batch",
			      cache->path);
	else
		ret = cache_pack1_runs_put_locked(cache, pack, r, all);
	unlock(cache);
	return ret;
}

int cache_pack1_put_entry(struct cache *cache, int64_t pack,
			  const struct cache_pack1_entry *e)
{
	int ret;

	/* the runs say native names in the store's own length */
	if (pack < 0 || pack >= RUN_PACK_MAX ||
	    (e->sha256.algo && e->sha256.algo != cache->algo))
		return err_set(XL_EINVALID, "cache %s: a bad pack entry",
			       cache->path);
	if ((ret = lock(cache)))
		return ret;
	/* another pack's runs go first: runs are of one pack */
	if (cache->runs.entries && cache->run_pack != pack &&
	    (ret = run_flush(cache, 1)))
		goto out;
	cache->run_pack = pack;
	/* (a refused entry leaves the runs as they were) */
	if ((ret = cache_pack1_runs_add(&cache->runs, e))) {
		err_wrap("cache %s", cache->path);
		goto out;
	}
	ret = run_flush(cache, 0);
out:
	unlock(cache);
	return ret;
}

/*
 * The entries of run `row` (its key and bytes) that hold any byte of
 * [from, to), appended to *list; kept payloads go to `payloads`, their
 * places in data as offsets + 1 (the buffer may move as it grows).
 */
static int run_decode(struct cache *cache, uint64_t key, const unsigned char *p,
		      const unsigned char *end, uint64_t from, uint64_t to,
		      struct cache_pack1_entry **list, size_t *n, size_t *alloc,
		      struct buf *payloads)
{
	uint64_t offset = key & (RUN_OFFSET_MAX - 1);
	/* native names: the store's own */
	const struct hash_algo *algo = cache->algo;
	const ptrdiff_t rawsz = (ptrdiff_t)algo->rawsz;

	while (p < end) {
		struct cache_pack1_entry e;
		const unsigned char *crc;
		uint64_t data_len = 0;
		unsigned char flags;
		int ret;

		memset(&e, 0, sizeof(e));
		e.offset = offset;
		if (varint_get(&p, end, &e.len) || !e.len ||
		    e.len >= RUN_OFFSET_MAX - offset ||
		    varint_get(&p, end, &e.src) || p >= end ||
		    !(e.hdr_len = *p++) || e.hdr_len > sizeof(e.hdr) ||
		    (size_t)(end - p) < e.hdr_len + 1)
			goto bad;
		memcpy(e.hdr, p, e.hdr_len);
		p += e.hdr_len;
		flags = *p++;
		if ((flags & ~(RUN_SHA256 | RUN_BASE | RUN_DATA)) ||
		    (!(flags & RUN_SHA256) && (flags & (RUN_BASE | RUN_DATA))))
			goto bad;
		if (flags & RUN_SHA256) {
			if (end - p < rawsz)
				goto bad;
			oid_from_raw(&e.sha256, algo, p);
			p += rawsz;
		}
		if (flags & RUN_BASE) {
			if (end - p < rawsz)
				goto bad;
			oid_from_raw(&e.base, algo, p);
			p += rawsz;
		}
		if ((flags & RUN_DATA) &&
		    (varint_get(&p, end, &data_len) ||
		     data_len > (uint64_t)(end - p)))
			goto bad;
		if ((uint64_t)(end - p) < data_len + 4)
			goto bad;
		crc = p + data_len;
		e.crc = (uint32_t)crc[0] << 24 | (uint32_t)crc[1] << 16 |
			(uint32_t)crc[2] << 8 | crc[3];
		if (offset + e.len > from && offset < to) {
			if (flags & RUN_DATA) {
				e.data_len = (size_t)data_len;
				e.data = (const unsigned char *)(uintptr_t)(payloads->len + 1);
				if ((ret = buf_add(payloads, p, e.data_len)))
					return ret;
			}
			if (ARRAY_GROW(*list, *n, *alloc, 64))
				return err_set(XL_ENOMEM, "out of memory");
			(*list)[(*n)++] = e;
		}
		p = crc + 4;
		offset += e.len;
	}
	return 0;
bad:
	return err_set(XL_ECORRUPT, "cache %s: a bad run of pack entries at "
		       "%llu", cache->path, (unsigned long long)offset);
}

int cache_pack1_entries(struct cache *cache, int64_t pack, uint64_t from,
			uint64_t to, struct cache_pack1_entry **out, size_t *nr,
			struct buf *payloads)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK1_CHUNKS];
	struct cache_pack1_entry *list = NULL;
	size_t n = 0, alloc = 0;
	int ret;

	*out = NULL;
	*nr = 0;
	buf_reset(payloads);
	if (pack < 0 || pack >= RUN_PACK_MAX)
		return err_set(XL_EINVALID, "cache %s: pack %lld", cache->path,
			       (long long)pack);
	if (from > RUN_OFFSET_MAX - 1)
		from = RUN_OFFSET_MAX - 1;
	if (to > RUN_OFFSET_MAX - 1)
		to = RUN_OFFSET_MAX - 1;
	if ((ret = lock(cache)))
		return ret;
	sqlite3_bind_int64(st, 1, pack);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)from);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)to);
	while ((ret = step(cache, st, "reading pack entries")) == SQLITE_ROW) {
		const unsigned char *p = sqlite3_column_blob(st, 1);
		int len = sqlite3_column_bytes(st, 1);

		if (sqlite3_column_type(st, 1) != SQLITE_BLOB || len <= 0) {
			ret = err_set(XL_ECORRUPT, "cache %s: a bad run of pack "
				      "entries", cache->path);
			break;
		}
		if ((ret = run_decode(cache, (uint64_t)sqlite3_column_int64(st, 0),
				      p, p + len, from, to, &list, &n, &alloc,
				      payloads)))
			break;
	}
	for (size_t i = 0; i < n; i++)
		if (list[i].data)
			list[i].data = (const unsigned char *)payloads->buf +
				       ((uintptr_t)list[i].data - 1);
	sqlite3_reset(st);
	unlock(cache);
	if (ret != SQLITE_DONE) {
		free(list);
		return ret;
	}
	*out = list;
	*nr = n;
	return 0;
}

int cache_pack1_put_idx(struct cache *cache, int64_t pack, uint32_t chunk,
			const void *data, size_t len)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK1_IDX_PUT];
	int ret;

	if (len > CACHE_PACK1_IDX_CHUNK)
		return err_set(XL_EINVALID, "cache %s: an idx chunk of %zu bytes",
			       cache->path, len);
	if ((ret = lock(cache)))
		return ret;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)((uint64_t)pack << 32 | chunk));
	sqlite3_bind_blob(st, 2, data, (int)len, SQLITE_STATIC);
	ret = run(cache, ST_PACK1_IDX_PUT, "recording an idx");
	unlock(cache);
	return ret;
}

int cache_pack1_idx(struct cache *cache, int64_t pack, uint32_t chunk,
		    struct buf *out)
{
	sqlite3_stmt *st = cache->stmt[ST_PACK1_IDX_GET];
	int ret;

	buf_reset(out);
	if ((ret = lock(cache)))
		return ret;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)((uint64_t)pack << 32 | chunk));
	ret = step(cache, st, "reading an idx");
	if (ret == SQLITE_ROW) {
		int len = sqlite3_column_bytes(st, 0);

		ret = len > CACHE_PACK1_IDX_CHUNK ?
			err_set(XL_ECORRUPT, "cache %s: an idx chunk of %d bytes",
				cache->path, len) :
			buf_add(out, sqlite3_column_blob(st, 0), (size_t)len);
	} else if (ret == SQLITE_DONE) {
		ret = err_set(XL_ECORRUPT, "cache %s: idx chunk %u of pack %lld "
			      "is missing", cache->path, chunk, (long long)pack);
	}
	sqlite3_reset(st);
	unlock(cache);
	return ret;
}
