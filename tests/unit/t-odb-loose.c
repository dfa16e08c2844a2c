/*
 * t-odb-loose.c: loose object headers (loose_parse_header) on guarded
 * bytes, and loose_read() through a scratch objects directory holding
 * objects written with zlib's compress(), some of them lying.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <zlib.h>

/* ---- loose_parse_header --------------------------------------------- */

/* Parse the first n bytes of s from a guarded copy. */
static int hdr(const char *s, size_t n, enum obj_type *type, size_t *size,
	       size_t *hdr_len)
{
	void *g = guarded_copy(s, n);
	int ret;

	*type = OBJ_NONE;
	*size = 424242;
	*hdr_len = 424242;
	ret = loose_parse_header(g, n, type, size, hdr_len);
	guarded_free(g);
	return ret;
}

/* A header that must be refused, given with its length. */
static void bad(const char *s, size_t n, int line)
{
	enum obj_type type;
	size_t size, len;
	int ret = hdr(s, n, &type, &size, &len);

	if (ret != XL_ECORRUPT)
		harness_fail(__FILE__, line,
			     "header \"%.*s\" (%zu bytes): got %d, want XL_ECORRUPT",
			     (int)n, s, n, ret);
}

#define BAD(lit) bad(lit, sizeof(lit) - 1, __LINE__)

TEST(header_each_type)
{
	static const struct {
		const char *text;
		size_t len;
		enum obj_type type;
		size_t size, hdr_len;
	} cases[] = {
		{ "blob 5\0hello", 12, OBJ_BLOB, 5, 7 },
		{ "tree 0\0", 7, OBJ_TREE, 0, 7 },
		{ "commit 187\0tree ", 16, OBJ_COMMIT, 187, 11 },
		{ "tag 1234567\0", 12, OBJ_TAG, 1234567, 12 },
		{ "blob 10\0", 8, OBJ_BLOB, 10, 8 },
		{ "blob 4294967296\0", 16, OBJ_BLOB, 4294967296ull, 16 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum obj_type type;
		size_t size, len;

		CHECK_INT(hdr(cases[i].text, cases[i].len, &type, &size, &len),
			  0);
		CHECK_INT(type, cases[i].type);
		CHECK(size == cases[i].size);
		CHECK_INT(len, cases[i].hdr_len);
	}
}

TEST(header_ends_exactly_at_nul)
{
	enum obj_type type;
	size_t size, len;

	CHECK_INT(hdr("blob 123\0", 9, &type, &size, &len), 0);
	CHECK_INT(size, 123);
	CHECK_INT(len, 9);
}

TEST(header_non_canonical_size)
{
	BAD("blob 010\0");
	BAD("blob 00\0");
	BAD("blob 0010\0");
	BAD("blob +1\0");
	BAD("blob -1\0");
	BAD("blob  5\0");
	BAD("blob 5 \0");
	BAD("blob 0x10\0");
	BAD("blob 1e3\0");
}

TEST(header_no_nul)
{
	BAD("blob 5");
	BAD("blob 5x\0");
	BAD("blob 5\n");
	BAD("blob 0");
	BAD("commit 1234567890");
}

TEST(header_unknown_type)
{
	BAD("blobs 5\0");
	BAD("Blob 5\0");
	BAD("BLOB 5\0");
	BAD("blo 5\0");
	BAD("ofs-delta 5\0");
	BAD(" 5\0");
	BAD("bl\0b 5\0");
	BAD("\0");
	bad("", 0, __LINE__);
	BAD("blob");
	BAD("commit");
}

TEST(header_missing_size)
{
	BAD("blob \0");
	BAD("blob ");
	BAD("tree \0abc");
	BAD("tag x\0");
}

TEST(header_size_overflow)
{
	BAD("blob 18446744073709551616\0");	/* 2^64 */
	BAD("blob 18446744073709551617\0");
	BAD("blob 99999999999999999999999999999\0");
	BAD("blob 184467440737095516150\0");
}

/* ---- loose_read ----------------------------------------------------- */

static char objdir[256];

static void make_objdir(void)
{
	snprintf(objdir, sizeof(objdir), "%s/xl-loose.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(objdir))
		abort();
}

static void remove_objdir(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", objdir);
	if (system(cmd))
		abort();
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f))
		abort();
}

/*
 * Store `raw` (header and content, as given) compressed at the path of
 * oid, cutting `cut` bytes off the zlib stream and appending `extra`.
 */
static void store(const struct oid *oid, const void *raw, size_t raw_len,
		  size_t cut, const void *extra, size_t extra_len)
{
	uLongf zlen = compressBound(raw_len);
	unsigned char *z = malloc(zlen + extra_len);
	struct buf path = BUF_INIT;
	char *slash;

	if (!z || compress(z, &zlen, raw, raw_len) != Z_OK || cut > zlen)
		abort();
	if (extra_len)
		memcpy(z + zlen - cut, extra, extra_len);
	loose_path(&path, objdir, oid);
	slash = strrchr(path.buf, '/');
	*slash = '\0';
	mkdir(path.buf, 0777);
	*slash = '/';
	write_file(path.buf, z, zlen - cut + extra_len);
	free(z);
	buf_release(&path);
}

/* Store a well-formed object; its name goes to *oid. */
static void store_object(const struct hash_algo *algo, const char *type,
			 const void *content, size_t len, struct oid *oid)
{
	struct buf raw = BUF_INIT;

	hash_object(algo, type, content, len, oid);
	buf_addf(&raw, "%s %zu", type, len);
	buf_addch(&raw, '\0');
	buf_add(&raw, content, len);
	store(oid, raw.buf, raw.len, 0, NULL, 0);
	buf_release(&raw);
}

/* Store "blob <claimed>\0" + content under the name of the real blob. */
static void store_lying(const struct hash_algo *algo, const char *content,
			const char *claimed, struct oid *oid)
{
	struct buf raw = BUF_INIT;

	hash_object(algo, "blob", content, strlen(content), oid);
	buf_addf(&raw, "blob %s", claimed);
	buf_addch(&raw, '\0');
	buf_addstr(&raw, content);
	store(oid, raw.buf, raw.len, 0, NULL, 0);
	buf_release(&raw);
}

/* loose_read of an object expected to be good, into a fresh buffer */
static int read_ok(const struct oid *oid, enum obj_type *type,
		   struct buf *out)
{
	buf_release(out);
	return loose_read(objdir, oid, type, out);
}

/* loose_read of a bad object: `out` must be left empty */
static int read_bad(const struct oid *oid, enum obj_type *type,
		    struct buf *out)
{
	int ret;

	buf_reset(out);
	buf_addstr(out, "stale");
	ret = loose_read(objdir, oid, type, out);
	if (ret)
		CHECK_INT(out->len, 0);
	return ret;
}

TEST(read_good_objects)
{
	const struct hash_algo *algos[2] = { &hash_sha1, &hash_sha256 };
	static const char *types[4] = { "blob", "tree", "commit", "tag" };
	static const enum obj_type codes[4] = {
		OBJ_BLOB, OBJ_TREE, OBJ_COMMIT, OBJ_TAG,
	};

	make_objdir();
	for (int a = 0; a < 2; a++) {
		for (int t = 0; t < 4; t++) {
			static const char content[] = "some\0content\n";
			struct buf out = BUF_INIT;
			enum obj_type type = OBJ_NONE;
			size_t size = 0;
			struct oid oid;

			store_object(algos[a], types[t], content,
				     sizeof(content) - 1, &oid);
			CHECK_INT(read_ok(&oid, &type, &out), 0);
			CHECK_INT(type, codes[t]);
			CHECK_INT(out.len, sizeof(content) - 1);
			CHECK_MEM(out.buf, content, sizeof(content) - 1);
			CHECK_INT(out.buf[out.len], 0);
			CHECK_INT(loose_read_header(objdir, &oid, &type, &size),
				  0);
			CHECK_INT(type, codes[t]);
			CHECK_INT(size, sizeof(content) - 1);
			CHECK(loose_has(objdir, &oid));
			buf_release(&out);
		}
	}
	remove_objdir();
}

TEST(read_empty_and_large)
{
	struct buf out = BUF_INIT, big = BUF_INIT;
	enum obj_type type;
	struct oid oid;

	make_objdir();
	store_object(&hash_sha256, "blob", "", 0, &oid);
	CHECK_INT(read_ok(&oid, &type, &out), 0);
	CHECK_INT(type, OBJ_BLOB);
	CHECK_INT(out.len, 0);
	/* 1 MiB of text: more than one zlib window */
	for (int i = 0; big.len < (1 << 20); i++)
		buf_addf(&big, "line %d of a large blob\n", i);
	store_object(&hash_sha256, "blob", big.buf, big.len, &oid);
	CHECK_INT(read_ok(&oid, &type, &out), 0);
	CHECK_INT(out.len, big.len);
	CHECK_MEM(out.buf, big.buf, big.len);
	buf_release(&big);
	buf_release(&out);
	remove_objdir();
}

TEST(read_missing)
{
	struct buf out = BUF_INIT;
	enum obj_type type;
	struct oid oid;

	make_objdir();
	hash_object(&hash_sha1, "blob", "nope", 4, &oid);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ENOTFOUND);
	CHECK(!loose_has(objdir, &oid));
	buf_release(&out);
	remove_objdir();
}

TEST(read_size_lies_up)
{
	struct buf out = BUF_INIT;
	enum obj_type type;
	struct oid oid;

	make_objdir();
	/* says 6, holds 5 */
	store_lying(&hash_sha256, "hello", "6", &oid);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	/* says a lot more than the file could ever inflate to */
	store_lying(&hash_sha256, "hello", "1000000000", &oid);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	buf_release(&out);
	remove_objdir();
}

TEST(read_size_lies_down)
{
	struct buf out = BUF_INIT;
	enum obj_type type;
	struct oid oid;

	make_objdir();
	/* says 4, holds 5 */
	store_lying(&hash_sha1, "hello", "4", &oid);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	/* says 0, holds 5 */
	store_lying(&hash_sha1, "hello", "0", &oid);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	buf_release(&out);
	remove_objdir();
}

TEST(read_trailing_garbage)
{
	struct buf out = BUF_INIT, raw = BUF_INIT;
	enum obj_type type;
	struct oid oid;

	make_objdir();
	hash_object(&hash_sha256, "blob", "hello", 5, &oid);
	buf_add(&raw, "blob 5\0hello", 12);
	store(&oid, raw.buf, raw.len, 0, "X", 1);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	CHECK(strstr(err_msg(), "garbage") != NULL);
	/* a second, complete zlib stream after the first */
	{
		unsigned char z[64];
		uLongf zlen = sizeof(z);

		if (compress(z, &zlen, (const Bytef *)"blob 5\0hello", 12) != Z_OK)
			abort();
		store(&oid, raw.buf, raw.len, 0, z, zlen);
		CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	}
	/* a NUL byte of padding */
	store(&oid, raw.buf, raw.len, 0, "", 1);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	buf_release(&raw);
	buf_release(&out);
	remove_objdir();
}

TEST(read_truncated_zlib)
{
	struct buf out = BUF_INIT, raw = BUF_INIT, content = BUF_INIT;
	enum obj_type type;
	struct oid oid;
	size_t cuts[] = { 1, 4, 5, 20 };

	make_objdir();
	for (int i = 0; i < 500; i++)
		buf_addf(&content, "%d,", i * 7919 % 1000);
	hash_object(&hash_sha256, "blob", content.buf, content.len, &oid);
	buf_addf(&raw, "blob %zu", content.len);
	buf_addch(&raw, '\0');
	buf_add(&raw, content.buf, content.len);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		store(&oid, raw.buf, raw.len, cuts[i], NULL, 0);
		if (read_bad(&oid, &type, &out) != XL_ECORRUPT)
			harness_fail(__FILE__, __LINE__,
				     "zlib stream cut by %zu bytes accepted",
				     cuts[i]);
	}
	{
		struct buf path = BUF_INIT;
		size_t size = 0;

		/* only the two-byte zlib header left */
		loose_path(&path, objdir, &oid);
		write_file(path.buf, "\x78\x9c", 2);
		CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
		CHECK_INT(loose_read_header(objdir, &oid, &type, &size),
			  XL_ECORRUPT);
		/* an empty file */
		write_file(path.buf, "", 0);
		CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
		/* not zlib at all */
		write_file(path.buf, "blob 5\0hello", 12);
		CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
		buf_release(&path);
	}
	buf_release(&raw);
	buf_release(&content);
	buf_release(&out);
	remove_objdir();
}

TEST(read_bad_header_in_file)
{
	struct buf out = BUF_INIT;
	enum obj_type type;
	struct oid oid;

	make_objdir();
	hash_object(&hash_sha1, "blob", "hello", 5, &oid);
	store(&oid, "blob 05\0hello", 13, 0, NULL, 0);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	store(&oid, "blub 5\0hello", 12, 0, NULL, 0);
	CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	/* no NUL within the first 64 bytes */
	{
		char raw[100];

		memcpy(raw, "blob 5", 6);
		memset(raw + 6, '5', sizeof(raw) - 6);
		store(&oid, raw, sizeof(raw), 0, NULL, 0);
		CHECK_INT(read_bad(&oid, &type, &out), XL_ECORRUPT);
	}
	buf_release(&out);
	remove_objdir();
}

TEST(read_into_used_buffer)
{
	/*
	 * A caller may reuse one buffer for many reads (cat-file --batch
	 * does, through odb_read_small).  What the buffer held must not
	 * leak: read 200 times into a buffer grown to 16 KiB each time.
	 */
	struct buf out = BUF_INIT;
	struct mallinfo2 before, after;
	enum obj_type type;
	struct oid oid;
	size_t grew;

	make_objdir();
	store_object(&hash_sha1, "blob", "hello", 5, &oid);
	CHECK_INT(loose_read(objdir, &oid, &type, &out), 0);
	before = mallinfo2();
	for (int i = 0; i < 200; i++) {
		buf_grow(&out, 16384);
		if (loose_read(objdir, &oid, &type, &out))
			break;
	}
	after = mallinfo2();
	CHECK_INT(out.len, 5);
	CHECK_MEM(out.buf, "hello", 5);
	if (!before.uordblks && !after.uordblks) {
		printf("# skipped the leak check: no mallinfo2 figures\n");
	} else {
		grew = (after.uordblks + after.hblkhd) -
		       (before.uordblks + before.hblkhd);
		if (after.uordblks + after.hblkhd >
		    before.uordblks + before.hblkhd + (1u << 20))
			harness_fail(__FILE__, __LINE__,
				     "200 reads into a reused buffer grew the heap by %zu bytes",
				     grew);
	}
	buf_release(&out);
	remove_objdir();
}

const struct test tests[] = {
	T(header_each_type),
	T(header_ends_exactly_at_nul),
	T(header_non_canonical_size),
	T(header_no_nul),
	T(header_unknown_type),
	T(header_missing_size),
	T(header_size_overflow),
	T(read_good_objects),
	T(read_empty_and_large),
	T(read_missing),
	T(read_size_lies_up),
	T(read_size_lies_down),
	T(read_trailing_garbage),
	T(read_truncated_zlib),
	T(read_bad_header_in_file),
	T(read_into_used_buffer),
	{ NULL, NULL },
};
