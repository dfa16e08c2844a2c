/*
 * t-cache.c: the sqlite name-mapping store (cache/).
 *
 * Round trips through every public call; prefix searches at even and
 * odd lengths; walks in order, and a walk callback that calls back into
 * the cache (an error, not a deadlock); batches that commit and roll
 * back; the settings check; every kind of bad file moved aside with a
 * warning and replaced by a working empty cache; a writer killed with
 * SIGKILL in the middle of a batch; a reader that does not wait for a
 * writer's open batch (WAL); threads sharing one struct cache; and the
 * speed of a 130k-object batch and of lookups (printed as "# " lines).
 *
 * Object names are made up (a counter through a PRNG): the store does
 * not care what the names hash.
 */
#include "harness.h"
#include "../../cache/cache_i.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- scratch directory and files ------------------------------------ */

static char dir[256];
static char db_path[300];

static void scratch_begin(void)
{
	snprintf(dir, sizeof(dir), "%s/xl-cache.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		abort();
	snprintf(db_path, sizeof(db_path), "%s/c.sqlite", dir);
}

static void scratch_end(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s'; rm -rf '%s'", dir, dir);
	if (system(cmd))
		abort();
}

static int exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

static int exists_suffix(const char *suffix)
{
	char p[400];

	snprintf(p, sizeof(p), "%s%s", db_path, suffix);
	return exists(p);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f))
		abort();
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- made-up objects ------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	/* splitmix64: a bijection, so distinct ids give distinct names */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill_name(struct oid *oid, const struct hash_algo *algo,
		      uint64_t id, uint64_t salt)
{
	unsigned char raw[OID_RAWSZ_MAX];

	for (size_t i = 0; i < sizeof(raw); i += 8) {
		uint64_t v = mix(id * 4 + i / 8 + (salt << 40));

		memcpy(raw + i, &v, 8);
	}
	oid_from_raw(oid, algo, raw);
}

/* Object `id`: untranslatable when id % 10 == 7. */
static void make_obj(struct cache_object *obj, uint64_t id)
{
	memset(obj, 0, sizeof(*obj));
	fill_name(&obj->sha256, &hash_sha256, id, 1);
	obj->type = (enum obj_type)(OBJ_COMMIT + id % 4);
	obj->size256 = id * 3 + 1;
	if (id % 10 == 7) {
		obj->reason = "unknown commit header";
	} else {
		fill_name(&obj->sha1, &hash_sha1, id, 2);
		obj->size1 = id * 3;
	}
}

static int same_obj(const struct cache_object *a, const struct cache_object *b)
{
	if (oid_cmp(&a->sha256, &b->sha256) || a->sha256.algo != b->sha256.algo ||
	    a->sha1.algo != b->sha1.algo || oid_cmp(&a->sha1, &b->sha1) ||
	    a->type != b->type || a->size256 != b->size256 ||
	    a->size1 != b->size1)
		return 0;
	if (!a->reason || !b->reason)
		return a->reason == b->reason;
	return !strcmp(a->reason, b->reason);
}

/* ---- warnings -------------------------------------------------------- */

struct warnings {
	int n;
	char last[1024];
};

static void on_warn(void *data, const char *message)
{
	struct warnings *w = data;

	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", message);
	printf("# warning: %s\n", message);
}

static struct cache *open_ok(const struct hash_algo *algo, struct warnings *w)
{
	struct cache *c = NULL;
	int ret = cache_open(&c, db_path, algo, CACHE_OPEN_CHECK_ALL, w ? on_warn : NULL, w);

	if (ret)
		harness_fail(__FILE__, __LINE__, "cache_open: %d %s", ret,
			     err_msg());
	return c;
}

static int put_range(struct cache *c, uint64_t from, uint64_t to)
{
	struct cache_object obj;
	int ret = 0;

	for (uint64_t id = from; id < to && !ret; id++) {
		make_obj(&obj, id);
		ret = cache_put(c, &obj);
	}
	return ret;
}

static int has(struct cache *c, uint64_t id)
{
	struct cache_object want, got;
	int ret;

	make_obj(&want, id);
	ret = cache_get(c, &want.sha256, &got);
	if (ret == XL_ENOTFOUND)
		return 0;
	if (ret || !same_obj(&want, &got))
		return -1;
	return 1;
}

/* Run fixed SQL on a file directly, as another program would. */
static void sql(const char *path, const char *text)
{
	sqlite3 *db;
	char *msg = NULL;

	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK) {
		harness_fail(__FILE__, __LINE__, "sql %s: %s", text,
			     msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
	}
	sqlite3_close(db);
}

static long long sql_int(const char *path, const char *text)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, text, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

static int quick_check_ok(const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int ok = 0;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st,
			       NULL) == SQLITE_OK) {
		ok = sqlite3_step(st) == SQLITE_ROW &&
		     !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return ok;
}

/* A valid cache at db_path holding objects [0, n). */
static void make_cache(const struct hash_algo *algo, uint64_t n)
{
	struct cache *c = open_ok(algo, NULL);

	if (!c)
		return;
	CHECK_INT(cache_begin(c), 0);
	if (algo == &hash_sha256)
		CHECK_INT(put_range(c, 0, n), 0);
	CHECK_INT(cache_commit(c), 0);
	cache_close(c);
}

/* The same, its rows then folded into the big table. */
static void make_cache_folded(const struct hash_algo *algo, uint64_t n)
{
	struct cache *c;
	uint64_t folded = 0;

	make_cache(algo, n);
	if (!(c = open_ok(algo, NULL)))
		return;
	CHECK_INT(cache_fold(c, 1, &folded), 0);
	CHECK_INT(folded, n);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects"), n);
	cache_close(c);
}

/*
 * After a bad file was found: exactly one warning naming the file, the
 * bad file kept beside as .corrupt, and a working empty cache in place.
 */
static void check_replaced(struct cache *c, const struct warnings *w)
{
	uint64_t n = 1, u = 1;

	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_INT(w->n, 1);
	CHECK(strstr(w->last, db_path) != NULL);
	CHECK(strstr(w->last, ".corrupt") != NULL);
	CHECK(exists_suffix(".corrupt"));
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 0);
	CHECK_INT(u, 0);
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 10), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(has(c, 3), 1);
	CHECK_INT(sql_int(db_path, "PRAGMA application_id"), 0x786c6673);
	CHECK_INT(sql_int(db_path, "PRAGMA user_version"), CACHE_SCHEMA_VERSION);
}

/* ---- basics ---------------------------------------------------------- */

TEST(open_creates_schema)
{
	struct warnings w = { 0 };
	struct cache *c;
	uint64_t n = 1, u = 1;

	scratch_begin();
	c = open_ok(&hash_sha256, &w);
	CHECK(c != NULL);
	if (c) {
		CHECK_STR(cache_path(c), db_path);
		CHECK_INT(cache_count(c, &n, &u), 0);
		CHECK_INT(n, 0);
		CHECK_INT(u, 0);
		cache_close(c);
	}
	CHECK_INT(w.n, 0);
	CHECK_INT(sql_int(db_path, "PRAGMA application_id"), 0x786c6673);
	CHECK_INT(sql_int(db_path, "PRAGMA user_version"), CACHE_SCHEMA_VERSION);
	/* journal_mode reads back as text; WAL is recorded in the header */
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM pragma_journal_mode "
			  "WHERE journal_mode = 'wal'"), 1);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM meta WHERE "
			  "key = 'format' AND value = 'sha256'"), 1);
	/* reopening a good file is quiet */
	c = open_ok(&hash_sha256, &w);
	cache_close(c);
	CHECK_INT(w.n, 0);
	CHECK(!exists_suffix(".corrupt"));
	scratch_end();
}

TEST(put_get_both_names)
{
	struct cache_object obj, got;
	struct cache *c;
	struct oid other;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 20), 0);
	CHECK_INT(cache_commit(c), 0);

	make_obj(&obj, 3);
	CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
	CHECK(same_obj(&obj, &got));
	CHECK(got.sha256.algo == &hash_sha256);
	CHECK(got.sha1.algo == &hash_sha1);
	CHECK(got.reason == NULL);
	CHECK_INT(cache_get_by_sha1(c, &obj.sha1, &got), 0);
	CHECK(same_obj(&obj, &got));

	/* untranslatable: no SHA-1 name, size1 0, the reason borrowed */
	make_obj(&obj, 17);
	CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
	CHECK(same_obj(&obj, &got));
	CHECK(got.sha1.algo == NULL);
	CHECK(oid_is_null(&got.sha1) || got.sha1.algo == NULL);
	CHECK_INT(got.size1, 0);
	CHECK_STR(got.reason, "unknown commit header");
	CHECK(got.reason != obj.reason);

	/* misses, and names of the wrong kind */
	fill_name(&other, &hash_sha256, 999, 1);
	CHECK_INT(cache_get(c, &other, &got), XL_ENOTFOUND);
	CHECK(got.sha256.algo == NULL);
	fill_name(&other, &hash_sha1, 999, 2);
	CHECK_INT(cache_get_by_sha1(c, &other, &got), XL_ENOTFOUND);
	CHECK_INT(cache_get(c, &other, &got), XL_EINVALID);
	make_obj(&obj, 3);
	CHECK_INT(cache_get_by_sha1(c, &obj.sha256, &got), XL_EINVALID);
	cache_close(c);
out:
	scratch_end();
}

/* Rows read the same through sqlite's map (CACHE_OPEN_MAP) as without. */
static sqlite3_int64 mmap_size(struct cache *c)
{
	sqlite3_stmt *st;
	sqlite3_int64 v = -1;

	if (sqlite3_prepare_v2(c->db, "PRAGMA mmap_size", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

TEST(mapped_reads)
{
	struct cache_object obj, got;
	struct cache *c = NULL;

	scratch_begin();
	CHECK_INT(cache_open(&c, db_path, &hash_sha256, 0, NULL, NULL), 0);
	if (!c)
		goto out;
	CHECK_INT(mmap_size(c), 0);
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 3000), 0);
	CHECK_INT(cache_commit(c), 0);
	cache_close(c);		/* checkpointed: the rows are in the file */

	c = NULL;
	CHECK_INT(cache_open(&c, db_path, &hash_sha256, CACHE_OPEN_MAP, NULL, NULL), 0);
	if (!c)
		goto out;
	CHECK(mmap_size(c) > 0);
	for (uint64_t id = 0; id < 3000; id += 7) {
		make_obj(&obj, id);
		CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
		CHECK(same_obj(&obj, &got));
		if (obj.sha1.algo) {
			CHECK_INT(cache_get_by_sha1(c, &obj.sha1, &got), 0);
			CHECK(same_obj(&obj, &got));
		}
	}
	/* and what it writes, it reads back */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 3000, 3100), 0);
	CHECK_INT(cache_commit(c), 0);
	make_obj(&obj, 3050);
	CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
	CHECK(same_obj(&obj, &got));
	cache_close(c);
out:
	scratch_end();
}

TEST(put_replaces_and_canonicalises)
{
	struct cache_object obj, got;
	struct cache *c;
	uint64_t n, u;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	make_obj(&obj, 1);
	/* outside a batch: autocommit */
	CHECK_INT(cache_put(c, &obj), 0);
	/* the same name again, now untranslatable, with a stray size1 */
	memset(&obj.sha1, 0, sizeof(obj.sha1));
	obj.size1 = 12345;
	obj.reason = "gitlink without mapping";
	CHECK_INT(cache_put(c, &obj), 0);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 1);
	CHECK_INT(u, 1);
	CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
	CHECK_INT(got.size1, 0);
	CHECK_STR(got.reason, "gitlink without mapping");

	/* and back; a reason given with a SHA-1 name is not kept */
	make_obj(&obj, 1);
	obj.reason = "stale";
	CHECK_INT(cache_put(c, &obj), 0);
	CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
	CHECK(got.reason == NULL);
	CHECK(got.sha1.algo == &hash_sha1);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(u, 0);

	/* an untranslatable object without a reason is allowed */
	make_obj(&obj, 2);
	memset(&obj.sha1, 0, sizeof(obj.sha1));
	obj.reason = NULL;
	CHECK_INT(cache_put(c, &obj), 0);
	CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
	CHECK(got.reason == NULL);
	CHECK(got.sha1.algo == NULL);

	/* bad input from the caller */
	make_obj(&obj, 3);
	obj.type = OBJ_OFS_DELTA;
	CHECK_INT(cache_put(c, &obj), XL_EINVALID);
	make_obj(&obj, 3);
	obj.sha256.algo = &hash_sha1;
	CHECK_INT(cache_put(c, &obj), XL_EINVALID);
	make_obj(&obj, 3);
	obj.sha1.algo = &hash_sha256;
	CHECK_INT(cache_put(c, &obj), XL_EINVALID);
	make_obj(&obj, 3);
	obj.size256 = UINT64_MAX;
	CHECK_INT(cache_put(c, &obj), XL_EINVALID);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 2);
	cache_close(c);
out:
	scratch_end();
}

/*
 * A reason stays put until the same thread's next call on the same
 * cache: lookups in another cache, or by another thread, leave it.
 */
struct reason_arg {
	struct cache *cache;
	int errors;
};

static void *reason_thread(void *data)
{
	struct reason_arg *a = data;

	for (uint64_t id = 17; id < 2000; id += 10) {
		struct cache_object want, got;

		make_obj(&want, id);
		if (cache_get(a->cache, &want.sha256, &got) ||
		    strcmp(got.reason, "unknown commit header"))
			a->errors++;
	}
	return NULL;
}

TEST(reason_borrowed_per_thread_and_cache)
{
	struct cache_object obj, got_a, got_b;
	struct cache *a, *b;
	struct reason_arg arg;
	char other[sizeof(db_path)];
	pthread_t th;

	scratch_begin();
	a = open_ok(&hash_sha256, NULL);
	snprintf(other, sizeof(other), "%s", db_path);
	snprintf(db_path, sizeof(db_path), "%s/other.sqlite", dir);
	b = open_ok(&hash_sha256, NULL);
	snprintf(db_path, sizeof(db_path), "%s", other);
	if (!a || !b)
		goto out;
	make_obj(&obj, 7);
	obj.reason = "reason in a";
	CHECK_INT(cache_put(a, &obj), 0);
	obj.reason = "reason in b, which is longer and needs another allocation";
	CHECK_INT(cache_put(b, &obj), 0);
	CHECK_INT(cache_begin(a), 0);
	CHECK_INT(put_range(a, 8, 2000), 0);
	CHECK_INT(cache_commit(a), 0);

	CHECK_INT(cache_get(a, &obj.sha256, &got_a), 0);
	CHECK_INT(cache_get(b, &obj.sha256, &got_b), 0);
	CHECK_STR(got_a.reason, "reason in a");
	CHECK_STR(got_b.reason,
		  "reason in b, which is longer and needs another allocation");
	/* another thread hammering cache a does not touch our copy */
	arg.cache = a;
	arg.errors = 0;
	CHECK_INT(pthread_create(&th, NULL, reason_thread, &arg), 0);
	pthread_join(th, NULL);
	CHECK_INT(arg.errors, 0);
	CHECK_STR(got_a.reason, "reason in a");
out:
	cache_close(a);
	cache_close(b);
	scratch_end();
}

/* Store an object whose names are given as hex (the rest of it fixed). */
static void put_named(struct cache *c, const char *hex256, const char *hex1)
{
	struct cache_object obj;

	memset(&obj, 0, sizeof(obj));
	CHECK_INT(oid_from_hex(&obj.sha256, &hash_sha256, hex256), 0);
	if (hex1) {
		CHECK_INT(oid_from_hex(&obj.sha1, &hash_sha1, hex1), 0);
		obj.size1 = 1;
	}
	obj.type = OBJ_BLOB;
	obj.size256 = 1;
	CHECK_INT(cache_put(c, &obj), 0);
}

static int prefix(struct cache *c, const struct hash_algo *algo,
		  const char *hex, char *found)
{
	struct cache_object got;
	int ret = cache_resolve_prefix(c, algo, hex, strlen(hex), &got);

	if (found) {
		found[0] = '\0';
		if (!ret)
			oid_to_hex_r(found, algo == &hash_sha1 ? &got.sha1
							       : &got.sha256);
	}
	return ret;
}

TEST(resolve_prefix)
{
	static const char a256[] = "abcd0123" "00000000000000000000000000000000000000000000000000000000";
	static const char b256[] = "abcd0124" "ffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
	static const char c256[] = "abce0000" "00000000000000000000000000000000000000000000000000000000";
	static const char d256[] = "00000000" "00000000000000000000000000000000000000000000000000000000";
	static const char e256[] = "ffffffff" "ffffffffffffffffffffffffffffffffffffffffffffffffffffffff";
	static const char a1[] = "1234500000000000000000000000000000000000";
	static const char b1[] = "12346fffffffffffffffffffffffffffffffffff";
	static const char c1[] = "ffffffffffffffffffffffffffffffffffffffff";
	char found[OID_HEXSZ_MAX + 1];
	struct cache *c;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	CHECK_INT(cache_begin(c), 0);
	put_named(c, a256, a1);
	put_named(c, b256, b1);
	put_named(c, c256, NULL);
	put_named(c, d256, NULL);
	put_named(c, e256, c1);
	CHECK_INT(cache_commit(c), 0);

	/* even and odd lengths, either case, the whole name */
	CHECK_INT(prefix(c, &hash_sha256, "abcd0123", found), 0);
	CHECK_STR(found, a256);
	CHECK_INT(prefix(c, &hash_sha256, "ABCD0124F", found), 0);
	CHECK_STR(found, b256);
	CHECK_INT(prefix(c, &hash_sha256, "abce", found), 0);
	CHECK_STR(found, c256);
	CHECK_INT(prefix(c, &hash_sha256, "abcd", found), XL_EAMBIGUOUS);
	CHECK_INT(prefix(c, &hash_sha256, "abcd012", found), XL_EAMBIGUOUS);
	CHECK_STR(found, "");
	CHECK_INT(prefix(c, &hash_sha256, "abcd0125", found), XL_ENOTFOUND);
	CHECK_INT(prefix(c, &hash_sha256, "abcd01230", found), 0);
	CHECK_INT(prefix(c, &hash_sha256, "abcd01231", found), XL_ENOTFOUND);
	CHECK_INT(prefix(c, &hash_sha256, a256, found), 0);
	CHECK_STR(found, a256);
	/* the very ends of the key space */
	CHECK_INT(prefix(c, &hash_sha256, "0000", found), 0);
	CHECK_STR(found, d256);
	CHECK_INT(prefix(c, &hash_sha256, "fffff", found), 0);
	CHECK_STR(found, e256);
	CHECK_INT(prefix(c, &hash_sha256, e256, found), 0);

	/* SHA-1 names go through the index; untranslatable ones have none */
	CHECK_INT(prefix(c, &hash_sha1, "12345", found), 0);
	CHECK_STR(found, a1);
	CHECK_INT(prefix(c, &hash_sha1, "12346", found), 0);
	CHECK_STR(found, b1);
	CHECK_INT(prefix(c, &hash_sha1, "1234", found), XL_EAMBIGUOUS);
	CHECK_INT(prefix(c, &hash_sha1, "0000", found), XL_ENOTFOUND);
	CHECK_INT(prefix(c, &hash_sha1, c1, found), 0);
	CHECK_STR(found, c1);
	CHECK_INT(prefix(c, &hash_sha1, "abcd", found), XL_ENOTFOUND);

	/* malformed requests */
	CHECK_INT(prefix(c, &hash_sha256, "abc", found), XL_EINVALID);
	CHECK_INT(prefix(c, &hash_sha256, "abcg", found), XL_EINVALID);
	CHECK_INT(prefix(c, &hash_sha256, "abc-0123", found), XL_EINVALID);
	CHECK_INT(prefix(c, &hash_sha1, a256, found), XL_EINVALID);
	CHECK_INT(prefix(c, NULL, "abcd", found), XL_EINVALID);
	cache_close(c);
out:
	scratch_end();
}

TEST(sha1_collision_is_ambiguous)
{
	struct cache_object obj, got;
	struct cache *c;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	make_obj(&obj, 1);
	CHECK_INT(cache_put(c, &obj), 0);
	fill_name(&obj.sha256, &hash_sha256, 2, 1);	/* same sha1 */
	CHECK_INT(cache_put(c, &obj), 0);
	CHECK_INT(cache_get_by_sha1(c, &obj.sha1, &got), XL_EAMBIGUOUS);
	CHECK(got.sha256.algo == NULL);
	cache_close(c);
out:
	scratch_end();
}

/* ---- walks ----------------------------------------------------------- */

struct walk {
	struct cache *cache;
	struct oid last;
	int n, untranslatable, out_of_order, stop_at, reentry;
};

static int walk_fn(const struct cache_object *obj, void *data)
{
	struct walk *w = data;
	struct cache_object other;

	if (w->n && oid_cmp(&w->last, &obj->sha256) >= 0)
		w->out_of_order++;
	w->last = obj->sha256;
	w->n++;
	if (!obj->sha1.algo) {
		w->untranslatable++;
		if (!obj->reason || strcmp(obj->reason, "unknown commit header"))
			w->out_of_order++;
	}
	if (w->reentry) {
		/* would deadlock on a plain mutex */
		w->reentry = cache_get(w->cache, &obj->sha256, &other);
		return 0;
	}
	return w->n == w->stop_at ? 42 : 0;
}

TEST(for_each_in_order)
{
	struct cache *c;
	struct walk w;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 1000), 0);
	CHECK_INT(cache_commit(c), 0);

	memset(&w, 0, sizeof(w));
	CHECK_INT(cache_for_each(c, 0, walk_fn, &w), 0);
	CHECK_INT(w.n, 1000);
	CHECK_INT(w.untranslatable, 100);
	CHECK_INT(w.out_of_order, 0);

	memset(&w, 0, sizeof(w));
	CHECK_INT(cache_for_each(c, 1, walk_fn, &w), 0);
	CHECK_INT(w.n, 100);
	CHECK_INT(w.untranslatable, 100);
	CHECK_INT(w.out_of_order, 0);

	memset(&w, 0, sizeof(w));
	w.stop_at = 10;
	CHECK_INT(cache_for_each(c, 0, walk_fn, &w), 42);
	CHECK_INT(w.n, 10);

	/* a callback calling into the same cache gets an error */
	memset(&w, 0, sizeof(w));
	w.cache = c;
	w.reentry = 1;
	CHECK_INT(cache_for_each(c, 0, walk_fn, &w), 0);
	CHECK_INT(w.reentry, XL_EINVALID);
	CHECK_INT(w.n, 1000);
	/* and the cache is fine afterwards */
	CHECK_INT(has(c, 5), 1);
	cache_close(c);
out:
	scratch_end();
}

struct gl_walk {
	int n, bad;
	struct oid last_tree;
	char last_path[64];
};

static int gitlink_fn(const struct oid *tree, const char *path,
		      const struct oid *c256, const struct oid *c1, void *data)
{
	struct gl_walk *w = data;
	int cmp = w->n ? oid_cmp(&w->last_tree, tree) : -1;

	if (cmp > 0 || (!cmp && strcmp(w->last_path, path) >= 0))
		w->bad++;
	if (tree->algo != &hash_sha256 || c256->algo != &hash_sha256)
		w->bad++;
	/* the fixture: path "sub/b" has no SHA-1 commit */
	if (!strcmp(path, "sub/b") ? c1 != NULL : !c1 || c1->algo != &hash_sha1)
		w->bad++;
	w->last_tree = *tree;
	snprintf(w->last_path, sizeof(w->last_path), "%s", path);
	w->n++;
	return 0;
}

TEST(gitlinks)
{
	struct oid t1, t2, c256, c1, got, lone, other1;
	struct gl_walk w;
	struct cache *c;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	fill_name(&t1, &hash_sha256, 1, 7);
	fill_name(&t2, &hash_sha256, 2, 7);
	fill_name(&c256, &hash_sha256, 3, 7);
	fill_name(&c1, &hash_sha1, 3, 8);
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_put_gitlink(c, &t2, "sub/a", 5, &c256, &c1), 0);
	CHECK_INT(cache_put_gitlink(c, &t1, "sub/c", 5, &c256, &c1), 0);
	CHECK_INT(cache_put_gitlink(c, &t1, "sub/bxx", 5, &c256, NULL), 0);
	CHECK_INT(cache_put_gitlink(c, &t1, "sub/a", 5, &c256, &c1), 0);
	/* replacing one */
	CHECK_INT(cache_put_gitlink(c, &t2, "sub/a", 5, &c256, &c1), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(cache_put_gitlink(c, &t1, "a\0b", 3, &c256, &c1), XL_EINVALID);
	CHECK_INT(cache_put_gitlink(c, &t1, "", 0, &c256, &c1), XL_EINVALID);
	CHECK_INT(cache_put_gitlink(c, &c1, "x", 1, &c256, &c1), XL_EINVALID);
	CHECK_INT(cache_put_gitlink(c, &t1, "x", 1, &c256, &c256), XL_EINVALID);

	memset(&w, 0, sizeof(w));
	CHECK_INT(cache_for_each_gitlink(c, gitlink_fn, &w), 0);
	CHECK_INT(w.n, 4);
	CHECK_INT(w.bad, 0);

	/* the target's other name, both ways; many trees, one answer */
	CHECK_INT(cache_get_gitlink(c, &c256, &got), 0);
	CHECK(got.algo == &hash_sha1 && !oid_cmp(&got, &c1));
	CHECK_INT(cache_get_gitlink(c, &c1, &got), 0);
	CHECK(got.algo == &hash_sha256 && !oid_cmp(&got, &c256));
	CHECK_INT(cache_get_gitlink(c, &t1, &got), XL_ENOTFOUND);
	CHECK(got.algo == NULL);
	/* a target recorded only without a SHA-1 name has none */
	fill_name(&lone, &hash_sha256, 4, 7);
	CHECK_INT(cache_put_gitlink(c, &t2, "other", 5, &lone, NULL), 0);
	CHECK_INT(cache_get_gitlink(c, &lone, &got), XL_ENOTFOUND);
	/* records that disagree: no answer rather than a guess */
	fill_name(&other1, &hash_sha1, 9, 8);
	CHECK_INT(cache_put_gitlink(c, &t2, "x", 1, &c256, &other1), 0);
	CHECK_INT(cache_get_gitlink(c, &c256, &got), XL_EAMBIGUOUS);
	CHECK_INT(cache_get_gitlink(c, &other1, &got), 0);
	CHECK_INT(cache_get_gitlink(c, NULL, &got), XL_EINVALID);
	cache_close(c);
out:
	scratch_end();
}

TEST(packs_and_rollback)
{
	static const char pk[] = "0123456789abcdef0123456789abcdef01234567";
	struct cache *c;
	uint64_t n, u;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	CHECK_INT(cache_pack_known(c, pk), 0);
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_begin(c), XL_EINVALID);	/* no nesting */
	CHECK_INT(put_range(c, 0, 50), 0);
	CHECK_INT(cache_pack_done(c, pk, 50), 0);
	/* the batch's own connection sees its writes */
	CHECK_INT(cache_pack_known(c, pk), 1);
	cache_rollback(c);
	CHECK_INT(cache_pack_known(c, pk), 0);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 0);
	CHECK_INT(cache_commit(c), XL_EINVALID);

	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 50), 0);
	CHECK_INT(cache_pack_done(c, pk, 50), 0);
	CHECK_INT(cache_commit(c), 0);
	cache_rollback(c);	/* nothing to roll back: harmless */
	cache_close(c);

	/* committed means on disk */
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	CHECK_INT(cache_pack_known(c, pk), 1);
	CHECK_INT(cache_pack_known(c, "ffff"), 0);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 50);
	CHECK_INT(u, 5);
	CHECK_INT(has(c, 49), 1);
	/* closing with a batch open drops it */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 50, 60), 0);
	cache_close(c);
	c = open_ok(&hash_sha256, NULL);
	if (c) {
		CHECK_INT(has(c, 55), 0);
		cache_close(c);
	}
out:
	scratch_end();
}

TEST(settings)
{
	static const char pk[] = "0123456789abcdef0123456789abcdef01234567";
	struct warnings w = { 0 };
	struct cache *c;
	uint64_t n, u;

	scratch_begin();
	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	/* first settings on an empty cache: stored quietly */
	CHECK_INT(cache_check_settings(c, "unknown-headers=fail;submodules=1"), 0);
	CHECK_INT(w.n, 0);
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 20), 0);
	CHECK_INT(cache_pack_done(c, pk, 20), 0);
	CHECK_INT(cache_commit(c), 0);
	/* the same: nothing happens */
	CHECK_INT(cache_check_settings(c, "unknown-headers=fail;submodules=1"), 0);
	CHECK_INT(w.n, 0);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 20);
	/* different: emptied, with a warning naming both */
	CHECK_INT(cache_check_settings(c, "unknown-headers=fail;submodules=2"), 1);
	CHECK_INT(w.n, 1);
	CHECK(strstr(w.last, "submodules=1") && strstr(w.last, "submodules=2"));
	CHECK(strstr(w.last, db_path) != NULL);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 0);
	CHECK_INT(cache_pack_known(c, pk), 0);
	cache_close(c);

	/* settings survive a reopen */
	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	CHECK_INT(cache_check_settings(c, "unknown-headers=fail;submodules=2"), 0);
	CHECK_INT(w.n, 1);
	/* rows but no settings recorded: emptied too */
	CHECK_INT(cache_put(c, &(struct cache_object){
				       .sha256 = { .algo = &hash_sha256 },
				       .type = OBJ_BLOB }), 0);
	cache_close(c);
	sql(db_path, "DELETE FROM meta WHERE key = 'settings'");
	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	CHECK_INT(cache_check_settings(c, "x"), 1);
	CHECK_INT(w.n, 2);
	CHECK(strstr(w.last, "unrecorded") != NULL);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 0);
	/* inside a batch it joins the batch */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 5), 0);
	CHECK_INT(cache_check_settings(c, "y"), 1);
	CHECK_INT(w.n, 3);
	CHECK_INT(put_range(c, 5, 7), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 2);
	cache_close(c);
out:
	scratch_end();
}

/*
 * Names from the map for objects the repository lacks: stored, read
 * back, replaced, and emptied with the rest when the settings change.
 */
TEST(known)
{
	struct warnings w = { 0 };
	struct oid a = { .algo = &hash_sha256 }, one = { .algo = &hash_sha1 },
		   two = { .algo = &hash_sha1 }, got;
	struct cache *c;

	scratch_begin();
	memset(a.hash, 0xab, 32);
	memset(one.hash, 0x11, 20);
	memset(two.hash, 0x22, 20);
	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	CHECK_INT(cache_check_settings(c, "s1"), 0);
	CHECK_INT(cache_get_known(c, &a, &got), XL_ENOTFOUND);
	CHECK_INT(cache_put_known(c, &a, &one), 0);
	CHECK_INT(cache_get_known(c, &a, &got), 0);
	CHECK(!memcmp(got.hash, one.hash, 20) && got.algo == &hash_sha1);
	CHECK_INT(cache_put_known(c, &a, &two), 0);
	CHECK_INT(cache_get_known(c, &a, &got), 0);
	CHECK(!memcmp(got.hash, two.hash, 20));
	/* and the other way, for verify */
	CHECK_INT(cache_get_known(c, &two, &got), 0);
	CHECK(!memcmp(got.hash, a.hash, 32) && got.algo == &hash_sha256);
	CHECK_INT(cache_get_known(c, &one, &got), XL_ENOTFOUND);
	/* a map that gave two objects one SHA-1 name: no answer */
	{
		struct oid b = a;

		b.hash[0] ^= 1;
		CHECK_INT(cache_put_known(c, &b, &two), 0);
		CHECK_INT(cache_get_known(c, &two, &got), XL_EAMBIGUOUS);
	}
	/* names of the wrong algorithm are refused */
	CHECK_INT(cache_put_known(c, &one, &two), XL_EINVALID);
	CHECK_INT(cache_check_settings(c, "s2"), 1);
	CHECK_INT(cache_get_known(c, &a, &got), XL_ENOTFOUND);
	cache_close(c);
out:
	scratch_end();
}

/*
 * The facts a build keeps for the next (build.c's "retry" and
 * "missing"): stored, replaced, kept across a reopen, part of a batch
 * (gone with its rollback), never the cache's own keys, and dropped
 * with everything else when the settings change.
 */
TEST(meta)
{
	struct warnings w = { 0 };
	struct buf v = BUF_INIT;
	struct cache *c;

	scratch_begin();
	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	CHECK_INT(cache_check_settings(c, "s1"), 0);
	CHECK_INT(cache_meta_get(c, "retry", &v), XL_ENOTFOUND);
	CHECK_INT(cache_meta_put(c, "retry", "1 ab 0"), 0);
	CHECK_INT(cache_meta_put(c, "retry", "2 cd 1"), 0);
	CHECK_INT(cache_meta_get(c, "retry", &v), 0);
	CHECK_STR(v.buf, "2 cd 1");
	/* the cache's own keys are not for callers */
	CHECK_INT(cache_meta_put(c, "settings", "x"), XL_EINVALID);
	CHECK_INT(cache_meta_put(c, "format", "x"), XL_EINVALID);
	CHECK_INT(cache_check_settings(c, "s1"), 0);
	/* in a batch: rolled back with it */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_meta_put(c, "retry", "3 ef 0"), 0);
	cache_rollback(c);
	CHECK_INT(cache_meta_get(c, "retry", &v), 0);
	CHECK_STR(v.buf, "2 cd 1");
	CHECK_INT(cache_meta_put(c, "missing", "1 2 3 4"), 0);
	cache_close(c);

	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	CHECK_INT(cache_meta_get(c, "missing", &v), 0);
	CHECK_STR(v.buf, "1 2 3 4");
	/* new settings: emptied, these with the rest */
	CHECK_INT(cache_check_settings(c, "s2"), 1);
	CHECK_INT(cache_meta_get(c, "missing", &v), XL_ENOTFOUND);
	CHECK_INT(cache_meta_get(c, "retry", &v), XL_ENOTFOUND);
	cache_close(c);
out:
	buf_release(&v);
	scratch_end();
}

/* ---- bad files ------------------------------------------------------- */

TEST(corrupt_garbage)
{
	struct warnings w = { 0 };
	unsigned char junk[8192];
	struct cache *c;

	scratch_begin();
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)mix(i);
	write_file(db_path, junk, sizeof(junk));
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	cache_close(c);

	/* garbage behind a real sqlite magic string */
	memcpy(junk, "SQLite format 3", 16);
	write_file(db_path, junk, sizeof(junk));
	memset(&w, 0, sizeof(w));
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	cache_close(c);

	/* a short text file */
	write_file(db_path, "hello\n", 6);
	memset(&w, 0, sizeof(w));
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	cache_close(c);
	scratch_end();
}

TEST(corrupt_truncated)
{
	struct warnings w = { 0 };
	struct cache *c;
	struct stat st;

	scratch_begin();
	make_cache(&hash_sha256, 20000);
	/* the last close checkpointed everything into the main file */
	CHECK(!exists_suffix("-wal"));
	CHECK_INT(stat(db_path, &st), 0);
	CHECK(st.st_size > 100000);
	CHECK_INT(truncate(db_path, st.st_size / 2), 0);
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	CHECK(strstr(w.last, "quick_check") || strstr(w.last, "malformed"));
	cache_close(c);
	scratch_end();
}

/*
 * Damage deep in the file, past what opening reads: an open without the
 * whole-file check (a mount's) takes it, cache_check() finds it later
 * and marks the file, and the next open sets it aside.
 */
TEST(corrupt_found_by_check)
{
	struct warnings w = { 0 };
	unsigned char junk[4096];
	struct cache *c = NULL;
	atomic_int cancel = 1;
	struct buf v = BUF_INIT;
	struct stat st;
	FILE *f;

	scratch_begin();
	make_cache(&hash_sha256, 20000);
	CHECK_INT(stat(db_path, &st), 0);
	/* a healthy file passes, and a cancelled check says nothing */
	CHECK_INT(cache_open(&c, db_path, &hash_sha256, 0, on_warn, &w), 0);
	CHECK_INT(cache_check(c, NULL), 0);
	CHECK_INT(cache_check(c, &cancel), XL_EIO);
	CHECK_INT(cache_meta_get(c, "damaged", &v), XL_ENOTFOUND);
	CHECK_INT(cache_meta_put(c, "damaged", "no"), XL_EINVALID);
	cache_close(c);

	/* one page in the middle of the objects: a B-tree page */
	memset(junk, 0x5a, sizeof(junk));
	f = fopen(db_path, "r+b");
	CHECK(f != NULL);
	if (f) {
		fseek(f, (long)(st.st_size / 4096 / 2) * 4096, SEEK_SET);
		fwrite(junk, 1, sizeof(junk), f);
		fclose(f);
	}
	CHECK_INT(cache_open(&c, db_path, &hash_sha256, 0, on_warn, &w), 0);
	CHECK_INT(w.n, 0);
	CHECK_INT(cache_check(c, NULL), XL_ECORRUPT);
	CHECK(strstr(err_msg(), "damaged") != NULL);
	CHECK_INT(cache_meta_get(c, "damaged", &v), 0);
	CHECK(strstr(v.buf, "quick_check") != NULL);
	cache_close(c);

	/* the mark alone condemns it: no whole-file check asked */
	CHECK_INT(cache_open(&c, db_path, &hash_sha256, 0, on_warn, &w), 0);
	check_replaced(c, &w);
	CHECK(strstr(w.last, "marked damaged") != NULL);
	cache_close(c);
	buf_release(&v);
	scratch_end();
}

TEST(corrupt_foreign_application)
{
	struct warnings w = { 0 };
	struct cache *c;
	char corrupt[400];

	scratch_begin();
	sql(db_path, "PRAGMA application_id = 305419896;"
		     "CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT);"
		     "INSERT INTO photos(name) VALUES ('cat.jpg');");
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	CHECK(strstr(w.last, "0x12345678") != NULL);
	cache_close(c);
	/* the other program's file is kept, unharmed, beside */
	snprintf(corrupt, sizeof(corrupt), "%s.corrupt", db_path);
	CHECK_INT(sql_int(corrupt, "SELECT count(*) FROM photos"), 1);

	/* a sqlite file with no application id at all */
	scratch_end();
	scratch_begin();
	sql(db_path, "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
	memset(&w, 0, sizeof(w));
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	cache_close(c);
	scratch_end();
}

TEST(corrupt_future_version)
{
	struct warnings w = { 0 };
	struct cache *c;

	scratch_begin();
	make_cache(&hash_sha256, 100);
	{
		char text[64];

		snprintf(text, sizeof(text), "PRAGMA user_version = %d",
			 CACHE_SCHEMA_VERSION + 1);
		sql(db_path, text);
		c = open_ok(&hash_sha256, &w);
		check_replaced(c, &w);
		snprintf(text, sizeof(text), "schema version %d",
			 CACHE_SCHEMA_VERSION + 1);
		CHECK(strstr(w.last, text) != NULL);
	}
	cache_close(c);

	/* and an older one */
	sql(db_path, "PRAGMA user_version = 0");
	memset(&w, 0, sizeof(w));
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	cache_close(c);
	scratch_end();
}

TEST(corrupt_other_format)
{
	struct warnings w = { 0 };
	struct cache *c;

	scratch_begin();
	make_cache(&hash_sha1, 0);
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	CHECK(strstr(w.last, "sha1") != NULL);
	cache_close(c);
	/* and the SHA-1 store round-trips on its own terms */
	scratch_end();
	scratch_begin();
	c = open_ok(&hash_sha1, &w);
	if (c) {
		struct cache_object obj = { .type = OBJ_TREE, .size256 = 5 }, got;

		fill_name(&obj.sha256, &hash_sha1, 1, 1);
		CHECK_INT(cache_put(c, &obj), 0);
		CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
		CHECK(same_obj(&obj, &got));
		CHECK_INT(cache_resolve_prefix(c, &hash_sha1, "0000", 4, &got),
			  XL_ENOTFOUND);
		cache_close(c);
	}
	scratch_end();
}

TEST(corrupt_schema_tampered)
{
	struct warnings w = { 0 };
	struct cache *c;

	scratch_begin();
	make_cache(&hash_sha256, 10);
	/* a trigger is code someone else put in our file */
	sql(db_path, "CREATE TRIGGER t AFTER INSERT ON objects "
		     "BEGIN DELETE FROM packs; END;");
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	CHECK(strstr(w.last, "trigger") != NULL);
	cache_close(c);

	/* a missing table */
	sql(db_path, "DROP TABLE gitlinks");
	memset(&w, 0, sizeof(w));
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	cache_close(c);

	/* the format record gone */
	sql(db_path, "DELETE FROM meta");
	memset(&w, 0, sizeof(w));
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	cache_close(c);
	scratch_end();
}

/*
 * Tables with our names but without the CHECKs, holding rows that break
 * them: quick_check passes, so only the readers' own checks stand
 * between the rows and a struct oid.
 */
#define R4(x) x x x x
#define R32(x) R4(R4(x)) R4(R4(x))
#define R20(x) R4(x) R4(x) R4(x) R4(x) R4(x)
TEST(corrupt_rows_rejected_on_read)
{
	struct warnings w = { 0 };
	struct cache_object got;
	struct cache *c;
	struct gl_walk gw;
	struct walk wk;
	struct oid name;


	scratch_begin();
	sql(db_path,
	    "PRAGMA journal_mode = WAL;"
	    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
	    "CREATE TABLE objects(sha256 BLOB PRIMARY KEY, sha1 BLOB, type, "
	    "size256, size1, reason) WITHOUT ROWID;"
	    "CREATE INDEX objects_sha1 ON objects(sha1);"
	    "CREATE TABLE packs(checksum TEXT PRIMARY KEY, objects) WITHOUT ROWID;"
	    "CREATE TABLE gitlinks(tree BLOB, path BLOB, commit256 BLOB, "
	    "commit1 BLOB, PRIMARY KEY(tree, path)) WITHOUT ROWID;"
	    "CREATE INDEX gitlinks_commit256 ON gitlinks(commit256);"
	    "CREATE INDEX gitlinks_commit1 ON gitlinks(commit1);"
	    "INSERT INTO meta VALUES ('format', 'sha256');"
	    "PRAGMA application_id = 2020370035; PRAGMA user_version = 1;"
	    /* a 33-byte name: first in order, inside the prefix 0000 */
	    "INSERT INTO objects VALUES (zeroblob(33), NULL, 3, 1, NULL, NULL);"
	    /* a good name with a bad type */
	    "INSERT INTO objects VALUES (x'" R32("11") "', NULL, 9, 1, NULL, NULL);"
	    /* a good name with a text SHA-1 and a negative size */
	    "INSERT INTO objects VALUES (x'" R32("22") "', 'abc', 3, -5, 1, NULL);"
	    "INSERT INTO gitlinks VALUES (x'33', 'p', x'44', NULL);");
	c = open_ok(&hash_sha256, &w);
	CHECK_INT(w.n, 0);
	if (!c)
		goto out;
	memset(name.hash, 0x11, sizeof(name.hash));
	oid_from_raw(&name, &hash_sha256, name.hash);
	CHECK_INT(cache_get(c, &name, &got), XL_ECORRUPT);
	CHECK(got.sha256.algo == NULL);
	memset(name.hash, 0x22, sizeof(name.hash));
	oid_from_raw(&name, &hash_sha256, name.hash);
	CHECK_INT(cache_get(c, &name, &got), XL_ECORRUPT);
	CHECK_INT(cache_resolve_prefix(c, &hash_sha256, "0000", 4, &got),
		  XL_ECORRUPT);
	memset(&wk, 0, sizeof(wk));
	CHECK_INT(cache_for_each(c, 0, walk_fn, &wk), XL_ECORRUPT);
	CHECK_INT(wk.n, 0);
	memset(&gw, 0, sizeof(gw));
	CHECK_INT(cache_for_each_gitlink(c, gitlink_fn, &gw), XL_ECORRUPT);
	CHECK_INT(gw.n, 0);
	cache_close(c);
out:
	scratch_end();
}

/*
 * An index that disagrees with its table (made by rewriting the index's
 * definition behind sqlite's back): quick_check does not compare them,
 * so the lookup itself must notice that the row is not the one asked
 * for.
 */
TEST(corrupt_index_disagrees)
{
	struct warnings w = { 0 };
	struct cache_object got;
	struct cache *c;
	struct oid name;

	scratch_begin();
	sql(db_path,
	    "PRAGMA journal_mode = WAL;"
	    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
	    "CREATE TABLE objects(sha256 BLOB PRIMARY KEY, sha1 BLOB, type, "
	    "size256, size1, reason, decoy BLOB) WITHOUT ROWID;"
	    "CREATE INDEX objects_sha1 ON objects(decoy);"
	    "CREATE TABLE packs(checksum TEXT PRIMARY KEY, objects) WITHOUT ROWID;"
	    "CREATE TABLE gitlinks(tree BLOB, path BLOB, commit256 BLOB, "
	    "commit1 BLOB, PRIMARY KEY(tree, path)) WITHOUT ROWID;"
	    "CREATE INDEX gitlinks_commit256 ON gitlinks(commit256);"
	    "CREATE INDEX gitlinks_commit1 ON gitlinks(commit1);"
	    "INSERT INTO meta VALUES ('format', 'sha256');"
	    "PRAGMA application_id = 2020370035; PRAGMA user_version = 1;"
	    "INSERT INTO objects VALUES (x'" R32("11") "', x'" R20("aa") "', "
	    "3, 1, 1, NULL, x'" R20("bb") "');"
	    "PRAGMA writable_schema = ON;"
	    "UPDATE sqlite_schema SET sql = "
	    "'CREATE INDEX objects_sha1 ON objects(sha1)' "
	    "WHERE name = 'objects_sha1';");
	c = open_ok(&hash_sha256, &w);
	CHECK_INT(w.n, 0);
	if (!c)
		goto out;
	/* the index says bb.. names object 11..; the row says aa.. */
	memset(name.hash, 0xbb, sizeof(name.hash));
	oid_from_raw(&name, &hash_sha1, name.hash);
	CHECK_INT(cache_get_by_sha1(c, &name, &got), XL_ECORRUPT);
	CHECK(got.sha256.algo == NULL);
	CHECK_INT(cache_resolve_prefix(c, &hash_sha1, "bbbb", 4, &got),
		  XL_ECORRUPT);
	cache_close(c);
out:
	scratch_end();
}

TEST(corrupt_replaces_older_copy)
{
	struct warnings w = { 0 };
	struct cache *c;
	char p[400];
	struct stat st;

	scratch_begin();
	/* an old .corrupt and a stale .corrupt-wal from an earlier accident */
	snprintf(p, sizeof(p), "%s.corrupt", db_path);
	write_file(p, "old", 3);
	snprintf(p, sizeof(p), "%s.corrupt-wal", db_path);
	write_file(p, "stale log", 9);
	write_file(db_path, "new garbage, longer than the old", 32);
	c = open_ok(&hash_sha256, &w);
	check_replaced(c, &w);
	cache_close(c);
	snprintf(p, sizeof(p), "%s.corrupt", db_path);
	CHECK_INT(stat(p, &st), 0);
	CHECK_INT(st.st_size, 32);
	CHECK(!exists_suffix(".corrupt-wal"));

	/*
	 * A foreign WAL database that its program still has open, so its
	 * -wal and -shm are there (sqlite deletes them when the last
	 * connection closes, so a closed file rarely leaves any): all three
	 * files move together.
	 */
	{
		sqlite3 *db;

		CHECK_INT(unlink(db_path), 0);
		CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
		CHECK_INT(sqlite3_exec(db, "PRAGMA journal_mode = WAL;"
				       "CREATE TABLE t(x);"
				       "INSERT INTO t VALUES (1);",
				       NULL, NULL, NULL), SQLITE_OK);
		CHECK(exists_suffix("-wal"));
		memset(&w, 0, sizeof(w));
		c = open_ok(&hash_sha256, &w);
		check_replaced(c, &w);
		CHECK(strstr(w.last, "no application id") != NULL);
		cache_close(c);
		CHECK(exists_suffix(".corrupt-wal"));
		CHECK(exists_suffix(".corrupt-shm"));
		sqlite3_close(db);
	}
	snprintf(p, sizeof(p), "%s.corrupt", db_path);
	CHECK_INT(sql_int(p, "SELECT count(*) FROM t"), 1);
	scratch_end();
}

TEST(open_errors_are_not_corruption)
{
	struct warnings w = { 0 };
	struct cache *c = (struct cache *)1;

	scratch_begin();
	/* a directory where the file should be */
	CHECK_INT(mkdir(db_path, 0777), 0);
	CHECK_INT(cache_open(&c, db_path, &hash_sha256, CACHE_OPEN_CHECK_ALL, on_warn, &w), XL_EIO);
	CHECK(c == NULL);
	CHECK_INT(w.n, 0);
	CHECK(!exists_suffix(".corrupt"));
	CHECK(strstr(err_msg(), db_path) != NULL);
	/* no such directory */
	snprintf(db_path, sizeof(db_path), "%s/no/such/dir/c.sqlite", dir);
	CHECK_INT(cache_open(&c, db_path, &hash_sha256, CACHE_OPEN_CHECK_ALL, on_warn, &w), XL_EIO);
	CHECK_INT(w.n, 0);
	CHECK_INT(cache_open(&c, "", &hash_sha256, 0, NULL, NULL), XL_EINVALID);
	scratch_end();
}

/* ---- crashes and concurrency ----------------------------------------- */

#define CRASH_BATCHES 5
#define CRASH_BATCH 2000

TEST(crash_mid_batch)
{
	struct warnings w = { 0 };
	uint64_t n, u;
	struct cache *c;
	pid_t pid;
	int status, missing = 0, extra = 0;

	scratch_begin();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		abort();
	if (!pid) {
		/* the child: its own connection, committed batches, then death */
		struct cache *cc;

		if (cache_open(&cc, db_path, &hash_sha256, 0, NULL, NULL))
			_exit(1);
		for (int b = 0; b < CRASH_BATCHES; b++) {
			if (cache_begin(cc) ||
			    put_range(cc, b * CRASH_BATCH, (b + 1) * CRASH_BATCH) ||
			    cache_pack_done(cc, b ? "pack-b" : "pack-a", 1) ||
			    cache_commit(cc))
				_exit(2);
		}
		if (cache_begin(cc) ||
		    put_range(cc, CRASH_BATCHES * CRASH_BATCH,
			      CRASH_BATCHES * CRASH_BATCH + 30000) ||
		    cache_pack_done(cc, "pack-uncommitted", 1))
			_exit(3);
		kill(getpid(), SIGKILL);
		_exit(4);
	}
	CHECK_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	if (!WIFSIGNALED(status))
		printf("# child exited with %d\n", WEXITSTATUS(status));

	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	CHECK_INT(w.n, 0);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, CRASH_BATCHES * CRASH_BATCH);
	for (uint64_t id = 0; id < CRASH_BATCHES * CRASH_BATCH; id++)
		missing += has(c, id) != 1;
	for (uint64_t id = CRASH_BATCHES * CRASH_BATCH;
	     id < CRASH_BATCHES * CRASH_BATCH + 30000; id += 97)
		extra += has(c, id) != 0;
	CHECK_INT(missing, 0);
	CHECK_INT(extra, 0);
	CHECK_INT(cache_pack_known(c, "pack-a"), 1);
	CHECK_INT(cache_pack_known(c, "pack-b"), 1);
	CHECK_INT(cache_pack_known(c, "pack-uncommitted"), 0);
	/* and it takes writes again */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 100000, 100010), 0);
	CHECK_INT(cache_commit(c), 0);
	cache_close(c);
	CHECK(quick_check_ok(db_path));
out:
	scratch_end();
}

TEST(reader_does_not_wait_for_writer)
{
	struct cache *writer, *reader = NULL;
	uint64_t n = 0, u;
	double t0, t;

	scratch_begin();
	writer = open_ok(&hash_sha256, NULL);
	if (!writer)
		goto out;
	CHECK_INT(cache_begin(writer), 0);
	CHECK_INT(put_range(writer, 0, 1000), 0);
	CHECK_INT(cache_commit(writer), 0);
	/* a big batch, open */
	CHECK_INT(cache_begin(writer), 0);
	CHECK_INT(put_range(writer, 1000, 61000), 0);

	t0 = now();
	reader = open_ok(&hash_sha256, NULL);
	if (reader) {
		CHECK_INT(cache_count(reader, &n, &u), 0);
		CHECK_INT(n, 1000);
		CHECK_INT(has(reader, 999), 1);
		CHECK_INT(has(reader, 1000), 0);
		CHECK_INT(has(reader, 60999), 0);
	}
	t = now() - t0;
	/*
	 * No time limit here: a reader that waited on the writer would wait
	 * out the 10 s busy timeout (this thread is the writer: the batch
	 * cannot end meanwhile) and then fail with SQLITE_BUSY, which the
	 * checks above catch.  The time is printed for the curious; speed
	 * is for make bench (tests/bench/cache.sh), not for a unit test that
	 * also runs under sanitizers.
	 */
	printf("# reader open + reads during a 60k-row batch: %.1f ms\n",
	       t * 1e3);

	CHECK_INT(cache_commit(writer), 0);
	if (reader) {
		/* every statement is a fresh snapshot: the batch is visible */
		CHECK_INT(cache_count(reader, &n, &u), 0);
		CHECK_INT(n, 61000);
		CHECK_INT(has(reader, 60999), 1);
	}
	cache_close(reader);
	cache_close(writer);
out:
	scratch_end();
}

struct open_arg {
	pthread_barrier_t *start;
	int ret, warnings;
};

static void *open_thread(void *data)
{
	struct open_arg *a = data;
	struct warnings w = { 0 };
	struct cache *c = NULL;

	pthread_barrier_wait(a->start);
	a->ret = cache_open(&c, db_path, &hash_sha256, CACHE_OPEN_CHECK_ALL, on_warn, &w);
	if (!a->ret)
		a->ret = put_range(c, 0, 10);
	if (a->ret)
		printf("# concurrent open: %s\n", err_msg());
	a->warnings = w.n;
	cache_close(c);
	return NULL;
}

/* Openers racing to create the same new file all get the one schema. */
TEST(concurrent_create)
{
	pthread_barrier_t start;
	struct open_arg args[4];
	pthread_t th[4];

	for (int round = 0; round < 10; round++) {
		scratch_begin();
		pthread_barrier_init(&start, NULL, 4);
		for (int i = 0; i < 4; i++) {
			args[i] = (struct open_arg){ &start, -100, -1 };
			CHECK_INT(pthread_create(&th[i], NULL, open_thread,
						 &args[i]), 0);
		}
		for (int i = 0; i < 4; i++) {
			pthread_join(th[i], NULL);
			CHECK_INT(args[i].ret, 0);
			CHECK_INT(args[i].warnings, 0);
		}
		pthread_barrier_destroy(&start);
		CHECK(!exists_suffix(".corrupt"));
		CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects_recent"), 10);
		scratch_end();
	}
}

struct thread_arg {
	struct cache *cache;
	uint64_t from, to;
	int errors;
};

static void *thread_main(void *data)
{
	struct thread_arg *a = data;

	for (uint64_t id = a->from; id < a->to; id++) {
		struct cache_object obj;

		make_obj(&obj, id);
		if (cache_put(a->cache, &obj) || has(a->cache, id) != 1 ||
		    has(a->cache, id / 2) < 0)
			a->errors++;
	}
	return NULL;
}

TEST(threads_share_one_cache)
{
	struct thread_arg args[4];
	pthread_t th[4];
	struct cache *c;
	uint64_t n, u;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	CHECK_INT(cache_begin(c), 0);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ c, i * 5000, (i + 1) * 5000, 0 };
		CHECK_INT(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(args[i].errors, 0);
	}
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 20000);
	cache_close(c);
out:
	scratch_end();
}

/* ---- a bench-sized batch ---------------------------------------------- */

/*
 * 130k objects in one batch, then 100k lookups by each name, all checked.
 * The times are printed, not asserted (they say nothing about
 * correctness and fail under ThreadSanitizer): make bench runs this test
 * alone and shows them (tests/bench/cache.sh).
 */
#define PERF_OBJECTS 130000
#define PERF_LOOKUPS 100000

TEST(batch_130k)
{
	struct cache_object *objs, got;
	struct cache *c;
	double t0, put, commit, get256, get1, reopen;
	int bad = 0, n1 = 0;

	scratch_begin();
	objs = calloc(PERF_OBJECTS, sizeof(*objs));
	if (!objs)
		abort();
	for (uint64_t id = 0; id < PERF_OBJECTS; id++)
		make_obj(&objs[id], id);
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;

	t0 = now();
	CHECK_INT(cache_begin(c), 0);
	for (int i = 0; i < PERF_OBJECTS; i++)
		bad += cache_put(c, &objs[i]) != 0;
	put = now() - t0;
	CHECK_INT(cache_commit(c), 0);
	commit = now() - t0;
	CHECK_INT(bad, 0);

	t0 = now();
	for (int i = 0; i < PERF_LOOKUPS; i++) {
		const struct cache_object *o = &objs[mix(i) % PERF_OBJECTS];

		bad += cache_get(c, &o->sha256, &got) != 0 || !same_obj(o, &got);
	}
	get256 = now() - t0;
	t0 = now();
	for (int i = 0; i < PERF_LOOKUPS; i++) {
		const struct cache_object *o = &objs[mix(i) % PERF_OBJECTS];

		if (!o->sha1.algo)
			continue;
		n1++;
		bad += cache_get_by_sha1(c, &o->sha1, &got) != 0 ||
		       !same_obj(o, &got);
	}
	get1 = now() - t0;
	CHECK_INT(bad, 0);
	cache_close(c);

	/* opening runs quick_check over the whole file */
	t0 = now();
	c = open_ok(&hash_sha256, NULL);
	reopen = now() - t0;
	cache_close(c);

	printf("# %d puts in one batch: %.0f ms (%.2f us/put), with commit "
	       "%.0f ms\n", PERF_OBJECTS, put * 1e3, put * 1e6 / PERF_OBJECTS,
	       commit * 1e3);
	printf("# lookups: by sha256 %.2f us, by sha1 %.2f us\n",
	       get256 * 1e6 / PERF_LOOKUPS, get1 * 1e6 / n1);
	printf("# reopen of a %d-object cache (quick_check): %.0f ms\n",
	       PERF_OBJECTS, reopen * 1e3);
out:
	free(objs);
	scratch_end();
}

/* ---- default path ---------------------------------------------------- */

TEST(default_path)
{
	char objdir[400], expect[600], hex[65];
	unsigned char md[32];
	unsigned int mdlen;
	struct buf out = BUF_INIT;
	char *old_xdg = getenv("XDG_CACHE_HOME"), *old_home = getenv("HOME");

	old_xdg = old_xdg ? strdup(old_xdg) : NULL;
	old_home = old_home ? strdup(old_home) : NULL;
	scratch_begin();

	/* a writable git directory: the cache goes in it */
	snprintf(objdir, sizeof(objdir), "%s/repo.git", dir);
	CHECK_INT(mkdir(objdir, 0777), 0);
	CHECK_INT(cache_default_path(objdir, &out), 0);
	snprintf(expect, sizeof(expect), "%s/xlatefs-cache.sqlite", objdir);
	CHECK_STR(out.buf, expect);

	/*
	 * A git directory we cannot write (here: one that does not exist; a
	 * read-only one would not do, as root may write it): the per-user
	 * directory, named by the path's digest.
	 */
	snprintf(objdir, sizeof(objdir), "%s/gone/repo.git", dir);
	EVP_Digest(objdir, strlen(objdir), md, &mdlen, EVP_sha256(), NULL);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	snprintf(expect, sizeof(expect), "%s/xdg", dir);
	setenv("XDG_CACHE_HOME", expect, 1);
	snprintf(expect, sizeof(expect), "%s/xdg/xlatefs/%s.sqlite", dir, hex);
	CHECK_INT(cache_default_path(objdir, &out), 0);
	CHECK_STR(out.buf, expect);
	snprintf(expect, sizeof(expect), "%s/xdg/xlatefs", dir);
	CHECK(exists(expect));

	/* a relative XDG_CACHE_HOME is ignored for $HOME/.cache */
	setenv("XDG_CACHE_HOME", "relative", 1);
	snprintf(expect, sizeof(expect), "%s/home", dir);
	setenv("HOME", expect, 1);
	snprintf(expect, sizeof(expect), "%s/home/.cache/xlatefs/%s.sqlite",
		 dir, hex);
	CHECK_INT(cache_default_path(objdir, &out), 0);
	CHECK_STR(out.buf, expect);

	/* and the path works */
	snprintf(db_path, sizeof(db_path), "%s", out.buf);
	cache_close(open_ok(&hash_sha256, NULL));
	CHECK(exists(db_path));

	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	CHECK_INT(cache_default_path(objdir, &out), XL_EIO);
	CHECK_INT(out.len, 0);

	if (old_xdg)
		setenv("XDG_CACHE_HOME", old_xdg, 1);
	if (old_home)
		setenv("HOME", old_home, 1);
	free(old_xdg);
	free(old_home);
	buf_release(&out);
	scratch_end();
}


/*
 * A version 1 file (no retry column) is migrated in place, not thrown
 * away: its names stay, and its refusals, which version 1 kept for good
 * even when only a reference was missing, are all marked retry so that
 * the next build looks at each once more.
 */
static int count_fn(const struct cache_object *co, void *data)
{
	(*(int *)data)++;
	return 0;
}

TEST(migrate_from_version_1)
{
	struct warnings w = { 0 };
	struct cache_object got;
	struct cache *c;
	struct oid name;
	int n = 0;

	scratch_begin();
	sql(db_path,
	    "PRAGMA journal_mode = WAL;"
	    "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;"
	    "CREATE TABLE objects(sha256 BLOB PRIMARY KEY NOT NULL, sha1 BLOB, "
	    "type INTEGER NOT NULL, size256 INTEGER NOT NULL, size1 INTEGER, "
	    "reason TEXT) WITHOUT ROWID;"
	    "CREATE INDEX objects_sha1 ON objects(sha1);"
	    "CREATE TABLE packs(checksum TEXT PRIMARY KEY NOT NULL, objects INTEGER NOT NULL) WITHOUT ROWID;"
	    "CREATE TABLE gitlinks(tree BLOB NOT NULL, path BLOB NOT NULL, "
	    "commit256 BLOB NOT NULL, commit1 BLOB, PRIMARY KEY(tree, path)) WITHOUT ROWID;"
	    "CREATE INDEX gitlinks_commit256 ON gitlinks(commit256);"
	    "CREATE INDEX gitlinks_commit1 ON gitlinks(commit1);"
	    "INSERT INTO meta VALUES ('format', 'sha256');"
	    "INSERT INTO meta VALUES ('settings', 'unknown-headers=fail');"
	    "PRAGMA application_id = 2020370035; PRAGMA user_version = 1;"
	    "INSERT INTO objects VALUES (x'" R32("11") "', x'" R20("aa") "', 3, 5, 5, NULL);"
	    "INSERT INTO objects VALUES (x'" R32("22") "', NULL, 1, 7, NULL, 'unable to map parent');");
	c = open_ok(&hash_sha256, &w);
	CHECK_INT(w.n, 0);
	if (!c)
		goto out;
	CHECK_INT(sql_int(db_path, "PRAGMA user_version"), CACHE_SCHEMA_VERSION);
	memset(name.hash, 0x11, sizeof(name.hash));
	oid_from_raw(&name, &hash_sha256, name.hash);
	CHECK_INT(cache_get(c, &name, &got), 0);
	CHECK(got.sha1.algo == &hash_sha1);
	CHECK_INT(got.retry, 0);
	memset(name.hash, 0x22, sizeof(name.hash));
	oid_from_raw(&name, &hash_sha256, name.hash);
	CHECK_INT(cache_get(c, &name, &got), 0);
	CHECK(got.sha1.algo == NULL);
	CHECK_INT(got.retry, 1);
	CHECK_INT(cache_for_each(c, CACHE_EACH_RETRY, count_fn, &n), 0);
	CHECK_INT(n, 1);
	/* a refusal for good, stored again, leaves the retry set */
	got.retry = 0;
	got.reason = "unknown commit header 'x'";
	CHECK_INT(cache_put(c, &got), 0);
	n = 0;
	CHECK_INT(cache_for_each(c, CACHE_EACH_RETRY, count_fn, &n), 0);
	CHECK_INT(n, 0);
	cache_close(c);
	/* and it opens again as the current version, with nothing to migrate */
	c = open_ok(&hash_sha256, &w);
	CHECK_INT(w.n, 0);
	cache_close(c);
out:
	scratch_end();
}

/* Whether `sql` gives the same rows (blobs compared as bytes) in two files. */
static int same_rows(const char *a, const char *b, const char *sql)
{
	sqlite3 *db[2] = { NULL, NULL };
	sqlite3_stmt *st[2] = { NULL, NULL };
	int same = 1, rows = 0;

	for (int i = 0; i < 2; i++)
		if (sqlite3_open_v2(i ? b : a, &db[i], SQLITE_OPEN_READONLY,
				    NULL) != SQLITE_OK ||
		    sqlite3_prepare_v2(db[i], sql, -1, &st[i], NULL) != SQLITE_OK)
			same = 0;
	while (same) {
		int r0 = sqlite3_step(st[0]), r1 = sqlite3_step(st[1]);

		if (r0 != r1 || (r0 != SQLITE_ROW && r0 != SQLITE_DONE)) {
			same = 0;
			break;
		}
		if (r0 == SQLITE_DONE)
			break;
		rows++;
		for (int k = 0; k < sqlite3_column_count(st[0]); k++) {
			int n = sqlite3_column_bytes(st[0], k);

			if (n != sqlite3_column_bytes(st[1], k) ||
			    (n && memcmp(sqlite3_column_blob(st[0], k),
					 sqlite3_column_blob(st[1], k), (size_t)n)))
				same = 0;
		}
	}
	for (int i = 0; i < 2; i++) {
		sqlite3_finalize(st[i]);
		sqlite3_close(db[i]);
	}
	return same && rows ? rows : 0;
}

/*
 * Runs held apart from the connection (a layout behind a gate) and put
 * later make the rows cache_pack1_put_entry() makes, in the format the
 * readers know: runs that end by bytes, by count and at a gap, and an
 * entry refused whole.
 */
static off_t file_size(const char *suffix)
{
	char p[400];
	struct stat st;

	snprintf(p, sizeof(p), "%s%s", db_path, suffix);
	return stat(p, &st) ? -1 : st.st_size;
}

/*
 * Deferred, a commit leaves its pages in the WAL however many there are;
 * a checkpoint aside (its own connection) copies them into the file
 * while this connection keeps writing; resumed, sqlite's checkpoints
 * after a big commit are back.
 */
TEST(checkpoints_deferred_and_aside)
{
	struct cache *c;
	off_t empty, aside;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	empty = file_size("");
	CHECK_INT(cache_defer_checkpoints(c, 1), 0);
	/* 40,000 rows: some 1,500 pages with their index, over 1,000 */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 40000), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(file_size(""), empty);	/* all in the WAL still */
	CHECK(file_size("-wal") > 4 << 20);
	/* copied aside, while this connection writes another batch */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 40000, 40100), 0);
	CHECK_INT(cache_checkpoint_aside(c), 0);
	aside = file_size("");
	CHECK(aside > 4 << 20);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(file_size(""), aside);	/* the batch after it is not */
	CHECK_INT(has(c, 39999), 1);
	CHECK_INT(has(c, 40099), 1);
	/* resumed: checkpointed now, and after each big commit again */
	CHECK_INT(cache_defer_checkpoints(c, 0), 0);
	CHECK(file_size("") > aside);
	aside = file_size("");
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 100000, 140000), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK(file_size("") > aside + (4 << 20));
	cache_close(c);
	CHECK(quick_check_ok(db_path));
out:
	scratch_end();
}

TEST(pack1_runs_held)
{
	enum { N = 300 };
	struct cache_pack1_runs runs;
	struct cache_pack1 p = { 0 }, q = { 0 };
	struct cache_pack1_entry e;
	unsigned char data[40000];
	char held_path[320], sql[200];
	struct cache *c = NULL, *h = NULL;
	/* where runs must start: after a big entry, 64 entries, a gap */
	static const int starts_at[3] = { 22, 86, 121 };
	uint64_t off = 12, starts[3] = { 0, 0, 0 };
	size_t had;

	scratch_begin();
	snprintf(held_path, sizeof(held_path), "%s/held.sqlite", dir);
	cache_pack1_runs_init(&runs);
	memset(data, 0x5c, sizeof(data));
	c = open_ok(&hash_sha256, NULL);
	if (!c || cache_open(&h, held_path, &hash_sha256, CACHE_OPEN_CHECK_ALL,
			     NULL, NULL))
		goto out;
	snprintf(p.native, sizeof(p.native), "%064d", 9);
	q = p;
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_pack1_add(c, &p), 0);
	for (int i = 0; i < N; i++) {
		memset(&e, 0, sizeof(e));
		if (i == 121)
			off += 7;			/* a gap */
		e.offset = off;
		for (int k = 0; k < 3; k++)
			if (i == starts_at[k])
				starts[k] = off;
		e.hdr[0] = (unsigned char)i;
		e.hdr_len = 1 + i % 3;
		e.crc = 0x10000u * (uint32_t)i;
		if (i % 4) {
			memset(e.sha256.hash, i, 32);
			e.sha256.algo = &hash_sha256;
			e.data = data;
			/* entries 21 and 201 are big: their runs end by bytes */
			e.data_len = i == 21 || i == 201 ? sizeof(data) : (size_t)i;
		} else {
			e.src = 1000 * (uint64_t)i;
		}
		e.len = e.hdr_len + e.data_len + 11;
		off += e.len;
		CHECK_INT(cache_pack1_put_entry(c, p.id, &e), 0);
		CHECK_INT(cache_pack1_runs_add(&runs, &e), 0);
	}
	p.objects = N;
	CHECK_INT(cache_pack1_finish(c, &p), 0);
	CHECK_INT(cache_commit(c), 0);

	/* a bad entry: refused, and nothing of it held */
	had = cache_pack1_runs_bytes(&runs);
	CHECK(had > 0);
	e.hdr_len = 0;
	CHECK_INT(cache_pack1_runs_add(&runs, &e), XL_EINVALID);
	CHECK_INT(cache_pack1_runs_bytes(&runs), had);
	/* put only inside a batch */
	CHECK_INT(cache_pack1_runs_put(h, 1, &runs, 1), XL_EINVALID);
	CHECK_INT(cache_begin(h), 0);
	CHECK_INT(cache_pack1_add(h, &q), 0);
	CHECK_INT(cache_pack1_runs_put(h, q.id, &runs, 1), 0);
	CHECK_INT(cache_pack1_runs_bytes(&runs), 0);
	q.objects = N;
	CHECK_INT(cache_pack1_finish(h, &q), 0);
	CHECK_INT(cache_commit(h), 0);
	CHECK_INT(p.id, q.id);
	cache_close(h);
	h = NULL;
	cache_close(c);
	c = NULL;
	for (int k = 0; k < 3; k++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM pack1_chunks "
			 "WHERE key = %lld", (long long)((uint64_t)p.id << 40 |
						    starts[k]));
		CHECK_INT(sql_int(db_path, sql), 1);
	}
	/* the first entry as the readers decode it: len 12, src 0, a
	   header of one byte 00, no name, CRC32 0 */
	CHECK_INT(sql_int(db_path, "SELECT substr(entries, 1, 9) = "
			  "x'0c0001000000000000' FROM pack1_chunks ORDER BY key "
			  "LIMIT 1"), 1);
	CHECK(same_rows(db_path, held_path,
			"SELECT key, entries FROM pack1_chunks ORDER BY key") > 0);
out:
	cache_pack1_runs_release(&runs);
	cache_close(h);
	cache_close(c);
	scratch_end();
}

/*
 * A SHA-1 store's packs are SHA-256 packs: 32-byte trailers, and entries
 * that name native objects in 20 bytes.
 */
TEST(pack1_layouts_sha1_store)
{
	struct cache_pack1 p = { 0 }, *list = NULL;
	struct cache_pack1_entry e[2], *got = NULL;
	struct buf payloads = BUF_INIT;
	size_t nr = 0;
	struct cache *c;

	scratch_begin();
	c = open_ok(&hash_sha1, NULL);
	if (!c)
		goto out;
	memset(e, 0, sizeof(e));
	for (int i = 0; i < 2; i++) {
		e[i].offset = 12 + 100 * (uint64_t)i;
		e[i].len = 100;
		e[i].hdr_len = 1 + 32;		/* a REF_DELTA's: a SHA-256 base */
		memset(e[i].hdr, 0x70 + i, e[i].hdr_len);
		e[i].crc = 0xfeed0000u + (uint32_t)i;
	}
	memset(e[1].sha256.hash, 0x11, 20);
	e[1].sha256.algo = &hash_sha1;
	memset(e[1].base.hash, 0x22, 20);
	e[1].base.algo = &hash_sha1;
	snprintf(p.native, sizeof(p.native), "%040d", 7);
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_pack1_add(c, &p), 0);
	for (int i = 0; i < 2; i++)
		CHECK_INT(cache_pack1_put_entry(c, p.id, &e[i]), 0);
	memset(p.checksum, 0x5a, sizeof(p.checksum));
	p.objects = 2;
	p.pack_size = 212 + 32;
	CHECK_INT(cache_pack1_finish(c, &p), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(sql_int(db_path, "SELECT length(checksum) FROM packs1"), 32);

	CHECK_INT(cache_pack1_list(c, &list, &nr), 0);
	CHECK_INT(nr, 1);
	CHECK(nr == 1 && !memcmp(list[0].checksum, p.checksum, 32));
	free(list);
	CHECK_INT(cache_pack1_entries(c, p.id, 0, 300, &got, &nr, &payloads), 0);
	CHECK_INT(nr, 2);
	if (nr == 2) {
		CHECK_INT(got[0].hdr_len, 33);
		CHECK(!memcmp(got[0].hdr, e[0].hdr, 33) && !got[0].sha256.algo);
		CHECK(got[1].sha256.algo == &hash_sha1 &&
		      !oid_cmp(&got[1].sha256, &e[1].sha256));
		CHECK(got[1].base.algo == &hash_sha1 &&
		      !oid_cmp(&got[1].base, &e[1].base));
		CHECK_INT(got[1].crc, 0xfeed0001u);
	}
	free(got);
	cache_close(c);
out:
	buf_release(&payloads);
	scratch_end();
}

/* The synthesized packs' store: a layout in, read back by range, dropped. */
TEST(pack1_layouts)
{
	struct warnings w = { 0 };
	struct cache_pack1 p = { 0 }, *list = NULL;
	struct cache_pack1_entry e[3], *got = NULL;
	struct buf payloads = BUF_INIT, chunk = BUF_INIT;
	unsigned char idx[CACHE_PACK1_IDX_CHUNK + 100];
	size_t nr = 0;
	struct cache *c;

	scratch_begin();
	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	memset(e, 0, sizeof(e));
	for (int i = 0; i < 3; i++) {
		e[i].offset = 12 + 100 * (uint64_t)i;
		e[i].len = 100;
		e[i].hdr[0] = 0x30 | (unsigned char)i;
		e[i].hdr_len = 1;
		e[i].crc = 0xdeadbe00u + (uint32_t)i;
	}
	e[0].src = 4242;				/* native bytes */
	memset(e[1].sha256.hash, 0x11, 32);		/* a form, kept */
	e[1].sha256.algo = &hash_sha256;
	e[1].data = (const unsigned char *)"payload";
	e[1].data_len = 7;
	e[2].sha256 = e[1].sha256;			/* a delta, made when read */
	memset(e[2].base.hash, 0x22, 32);
	e[2].base.algo = &hash_sha256;
	memset(idx, 0xab, sizeof(idx));
	snprintf(p.native, sizeof(p.native), "%064d", 7);

	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_pack1_add(c, &p), 0);
	for (int i = 0; i < 3; i++)
		CHECK_INT(cache_pack1_put_entry(c, p.id, &e[i]), 0);
	CHECK_INT(cache_pack1_put_idx(c, p.id, 0, idx, CACHE_PACK1_IDX_CHUNK), 0);
	CHECK_INT(cache_pack1_put_idx(c, p.id, 1, idx, 100), 0);
	memset(p.checksum, 0x5a, sizeof(p.checksum));
	p.objects = 3;
	p.pack_size = 332;
	p.idx_size = sizeof(idx);
	CHECK_INT(cache_pack1_finish(c, &p), 0);
	CHECK_INT(cache_commit(c), 0);

	CHECK_INT(cache_pack1_list(c, &list, &nr), 0);
	CHECK_INT(nr, 1);
	if (nr == 1) {
		CHECK(!strcmp(list[0].native, p.native));
		CHECK(!memcmp(list[0].checksum, p.checksum, 20));
		CHECK_INT(list[0].objects, 3);
		CHECK_INT(list[0].pack_size, 332);
		CHECK_INT(list[0].idx_size, sizeof(idx));
	}
	free(list);
	/* a range inside the second entry gives it; one over two gives both */
	CHECK_INT(cache_pack1_entries(c, p.id, 150, 160, &got, &nr, &payloads), 0);
	CHECK_INT(nr, 1);
	if (nr == 1) {
		CHECK_INT(got[0].offset, 112);
		CHECK_INT(got[0].data_len, 7);
		CHECK(got[0].data && !memcmp(got[0].data, "payload", 7));
		CHECK_INT(got[0].crc, 0xdeadbe01u);
		CHECK(got[0].sha256.algo && !got[0].base.algo);
	}
	free(got);
	CHECK_INT(cache_pack1_entries(c, p.id, 12, 250, &got, &nr, &payloads), 0);
	CHECK_INT(nr, 3);
	if (nr == 3) {
		CHECK_INT(got[0].src, 4242);
		CHECK(!got[0].sha256.algo && !got[0].data);
		CHECK(got[2].base.algo && !oid_cmp(&got[2].base, &e[2].base));
		CHECK(!got[2].data);
	}
	free(got);
	CHECK_INT(cache_pack1_idx(c, p.id, 1, &chunk), 0);
	CHECK_INT(chunk.len, 100);
	CHECK_INT(cache_pack1_idx(c, p.id, 2, &chunk), XL_ECORRUPT);
	/* a bad entry is refused before it reaches the file */
	e[0].hdr_len = 0;
	CHECK_INT(cache_pack1_put_entry(c, p.id, &e[0]), XL_EINVALID);

	/* emptied with the rest when the settings change */
	CHECK_INT(cache_check_settings(c, "a"), 0);
	CHECK_INT(cache_check_settings(c, "b"), 1);
	CHECK_INT(cache_pack1_list(c, &list, &nr), 0);
	CHECK_INT(nr, 0);
	free(list);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM pack1_chunks"), 0);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM pack1_idx"), 0);

	/* and dropped one by one */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_pack1_add(c, &p), 0);
	CHECK_INT(cache_pack1_put_entry(c, p.id, &e[1]), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(cache_pack1_drop(c, p.id), 0);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM pack1_chunks"), 0);
	cache_close(c);
out:
	buf_release(&payloads);
	buf_release(&chunk);
	scratch_end();
}

/*
 * A cache of `from` (made by dropping what later versions added) is
 * migrated in place: no warning, the current version, its 50 names
 * kept, and the new tables there and empty.
 */
static void check_migrated(int from, const char *drop)
{
	struct warnings w = { 0 };
	char sql_text[1024];
	struct cache *c;
	uint64_t n, u;

	scratch_begin();
	make_cache_folded(&hash_sha256, 50);
	snprintf(sql_text, sizeof(sql_text), "%s PRAGMA user_version = %d;",
		 drop, from);
	sql(db_path, sql_text);
	c = open_ok(&hash_sha256, &w);
	CHECK_INT(w.n, 0);
	if (c) {
		CHECK_INT(sql_int(db_path, "PRAGMA user_version"),
			  CACHE_SCHEMA_VERSION);
		CHECK_INT(cache_count(c, &n, &u), 0);
		CHECK_INT(n, 50);
		CHECK_INT(u, 5);
		/* kept in meta by the migration, not made by a scan now */
		CHECK_INT(sql_int(db_path, "SELECT value FROM meta WHERE key = 'objects'"), 50);
		CHECK_INT(sql_int(db_path, "SELECT value FROM meta WHERE key = 'untranslatable'"), 5);
		CHECK_INT(sql_int(db_path, "SELECT count(*) FROM pack1_chunks"), 0);
		CHECK_INT(sql_int(db_path, "SELECT count(*) FROM ref_names"), 0);
		CHECK_INT(sql_int(db_path, "SELECT count(*) FROM known"), 0);
		CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects_recent"), 0);
		cache_close(c);
	}
	scratch_end();
}

/* Version 4's table of pack entries, a row each. */
#define V4_PACK1_ENTRIES \
	"CREATE TABLE pack1_entries(pack INTEGER NOT NULL, " \
	"offset INTEGER NOT NULL, len INTEGER NOT NULL, src INTEGER NOT NULL, " \
	"hdr BLOB NOT NULL, sha256 BLOB, base BLOB, data BLOB, " \
	"crc INTEGER NOT NULL, PRIMARY KEY (pack, offset)) WITHOUT ROWID;"

/*
 * Version 8's packs1 took 20-byte trailers only; 9 makes the table again
 * with its rows, so that a SHA-1 store's SHA-256 packs fit.
 */
#define V8_PACKS1 \
	"PRAGMA writable_schema = 1; UPDATE sqlite_schema SET sql = " \
	"replace(sql, 'length(checksum) IN (20, 32)', 'length(checksum) = 20') " \
	"WHERE name = 'packs1'; PRAGMA writable_schema = 0;"

TEST(migrate_from_version_8)
{
	struct cache_pack1 *list = NULL;
	size_t nr = 0;
	struct cache *c;

	check_migrated(8, V8_PACKS1);

	scratch_begin();
	make_cache_folded(&hash_sha256, 50);
	sql(db_path, V8_PACKS1 "INSERT INTO packs1(native, checksum, objects, "
	    "pack_size, idx_size) VALUES ('ab', zeroblob(20), 1, 40, 1100);"
	    "PRAGMA user_version = 8;");
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM sqlite_schema WHERE "
			  "name = 'packs1' AND sql LIKE '%length(checksum) = 20%'"), 1);
	c = open_ok(&hash_sha256, NULL);
	if (c) {
		CHECK_INT(sql_int(db_path, "PRAGMA user_version"),
			  CACHE_SCHEMA_VERSION);
		CHECK_INT(sql_int(db_path, "SELECT count(*) FROM sqlite_schema WHERE "
				  "name = 'packs1' AND sql LIKE '%IN (20, 32)%'"), 1);
		CHECK_INT(cache_pack1_list(c, &list, &nr), 0);
		CHECK_INT(nr, 1);
		CHECK(nr == 1 && list[0].objects == 1 && list[0].idx_size == 1100);
		free(list);
		cache_close(c);
	}
	scratch_end();
}

/* Version 7 gains the table of recent rows. */
TEST(migrate_from_version_7)
{
	check_migrated(7, "DROP TABLE objects_recent;");
}

/* Version 6 gains the counts in meta. */
TEST(migrate_from_version_6)
{
	check_migrated(6, "DROP TABLE objects_recent; DELETE FROM meta WHERE key IN ('objects', "
		       "'untranslatable');");
}

/*
 * The counts kept in meta follow the rows through everything that
 * changes them, and always equal a scan.
 */
static void check_counts(struct cache *c, uint64_t want_n, uint64_t want_u,
			 int line)
{
	uint64_t n = 0, u = 0, sn = 0, su = 0;

	if (cache_count(c, &n, &u) || cache_count_rows(c, &sn, &su) ||
	    n != want_n || u != want_u || sn != n || su != u)
		harness_fail(__FILE__, line, "counts %llu/%llu, scan %llu/%llu, "
			     "want %llu/%llu", (unsigned long long)n,
			     (unsigned long long)u, (unsigned long long)sn,
			     (unsigned long long)su, (unsigned long long)want_n,
			     (unsigned long long)want_u);
}

TEST(counts_follow_rows)
{
	struct cache *c = NULL, *c2 = NULL;
	struct cache_object obj;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	CHECK_INT(cache_open(&c2, db_path, &hash_sha256, 0, NULL, NULL), 0);
	if (!c || !c2)
		goto out;
	check_counts(c, 0, 0, __LINE__);
	/* a batch: its own rows count inside it, and for all at commit */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 100), 0);
	check_counts(c, 100, 10, __LINE__);
	CHECK_INT(cache_commit(c), 0);
	check_counts(c, 100, 10, __LINE__);
	check_counts(c2, 100, 10, __LINE__);
	/* rolled back: nothing */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 100, 150), 0);
	cache_rollback(c);
	check_counts(c, 100, 10, __LINE__);
	/* the same rows again, from another connection: counted once */
	CHECK_INT(cache_begin(c2), 0);
	CHECK_INT(put_range(c2, 50, 120), 0);
	CHECK_INT(cache_commit(c2), 0);
	check_counts(c, 120, 12, __LINE__);
	/* a refusal named after all, and a name refused after all */
	make_obj(&obj, 7);
	fill_name(&obj.sha1, &hash_sha1, 7, 2);
	obj.reason = NULL;
	CHECK_INT(cache_put(c, &obj), 0);	/* outside a batch */
	check_counts(c2, 120, 11, __LINE__);
	make_obj(&obj, 8);
	memset(&obj.sha1, 0, sizeof(obj.sha1));
	obj.reason = "a collision";
	CHECK_INT(cache_put(c, &obj), 0);
	check_counts(c2, 120, 12, __LINE__);
	/* counts someone broke are made again from the rows */
	sql(db_path, "UPDATE meta SET value = 'x' WHERE key = 'objects'");
	check_counts(c, 120, 12, __LINE__);
	CHECK_INT(sql_int(db_path, "SELECT value FROM meta WHERE key = 'objects'"), 120);
	sql(db_path, "UPDATE meta SET value = '3' WHERE key = 'objects'");
	check_counts(c2, 120, 12, __LINE__);	/* fewer rows than refusals */
	sql(db_path, "DELETE FROM meta WHERE key = 'untranslatable'");
	check_counts(c2, 120, 12, __LINE__);
	/* emptied for new settings (here: rows of unrecorded ones): none */
	CHECK_INT(cache_check_settings(c, "a"), 1);
	check_counts(c2, 0, 0, __LINE__);
	CHECK_INT(put_range(c, 0, 20), 0);
	check_counts(c2, 20, 2, __LINE__);
out:
	cache_close(c);
	cache_close(c2);
	scratch_end();
}

/* Version 5 gains the known pairs' table. */
TEST(migrate_from_version_5)
{
	check_migrated(5, "DROP TABLE objects_recent; DROP TABLE known;");
}

/* Version 2 gains the packs' tables and the ref names', and keeps its names. */
TEST(migrate_from_version_2)
{
	check_migrated(2, "DROP TABLE objects_recent; DROP TABLE packs1; DROP TABLE pack1_chunks; "
		       "DROP TABLE pack1_idx; DROP TABLE ref_names; "
		       "DROP TABLE known;");
}

/* Version 3 gains the ref names' table. */
TEST(migrate_from_version_3)
{
	check_migrated(3, "DROP TABLE objects_recent; DROP TABLE ref_names; DROP TABLE pack1_chunks; "
		       "DROP TABLE known; " V4_PACK1_ENTRIES);
}

/*
 * Version 4 kept a row per pack entry: its layouts are dropped (the next
 * build lays the packs out again), its names kept.
 */
TEST(migrate_from_version_4)
{
	check_migrated(4, "DROP TABLE objects_recent; DROP TABLE pack1_chunks; DROP TABLE known; "
		       V4_PACK1_ENTRIES
		       "INSERT INTO packs1(native, checksum, objects, pack_size, "
		       "idx_size) VALUES ('x', zeroblob(20), 1, 40, 1100);"
		       "INSERT INTO pack1_entries VALUES (1, 12, 8, 0, x'30', "
		       "NULL, NULL, NULL, 0);"
		       "INSERT INTO pack1_idx VALUES (4294967296, x'00');");
	scratch_begin();
	make_cache_folded(&hash_sha256, 5);
	sql(db_path, "DROP TABLE objects_recent; DROP TABLE pack1_chunks; "
	    "DROP TABLE known; " V4_PACK1_ENTRIES
	    "INSERT INTO packs1(native, checksum, objects, pack_size, idx_size) "
	    "VALUES ('x', zeroblob(20), 1, 40, 1100); PRAGMA user_version = 4;");
	{
		struct warnings w = { 0 };
		struct cache *c = open_ok(&hash_sha256, &w);

		CHECK_INT(w.n, 0);
		CHECK_INT(sql_int(db_path, "SELECT count(*) FROM packs1"), 0);
		CHECK_INT(sql_int(db_path, "SELECT count(*) FROM sqlite_schema "
				  "WHERE name = 'pack1_entries'"), 0);
		cache_close(c);
	}
	scratch_end();
}

/*
 * Entries are kept in runs: many entries over many rows read back by any
 * range, whatever the runs' edges; an entry that does not follow the
 * last starts a run of its own; a damaged run is corruption.
 */
TEST(pack1_runs)
{
	struct warnings w = { 0 };
	struct cache_pack1 p = { 0 };
	struct cache_pack1_entry e, *got = NULL;
	struct buf payloads = BUF_INIT;
	unsigned char data[3000];
	size_t nr = 0, want;
	uint64_t off = 12;
	struct cache *c;
	int bad = 0;

	scratch_begin();
	c = open_ok(&hash_sha256, &w);
	if (!c)
		goto out;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7);
	snprintf(p.native, sizeof(p.native), "%064d", 9);
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_pack1_add(c, &p), 0);
	/* 1000 entries, every third with a payload of (i % 1000) bytes */
	for (uint32_t i = 0; i < 1000; i++) {
		memset(&e, 0, sizeof(e));
		e.offset = off;
		e.len = 10 + i % 17;
		e.src = 1000000 + i;
		e.hdr_len = 1 + i % 3;
		memset(e.hdr, (int)i, e.hdr_len);
		e.crc = 0x1000u + i;
		if (i % 2) {
			memset(e.sha256.hash, (int)i, 32);
			e.sha256.algo = &hash_sha256;
		}
		if (i % 2 && i % 3 == 0) {
			e.data = data;
			e.data_len = i % 1000;
		}
		if (!bad && cache_pack1_put_entry(c, p.id, &e))
			bad = 1;
		off += e.len;
	}
	CHECK_INT(bad, 0);
	/* a gap: a run of its own */
	memset(&e, 0, sizeof(e));
	e.offset = off + 100;
	e.len = 5;
	e.hdr[0] = 0x30;
	e.hdr_len = 1;
	e.crc = 77;
	CHECK_INT(cache_pack1_put_entry(c, p.id, &e), 0);
	p.objects = 1001;
	p.pack_size = off + 125;
	CHECK_INT(cache_pack1_finish(c, &p), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK(sql_int(db_path, "SELECT count(*) FROM pack1_chunks") > 10);

	/* every range of 1 to 300 bytes, at steps of 37: the entries it touches */
	for (uint64_t from = 0; from < off && !bad; from += 37) {
		uint64_t to = from + 1 + from % 300, at = 12, expect = 0;
		size_t first = SIZE_MAX;

		if (to > off)
			to = off;	/* the entry past the gap comes later */

		for (uint32_t i = 0; i < 1000; i++) {
			uint64_t len = 10 + i % 17;

			if (at + len > from && at < to) {
				if (first == SIZE_MAX)
					first = i;
				expect++;
			}
			at += len;
		}
		if (cache_pack1_entries(c, p.id, from, to, &got, &nr, &payloads) ||
		    nr != expect) {
			bad = 1;
		} else {
			for (size_t k = 0; k < nr; k++) {
				uint32_t i = (uint32_t)(first + k);

				if (got[k].src != 1000000 + i || got[k].crc != 0x1000u + i ||
				    got[k].hdr_len != 1 + i % 3 ||
				    !!got[k].sha256.algo != (int)(i % 2) ||
				    (got[k].data ? got[k].data_len : 9999) !=
				    (i % 2 && i % 3 == 0 ? i % 1000 : 9999) ||
				    (got[k].data && memcmp(got[k].data, data, got[k].data_len)))
					bad = 1;
			}
			if (nr && got[0].offset > from)
				bad = from >= 12;
		}
		free(got);
		got = NULL;
	}
	CHECK_INT(bad, 0);
	/* the entry after the gap, alone */
	CHECK_INT(cache_pack1_entries(c, p.id, off + 101, off + 102, &got, &nr,
				      &payloads), 0);
	CHECK_INT(nr, 1);
	if (nr == 1)
		CHECK_INT(got[0].crc, 77);
	free(got);
	got = NULL;
	/* nothing in the gap itself */
	CHECK_INT(cache_pack1_entries(c, p.id, off + 10, off + 20, &got, &nr,
				      &payloads), 0);
	CHECK_INT(nr, 0);
	free(got);
	got = NULL;
	/* a run cut short is corruption, not fewer entries */
	want = (size_t)sql_int(db_path, "SELECT min(key) FROM pack1_chunks");
	cache_close(c);
	{
		char text[200];

		snprintf(text, sizeof(text), "UPDATE pack1_chunks SET entries = "
			 "substr(entries, 1, length(entries) - 3) WHERE key = %zu",
			 want);
		sql(db_path, text);
	}
	c = open_ok(&hash_sha256, &w);
	if (c) {
		CHECK_INT(cache_pack1_entries(c, p.id, 0, 100, &got, &nr, &payloads),
			  XL_ECORRUPT);
		free(got);
		cache_close(c);
	}
out:
	buf_release(&payloads);
	scratch_end();
}

struct seen_names {
	struct oid pairs[8];
	int n;
};

static int note_name(const struct oid *sha256, const struct oid *sha1,
		     void *data)
{
	struct seen_names *s = data;

	if (s->n < 4) {
		s->pairs[2 * s->n] = *sha256;
		s->pairs[2 * s->n + 1] = *sha1;
	}
	s->n++;
	return 0;
}

/* Has `s` the pair (a, b)? */
static int seen_pair(const struct seen_names *s, const struct oid *a,
		     const struct oid *b)
{
	for (int i = 0; i < s->n && i < 4; i++)
		if (!oid_cmp(&s->pairs[2 * i], a) && !oid_cmp(&s->pairs[2 * i + 1], b))
			return 1;
	return 0;
}

/*
 * The ref names: replaced whole inside a batch, read back as stored, a
 * row gone when its object is refused after all, all gone with the
 * settings.
 */
TEST(ref_names)
{
	struct cache_object o[3];
	struct oid pairs[6];
	struct seen_names seen = { 0 };
	struct cache *c;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	if (!c)
		goto out;
	for (int i = 0; i < 3; i++) {
		make_obj(&o[i], (uint64_t)i + 1);
		pairs[2 * i] = o[i].sha256;
		pairs[2 * i + 1] = o[i].sha1;
	}
	/* outside a batch, and with names of the wrong algorithm: refused */
	CHECK_INT(cache_ref_names_set(c, pairs, 3), XL_EINVALID);
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_ref_names_set(c, pairs + 1, 1), XL_EINVALID);
	for (int i = 0; i < 3; i++)
		CHECK_INT(cache_put(c, &o[i]), 0);
	CHECK_INT(cache_ref_names_set(c, pairs, 3), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(cache_for_each_ref_name(c, note_name, &seen), 0);
	CHECK_INT(seen.n, 3);
	for (int i = 0; i < 3; i++)
		CHECK(seen_pair(&seen, &pairs[2 * i], &pairs[2 * i + 1]));

	/* replaced, not added to */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_ref_names_set(c, pairs, 2), 0);
	CHECK_INT(cache_commit(c), 0);
	memset(&seen, 0, sizeof(seen));
	CHECK_INT(cache_for_each_ref_name(c, note_name, &seen), 0);
	CHECK_INT(seen.n, 2);
	CHECK(!seen_pair(&seen, &pairs[4], &pairs[5]));

	/* a refusal after all (a collision) takes its row away */
	o[0].sha1.algo = NULL;
	o[0].size1 = 0;
	o[0].reason = "shares its SHA-1 name";
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_put(c, &o[0]), 0);
	CHECK_INT(cache_commit(c), 0);
	memset(&seen, 0, sizeof(seen));
	CHECK_INT(cache_for_each_ref_name(c, note_name, &seen), 0);
	CHECK_INT(seen.n, 1);
	CHECK(seen_pair(&seen, &pairs[2], &pairs[3]));

	/* and new settings (none were recorded) empty it */
	CHECK_INT(cache_check_settings(c, "a"), 1);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM ref_names"), 0);
	cache_close(c);
out:
	scratch_end();
}

/* cache_put_all()'s rows: ids from->from + nr, every third skipped. */
struct feed_rows {
	uint64_t from;
	uint64_t bad;		/* this id's row is one cache_put() refuses */
	int fail_at;		/* row() fails at this index (-1: never) */
};

static int feed_row(void *data, size_t i, struct cache_object *out)
{
	const struct feed_rows *f = data;
	uint64_t id = f->from + i;

	if ((int)i == f->fail_at)
		return err_set(XL_ECORRUPT, "row %zu cannot be read", i);
	if (i % 3 == 2)
		return 0;
	make_obj(out, id);
	if (id == f->bad)
		out->type = OBJ_OFS_DELTA;
	return 1;
}

TEST(put_all)
{
	struct feed_rows f = { .from = 0, .bad = UINT64_MAX, .fail_at = -1 };
	struct cache_object o[3];
	struct oid pairs[6];
	struct seen_names seen = { 0 };
	struct cache *c = NULL, *c2 = NULL;
	size_t named = 0, refused = 0;

	scratch_begin();
	c = open_ok(&hash_sha256, NULL);
	CHECK_INT(cache_open(&c2, db_path, &hash_sha256, 0, NULL, NULL), 0);
	if (!c || !c2)
		goto out;
	/* outside a batch: refused */
	CHECK_INT(cache_put_all(c, 30, feed_row, &f), XL_EINVALID);
	/* ref names of two objects that come refused (ids 7 and 37) */
	make_obj(&o[0], 7);
	make_obj(&o[1], 37);
	make_obj(&o[2], 3);
	fill_name(&o[0].sha1, &hash_sha1, 7, 2);
	fill_name(&o[1].sha1, &hash_sha1, 37, 2);
	for (int i = 0; i < 3; i++) {
		pairs[2 * i] = o[i].sha256;
		pairs[2 * i + 1] = o[i].sha1;
	}
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_ref_names_set(c, pairs, 3), 0);
	CHECK_INT(cache_bulk_begin(c), 0);
	CHECK_INT(cache_put_all(c, 300, feed_row, &f), 0);
	CHECK_INT(cache_bulk_end(c), 0);
	CHECK_INT(cache_commit(c), 0);
	for (uint64_t id = 0; id < 300; id++) {
		CHECK_INT(has(c2, id), id % 3 != 2);
		if (id % 3 != 2)
			named += id % 10 != 7, refused += id % 10 == 7;
	}
	check_counts(c2, named + refused, refused, __LINE__);
	/* by SHA-1 name, through the index made again */
	{
		struct cache_object want, got;

		make_obj(&want, 301 - 3 * 2 - 4);	/* 291: id % 3 == 0 */
		CHECK_INT(cache_get_by_sha1(c2, &want.sha1, &got), 0);
		CHECK(same_obj(&want, &got));
	}
	/* the refused objects lost their ref names; 3 kept its own */
	CHECK_INT(cache_for_each_ref_name(c2, note_name, &seen), 0);
	CHECK_INT(seen.n, 1);
	CHECK(seen_pair(&seen, &pairs[4], &pairs[5]));

	/* a row there already, a row put refuses, a row that cannot be
	   read: each fails the put, and the batch rolled back keeps none */
	CHECK_INT(cache_begin(c), 0);
	f.from = 297;	/* 297 is there */
	CHECK_INT(cache_put_all(c, 30, feed_row, &f), XL_EIO);
	cache_rollback(c);
	f.from = 1000;
	f.bad = 1010;
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_put_all(c, 30, feed_row, &f), XL_EINVALID);
	cache_rollback(c);
	f.bad = UINT64_MAX;
	f.fail_at = 20;
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_put_all(c, 30, feed_row, &f), XL_ECORRUPT);
	cache_rollback(c);
	CHECK_INT(has(c2, 1000), 0);
	check_counts(c2, named + refused, refused, __LINE__);
	/* and the connection puts again afterwards */
	f.fail_at = -1;
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_put_all(c, 30, feed_row, &f), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(has(c2, 1000), 1);
	CHECK_INT(has(c2, 1002), 0);
	CHECK(quick_check_ok(db_path));
	/* the put left its CHECKs aside: the connection's next rows meet them */
	CHECK_INT(sqlite3_exec(c->db, "INSERT INTO objects(sha256, type, "
			       "size256) VALUES (zeroblob(32), 9, 1)", NULL,
			       NULL, NULL), SQLITE_CONSTRAINT_CHECK);
out:
	cache_close(c);
	cache_close(c2);
	scratch_end();
}

/*
 * New rows go to objects_recent, and fold into objects once they pass
 * an eighth of it.  Readers see the two tables as one: lookups by
 * either name, prefixes, walks in name order, counts.  A row put again
 * is replaced where it is; a name in both tables is damage.
 */
TEST(recent_rows)
{
	struct feed_rows f = { .from = 5000, .bad = UINT64_MAX, .fail_at = -1 };
	char hex[OID_HEXSZ_MAX + 1], found[OID_HEXSZ_MAX + 1], text[256];
	struct cache_object obj, got, five;
	struct cache *c = NULL;
	uint64_t folded = 1, n, u;
	struct walk w;

	scratch_begin();
	if (!(c = open_ok(&hash_sha256, NULL)))
		goto out;
	/* into an empty big table: always due */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 0, 800), 0);
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects_recent"), 800);
	CHECK_INT(cache_fold(c, 0, &folded), 0);
	CHECK_INT(folded, 800);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects"), 800);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects_recent"), 0);
	/* an eighth of it is not due yet; one more row is */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(put_range(c, 800, 900), 0);
	CHECK_INT(cache_fold(c, 0, &folded), XL_EINVALID);	/* in a batch */
	CHECK_INT(cache_commit(c), 0);
	CHECK_INT(cache_fold(c, 0, &folded), 0);
	CHECK_INT(folded, 0);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects_recent"), 100);

	/* both tables, as one */
	CHECK_INT(has(c, 5), 1);
	CHECK_INT(has(c, 850), 1);
	CHECK_INT(has(c, 950), 0);
	make_obj(&obj, 851);
	CHECK_INT(cache_get_by_sha1(c, &obj.sha1, &got), 0);
	CHECK(same_obj(&obj, &got));
	memset(&w, 0, sizeof(w));
	CHECK_INT(cache_for_each(c, 0, walk_fn, &w), 0);
	CHECK_INT(w.n, 900);
	CHECK_INT(w.out_of_order, 0);
	memset(&w, 0, sizeof(w));
	CHECK_INT(cache_for_each(c, 1, walk_fn, &w), 0);
	CHECK_INT(w.n, 90);
	CHECK_INT(w.out_of_order, 0);
	check_counts(c, 900, 90, __LINE__);

	/* put again: replaced in place, in either table, never doubled
	   (two refusals named after all: 7 is in objects, 857 recent) */
	for (uint64_t id = 7; id < 900; id += 850) {
		make_obj(&obj, id);
		fill_name(&obj.sha1, &hash_sha1, id, 2);
		obj.size1 = 20;
		obj.reason = NULL;
		CHECK_INT(cache_put(c, &obj), 0);
		CHECK_INT(cache_get(c, &obj.sha256, &got), 0);
		CHECK(same_obj(&obj, &got));
	}
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects"), 800);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects_recent"), 100);
	check_counts(c, 900, 88, __LINE__);

	/* a prefix that a row of each table shares is ambiguous */
	make_obj(&five, 5);
	oid_to_hex_r(hex, &five.sha256);
	memset(&obj, 0, sizeof(obj));
	obj.sha256 = five.sha256;
	obj.sha256.hash[31] ^= 1;
	obj.type = OBJ_BLOB;
	obj.size256 = 1;
	obj.reason = "for the test";
	CHECK_INT(cache_put(c, &obj), 0);
	hex[12] = '\0';
	CHECK_INT(prefix(c, &hash_sha256, hex, NULL), XL_EAMBIGUOUS);
	oid_to_hex_r(hex, &five.sha256);
	CHECK_INT(prefix(c, &hash_sha256, hex, found), 0);
	CHECK(!strcmp(found, hex));
	/* so is a SHA-1 name that a row of each holds: a collision */
	make_obj(&obj, 9000);
	obj.sha1 = five.sha1;
	CHECK_INT(cache_put(c, &obj), 0);
	CHECK_INT(cache_get_by_sha1(c, &five.sha1, &got), XL_EAMBIGUOUS);

	/* all at once is for a first build: not over recent rows */
	CHECK_INT(cache_begin(c), 0);
	CHECK_INT(cache_put_all(c, 30, feed_row, &f), XL_EINVALID);
	cache_rollback(c);

	/* forced: everything in the big table, nothing else changed */
	CHECK_INT(cache_fold(c, 1, &folded), 0);
	CHECK_INT(folded, 102);
	CHECK_INT(sql_int(db_path, "SELECT count(*) FROM objects_recent"), 0);
	CHECK_INT(cache_count(c, &n, &u), 0);
	CHECK_INT(n, 902);
	check_counts(c, 902, 89, __LINE__);
	CHECK_INT(has(c, 850), 1);
	CHECK_INT(cache_fold(c, 1, &folded), 0);
	CHECK_INT(folded, 0);
	CHECK(quick_check_ok(db_path));

	/* one name in both tables: damage, not a choice */
	oid_to_hex_r(hex, &five.sha256);
	snprintf(text, sizeof(text), "INSERT INTO objects_recent SELECT * "
		 "FROM objects WHERE sha256 = x'%s'", hex);
	sql(db_path, text);
	CHECK_INT(cache_get(c, &five.sha256, &got), XL_ECORRUPT);
	CHECK(got.sha256.algo == NULL);
	/* a fold meets it, and marks the file: the next open starts afresh */
	CHECK_INT(cache_fold(c, 1, &folded), XL_ECORRUPT);
	CHECK(strstr(err_msg(), "starts afresh") != NULL);
	CHECK_INT(folded, 0);
	cache_close(c);
	{
		struct warnings warned = { 0 };

		c = open_ok(&hash_sha256, &warned);
		check_replaced(c, &warned);
		CHECK(strstr(warned.last, "a name in both") != NULL);
	}
out:
	cache_close(c);
	scratch_end();
}

const struct test tests[] = {
	T(open_creates_schema),
	T(put_get_both_names),
	T(mapped_reads),
	T(put_replaces_and_canonicalises),
	T(reason_borrowed_per_thread_and_cache),
	T(resolve_prefix),
	T(sha1_collision_is_ambiguous),
	T(for_each_in_order),
	T(gitlinks),
	T(packs_and_rollback),
	T(settings),
	T(meta),
	T(known),
	T(migrate_from_version_5),
	T(corrupt_garbage),
	T(corrupt_truncated),
	T(corrupt_found_by_check),
	T(counts_follow_rows),
	T(migrate_from_version_8),
	T(migrate_from_version_7),
	T(migrate_from_version_6),
	T(corrupt_foreign_application),
	T(corrupt_future_version),
	T(pack1_layouts),
	T(pack1_layouts_sha1_store),
	T(checkpoints_deferred_and_aside),
	T(pack1_runs_held),
	T(pack1_runs),
	T(ref_names),
	T(put_all),
	T(recent_rows),
	T(migrate_from_version_4),
	T(migrate_from_version_3),
	T(migrate_from_version_2),
	T(migrate_from_version_1),
	T(corrupt_other_format),
	T(corrupt_schema_tampered),
	T(corrupt_rows_rejected_on_read),
	T(corrupt_index_disagrees),
	T(corrupt_replaces_older_copy),
	T(open_errors_are_not_corruption),
	T(crash_mid_batch),
	T(reader_does_not_wait_for_writer),
	T(threads_share_one_cache),
	T(concurrent_create),
	T(batch_130k),
	T(default_path),
	{ NULL, NULL },
};

