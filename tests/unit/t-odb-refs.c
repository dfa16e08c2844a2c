/*
 * t-odb-refs.c: packed-refs parsing (packed_refs_parse) on guarded text,
 * then refs and repository discovery on scratch repositories made with
 * git itself (git init, git worktree add) and ref files written by hand.
 *
 * Git runs with HOME pointing into the scratch directory and no system
 * or global config, so the user's settings cannot change what it writes.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers -------------------------------------------------------- */

/* A fake object name: hexsz copies of the hex digit for n (1..15). */
static const char *fake_hex(const struct hash_algo *algo, int n)
{
	static char hex[16][OID_HEXSZ_MAX + 1];

	memset(hex[n], "0123456789abcdef"[n], algo->hexsz);
	hex[n][algo->hexsz] = '\0';
	return hex[n];
}

static struct oid fake_oid(const struct hash_algo *algo, int n)
{
	struct oid oid;

	if (oid_from_hex(&oid, algo, fake_hex(algo, n)))
		abort();
	return oid;
}

static int oid_eq(const struct oid *a, const struct oid *b)
{
	return a->algo == b->algo && !oid_cmp(a, b);
}

/* ---- packed_refs_parse ---------------------------------------------- */

static int parse_packed(const char *text, const struct hash_algo *algo,
			struct ref_array *arr)
{
	size_t len = strlen(text);
	char *g = guarded_copy(text, len);
	int ret;

	memset(arr, 0, sizeof(*arr));
	ret = packed_refs_parse(g, len, algo, "packed-refs", arr);
	guarded_free(g);
	return ret;
}

static void check_packed_basic(const struct hash_algo *algo, const char *nl)
{
	struct ref_array arr;
	struct buf text = BUF_INIT;
	struct oid o;

	buf_addf(&text, "# pack-refs with: peeled fully-peeled sorted %s", nl);
	buf_addf(&text, "%s refs/heads/main%s", fake_hex(algo, 1), nl);
	buf_addf(&text, "%s refs/tags/v1%s", fake_hex(algo, 2), nl);
	buf_addf(&text, "^%s%s", fake_hex(algo, 3), nl);
	buf_addf(&text, "%s refs/tags/v2", fake_hex(algo, 4));	/* no newline */
	CHECK_INT(parse_packed(text.buf, algo, &arr), 0);
	CHECK_INT(arr.nr, 3);
	if (arr.nr == 3) {
		CHECK_STR(arr.refs[0].name, "refs/heads/main");
		o = fake_oid(algo, 1);
		CHECK(oid_eq(&arr.refs[0].oid, &o));
		CHECK(!arr.refs[0].has_peeled);
		CHECK(arr.refs[0].target == NULL);
		CHECK_STR(arr.refs[1].name, "refs/tags/v1");
		o = fake_oid(algo, 2);
		CHECK(oid_eq(&arr.refs[1].oid, &o));
		CHECK(arr.refs[1].has_peeled);
		o = fake_oid(algo, 3);
		CHECK(oid_eq(&arr.refs[1].peeled, &o));
		CHECK_STR(arr.refs[2].name, "refs/tags/v2");
		CHECK(!arr.refs[2].has_peeled);
	}
	ref_array_release(&arr);
	buf_release(&text);
}

TEST(packed_basic_sha256)
{
	check_packed_basic(&hash_sha256, "\n");
}

TEST(packed_basic_sha1)
{
	check_packed_basic(&hash_sha1, "\n");
}

TEST(packed_crlf)
{
	check_packed_basic(&hash_sha256, "\r\n");
	check_packed_basic(&hash_sha1, "\r\n");
}

TEST(packed_empty_and_header_only)
{
	struct ref_array arr;

	CHECK_INT(parse_packed("", &hash_sha256, &arr), 0);
	CHECK_INT(arr.nr, 0);
	ref_array_release(&arr);
	CHECK_INT(parse_packed("# pack-refs with: peeled \n", &hash_sha256,
			       &arr), 0);
	CHECK_INT(arr.nr, 0);
	ref_array_release(&arr);
}

/* text must be refused, naming line `errline` */
static void bad_packed(const struct hash_algo *algo, const char *text,
		       int errline, int line)
{
	struct ref_array arr;
	char want[32];
	int ret = parse_packed(text, algo, &arr);

	snprintf(want, sizeof(want), "line %d:", errline);
	if (ret != XL_ECORRUPT)
		harness_fail(__FILE__, line, "got %d, want XL_ECORRUPT", ret);
	else if (!strstr(err_msg(), want) || !strstr(err_msg(), "packed-refs"))
		harness_fail(__FILE__, line, "message \"%s\" lacks \"%s\"",
			     err_msg(), want);
	ref_array_release(&arr);
}

TEST(packed_bad_lines)
{
	const struct hash_algo *a = &hash_sha256;
	const char *h = fake_hex(a, 5);
	struct buf t = BUF_INIT;

#define BAD_PACKED(errline, ...)					\
	do {								\
		buf_reset(&t);						\
		buf_addf(&t, __VA_ARGS__);				\
		bad_packed(a, t.buf, errline, __LINE__);		\
	} while (0)

	/* short name, one digit short, a tab instead of the space */
	BAD_PACKED(1, "%.10s refs/heads/x\n", h);
	BAD_PACKED(2, "# header\n%.63s refs/heads/x\n", h);
	BAD_PACKED(1, "%s\trefs/heads/x\n", h);
	/* not hex */
	BAD_PACKED(1, "%.63sg refs/heads/x\n", h);
	BAD_PACKED(1, "%.20sZZ%.42s refs/heads/x\n", h, h);
	/* no name (a name Git refuses is a broken ref: packed_broken) */
	BAD_PACKED(1, "%s \n", h);
	BAD_PACKED(1, "%s\n", h);
	BAD_PACKED(3, "%s refs/heads/ok\n%s refs/heads/ok2\n%s\n",
		   h, h, h);
	/* a SHA-1 line in a SHA-256 file */
	BAD_PACKED(1, "%.40s refs/heads/x\n", h);
#undef BAD_PACKED
	buf_release(&t);
}

/*
 * A name Git refuses is a broken ref, as Git marks it: the lines around
 * it still count, and so does its peeled line.  Its name is made safe
 * to print, and a huge one is cut short, not overflowed.
 */
TEST(packed_broken)
{
	const struct hash_algo *a = &hash_sha256;
	struct ref_array arr;
	struct buf t = BUF_INIT, want = BUF_INIT;
	static const char *const bad[] = {
		"refs/heads/a b", "refs/heads/a..b", "refs/heads/x.lock",
		"refs/heads/x.", "refs//x", "refs/a^b", "refs/heads/a\tb",
		"refs/heads/a\001b", "refs/../etc",
	};
	const size_t nbad = sizeof(bad) / sizeof(*bad);
	char huge[5001];

	memset(huge, 'n', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	buf_addf(&t, "%s refs/heads/a\n", fake_hex(a, 1));
	for (size_t i = 0; i < nbad; i++)
		buf_addf(&t, "%s %s\n", fake_hex(a, 2), bad[i]);
	buf_addf(&t, "^%s\n", fake_hex(a, 3));
	buf_addf(&t, "%s refs/%s\n", fake_hex(a, 4), huge);
	buf_addf(&t, "%s refs/heads/z\n", fake_hex(a, 5));
	CHECK_INT(parse_packed(t.buf, a, &arr), 0);
	CHECK_INT(arr.nr, nbad + 3);
	if (arr.nr == nbad + 3) {
		CHECK_STR(arr.refs[0].name, "refs/heads/a");
		CHECK(!arr.refs[0].broken);
		for (size_t i = 0; i < nbad; i++)
			CHECK(arr.refs[1 + i].broken);
		CHECK_STR(arr.refs[1].name, "refs/heads/a b");
		CHECK_STR(arr.refs[7].name, "refs/heads/a?b");
		CHECK_STR(arr.refs[8].name, "refs/heads/a?b");
		CHECK(arr.refs[nbad].has_peeled);
		buf_addf(&want, "refs/%.195s...", huge);
		CHECK(arr.refs[nbad + 1].broken);
		CHECK_STR(arr.refs[nbad + 1].name, want.buf);
		CHECK_STR(arr.refs[nbad + 2].name, "refs/heads/z");
		CHECK(!arr.refs[nbad + 2].broken);
	}
	ref_array_release(&arr);
	buf_release(&t);
	buf_release(&want);
}

TEST(packed_bad_peeled)
{
	const struct hash_algo *a = &hash_sha256;
	const char *h = fake_hex(a, 6);
	struct buf t = BUF_INIT;

	/* a peeled line with no ref before it */
	buf_addf(&t, "^%s\n", h);
	bad_packed(a, t.buf, 1, __LINE__);
	buf_reset(&t);
	buf_addf(&t, "# pack-refs with: peeled \n^%s\n%s refs/tags/x\n", h, h);
	bad_packed(a, t.buf, 2, __LINE__);
	/* short, long, bad hex */
	buf_reset(&t);
	buf_addf(&t, "%s refs/tags/x\n^%.63s\n", h, h);
	bad_packed(a, t.buf, 2, __LINE__);
	buf_reset(&t);
	buf_addf(&t, "%s refs/tags/x\n^%s0\n", h, h);
	bad_packed(a, t.buf, 2, __LINE__);
	buf_reset(&t);
	buf_addf(&t, "%s refs/tags/x\n^%.63sx\n", h, h);
	bad_packed(a, t.buf, 2, __LINE__);
	buf_reset(&t);
	buf_addf(&t, "%s refs/tags/x\n^\n", h);
	bad_packed(a, t.buf, 2, __LINE__);
	buf_release(&t);
}

TEST(packed_two_peeled_lines)
{
	/*
	 * As Git (packed-backend.c): a peeled line belongs to the ref line
	 * just before it; a second one in a row peels nothing.
	 */
	const struct hash_algo *a = &hash_sha256;
	struct buf t = BUF_INIT;

	buf_addf(&t, "%s refs/tags/x\n^%s\n^%s\n", fake_hex(a, 1),
		 fake_hex(a, 2), fake_hex(a, 3));
	bad_packed(a, t.buf, 3, __LINE__);
	buf_release(&t);
}

/* ---- scratch repositories ------------------------------------------- */

static char root[PATH_MAX];

static void setup(void)
{
	char tmpl[PATH_MAX];
	const char *tmp = getenv("TMPDIR");

	snprintf(tmpl, sizeof(tmpl), "%s/xl-refs.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmpl) || !realpath(tmpl, root))
		abort();
	setenv("HOME", root, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	setenv("GIT_AUTHOR_NAME", "A U Thor", 1);
	setenv("GIT_AUTHOR_EMAIL", "author@example.com", 1);
	setenv("GIT_COMMITTER_NAME", "C O Mitter", 1);
	setenv("GIT_COMMITTER_EMAIL", "committer@example.com", 1);
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_COMMON_DIR");
	unsetenv("GIT_INDEX_FILE");
	unsetenv("GIT_OBJECT_DIRECTORY");
	unsetenv("GIT_CEILING_DIRECTORIES");
}

static void teardown(void)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		abort();
}

/* Run a shell command in root; returns its exit status (0 = success). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char body[4096], cmd[4096 + PATH_MAX + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(body))
		abort();
	snprintf(cmd, sizeof(cmd), "cd '%s' && (%s) >/dev/null 2>&1", root,
		 body);
	return system(cmd);
}

/* root/rel */
static const char *at(const char *rel)
{
	static char path[4][PATH_MAX * 2];
	static int which;

	which = (which + 1) % 4;
	snprintf(path[which], sizeof(path[which]), "%s/%s", root, rel);
	return path[which];
}

static void write_text(const char *rel, const char *text)
{
	FILE *f = fopen(at(rel), "wb");

	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

/* `git rev-parse REV` in root/dir, as an oid of algo */
static struct oid rev_parse(const char *dir, const char *rev,
			    const struct hash_algo *algo)
{
	char cmd[PATH_MAX * 2], line[128] = "";
	struct oid oid;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "git -C '%s' rev-parse %s", at(dir), rev);
	p = popen(cmd, "r");
	if (!p || !fgets(line, sizeof(line), p) || pclose(p))
		abort();
	if (oid_from_hex(&oid, algo, line))
		abort();
	return oid;
}

/* A fresh SHA-256 bare repository at root/bare.git, opened. */
static struct repo *new_bare(void)
{
	struct repo *r = NULL;

	setup();
	if (sh("git init -q --bare --object-format=sha256 -b main bare.git"))
		abort();
	CHECK_INT(repo_open(&r, at("bare.git")), 0);
	return r;
}

static void done(struct repo *r)
{
	repo_close(r);
	teardown();
}

/* ---- repo_open on a bare repository --------------------------------- */

TEST(open_bare_sha256)
{
	struct repo *r = new_bare();

	if (!r)
		goto out;
	CHECK(repo_algo(r) == &hash_sha256);
	CHECK(repo_compat_algo(r) == NULL);
	CHECK(repo_is_bare(r));
	CHECK_STR(repo_gitdir(r), at("bare.git"));
	CHECK_STR(repo_commondir(r), at("bare.git"));
	CHECK_STR(repo_objdir(r), at("bare.git/objects"));
	CHECK_INT(repo_ref_storage(r), REF_STORAGE_FILES);
	CHECK(repo_odb(r) != NULL);
out:
	done(r);
}

/* ---- refs_read ------------------------------------------------------ */

TEST(head_unborn)
{
	struct repo *r = new_bare();
	struct ref ref;

	if (!r)
		goto out;
	CHECK_INT(refs_read(r, "HEAD", &ref), 0);
	CHECK_STR(ref.name, "HEAD");
	CHECK_STR(ref.target, "refs/heads/main");
	CHECK(oid_is_null(&ref.oid));
	CHECK(ref.oid.algo == &hash_sha256);
	ref_release(&ref);
	/* the branch itself does not exist */
	CHECK_INT(refs_read(r, "refs/heads/main", &ref), XL_ENOTFOUND);
out:
	done(r);
}

TEST(head_symbolic_to_loose)
{
	struct repo *r = new_bare();
	struct oid want = fake_oid(&hash_sha256, 1);
	struct buf t = BUF_INIT;
	struct ref ref;

	if (!r)
		goto out;
	buf_addf(&t, "%s\n", fake_hex(&hash_sha256, 1));
	write_text("bare.git/refs/heads/main", t.buf);
	CHECK_INT(refs_read(r, "HEAD", &ref), 0);
	CHECK_STR(ref.target, "refs/heads/main");
	CHECK(oid_eq(&ref.oid, &want));
	ref_release(&ref);
	CHECK_INT(refs_read(r, "refs/heads/main", &ref), 0);
	CHECK_STR(ref.name, "refs/heads/main");
	CHECK(ref.target == NULL);
	CHECK(oid_eq(&ref.oid, &want));
	ref_release(&ref);
	/* a detached HEAD */
	write_text("bare.git/HEAD", t.buf);
	CHECK_INT(refs_read(r, "HEAD", &ref), 0);
	CHECK(ref.target == NULL);
	CHECK(oid_eq(&ref.oid, &want));
	ref_release(&ref);
out:
	buf_release(&t);
	done(r);
}

TEST(loose_overrides_packed)
{
	const struct hash_algo *a = &hash_sha256;
	struct repo *r = new_bare();
	struct buf t = BUF_INIT;
	struct ref ref;
	struct oid o;

	if (!r)
		goto out;
	buf_addf(&t, "# pack-refs with: peeled fully-peeled sorted \n"
		 "%s refs/heads/feature\n%s refs/heads/main\n"
		 "%s refs/tags/v1\n^%s\n",
		 fake_hex(a, 1), fake_hex(a, 2), fake_hex(a, 3),
		 fake_hex(a, 4));
	write_text("bare.git/packed-refs", t.buf);
	buf_reset(&t);
	buf_addf(&t, "%s\n", fake_hex(a, 5));
	write_text("bare.git/refs/heads/main", t.buf);

	CHECK_INT(refs_read(r, "refs/heads/main", &ref), 0);
	o = fake_oid(a, 5);
	CHECK(oid_eq(&ref.oid, &o));
	CHECK(!ref.has_peeled);
	ref_release(&ref);
	CHECK_INT(refs_read(r, "HEAD", &ref), 0);
	CHECK(oid_eq(&ref.oid, &o));
	ref_release(&ref);
	CHECK_INT(refs_read(r, "refs/heads/feature", &ref), 0);
	o = fake_oid(a, 1);
	CHECK(oid_eq(&ref.oid, &o));
	ref_release(&ref);
	CHECK_INT(refs_read(r, "refs/tags/v1", &ref), 0);
	o = fake_oid(a, 3);
	CHECK(oid_eq(&ref.oid, &o));
	CHECK(ref.has_peeled);
	o = fake_oid(a, 4);
	CHECK(oid_eq(&ref.peeled, &o));
	ref_release(&ref);
	CHECK_INT(refs_read(r, "refs/tags/v2", &ref), XL_ENOTFOUND);
	/* a directory where a ref would be is "no such ref" */
	CHECK_INT(refs_read(r, "refs/heads", &ref), XL_ENOTFOUND);
out:
	buf_release(&t);
	done(r);
}

TEST(dangling_symref)
{
	struct repo *r = new_bare();
	struct ref ref;

	if (!r)
		goto out;
	write_text("bare.git/refs/heads/x", "ref: refs/heads/nowhere\n");
	CHECK_INT(refs_read(r, "refs/heads/x", &ref), 0);
	CHECK_STR(ref.target, "refs/heads/nowhere");
	CHECK(oid_is_null(&ref.oid));
	ref_release(&ref);
out:
	done(r);
}

TEST(bad_loose_ref)
{
	struct repo *r = new_bare();
	struct ref ref;

	if (!r)
		goto out;
	write_text("bare.git/refs/heads/bad", "not a name\n");
	CHECK_INT(refs_read(r, "refs/heads/bad", &ref), XL_ECORRUPT);
	/* a SHA-1 name in a SHA-256 repository */
	write_text("bare.git/refs/heads/bad",
		   "1111111111111111111111111111111111111111\n");
	CHECK_INT(refs_read(r, "refs/heads/bad", &ref), XL_ECORRUPT);
out:
	done(r);
}

/* ---- refs_for_each -------------------------------------------------- */

static int collect_ref(const struct ref *ref, void *data)
{
	struct buf *b = data;
	char hex[OID_HEXSZ_MAX + 1];

	buf_addf(b, "%s %.4s", ref->name, oid_to_hex_r(hex, &ref->oid));
	if (ref->target)
		buf_addf(b, " -> %s", ref->target);
	if (ref->has_peeled)
		buf_addf(b, " ^%.4s", oid_to_hex_r(hex, &ref->peeled));
	buf_addch(b, '\n');
	return 0;
}

static int collect_broken(const struct ref *ref, void *data)
{
	struct buf *b = data;
	char hex[OID_HEXSZ_MAX + 1];

	buf_addf(b, "%s %.4s%s\n", ref->name, oid_to_hex_r(hex, &ref->oid),
		 ref->broken ? " broken" : "");
	return 0;
}

TEST(for_each_order)
{
	const struct hash_algo *a = &hash_sha256;
	struct repo *r = new_bare();
	struct buf t = BUF_INIT, got = BUF_INIT;
	static const struct {
		const char *name;
		int n;
	} loose[] = {
		{ "refs/heads/main", 5 },
		{ "refs/heads/b-c", 6 },
		{ "refs/heads/Z", 7 },
		{ "refs/remotes/origin/main", 8 },
		{ "refs/heads/\xc3\xa9", 9 },
		{ "refs/heads/b.c", 10 },
		{ "refs/heads/b/c", 11 },
		/* not refs: skipped as Git skips them */
		{ "refs/heads/main.lock", 12 },
		{ "refs/heads/.hidden", 13 },
	};

	if (!r)
		goto out;
	buf_addf(&t, "# pack-refs with: peeled fully-peeled sorted \n"
		 "%s refs/heads/a\n%s refs/heads/main\n%s refs/tags/v1\n^%s\n",
		 fake_hex(a, 1), fake_hex(a, 2), fake_hex(a, 3),
		 fake_hex(a, 4));
	write_text("bare.git/packed-refs", t.buf);
	mkdir(at("bare.git/refs/heads/b"), 0777);
	mkdir(at("bare.git/refs/remotes"), 0777);
	mkdir(at("bare.git/refs/remotes/origin"), 0777);
	for (size_t i = 0; i < sizeof(loose) / sizeof(loose[0]); i++) {
		char rel[256];

		buf_reset(&t);
		buf_addf(&t, "%s\n", fake_hex(a, loose[i].n));
		snprintf(rel, sizeof(rel), "bare.git/%s", loose[i].name);
		write_text(rel, t.buf);
	}
	write_text("bare.git/refs/remotes/origin/HEAD",
		   "ref: refs/remotes/origin/main\n");

	CHECK_INT(refs_for_each(r, collect_ref, &got), 0);
	CHECK_STR(got.buf,
		  "refs/heads/Z 7777\n"
		  "refs/heads/a 1111\n"
		  "refs/heads/b-c 6666\n"
		  "refs/heads/b.c aaaa\n"
		  "refs/heads/b/c bbbb\n"
		  "refs/heads/main 5555\n"
		  "refs/heads/\xc3\xa9 9999\n"
		  "refs/remotes/origin/HEAD 8888 -> refs/remotes/origin/main\n"
		  "refs/remotes/origin/main 8888\n"
		  "refs/tags/v1 3333 ^4444\n");
out:
	buf_release(&t);
	buf_release(&got);
	done(r);
}

/*
 * A broken packed ref reaches refs_for_each's callback marked, with no
 * object; the others are as before, and it cannot be looked up.
 */
TEST(for_each_broken)
{
	const struct hash_algo *a = &hash_sha256;
	struct repo *r = new_bare();
	struct buf t = BUF_INIT, got = BUF_INIT;
	struct ref ref;

	if (!r)
		goto out;
	buf_addf(&t, "# pack-refs with: peeled fully-peeled sorted \n"
		 "%s refs/heads/a..b\n%s refs/heads/main\n",
		 fake_hex(a, 1), fake_hex(a, 2));
	write_text("bare.git/packed-refs", t.buf);
	CHECK_INT(refs_for_each(r, collect_broken, &got), 0);
	CHECK_STR(got.buf, "refs/heads/a..b 0000 broken\n"
		  "refs/heads/main 2222\n");
	CHECK_INT(refs_read(r, "refs/heads/a..b", &ref), XL_ENOTFOUND);
	CHECK_INT(refs_read(r, "refs/heads/main", &ref), 0);
	ref_release(&ref);
out:
	buf_release(&t);
	buf_release(&got);
	done(r);
}

static int stop_at_second(const struct ref *ref, void *data)
{
	int *n = data;

	(void)ref;
	return ++*n == 2 ? 42 : 0;
}

TEST(for_each_stops)
{
	const struct hash_algo *a = &hash_sha256;
	struct repo *r = new_bare();
	struct buf t = BUF_INIT;
	int n = 0;

	if (!r)
		goto out;
	buf_addf(&t, "%s refs/heads/a\n%s refs/heads/b\n%s refs/heads/c\n",
		 fake_hex(a, 1), fake_hex(a, 2), fake_hex(a, 3));
	write_text("bare.git/packed-refs", t.buf);
	CHECK_INT(refs_for_each(r, stop_at_second, &n), 42);
	CHECK_INT(n, 2);
out:
	buf_release(&t);
	done(r);
}

TEST(for_each_empty)
{
	struct repo *r = new_bare();
	struct buf got = BUF_INIT;

	if (!r)
		goto out;
	CHECK_INT(refs_for_each(r, collect_ref, &got), 0);
	CHECK_STR(got.buf, "");
out:
	buf_release(&got);
	done(r);
}

/* ---- symbolic ref loops and depth ----------------------------------- */

TEST(symref_loop)
{
	struct repo *r = new_bare();
	struct buf got = BUF_INIT;
	struct ref ref;

	if (!r)
		goto out;
	alarm(30);	/* a hang becomes a failure */
	write_text("bare.git/refs/heads/a", "ref: refs/heads/b\n");
	write_text("bare.git/refs/heads/b", "ref: refs/heads/a\n");
	write_text("bare.git/refs/heads/self", "ref: refs/heads/self\n");
	CHECK_INT(refs_read(r, "refs/heads/a", &ref), XL_ECORRUPT);
	CHECK_INT(refs_read(r, "refs/heads/self", &ref), XL_ECORRUPT);
	write_text("bare.git/HEAD", "ref: refs/heads/a\n");
	CHECK_INT(refs_read(r, "HEAD", &ref), XL_ECORRUPT);
	/* the walk still lists them, unresolved */
	CHECK_INT(refs_for_each(r, collect_ref, &got), 0);
	CHECK_STR(got.buf,
		  "refs/heads/a 0000 -> refs/heads/b\n"
		  "refs/heads/b 0000 -> refs/heads/a\n"
		  "refs/heads/self 0000 -> refs/heads/self\n");
	alarm(0);
out:
	buf_release(&got);
	done(r);
}

/* HEAD -> r1 -> ... -> r<n> (symbolic refs), r<n> -> an object */
static int chain(struct repo *r, int n, struct ref *ref)
{
	struct buf t = BUF_INIT;
	char rel[64];

	write_text("bare.git/HEAD", "ref: refs/heads/r1\n");
	for (int i = 1; i < n; i++) {
		snprintf(rel, sizeof(rel), "bare.git/refs/heads/r%d", i);
		buf_reset(&t);
		buf_addf(&t, "ref: refs/heads/r%d\n", i + 1);
		write_text(rel, t.buf);
	}
	snprintf(rel, sizeof(rel), "bare.git/refs/heads/r%d", n);
	buf_reset(&t);
	buf_addf(&t, "%s\n", fake_hex(&hash_sha256, 1));
	write_text(rel, t.buf);
	buf_release(&t);
	return refs_read(r, "HEAD", ref);
}

TEST(symref_depth)
{
	/*
	 * Git reads at most SYMREF_MAXDEPTH = 5 refs when resolving: HEAD
	 * and four more symbolic refs resolve (git rev-parse HEAD works),
	 * a fifth symbolic ref in the chain does not ("ambiguous argument
	 * 'HEAD'"), checked with git 2.39.
	 */
	struct repo *r = new_bare();
	struct ref ref;
	int ret;

	if (!r)
		goto out;
	/* HEAD, r1, r2, r3 symbolic; r4 names the object */
	CHECK_INT(chain(r, 4, &ref), 0);
	ref_release(&ref);
	/* HEAD, r1, r2, r3, r4 symbolic: five symbolic refs */
	ret = chain(r, 5, &ref);
	CHECK(ret < 0);
	if (!ret) {
		harness_fail(__FILE__, __LINE__,
			     "HEAD through 5 symbolic refs resolved (%s)",
			     oid_is_null(&ref.oid) ? "null" : "an object");
		ref_release(&ref);
	}
out:
	done(r);
}

/* ---- discovery ------------------------------------------------------ */

/* root/wt: a SHA-256 work tree with one commit on main */
static struct oid make_worktree(void)
{
	struct oid none;

	memset(&none, 0, sizeof(none));
	if (sh("git init -q --object-format=sha256 -b main wt && "
	       "git -C wt commit -q --allow-empty -m one"))
		return none;
	return rev_parse("wt", "HEAD", &hash_sha256);
}

static void expect_gitdir(const char *path, const char *gitdir, int line)
{
	struct repo *r = NULL;
	int ret = repo_open(&r, path);

	if (ret)
		harness_fail(__FILE__, line, "repo_open(%s): %d %s", path, ret,
			     err_msg());
	else if (strcmp(repo_gitdir(r), gitdir))
		harness_fail(__FILE__, line, "repo_open(%s): gitdir %s, want %s",
			     path, repo_gitdir(r), gitdir);
	repo_close(r);
}

TEST(open_work_tree_forms)
{
	struct oid head;
	struct repo *r = NULL;
	struct ref ref;

	setup();
	head = make_worktree();
	CHECK(!oid_is_null(&head));
	expect_gitdir(at("wt"), at("wt/.git"), __LINE__);
	expect_gitdir(at("wt/"), at("wt/.git"), __LINE__);
	expect_gitdir(at("wt/.git"), at("wt/.git"), __LINE__);
	CHECK_INT(sh("mkdir -p wt/sub/dir"), 0);
	expect_gitdir(at("wt/sub/dir"), at("wt/.git"), __LINE__);
	expect_gitdir(at("wt/sub/../sub/./dir"), at("wt/.git"), __LINE__);

	CHECK_INT(repo_open(&r, at("wt/sub")), 0);
	if (r) {
		CHECK(!repo_is_bare(r));
		CHECK(repo_algo(r) == &hash_sha256);
		CHECK_STR(repo_objdir(r), at("wt/.git/objects"));
		CHECK_INT(refs_read(r, "HEAD", &ref), 0);
		CHECK_STR(ref.target, "refs/heads/main");
		CHECK(oid_eq(&ref.oid, &head));
		ref_release(&ref);
		CHECK(odb_has(repo_odb(r), &head));
		repo_close(r);
	}
	teardown();
}

TEST(open_relative_path)
{
	char cwd[PATH_MAX];

	setup();
	make_worktree();
	if (!getcwd(cwd, sizeof(cwd)) || chdir(root))
		abort();
	expect_gitdir("wt", at("wt/.git"), __LINE__);
	if (chdir(at("wt/.git")))
		abort();
	expect_gitdir(".", at("wt/.git"), __LINE__);
	if (chdir(cwd))
		abort();
	teardown();
}

TEST(open_gitfile_relative)
{
	struct repo *r = NULL;
	struct oid head;

	setup();
	head = make_worktree();
	/* move the git dir away and point at it from a .git file */
	CHECK_INT(sh("mkdir proj && mv wt/.git elsewhere"), 0);
	write_text("proj/.git", "gitdir: ../elsewhere\n");
	expect_gitdir(at("proj"), at("elsewhere"), __LINE__);
	/* from a subdirectory, and naming the file itself */
	CHECK_INT(sh("mkdir proj/sub"), 0);
	expect_gitdir(at("proj/sub"), at("elsewhere"), __LINE__);
	expect_gitdir(at("proj/.git"), at("elsewhere"), __LINE__);
	CHECK_INT(repo_open(&r, at("proj")), 0);
	if (r) {
		CHECK(repo_algo(r) == &hash_sha256);
		CHECK(!repo_is_bare(r));
		CHECK(odb_has(repo_odb(r), &head));
		repo_close(r);
	}
	/* no trailing newline, CRLF */
	write_text("proj/.git", "gitdir: ../elsewhere");
	expect_gitdir(at("proj"), at("elsewhere"), __LINE__);
	write_text("proj/.git", "gitdir: ../elsewhere\r\n");
	expect_gitdir(at("proj"), at("elsewhere"), __LINE__);
	/* a .git file pointing nowhere, and one that is not a .git file */
	write_text("proj/.git", "gitdir: ../nowhere\n");
	CHECK(repo_open(&r, at("proj")) < 0);
	CHECK(r == NULL);
	write_text("proj/.git", "hello\n");
	CHECK_INT(repo_open(&r, at("proj")), XL_ECORRUPT);
	teardown();
}

TEST(open_not_a_repo)
{
	struct repo *r = (struct repo *)1;

	setup();
	CHECK_INT(sh("mkdir -p plain/sub"), 0);
	if (!sh("cd plain && git rev-parse --git-dir")) {
		printf("# skipped: %s is inside a git repository\n", root);
	} else {
		CHECK_INT(repo_open(&r, at("plain/sub")), XL_ENOTFOUND);
		CHECK(r == NULL);
		CHECK(strstr(err_msg(), "not a git repository") != NULL);
		CHECK_INT(repo_open(&r, at("plain")), XL_ENOTFOUND);
	}
	CHECK_INT(repo_open(&r, at("does/not/exist")), XL_ENOTFOUND);
	CHECK(r == NULL);
	teardown();
}

TEST(open_linked_worktree)
{
	struct repo *main_r = NULL, *linked = NULL;
	struct oid one, two;
	struct ref ref;
	enum obj_type type;
	struct buf obj = BUF_INIT;

	setup();
	one = make_worktree();
	CHECK_INT(sh("git -C wt worktree add -q -b other ../linked && "
		     "git -C linked commit -q --allow-empty -m two"), 0);
	two = rev_parse("linked", "HEAD", &hash_sha256);
	CHECK(oid_cmp(&one, &two) != 0);

	CHECK_INT(repo_open(&linked, at("linked")), 0);
	if (!linked)
		goto out;
	CHECK_STR(repo_gitdir(linked), at("wt/.git/worktrees/linked"));
	CHECK_STR(repo_commondir(linked), at("wt/.git"));
	CHECK_STR(repo_objdir(linked), at("wt/.git/objects"));
	CHECK(repo_algo(linked) == &hash_sha256);
	CHECK(!repo_is_bare(linked));
	/* its HEAD is its own */
	CHECK_INT(refs_read(linked, "HEAD", &ref), 0);
	CHECK_STR(ref.target, "refs/heads/other");
	CHECK(oid_eq(&ref.oid, &two));
	ref_release(&ref);
	/* branches are shared */
	CHECK_INT(refs_read(linked, "refs/heads/main", &ref), 0);
	CHECK(oid_eq(&ref.oid, &one));
	ref_release(&ref);
	/* objects are the common ones, both commits readable */
	CHECK(odb_has(repo_odb(linked), &one));
	CHECK_INT(odb_read(repo_odb(linked), &two, &type, &obj), 0);
	CHECK_INT(type, OBJ_COMMIT);

	/* and from the main work tree: its own HEAD, the shared branch */
	CHECK_INT(repo_open(&main_r, at("wt")), 0);
	if (main_r) {
		CHECK_INT(refs_read(main_r, "HEAD", &ref), 0);
		CHECK_STR(ref.target, "refs/heads/main");
		CHECK(oid_eq(&ref.oid, &one));
		ref_release(&ref);
		CHECK_INT(refs_read(main_r, "refs/heads/other", &ref), 0);
		CHECK(oid_eq(&ref.oid, &two));
		ref_release(&ref);
	}
	/* a subdirectory of the linked work tree */
	CHECK_INT(sh("mkdir linked/sub"), 0);
	expect_gitdir(at("linked/sub"), at("wt/.git/worktrees/linked"),
		      __LINE__);
	/* the worktree's gitdir opened directly */
	expect_gitdir(at("wt/.git/worktrees/linked"),
		      at("wt/.git/worktrees/linked"), __LINE__);
out:
	buf_release(&obj);
	repo_close(main_r);
	repo_close(linked);
	teardown();
}

TEST(open_refuses_unknown_format)
{
	struct repo *r = NULL;

	setup();
	CHECK_INT(sh("git init -q --bare -b main b.git && "
		     "git -C b.git config core.repositoryformatversion 1 && "
		     "git -C b.git config extensions.fancyNewThing true"), 0);
	CHECK_INT(repo_open(&r, at("b.git")), XL_EUNSUPPORTED);
	CHECK(strstr(err_msg(), "fancynewthing") != NULL);
	CHECK(r == NULL);
	teardown();
}

const struct test tests[] = {
	T(packed_basic_sha256),
	T(packed_basic_sha1),
	T(packed_crlf),
	T(packed_empty_and_header_only),
	T(packed_bad_lines),
	T(packed_broken),
	T(packed_bad_peeled),
	T(packed_two_peeled_lines),
	T(open_bare_sha256),
	T(head_unborn),
	T(head_symbolic_to_loose),
	T(loose_overrides_packed),
	T(dangling_symref),
	T(bad_loose_ref),
	T(for_each_order),
	T(for_each_broken),
	T(for_each_stops),
	T(for_each_empty),
	T(symref_loop),
	T(symref_depth),
	T(open_work_tree_forms),
	T(open_relative_path),
	T(open_gitfile_relative),
	T(open_not_a_repo),
	T(open_linked_worktree),
	T(open_refuses_unknown_format),
	{ NULL, NULL },
};
