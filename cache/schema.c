/*
 * schema.c: the cache file itself: where it lives, its tables, and
 * whether it can be trusted.
 *
 * The schema, version 9 (PRAGMA user_version = 9), application id
 * 0x786c6673 "xlfs" (PRAGMA application_id), journal_mode WAL.
 *
 * Columns are named for the usual direction: a SHA-256 repository, and
 * the SHA-1 names of its objects.  A SHA-1 repository's store (meta
 * 'format' sha1, seen as the SHA-256 repository it will become) keeps
 * its own names in the columns named sha256 and their SHA-256 names in
 * those named sha1: one schema and one engine for both directions, and
 * the CHECKs say "the other algorithm's length" (the two add up to 52).
 * Files written before the other direction say length(sha1) = 20, the
 * same rule for a SHA-256 store.
 *
 *
 *   meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID
 *	'format'	the primary names' algorithm, hash_algo.name
 *	'settings'	the text last given to cache_check_settings()
 *	'damaged'	why cache_check() found the file bad: the next
 *			open sets the file aside
 *	'objects'	rows in objects and objects_recent, and those
 *	'untranslatable'  without a SHA-1 name, in decimal: changed in the transactions
 *			that change the rows (cache.c), so that counting
 *			is not a scan
 *
 *   objects(sha256 BLOB PRIMARY KEY,	32 raw bytes (20 for a SHA-1 store)
 *	     sha1 BLOB,			the other name: 20 raw bytes (32 for a
 *					SHA-1 store); NULL: untranslatable
 *	     type INTEGER NOT NULL,	Git's pack type code, 1..4
 *	     size256 INTEGER NOT NULL,	bytes of the stored form
 *	     size1 INTEGER,		bytes of the SHA-1 form; NULL with sha1
 *	     reason TEXT,		why untranslatable; NULL with a sha1
 *	     retry INTEGER NOT NULL) WITHOUT ROWID
 *					1: an untranslatable object whose refusal
 *					may not last (a reference was missing or
 *					unreadable): the next build looks again
 *   INDEX objects_sha1 ON objects(sha1)
 *   INDEX objects_retry ON objects(sha256) WHERE retry = 1
 *					(partial: holds only those rows, so the
 *					build finds them without a table scan)
 *
 *   objects_recent(...)		the same columns and CHECKs: the rows
 *   INDEX objects_recent_sha1		stored since the last fold, which
 *   INDEX objects_recent_retry		moves them into objects once they pass
 *					an eighth of it (cache_fold(), where
 *					cache.c says why).  A name is in one of
 *					the two tables at most; readers query
 *					both as one.
 *
 *   packs(checksum TEXT PRIMARY KEY,	pack trailer hash in hex
 *	   objects INTEGER NOT NULL) WITHOUT ROWID
 *
 *   gitlinks(tree BLOB, path BLOB,	tree name (primary format), entry path
 *	      commit256 BLOB NOT NULL,	the submodule commit as the tree names it
 *	      commit1 BLOB,		its SHA-1 name, NULL if unknown
 *	      PRIMARY KEY(tree, path)) WITHOUT ROWID
 *   INDEX gitlinks_commit256 ON gitlinks(commit256)
 *   INDEX gitlinks_commit1 ON gitlinks(commit1)
 *
 * The synthesized packs (xlate/pack1.c says what the bytes are): SHA-1
 * packs, or SHA-256 ones for a SHA-1 store:
 *
 *   packs1(id INTEGER PRIMARY KEY,
 *	    native TEXT NOT NULL,		the native pack's checksum hex
 *	    checksum BLOB NOT NULL,		the translated pack's trailer: 20
 *					bytes (32 for a SHA-1 store)
 *	    objects INTEGER NOT NULL,		entries in it
 *	    pack_size INTEGER NOT NULL,	bytes of the .pack
 *	    idx_size INTEGER NOT NULL)		bytes of the .idx
 *					(a handful of rows: found by a scan)
 *   pack1_chunks(key INTEGER PRIMARY KEY,	packs1.id << 40 | offset of its
 *		  entries BLOB NOT NULL)	first entry; then runs of entries,
 *					one after the other in the pack (so
 *					each starts where the last ended):
 *     len varint		its bytes
 *     src varint		native pack offset of what follows hdr
 *     hdr_len byte, hdr	the bytes that start the entry (1 to 42)
 *     flags byte		1: sha256 follows, the object whose translated
 *				form follows hdr (else the rest is native
 *				bytes); 2: base follows, and the delta that
 *				makes sha256's form from base's; 4: the
 *				payload (form or delta) follows, kept because
 *				it is small, so that a read copies it (else
 *				made from the objects when read)
 *     [sha256 N] [base N] [payload_len varint, payload]
 *				(N: 32, or 20 in a SHA-1 store: native names)
 *     crc 4 bytes		CRC32 of the entry's bytes, as in the .idx
 *				(big-endian)
 *					A few dozen entries a row (at most
 *					CACHE_PACK1_CHUNK_ENTRIES, or past
 *					CACHE_PACK1_CHUNK_BYTES): a row each
 *					cost more than laying the entry out,
 *					and a read wants its neighbours anyway.
 *					The readers check every field.
 *   pack1_idx(key INTEGER PRIMARY KEY,	packs1.id << 32 | chunk number
 *	       data BLOB NOT NULL)	the .idx, CACHE_PACK1_IDX_CHUNK bytes a row
 *					(rowid table: the rows are big)
 *
 *   ref_names(sha256 BLOB PRIMARY KEY,	what a ref (or its peeled tag) named
 *	       sha1 BLOB NOT NULL)	when the last build ended, and its
 *	       WITHOUT ROWID		SHA-1 name: a copy of those rows of
 *					objects, read whole by a fresh mount so
 *					that its first packed-refs costs one
 *					scan of a small table, not a descent of
 *					the big one per ref (a disk read each
 *					when cold).  Rewritten by every build;
 *					a row leaves when its object is refused
 *
 *   known(sha256 BLOB PRIMARY KEY,	an object the repository lacks, named by
 *	   sha1 BLOB NOT NULL)		the map (--map): its SHA-1 name, as the
 *	   WITHOUT ROWID		conversions of what refers to it used
 *					it, so that readers convert alike
 *					(and verify converts back).  Only the
 *					pairs used: a map exported from a
 *					full copy has every object
 *   INDEX known_sha1 ON known(sha1)
 *
 * WITHOUT ROWID makes the name the B-tree key: a lookup by SHA-256 is one
 * descent, and a lookup by SHA-1 is a descent of the index, whose entries
 * (sha1, sha256) then lead to the row.  Names are raw BLOBs, half the size
 * of hex and compared by memcmp, which is what makes prefix searches plain
 * range scans.  The CHECK constraints pin lengths, types and the
 * untranslatable invariants; PRAGMA quick_check verifies them, so a file
 * that passes it holds no row our readers would misparse (and the readers
 * check again anyway).
 *
 * Opening (cache_open) never writes to a file before knowing it is ours:
 *
 *   stat the path (to notice if someone replaces it while we decide)
 *   open it (READWRITE | CREATE | NOMUTEX), busy timeout, defensive mode
 *   read application_id and user_version
 *     both 0 and no tables: a new file: set WAL, create the schema in one
 *       BEGIN IMMEDIATE transaction (re-checking inside it, since another
 *       process may be creating it at the same moment)
 *     otherwise they must be ours and CACHE_SCHEMA_VERSION, or version 1
 *       to 7, migrated in place (migrate_v1: a column and an index; then
 *       migrate_add: the synthesized packs' tables, the ref names, the
 *       packs' entries in runs, the known pairs, the counts, the table
 *       of recent rows)
 *   journal_mode=WAL, quick_check(1) when asked (CACHE_OPEN_CHECK_ALL),
 *     the set of schema objects, meta 'format', no meta 'damaged' (left
 *     by a cache_check() that failed), then synchronous=NORMAL, the
 *     page cache, the map when asked (CACHE_OPEN_MAP), and every
 *     statement prepared
 *
 * A failure that says the file is bad (not a database, malformed, a
 * foreign or future file, a check failing) closes it, renames it and its
 * -wal/-shm to "<path>.corrupt" (and .corrupt-wal, .corrupt-shm),
 * replacing older ones, warns, and starts over with a fresh file.  A
 * failure that says nothing about the file (out of memory, cannot create
 * it, locked by another process past the busy timeout, I/O errors) is
 * returned as it is: moving a healthy cache aside because a disk was full
 * or a build held a lock would throw away hours of work.
 */
#include "cache_i.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)
/* CACHE_OPEN_MAP: all this sqlite maps (SQLITE_MAX_MMAP_SIZE, 2 GB) */
#define CACHE_MAP_BYTES 2147418112

/* How often cache_open() may find a bad file and move it aside. */
#define OPEN_ATTEMPTS 3

/*
 * The retry column and its index, shared by the schema and by the
 * migration from version 1 (where ALTER TABLE adds them).  A column
 * constraint, since ALTER TABLE cannot add a table constraint.
 */
#define RETRY_CHECK \
	"CHECK (typeof(retry) = 'integer' AND retry IN (0, 1) AND " \
	"(retry = 0 OR sha1 IS NULL))"
#define RETRY_INDEX \
	"CREATE INDEX objects_retry ON objects(sha256) WHERE retry = 1;"

/* A table of rows: objects, and objects_recent alike. */
#define OBJECTS_TABLE(name) \
	"CREATE TABLE " name "(" \
	"sha256 BLOB PRIMARY KEY NOT NULL, " \
	"sha1 BLOB, " \
	"type INTEGER NOT NULL, " \
	"size256 INTEGER NOT NULL, " \
	"size1 INTEGER, " \
	"reason TEXT, " \
	"retry INTEGER NOT NULL DEFAULT 0 " RETRY_CHECK ", " \
	"CHECK (typeof(sha256) = 'blob' AND length(sha256) IN (20, 32)), " \
	"CHECK (sha1 IS NULL OR (typeof(sha1) = 'blob' AND " \
	"length(sha1) + length(sha256) = 52)), " \
	"CHECK (typeof(type) = 'integer' AND type BETWEEN 1 AND 4), " \
	"CHECK (typeof(size256) = 'integer' AND size256 >= 0), " \
	"CHECK (CASE WHEN sha1 IS NULL THEN size1 IS NULL " \
	"ELSE typeof(size1) = 'integer' AND size1 >= 0 AND reason IS NULL END), " \
	"CHECK (reason IS NULL OR typeof(reason) = 'text')" \
	") WITHOUT ROWID;"

/* The recent rows' table: the schema's, and version 7's migration. */
#define RECENT_SCHEMA \
	OBJECTS_TABLE("objects_recent") \
	"CREATE INDEX objects_recent_sha1 ON objects_recent(sha1);" \
	"CREATE INDEX objects_recent_retry ON objects_recent(sha256) " \
	"WHERE retry = 1;"

/* The table of synthesized packs, under a name (see version 8's migration). */
#define PACKS1_TABLE(name) \
	"CREATE TABLE " name "(" \
	"id INTEGER PRIMARY KEY, " \
	"native TEXT NOT NULL, " \
	"checksum BLOB NOT NULL, " \
	"objects INTEGER NOT NULL, " \
	"pack_size INTEGER NOT NULL, " \
	"idx_size INTEGER NOT NULL, " \
	"CHECK (typeof(native) = 'text' AND typeof(checksum) = 'blob' AND " \
	"length(checksum) IN (20, 32) AND typeof(objects) = 'integer' AND " \
	"typeof(pack_size) = 'integer' AND typeof(idx_size) = 'integer'));"

/* The synthesized packs' tables: the schema's, and version 2's migration. */
#define PACK1_SCHEMA \
	PACKS1_TABLE("packs1") \
	"CREATE TABLE pack1_chunks(" \
	"key INTEGER PRIMARY KEY, " \
	"entries BLOB NOT NULL " \
	"CHECK (typeof(entries) = 'blob' AND length(entries) > 0));" \
	"CREATE TABLE pack1_idx(" \
	"key INTEGER PRIMARY KEY, " \
	"data BLOB NOT NULL CHECK (typeof(data) = 'blob'));"

/*
 * Version 4 kept a row per pack entry; 5 keeps runs of them.  The
 * layouts are dropped, not converted: the next build lays the packs out
 * again (a 2-to-5 migration has no pack1_entries to drop).
 */
#define PACK1_CHUNKS_MIGRATION \
	"DROP TABLE IF EXISTS pack1_entries;" \
	"DELETE FROM packs1;" \
	"DELETE FROM pack1_idx;" \
	"CREATE TABLE IF NOT EXISTS pack1_chunks(" \
	"key INTEGER PRIMARY KEY, " \
	"entries BLOB NOT NULL " \
	"CHECK (typeof(entries) = 'blob' AND length(entries) > 0));"

/*
 * Version 8 to 9: a SHA-1 store's packs are SHA-256 packs, whose
 * trailers are 32 bytes.  A CHECK cannot be altered, so the table is
 * made again with its rows (a handful: one per native pack).
 */
#define PACKS1_CHECK_MIGRATION \
	PACKS1_TABLE("packs1_new") \
	"INSERT INTO packs1_new SELECT id, native, checksum, objects, " \
	"pack_size, idx_size FROM packs1;" \
	"DROP TABLE packs1;" \
	"ALTER TABLE packs1_new RENAME TO packs1;"

/* The ref names' table: the schema's, and version 3's migration. */
#define REF_NAMES_SCHEMA \
	"CREATE TABLE ref_names(" \
	"sha256 BLOB PRIMARY KEY NOT NULL, " \
	"sha1 BLOB NOT NULL, " \
	"CHECK (typeof(sha256) = 'blob' AND length(sha256) IN (20, 32) AND " \
	"typeof(sha1) = 'blob' AND length(sha1) + length(sha256) = 52)" \
	") WITHOUT ROWID;"

/* The map's pairs in use: the schema's, and version 5's migration. */
/* Version 6 to 7: the counts kept in meta, made by a scan once. */
#define COUNTS_MIGRATION \
	"INSERT OR REPLACE INTO meta(key, value) " \
	"SELECT 'objects', CAST(count(*) AS TEXT) FROM objects;" \
	"INSERT OR REPLACE INTO meta(key, value) " \
	"SELECT 'untranslatable', CAST(count(*) - count(sha1) AS TEXT) " \
	"FROM objects;"

#define KNOWN_SCHEMA \
	"CREATE TABLE known(" \
	"sha256 BLOB PRIMARY KEY NOT NULL, " \
	"sha1 BLOB NOT NULL, " \
	"CHECK (typeof(sha256) = 'blob' AND length(sha256) IN (20, 32) AND " \
	"typeof(sha1) = 'blob' AND length(sha1) + length(sha256) = 52)" \
	") WITHOUT ROWID;" \
	"CREATE INDEX known_sha1 ON known(sha1);"

/*
 * The schema, run once on an empty file inside a transaction.  The
 * text is constant: nothing here comes from data.
 */
static const char schema_sql[] =
	"CREATE TABLE meta("
	"key TEXT PRIMARY KEY NOT NULL, "
	"value TEXT NOT NULL) WITHOUT ROWID;"
	OBJECTS_TABLE("objects")
	CACHE_OBJECTS_SHA1_INDEX ";"
	RETRY_INDEX
	RECENT_SCHEMA
	"CREATE TABLE packs("
	"checksum TEXT PRIMARY KEY NOT NULL, "
	"objects INTEGER NOT NULL, "
	"CHECK (typeof(checksum) = 'text' AND typeof(objects) = 'integer')"
	") WITHOUT ROWID;"
	"CREATE TABLE gitlinks("
	"tree BLOB NOT NULL, "
	"path BLOB NOT NULL, "
	"commit256 BLOB NOT NULL, "
	"commit1 BLOB, "
	"PRIMARY KEY (tree, path), "
	"CHECK (typeof(tree) = 'blob' AND length(tree) IN (20, 32)), "
	"CHECK (typeof(path) = 'blob' AND length(path) > 0), "
	"CHECK (typeof(commit256) = 'blob' AND length(commit256) IN (20, 32)), "
	"CHECK (commit1 IS NULL OR "
	"(typeof(commit1) = 'blob' AND "
	"length(commit1) + length(commit256) = 52))"
	") WITHOUT ROWID;"
	"CREATE INDEX gitlinks_commit256 ON gitlinks(commit256);"
	"CREATE INDEX gitlinks_commit1 ON gitlinks(commit1);"
	PACK1_SCHEMA
	REF_NAMES_SCHEMA
	KNOWN_SCHEMA
	COUNTS_MIGRATION
	"PRAGMA application_id = " STR(CACHE_APP_ID) ";"
	"PRAGMA user_version = " STR(CACHE_SCHEMA_VERSION) ";";

/*
 * Everything sqlite_schema may list, sorted by name.  A file with a
 * trigger, a view or an extra index is not one we wrote: a trigger in
 * particular would run its own SQL on our inserts.
 */
static const char *const schema_objects[][2] = {
	{ "table", "gitlinks" },
	{ "index", "gitlinks_commit1" },
	{ "index", "gitlinks_commit256" },
	{ "table", "known" },
	{ "index", "known_sha1" },
	{ "table", "meta" },
	{ "table", "objects" },
	{ "table", "objects_recent" },
	{ "index", "objects_recent_retry" },
	{ "index", "objects_recent_sha1" },
	{ "index", "objects_retry" },
	{ "index", "objects_sha1" },
	{ "table", "pack1_chunks" },
	{ "table", "pack1_idx" },
	{ "table", "packs" },
	{ "table", "packs1" },
	{ "table", "ref_names" },
};
#define SCHEMA_OBJECTS (sizeof(schema_objects) / sizeof(schema_objects[0]))

int cache_db_err(struct cache *cache, int rc, const char *what)
{
	int code;

	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		code = XL_ENOMEM;
		break;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		code = XL_ECORRUPT;
		break;
	default:
		code = XL_EIO;
	}
	return err_set(code, "cache %s: %s: %s", cache->path, what,
		       cache->db ? sqlite3_errmsg(cache->db) : sqlite3_errstr(rc));
}

/* A result code that condemns the file rather than the circumstances. */
static int rc_means_bad_file(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_FORMAT:
		return 1;
	}
	return 0;
}

/*
 * During the checks: sqlite said `rc` while doing `what`.  A bad-file
 * code becomes a verdict (1, with the reason in `why`); anything else an
 * error.
 */
static int check_failed(struct cache *cache, int rc, const char *what,
			struct buf *why)
{
	if (rc_means_bad_file(rc)) {
		buf_reset(why);
		if (buf_addf(why, "%s: %s", what, sqlite3_errmsg(cache->db)))
			return XL_ENOMEM;
		return 1;
	}
	return cache_db_err(cache, rc, what);
}

/*
 * Run fixed SQL (no parameters) that yields at most one row, and take
 * its first column as an integer (`num`) or text (`text`); either may be
 * NULL.  *found tells whether there was a row.  Returns a sqlite code.
 */
static int query_one(struct cache *cache, const char *sql, int64_t *num,
		     struct buf *text, int *found)
{
	sqlite3_stmt *st;
	int rc;

	*found = 0;
	rc = sqlite3_prepare_v2(cache->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = 1;
		if (num)
			*num = sqlite3_column_int64(st, 0);
		if (text) {
			const unsigned char *t = sqlite3_column_text(st, 0);

			buf_reset(text);
			if (t && buf_add(text, t, sqlite3_column_bytes(st, 0)))
				rc = SQLITE_NOMEM;
		}
		if (rc == SQLITE_ROW)
			rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	/* keep the step's error: finalize would repeat it, or lose it */
	if (rc == SQLITE_OK)
		rc = sqlite3_finalize(st);
	else
		sqlite3_finalize(st);
	return rc;
}

static int exec(struct cache *cache, const char *sql)
{
	return sqlite3_exec(cache->db, sql, NULL, NULL, NULL);
}

static void finalize_all(struct cache *cache)
{
	for (int i = 0; i < ST__COUNT; i++) {
		sqlite3_finalize(cache->stmt[i]);
		cache->stmt[i] = NULL;
	}
}

static void db_close(struct cache *cache)
{
	finalize_all(cache);
	/* with every statement finalized, close cannot fail with BUSY */
	sqlite3_close(cache->db);
	cache->db = NULL;
	cache->in_batch = 0;
}

static int db_open(struct cache *cache)
{
	int rc = sqlite3_open_v2(cache->path, &cache->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					 SQLITE_OPEN_NOMUTEX,
				 NULL);

	if (rc != SQLITE_OK) {
		int ret = err_set((rc & 0xff) == SQLITE_NOMEM ? XL_ENOMEM : XL_EIO,
				  "cannot open cache %s: %s", cache->path,
				  cache->db ? sqlite3_errmsg(cache->db)
					    : sqlite3_errstr(rc));

		sqlite3_close(cache->db);
		cache->db = NULL;
		return ret;
	}
	sqlite3_extended_result_codes(cache->db, 1);
	sqlite3_busy_timeout(cache->db, CACHE_BUSY_TIMEOUT_MS);
	/*
	 * The file is untrusted input: no writable schema, no functions
	 * run from inside it (views, triggers, defaults).
	 */
	sqlite3_db_config(cache->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(cache->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	return 0;
}

/*
 * The header fields and the number of schema objects, from one snapshot:
 * read one at a time, they could straddle another process's creation of
 * the schema (no id yet, then tables) and make a good file look foreign.
 * Returns 0, 1 (bad file, reason in `why`) or a negative error.
 */
static int read_header(struct cache *cache, int64_t *app, int64_t *version,
		       int64_t *tables, struct buf *why)
{
	int rc, ret = 0, found;

	if ((rc = exec(cache, "BEGIN")) != SQLITE_OK)
		return check_failed(cache, rc, "reading the header", why);
	if ((rc = query_one(cache, "PRAGMA application_id", app, NULL,
			    &found)) == SQLITE_OK &&
	    (rc = query_one(cache, "PRAGMA user_version", version, NULL,
			    &found)) == SQLITE_OK &&
	    (rc = query_one(cache, "SELECT count(*) FROM sqlite_schema",
			    tables, NULL, &found)) == SQLITE_OK)
		rc = exec(cache, "COMMIT");
	/* the verdict first: ROLLBACK would replace sqlite's message */
	if (rc != SQLITE_OK)
		ret = check_failed(cache, rc, "reading the header", why);
	if (!sqlite3_get_autocommit(cache->db))
		exec(cache, "ROLLBACK");
	return ret;
}

/*
 * Switch to WAL (a no-op, needing no lock, once the file is in WAL
 * mode).  Switching needs an exclusive lock, and sqlite gives up on it
 * at once, without its busy handler, when waiting could deadlock (we
 * hold a shared lock while another connection waits to write, as when
 * two processes create the file together): so we wait here instead,
 * for as long as the busy timeout.
 */
static int set_wal(struct cache *cache, struct buf *why)
{
	struct buf mode = BUF_INIT;
	int rc, found, ret = 0;

	for (int waited = 0;; waited += 10) {
		rc = query_one(cache, "PRAGMA journal_mode = WAL", NULL, &mode,
			       &found);
		if ((rc & 0xff) != SQLITE_BUSY || waited >= CACHE_BUSY_TIMEOUT_MS)
			break;
		usleep(10 * 1000);
	}
	if (rc != SQLITE_OK)
		ret = check_failed(cache, rc, "setting WAL mode", why);
	else if (strcmp(mode.buf, "wal"))
		ret = err_set(XL_EIO, "cache %s: cannot use WAL mode (got \"%s\")",
			      cache->path, mode.buf);
	buf_release(&mode);
	return ret;
}

/*
 * Give an empty file our schema.  Another process may be doing the same:
 * BEGIN IMMEDIATE serialises us, and whoever comes second finds the
 * tables there and leaves them (the later checks then judge them).
 */
static int create_schema(struct cache *cache, struct buf *why)
{
	int64_t version = 0, tables = 0;
	int rc, ret, found;
	sqlite3_stmt *st;

	/* the journal mode cannot change inside a transaction */
	if ((ret = set_wal(cache, why)))
		return ret;
	if ((rc = exec(cache, "BEGIN IMMEDIATE")) != SQLITE_OK)
		return check_failed(cache, rc, "creating the schema", why);
	if ((rc = query_one(cache, "PRAGMA user_version", &version, NULL,
			    &found)) != SQLITE_OK ||
	    (rc = query_one(cache, "SELECT count(*) FROM sqlite_schema",
			    &tables, NULL, &found)) != SQLITE_OK)
		goto fail;
	if (version || tables) {
		exec(cache, "ROLLBACK");
		return 0;
	}
	if ((rc = exec(cache, schema_sql)) != SQLITE_OK)
		goto fail;
	rc = sqlite3_prepare_v2(cache->db,
				"INSERT INTO meta(key, value) VALUES ('format', ?1)",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(st, 1, cache->algo->name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		goto fail;
	if ((rc = exec(cache, "COMMIT")) != SQLITE_OK)
		goto fail;
	return 0;
fail:
	rc = check_failed(cache, rc, "creating the schema", why);
	exec(cache, "ROLLBACK");
	return rc;
}

/*
 * Version 1 to 2: add the retry column and its index.  Version 1 kept
 * every refusal for good, including those for a reference that was only
 * missing at the time (a shallow clone, an object still to come): all
 * of its refusals are marked retry, so the next build looks at each once
 * more and keeps for good only those that still fail for good.  Done in
 * one IMMEDIATE transaction, re-reading the version inside it, since
 * another process may be migrating the same file.  Returns 0, 1 (bad
 * file, reason in `why`) or a negative error.
 */
static int migrate_v1(struct cache *cache, struct buf *why)
{
	int64_t version = 0;
	int rc, found;

	if ((rc = exec(cache, "BEGIN IMMEDIATE")) != SQLITE_OK)
		return check_failed(cache, rc, "migrating from version 1", why);
	if ((rc = query_one(cache, "PRAGMA user_version", &version, NULL,
			    &found)) != SQLITE_OK)
		goto fail;
	if (version != 1) {
		exec(cache, "ROLLBACK");
		return 0;	/* someone else did it; the checks judge it */
	}
	rc = exec(cache,
		  "ALTER TABLE objects ADD COLUMN retry INTEGER NOT NULL "
		  "DEFAULT 0 " RETRY_CHECK ";"
		  RETRY_INDEX
		  "UPDATE objects SET retry = 1 WHERE sha1 IS NULL;"
		  "PRAGMA user_version = 2;");
	if (rc != SQLITE_OK)
		goto fail;
	if ((rc = exec(cache, "COMMIT")) != SQLITE_OK)
		goto fail;
	return 0;
fail:
	rc = check_failed(cache, rc, "migrating from version 1", why);
	exec(cache, "ROLLBACK");
	return rc;
}

/*
 * Version `from` to from + 1 by running `sql`: 2 to 3 adds the
 * synthesized packs' tables (the next build lays the packs out); 3 to 4
 * the ref names (the next build fills it); 4 to 5 keeps pack entries in
 * runs, and drops the layouts; 5 to 6 adds the known pairs (a cache
 * built with a map names nothing the old way that this one would name
 * otherwise: its rows stay right); 6 to 7 keeps the counts in meta;
 * 7 to 8 adds the table of recent rows (empty: every row is already in
 * objects); 8 to 9 lets packs1 hold SHA-256 trailers.  One IMMEDIATE
 * transaction, as migrate_v1.
 */
static int migrate_add(struct cache *cache, int64_t from, const char *sql,
		       struct buf *why)
{
	char what[64], bump[64];
	int64_t version = 0;
	int rc, found;

	snprintf(what, sizeof(what), "migrating from version %lld",
		 (long long)from);
	snprintf(bump, sizeof(bump), "PRAGMA user_version = %lld;",
		 (long long)from + 1);
	if ((rc = exec(cache, "BEGIN IMMEDIATE")) != SQLITE_OK)
		return check_failed(cache, rc, what, why);
	if ((rc = query_one(cache, "PRAGMA user_version", &version, NULL,
			    &found)) != SQLITE_OK)
		goto fail;
	if (version != from) {
		exec(cache, "ROLLBACK");
		return 0;
	}
	if ((rc = exec(cache, sql)) != SQLITE_OK ||
	    (rc = exec(cache, bump)) != SQLITE_OK ||
	    (rc = exec(cache, "COMMIT")) != SQLITE_OK)
		goto fail;
	return 0;
fail:
	rc = check_failed(cache, rc, what, why);
	exec(cache, "ROLLBACK");
	return rc;
}

/* A verdict: the file is bad, for the printf-style reason.  Returns 1. */
static int bad(struct buf *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int bad(struct buf *why, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	buf_reset(why);
	return buf_addstr(why, line) ? XL_ENOMEM : 1;
}

int cache_quick_check(struct cache *cache, struct buf *why)
{
	struct buf text = BUF_INIT;
	int rc, found, ret;

	rc = query_one(cache, "PRAGMA quick_check(1)", NULL, &text, &found);
	if (rc != SQLITE_OK)
		ret = check_failed(cache, rc, "quick_check", why);
	else if (!found || strcmp(text.buf, "ok"))
		ret = bad(why, "quick_check: %s", found ? text.buf : "no answer");
	else
		ret = 0;
	/* sqlite's report has lines: one line, for logs and status */
	for (size_t i = 0; ret == 1 && i < why->len; i++)
		if (why->buf[i] == '\n')
			why->buf[i] = ' ';
	buf_release(&text);
	return ret;
}

/* Is the set of schema objects exactly ours? */
static int check_schema_objects(struct cache *cache, struct buf *why)
{
	sqlite3_stmt *st;
	size_t n = 0;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(cache->db,
				"SELECT type, name FROM sqlite_schema ORDER BY name",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return check_failed(cache, rc, "reading the schema", why);
	/* both lists sorted by name: walk them side by side */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		int cmp;

		if (!type || !name)
			type = name = "";
		cmp = n < SCHEMA_OBJECTS ? strcmp(name, schema_objects[n][1]) : -1;
		if (cmp > 0) {
			ret = bad(why, "%s \"%s\" is missing from the schema",
				  schema_objects[n][0], schema_objects[n][1]);
			break;
		}
		if (cmp < 0 || strcmp(type, schema_objects[n][0])) {
			ret = bad(why, "unexpected %s \"%s\" in the schema",
				  type, name);
			break;
		}
		n++;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = check_failed(cache, rc, "reading the schema", why);
	else if (!ret && n != SCHEMA_OBJECTS)
		ret = bad(why, "%s \"%s\" is missing from the schema",
			  schema_objects[n][0], schema_objects[n][1]);
	sqlite3_finalize(st);
	return ret;
}

static int prepare_all(struct cache *cache, struct buf *why)
{
	for (int i = 0; i < ST__COUNT; i++) {
		int rc = sqlite3_prepare_v3(cache->db, cache_stmt_sql[i], -1,
					    SQLITE_PREPARE_PERSISTENT,
					    &cache->stmt[i], NULL);

		if (rc == SQLITE_OK)
			continue;
		/* "no such table/column": a schema we did not write */
		if ((rc & 0xff) == SQLITE_ERROR) {
			buf_reset(why);
			if (buf_addf(why, "schema mismatch: %s",
				     sqlite3_errmsg(cache->db)))
				return XL_ENOMEM;
			return 1;
		}
		return check_failed(cache, rc, "preparing statements", why);
	}
	return 0;
}

/*
 * Decide about the file just opened.  Returns 0 (good, statements
 * prepared), 1 (bad, with a one-line reason in `why`), or a negative
 * error that says nothing about the file.
 */
static int check_file(struct cache *cache, struct buf *why)
{
	int64_t app = 0, version = 0, tables = 0;
	struct buf text = BUF_INIT;
	int rc, ret, found;

	if ((ret = read_header(cache, &app, &version, &tables, why)))
		return ret;
	if (!app && !version) {
		if (tables)
			return bad(why, "not an xlatefs cache (no application "
				   "id, %lld schema objects)", (long long)tables);
		if ((ret = create_schema(cache, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (app != CACHE_APP_ID)
		return bad(why, "not an xlatefs cache (application id 0x%08x)",
			   (unsigned int)(uint32_t)app);
	if (version == 1) {
		/* the journal mode cannot change inside a transaction */
		if ((ret = set_wal(cache, why)) || (ret = migrate_v1(cache, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (version == 2) {
		if ((ret = set_wal(cache, why)) ||
		    (ret = migrate_add(cache, 2, PACK1_SCHEMA, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (version == 3) {
		if ((ret = set_wal(cache, why)) ||
		    (ret = migrate_add(cache, 3, REF_NAMES_SCHEMA, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (version == 4) {
		if ((ret = set_wal(cache, why)) ||
		    (ret = migrate_add(cache, 4, PACK1_CHUNKS_MIGRATION, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (version == 5) {
		if ((ret = set_wal(cache, why)) ||
		    (ret = migrate_add(cache, 5, KNOWN_SCHEMA, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (version == 6) {
		if ((ret = set_wal(cache, why)) ||
		    (ret = migrate_add(cache, 6, COUNTS_MIGRATION, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (version == 7) {
		if ((ret = set_wal(cache, why)) ||
		    (ret = migrate_add(cache, 7, RECENT_SCHEMA, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (version == 8) {
		if ((ret = set_wal(cache, why)) ||
		    (ret = migrate_add(cache, 8, PACKS1_CHECK_MIGRATION, why)) ||
		    (ret = read_header(cache, &app, &version, &tables, why)))
			return ret;
	}
	if (version != CACHE_SCHEMA_VERSION)
		return bad(why, "schema version %lld, this xlatefs uses %d",
			   (long long)version, CACHE_SCHEMA_VERSION);

	/* ours, so it was made in WAL mode; but make sure */
	if ((ret = set_wal(cache, why)))
		goto out;

	/* a whole-file check costs time in proportion to the file */
	if ((cache->flags & CACHE_OPEN_CHECK_ALL) &&
	    (ret = cache_quick_check(cache, why)))
		goto out;

	if ((ret = check_schema_objects(cache, why)))
		goto out;

	rc = query_one(cache, "SELECT value FROM meta WHERE key = 'format'",
		       NULL, &text, &found);
	if (rc != SQLITE_OK) {
		ret = check_failed(cache, rc, "reading meta", why);
		goto out;
	}
	if (!found) {
		ret = bad(why, "no object format recorded");
		goto out;
	}
	if (strcmp(text.buf, cache->algo->name)) {
		ret = bad(why, "made for %s objects, not %s", text.buf,
			  cache->algo->name);
		goto out;
	}
	/*
	 * Before the other direction, `git xlate` made a SHA-1 store and
	 * then refused to build it: its tables say length(sha1) = 20 and
	 * would refuse every SHA-256 name.  It holds nothing worth keeping.
	 */
	if (cache->algo == &hash_sha1) {
		rc = query_one(cache, "SELECT sql FROM sqlite_schema "
			       "WHERE type = 'table' AND name = 'objects'",
			       NULL, &text, &found);
		if (rc != SQLITE_OK) {
			ret = check_failed(cache, rc, "reading the schema", why);
			goto out;
		}
		if (found && strstr(text.buf, "length(sha1) = 20")) {
			ret = bad(why, "a SHA-1 store from before the other "
				  "direction: it cannot hold SHA-256 names");
			goto out;
		}
	}
	/* a check of the whole file failed since the last open */
	rc = query_one(cache, "SELECT value FROM meta WHERE key = 'damaged'",
		       NULL, &text, &found);
	if (rc != SQLITE_OK) {
		ret = check_failed(cache, rc, "reading meta", why);
		goto out;
	}
	if (found) {
		ret = bad(why, "marked damaged: %s", text.buf);
		goto out;
	}

	/*
	 * Durable at every commit against a crash of the process (the WAL
	 * is written before COMMIT returns); a power loss may lose the last
	 * batches, never consistency.
	 */
	if ((rc = exec(cache, "PRAGMA synchronous = NORMAL")) != SQLITE_OK ||
	    (rc = exec(cache, "PRAGMA cache_size = -"
			      STR(CACHE_PAGE_CACHE_KIB))) != SQLITE_OK ||
	    ((cache->flags & CACHE_OPEN_MAP) &&
	     (rc = exec(cache, "PRAGMA mmap_size = " STR(CACHE_MAP_BYTES))) != SQLITE_OK)) {
		ret = check_failed(cache, rc, "setting pragmas", why);
		goto out;
	}
	ret = prepare_all(cache, why);
out:
	buf_release(&text);
	return ret;
}

static int rename_or_clear(const char *from, const char *to)
{
	if (!rename(from, to))
		return 0;
	if (errno != ENOENT)
		return -1;
	/* no such file: make sure no stale one is left beside the copy */
	if (unlink(to) && errno != ENOENT)
		return -1;
	return 0;
}

/*
 * Move the bad file aside, unless someone replaced it while we looked
 * (another process that found it bad too): then there is nothing to do
 * but try again.  The -wal goes first, so that no one can open the fresh
 * file with the old file's log beside it.
 */
static int move_aside(struct cache *cache, const struct stat *before,
		      const char *why)
{
	static const char *const suffix[] = { "-wal", "-shm", "" };
	struct buf from = BUF_INIT, to = BUF_INIT, msg = BUF_INIT;
	struct stat now;
	int ret = 0;

	if (before && (stat(cache->path, &now) || now.st_dev != before->st_dev ||
		       now.st_ino != before->st_ino))
		return 0;
	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		buf_reset(&from);
		buf_reset(&to);
		if (buf_addf(&from, "%s%s", cache->path, suffix[i]) ||
		    buf_addf(&to, "%s.corrupt%s", cache->path, suffix[i])) {
			ret = XL_ENOMEM;
			goto out;
		}
		if (*suffix[i]) {
			if (rename_or_clear(from.buf, to.buf))
				goto fail;
		} else if (rename(from.buf, to.buf)) {
			if (errno == ENOENT)
				goto out;	/* someone else moved it: retry */
			goto fail;
		}
	}
	if (cache->warn) {
		if (buf_addf(&msg, "cache %s is unusable (%s); moved it to "
			     "%s.corrupt and starting an empty one",
			     cache->path, why, cache->path)) {
			ret = XL_ENOMEM;
			goto out;
		}
		cache->warn(cache->warn_data, msg.buf);
	}
	goto out;
fail:
	ret = err_errno("cache %s is unusable (%s), and moving it aside to "
			"%s failed", cache->path, why, to.buf);
out:
	buf_release(&from);
	buf_release(&to);
	buf_release(&msg);
	return ret;
}

int cache_open(struct cache **out, const char *path,
	       const struct hash_algo *algo, unsigned flags,
	       cache_warn_fn warn, void *warn_data)
{
	struct buf why = BUF_INIT;
	pthread_mutexattr_t attr;
	struct cache *cache;
	int ret = 0;

	*out = NULL;
	if (!path || !*path || !algo)
		return err_set(XL_EINVALID, "cache_open: no path or format");
	cache = calloc(1, sizeof(*cache));
	if (!cache || !(cache->path = strdup(path))) {
		free(cache);
		return err_set(XL_ENOMEM, "out of memory");
	}
	cache->algo = algo;
	cache->other = hash_algo_other(algo);
	cache->flags = flags;
	cache->warn = warn;
	cache->warn_data = warn_data;
	cache->serial = cache_next_serial();
	buf_init(&cache->scratch);
	cache_pack1_runs_init(&cache->runs);
	if (pthread_mutexattr_init(&attr) ||
	    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK) ||
	    pthread_mutex_init(&cache->lock, &attr)) {
		free(cache->path);
		free(cache);
		return err_set(XL_ENOMEM, "cannot create the cache mutex");
	}
	pthread_mutexattr_destroy(&attr);

	for (int attempt = 0;; attempt++) {
		struct stat st;
		int existed = !stat(path, &st);

		if ((ret = db_open(cache)))
			break;
		ret = check_file(cache, &why);
		if (ret <= 0)
			break;
		db_close(cache);
		if (attempt + 1 == OPEN_ATTEMPTS) {
			ret = err_set(XL_EIO, "cache %s is still unusable after "
				      "moving it aside: %s", path, why.buf);
			break;
		}
		if ((ret = move_aside(cache, existed ? &st : NULL, why.buf)))
			break;
	}
	buf_release(&why);
	if (ret) {
		cache_close(cache);
		return ret;
	}
	*out = cache;
	return 0;
}

int cache_set_page_cache(struct cache *cache, unsigned kib)
{
	char sql[64];
	int rc;

	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%u", kib < 64 ? 64 : kib);
	if ((rc = exec(cache, sql)) != SQLITE_OK)
		return err_set(XL_EIO, "%s: setting the page cache: %s",
			       cache->path, sqlite3_errstr(rc));
	return 0;
}

void cache_release_memory(struct cache *cache)
{
	/* from inside its own walk callback: nothing let go */
	if (pthread_mutex_lock(&cache->lock))
		return;
	sqlite3_db_release_memory(cache->db);
	pthread_mutex_unlock(&cache->lock);
}

int cache_checkpoint_aside(struct cache *cache)
{
	sqlite3 *db = NULL;
	int rc, ret = 0;

	/* not SQLITE_OPEN_CREATE: the file is there, or something is wrong */
	rc = sqlite3_open_v2(cache->path, &db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
				       NULL);
	/* a connection knows the file is in WAL mode once it has read it */
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "PRAGMA schema_version", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_wal_checkpoint_v2(db, NULL,
					       SQLITE_CHECKPOINT_PASSIVE,
					       NULL, NULL);
	/* busy: someone else checkpoints, or a reader holds old pages */
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY &&
	    (rc & 0xff) != SQLITE_LOCKED)
		ret = err_set(XL_EIO, "cache %s: checkpoint: %s", cache->path,
			      db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	sqlite3_close(db);
	return ret;
}

void cache_close(struct cache *cache)
{
	if (!cache)
		return;
	/* an open batch is rolled back by sqlite3_close */
	if (cache->db)
		db_close(cache);
	pthread_mutex_destroy(&cache->lock);
	buf_release(&cache->scratch);
	cache_pack1_runs_release(&cache->runs);
	free(cache->path);
	free(cache);
}

const char *cache_path(const struct cache *cache)
{
	return cache->path;
}

const struct hash_algo *cache_other(const struct cache *cache)
{
	return cache->other;
}

/* ---- where the file lives ------------------------------------------- */

static int is_writable_dir(const char *dir)
{
	struct stat st;

	return !stat(dir, &st) && S_ISDIR(st.st_mode) && !access(dir, W_OK);
}

/* mkdir -p, new directories private to the user. */
static int make_dirs(struct buf *path)
{
	for (size_t i = 1; i <= path->len; i++) {
		char c = path->buf[i];

		if (c != '/' && c != '\0')
			continue;
		path->buf[i] = '\0';
		if (mkdir(path->buf, 0700) && errno != EEXIST) {
			int ret = err_errno("cannot create %s", path->buf);

			path->buf[i] = c;
			return ret;
		}
		path->buf[i] = c;
	}
	if (!is_writable_dir(path->buf))
		return err_errno("cache directory %s is not writable", path->buf);
	return 0;
}

int cache_default_path(const char *repo_dir, struct buf *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	struct buf dir = BUF_INIT;
	const char *base;
	unsigned int mdlen = 0;
	int ret;

	buf_reset(out);
	/*
	 * Beside the repository's own files when we may write there.  Not
	 * under objects/: `git clone --local` hard-links everything there,
	 * and two repositories would then share one cache file.
	 */
	if ((ret = buf_addstr(&dir, repo_dir)))
		return ret;
	if (is_writable_dir(dir.buf)) {
		ret = buf_addf(out, "%s/xlatefs-cache.sqlite", dir.buf);
		goto out;
	}

	/* $XDG_CACHE_HOME must be absolute to count, says the XDG spec */
	buf_reset(&dir);
	base = getenv("XDG_CACHE_HOME");
	if (base && base[0] == '/') {
		ret = buf_addf(&dir, "%s/xlatefs", base);
	} else {
		base = getenv("HOME");
		if (!base || base[0] != '/') {
			ret = err_set(XL_EIO, "%s is not writable and "
				      "neither XDG_CACHE_HOME nor HOME is set",
				      repo_dir);
			goto out;
		}
		ret = buf_addf(&dir, "%s/.cache/xlatefs", base);
	}
	if (ret || (ret = make_dirs(&dir)))
		goto out;
	if (!EVP_Digest(repo_dir, strlen(repo_dir), md, &mdlen, EVP_sha256(),
			NULL)) {
		ret = err_set(XL_ENOMEM, "cannot hash the objects directory path");
		goto out;
	}
	if ((ret = buf_addf(out, "%s/", dir.buf)))
		goto out;
	for (unsigned int i = 0; i < mdlen && !ret; i++) {
		ret = buf_addch(out, hex[md[i] >> 4]);
		if (!ret)
			ret = buf_addch(out, hex[md[i] & 15]);
	}
	if (!ret)
		ret = buf_addstr(out, ".sqlite");
out:
	buf_release(&dir);
	if (ret)
		buf_reset(out);
	return ret;
}
