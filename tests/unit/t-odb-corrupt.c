/*
 * t-odb-corrupt.c: every class of bad input gets a clear error naming
 * the file and the object, never a crash, a hang or a huge allocation.
 *
 * Each test builds a small SHA-256 repository by hand (packs are written
 * by the tiny pack writer below, so that any byte can be wrong), breaks
 * one rule, and reads through the public API.  Run under ASan+UBSan by
 * `make check SANITIZE=1`, which also catches any over-read.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- a scratch repository ------------------------------------------- */

static char repo_dir[256];

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f))
		abort();
}

static void make_repo(void)
{
	static const char config[] =
		"[core]\n\trepositoryformatversion = 1\n\tbare = true\n"
		"[extensions]\n\tobjectformat = sha256\n";
	char path[512];

	snprintf(repo_dir, sizeof(repo_dir), "%s/xl-corrupt.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(repo_dir))
		abort();
	snprintf(path, sizeof(path), "%s/objects", repo_dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/objects/pack", repo_dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/refs", repo_dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/HEAD", repo_dir);
	write_file(path, "ref: refs/heads/main\n", 21);
	snprintf(path, sizeof(path), "%s/config", repo_dir);
	write_file(path, config, strlen(config));
}

static void remove_repo(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", repo_dir);
	if (system(cmd))
		abort();
}

/* ---- a pack writer that writes whatever it is told ------------------ */

#define MAX_ENTRIES 10100

struct tpack {
	struct buf pack;
	size_t nr;
	struct {
		unsigned char name[32];
		uint64_t offset;
	} e[MAX_ENTRIES];
};

static void put_header(struct buf *b, int type, uint64_t size)
{
	unsigned char c = (unsigned char)(type << 4 | (size & 15));

	size >>= 4;
	while (size) {
		buf_addch(b, c | 0x80);
		c = size & 0x7f;
		size >>= 7;
	}
	buf_addch(b, c);
}

static void put_zlib(struct buf *b, const void *data, size_t len)
{
	uLongf n = compressBound(len);

	buf_grow(b, n);
	if (compress((Bytef *)b->buf + b->len, &n, data, len) != Z_OK)
		abort();
	b->len += n;
}

static struct tpack *tpack_new(void)
{
	struct tpack *tp = calloc(1, sizeof(*tp));

	buf_init(&tp->pack);
	buf_add(&tp->pack, "PACK\0\0\0\2\0\0\0\0", 12);
	return tp;
}

/* Start an entry named `name`; returns its offset. */
static uint64_t tpack_entry(struct tpack *tp, const unsigned char *name)
{
	memcpy(tp->e[tp->nr].name, name, 32);
	tp->e[tp->nr].offset = tp->pack.len;
	return tp->e[tp->nr++].offset;
}

/* A whole object; its name is its real SHA-256 name. */
static uint64_t tpack_whole(struct tpack *tp, enum obj_type type,
			    const char *data, size_t len, struct oid *oid)
{
	uint64_t off;

	hash_object(&hash_sha256, type_name(type), data, len, oid);
	off = tpack_entry(tp, oid->hash);
	put_header(&tp->pack, type, len);
	put_zlib(&tp->pack, data, len);
	return off;
}

/* Fake but distinct names for deltas whose result we do not care about. */
static void fake_name(struct oid *oid, unsigned n)
{
	memset(oid, 0, sizeof(*oid));
	oid->algo = &hash_sha256;
	oid->hash[0] = 0xd0;
	oid->hash[1] = (unsigned char)(n >> 16);
	oid->hash[2] = (unsigned char)(n >> 8);
	oid->hash[3] = (unsigned char)n;
}

static uint64_t tpack_ofs_delta(struct tpack *tp, uint64_t base,
				const void *delta, size_t len,
				const struct oid *name)
{
	uint64_t off = tpack_entry(tp, name->hash), rel;
	unsigned char tmp[16];
	int n = 15;

	put_header(&tp->pack, OBJ_OFS_DELTA, len);
	rel = off - base;
	tmp[n] = rel & 0x7f;
	while (rel >>= 7)
		tmp[--n] = 0x80 | (--rel & 0x7f);
	buf_add(&tp->pack, tmp + n, (size_t)(16 - n));
	put_zlib(&tp->pack, delta, len);
	return off;
}

static uint64_t tpack_ref_delta(struct tpack *tp, const struct oid *base,
				const void *delta, size_t len,
				const struct oid *name)
{
	uint64_t off = tpack_entry(tp, name->hash);

	put_header(&tp->pack, OBJ_REF_DELTA, len);
	buf_add(&tp->pack, base->hash, 32);
	put_zlib(&tp->pack, delta, len);
	return off;
}

static int cmp_entry(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}

/* Finish: count, trailer, and a v2 .idx.  Returns the pack's base path. */
static void tpack_write(struct tpack *tp, char *base, size_t base_sz)
{
	struct buf idx = BUF_INIT;
	unsigned char sum[32], be[8];
	uint32_t fan[256] = { 0 };
	char path[600];
	struct oid o;

	tp->pack.buf[8] = (char)(tp->nr >> 24);
	tp->pack.buf[9] = (char)(tp->nr >> 16);
	tp->pack.buf[10] = (char)(tp->nr >> 8);
	tp->pack.buf[11] = (char)tp->nr;
	hash_object(&hash_sha256, "blob", tp->pack.buf, tp->pack.len, &o);
	/* any 32 bytes do as a checksum, as long as idx and pack agree */
	memcpy(sum, o.hash, 32);
	buf_add(&tp->pack, sum, 32);

	qsort(tp->e, tp->nr, sizeof(tp->e[0]), cmp_entry);
	for (size_t i = 0; i < tp->nr; i++)
		for (int b = tp->e[i].name[0]; b < 256; b++)
			fan[b]++;
	buf_add(&idx, "\377tOc\0\0\0\2", 8);
	for (int b = 0; b < 256; b++) {
		be[0] = (unsigned char)(fan[b] >> 24);
		be[1] = (unsigned char)(fan[b] >> 16);
		be[2] = (unsigned char)(fan[b] >> 8);
		be[3] = (unsigned char)fan[b];
		buf_add(&idx, be, 4);
	}
	for (size_t i = 0; i < tp->nr; i++)
		buf_add(&idx, tp->e[i].name, 32);
	for (size_t i = 0; i < tp->nr; i++)
		buf_add(&idx, "\0\0\0\0", 4);	/* CRCs: not checked on read */
	for (size_t i = 0; i < tp->nr; i++) {
		uint32_t off = (uint32_t)tp->e[i].offset;

		be[0] = (unsigned char)(off >> 24);
		be[1] = (unsigned char)(off >> 16);
		be[2] = (unsigned char)(off >> 8);
		be[3] = (unsigned char)off;
		buf_add(&idx, be, 4);
	}
	buf_add(&idx, sum, 32);
	buf_add(&idx, sum, 32);	/* the idx's own checksum is not checked */

	snprintf(base, base_sz, "%s/objects/pack/pack-test", repo_dir);
	snprintf(path, sizeof(path), "%s.pack", base);
	write_file(path, tp->pack.buf, tp->pack.len);
	snprintf(path, sizeof(path), "%s.idx", base);
	write_file(path, idx.buf, idx.len);
	buf_release(&idx);
	buf_release(&tp->pack);
	free(tp);
}

/* A delta that turns a `len`-byte base into itself: one whole copy. */
static size_t identity_delta(unsigned char *d, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < 2; i++) {
		size_t v = len;

		while (v >= 0x80) {
			d[n++] = (unsigned char)(v | 0x80);
			v >>= 7;
		}
		d[n++] = (unsigned char)v;
	}
	d[n++] = 0x80 | 0x10;	/* copy, offset 0, one size byte */
	d[n++] = (unsigned char)len;
	return n;
}

/* ---- reading and checking ------------------------------------------- */

/*
 * Open the scratch repository and read `oid`; the result code is
 * returned, the message kept in msg.
 */
static int read_object(const struct oid *oid, char *msg, size_t msg_sz,
		       struct buf *out)
{
	struct repo *repo;
	enum obj_type type;
	int ret;

	msg[0] = '\0';
	ret = repo_open(&repo, repo_dir);
	if (!ret) {
		ret = odb_read(repo_odb(repo), oid, &type, out);
		if (!ret) {
			/* the header path must agree with the full read */
			size_t size;
			int r2 = odb_read_header(repo_odb(repo), oid, &type, &size);

			if (r2 || size != out->len)
				ret = XL_EIO;
		}
		repo_close(repo);
	}
	snprintf(msg, msg_sz, "%s", err_msg());
	return ret;
}

#define CHECK_HAS(msg, s)                                                   \
	do {                                                                \
		if (!strstr((msg), (s)))                                    \
			harness_fail(__FILE__, __LINE__,                    \
				     "message \"%s\" lacks \"%s\"", (msg), (s)); \
	} while (0)

static void check_error(const struct oid *oid, int want, const char *file,
			const char *reason)
{
	char msg[1024], hex[65];
	struct buf out = BUF_INIT;
	int ret = read_object(oid, msg, sizeof(msg), &out);

	CHECK_INT(ret, want);
	CHECK_INT(out.len, 0);
	if (file)
		CHECK_HAS(msg, file);
	CHECK_HAS(msg, oid_to_hex_r(hex, oid));
	if (reason)
		CHECK_HAS(msg, reason);
	buf_release(&out);
}

/* ---- the classes ---------------------------------------------------- */

static struct oid blob_oid;

static void good_pack(char *base, size_t sz)
{
	struct tpack *tp = tpack_new();

	tpack_whole(tp, OBJ_BLOB, "hello\n", 6, &blob_oid);
	tpack_write(tp, base, sz);
}

TEST(good_pack_reads)
{
	char base[600], msg[1024];
	struct buf out = BUF_INIT;

	make_repo();
	good_pack(base, sizeof(base));
	CHECK_INT(read_object(&blob_oid, msg, sizeof(msg), &out), 0);
	CHECK_STR(msg, "");
	CHECK_INT(out.len, 6);
	if (out.len == 6)
		CHECK_MEM(out.buf, "hello\n", 6);
	buf_release(&out);
	remove_repo();
}

TEST(truncated_idx)
{
	char base[600], path[700];

	make_repo();
	good_pack(base, sizeof(base));
	snprintf(path, sizeof(path), "%s.idx", base);
	if (truncate(path, 1000))
		abort();
	/* as Git: the object is missing, and the message names the bad index */
	check_error(&blob_oid, XL_ENOTFOUND, "pack-test.idx", "too small");
	remove_repo();
}

TEST(garbage_idx)
{
	char base[600], path[700], junk[1100];

	make_repo();
	good_pack(base, sizeof(base));
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 131 + 7);
	snprintf(path, sizeof(path), "%s.idx", base);
	write_file(path, junk, sizeof(junk));
	check_error(&blob_oid, XL_ENOTFOUND, "pack-test.idx", NULL);
	remove_repo();
}

TEST(bad_pack_header)
{
	char base[600], path[700];
	int fd;

	make_repo();
	good_pack(base, sizeof(base));
	snprintf(path, sizeof(path), "%s.pack", base);
	fd = open(path, O_WRONLY);
	if (fd < 0 || pwrite(fd, "PACX", 4, 0) != 4)
		abort();
	close(fd);
	check_error(&blob_oid, XL_ENOTFOUND, "pack-test.pack", "not a pack");
	remove_repo();
}

TEST(corrupt_zlib)
{
	struct tpack *tp = tpack_new();
	char base[600], path[700];
	uint64_t off;
	int fd;

	make_repo();
	off = tpack_whole(tp, OBJ_BLOB, "hello, corrupt world\n", 21, &blob_oid);
	tpack_write(tp, base, sizeof(base));
	snprintf(path, sizeof(path), "%s.pack", base);
	/* the header is one byte; smash the deflate data after zlib's 2 */
	fd = open(path, O_WRONLY);
	if (fd < 0 || pwrite(fd, "\xff\xff\xff\xff", 4, (off_t)off + 3) != 4)
		abort();
	close(fd);
	check_error(&blob_oid, XL_ECORRUPT, "pack-test.pack", "zlib");
	remove_repo();
}

TEST(delta_reads_outside_base)
{
	struct tpack *tp = tpack_new();
	/* base 6, result 4: copy 4 bytes at offset 4 (past the end) */
	static const unsigned char delta[] = { 6, 4, 0x80 | 0x01 | 0x10, 4, 4 };
	struct oid name;
	char base[600];
	uint64_t b;

	make_repo();
	b = tpack_whole(tp, OBJ_BLOB, "hello\n", 6, &blob_oid);
	fake_name(&name, 1);
	tpack_ofs_delta(tp, b, delta, sizeof(delta), &name);
	tpack_write(tp, base, sizeof(base));
	check_error(&name, XL_ECORRUPT, "pack-test.pack", "outside");
	remove_repo();
}

TEST(delta_wrong_size)
{
	struct tpack *tp = tpack_new();
	/* declares a 9-byte result, produces 6 */
	static const unsigned char delta[] = { 6, 9, 0x80 | 0x10, 6 };
	struct oid name;
	char base[600];
	uint64_t b;

	make_repo();
	b = tpack_whole(tp, OBJ_BLOB, "hello\n", 6, &blob_oid);
	fake_name(&name, 2);
	tpack_ofs_delta(tp, b, delta, sizeof(delta), &name);
	tpack_write(tp, base, sizeof(base));
	check_error(&name, XL_ECORRUPT, "pack-test.pack", "declared");
	remove_repo();
}

TEST(ref_delta_cycle)
{
	struct tpack *tp = tpack_new();
	unsigned char delta[16];
	size_t n = identity_delta(delta, 6);
	struct oid a, b;
	char base[600];

	make_repo();
	fake_name(&a, 10);
	fake_name(&b, 11);
	tpack_ref_delta(tp, &b, delta, n, &a);
	tpack_ref_delta(tp, &a, delta, n, &b);
	tpack_write(tp, base, sizeof(base));
	check_error(&a, XL_ECORRUPT, "pack-test.pack", "cycle");
	remove_repo();
}

TEST(absurd_declared_size)
{
	struct tpack *tp = tpack_new();
	struct oid name;
	char base[600];

	make_repo();
	fake_name(&name, 20);
	tpack_entry(tp, name.hash);
	/* a blob claiming 2^50 bytes, with six bytes of data */
	put_header(&tp->pack, OBJ_BLOB, (uint64_t)1 << 50);
	put_zlib(&tp->pack, "hello\n", 6);
	tpack_write(tp, base, sizeof(base));
	check_error(&name, XL_ECORRUPT, "pack-test.pack", "declares");
	remove_repo();
}

/* A chain of `depth` identity deltas on one base; returns the top name. */
static void deep_chain(unsigned depth, struct oid *top)
{
	struct tpack *tp = tpack_new();
	unsigned char delta[16];
	size_t n = identity_delta(delta, 6);
	char base[600];
	uint64_t prev;

	prev = tpack_whole(tp, OBJ_BLOB, "hello\n", 6, &blob_oid);
	for (unsigned i = 0; i < depth; i++) {
		fake_name(top, 100 + i);
		prev = tpack_ofs_delta(tp, prev, delta, n, top);
	}
	tpack_write(tp, base, sizeof(base));
}

TEST(delta_chain_at_limit_reads)
{
	struct buf out = BUF_INIT;
	char msg[1024];
	struct oid top;

	make_repo();
	deep_chain(ODB_MAX_DELTA_DEPTH, &top);
	CHECK_INT(read_object(&top, msg, sizeof(msg), &out), 0);
	CHECK_STR(msg, "");
	CHECK_INT(out.len, 6);
	if (out.len == 6)
		CHECK_MEM(out.buf, "hello\n", 6);
	buf_release(&out);
	remove_repo();
}

TEST(delta_chain_too_deep)
{
	struct oid top;

	make_repo();
	deep_chain(ODB_MAX_DELTA_DEPTH + 1, &top);
	check_error(&top, XL_ETOOBIG, "pack-test.pack", "deeper than");
	remove_repo();
}

/* Write a loose object file with exactly these inflated bytes. */
static void write_loose(const struct oid *oid, const void *raw, size_t len,
			const void *tail, size_t tail_len)
{
	char hex[65], path[600];
	struct buf z = BUF_INIT;

	oid_to_hex_r(hex, oid);
	snprintf(path, sizeof(path), "%s/objects/%.2s", repo_dir, hex);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", repo_dir, hex,
		 hex + 2);
	put_zlib(&z, raw, len);
	buf_add(&z, tail, tail_len);
	write_file(path, z.buf, z.len);
	buf_release(&z);
}

TEST(loose_header_says_more)
{
	struct oid name;

	make_repo();
	fake_name(&name, 30);
	write_loose(&name, "blob 10\0hello", 13, NULL, 0);
	check_error(&name, XL_ECORRUPT, "/objects/d0/", "blob of 10 bytes");
	remove_repo();
}

TEST(loose_header_says_less)
{
	struct oid name;

	make_repo();
	fake_name(&name, 31);
	write_loose(&name, "blob 3\0hello", 12, NULL, 0);
	check_error(&name, XL_ECORRUPT, "/objects/d0/", "longer than");
	remove_repo();
}

TEST(loose_header_garbage)
{
	struct oid name;

	make_repo();
	fake_name(&name, 32);
	write_loose(&name, "bolb 5\0hello", 12, NULL, 0);
	check_error(&name, XL_ECORRUPT, "/objects/d0/", "unknown type");
	fake_name(&name, 33);
	write_loose(&name, "blob 05\0hello", 13, NULL, 0);
	check_error(&name, XL_ECORRUPT, "/objects/d0/", "canonical");
	fake_name(&name, 34);
	write_loose(&name, "blob 99999999999999999999999\0", 29, NULL, 0);
	check_error(&name, XL_ECORRUPT, "/objects/d0/", "too large");
	remove_repo();
}

TEST(loose_trailing_garbage)
{
	struct oid name;

	make_repo();
	fake_name(&name, 35);
	write_loose(&name, "blob 5\0hello", 12, "junk", 4);
	check_error(&name, XL_ECORRUPT, "/objects/d0/", "garbage");
	remove_repo();
}

TEST(loose_absurd_size)
{
	struct oid name;

	make_repo();
	fake_name(&name, 36);
	write_loose(&name, "blob 1125899906842624\0hello", 27, NULL, 0);
	check_error(&name, XL_ECORRUPT, "/objects/d0/", "declares");
	remove_repo();
}

/* Stream an object to the end; the result code of the whole read. */
static int stream_all(const struct oid *oid, size_t *total)
{
	struct repo *repo;
	struct odb_stream *st;
	enum obj_type type;
	size_t size, got;
	char piece[3];
	int ret;

	*total = 0;
	if ((ret = repo_open(&repo, repo_dir)))
		return ret;
	ret = odb_stream_open(repo_odb(repo), oid, &st, &type, &size);
	while (!ret && !(ret = odb_stream_read(st, piece, sizeof(piece), &got)) && got)
		*total += got;
	if (st)
		odb_stream_close(st);
	repo_close(repo);
	return ret;
}

TEST(stream_exact_size)
{
	struct oid name;
	size_t n;

	make_repo();
	fake_name(&name, 50);
	write_loose(&name, "blob 5\0hello", 12, NULL, 0);
	CHECK_INT(stream_all(&name, &n), 0);
	CHECK_INT(n, 5);
	fake_name(&name, 51);
	write_loose(&name, "blob 5\0hello!", 13, NULL, 0);
	CHECK_INT(stream_all(&name, &n), XL_ECORRUPT);
	fake_name(&name, 52);
	write_loose(&name, "blob 6\0hello", 12, NULL, 0);
	CHECK_INT(stream_all(&name, &n), XL_ECORRUPT);
	fake_name(&name, 53);
	write_loose(&name, "blob 5\0hello", 12, "junk", 4);
	CHECK_INT(stream_all(&name, &n), XL_ECORRUPT);
	/* a long one, inflated across many small reads */
	{
		static char big[11 + 99992];

		memcpy(big, "blob 99992", 10);
		big[10] = '\0';
		for (size_t i = 11; i < sizeof(big) - 3; i++)
			big[i] = (char)(i * 7);
		fake_name(&name, 54);
		write_loose(&name, big, 11 + 99992, NULL, 0);
		CHECK_INT(stream_all(&name, &n), 0);
		CHECK_INT(n, 99992);
		fake_name(&name, 55);
		write_loose(&name, big, 11 + 99991, NULL, 0);
		CHECK_INT(stream_all(&name, &n), XL_ECORRUPT);
	}
	remove_repo();
}

TEST(missing_object_is_not_corrupt)
{
	char base[600];
	struct oid name;

	make_repo();
	good_pack(base, sizeof(base));
	fake_name(&name, 40);
	check_error(&name, XL_ENOTFOUND, NULL, "not found");
	remove_repo();
}

const struct test tests[] = {
	T(good_pack_reads),
	T(truncated_idx),
	T(garbage_idx),
	T(bad_pack_header),
	T(corrupt_zlib),
	T(delta_reads_outside_base),
	T(delta_wrong_size),
	T(ref_delta_cycle),
	T(absurd_declared_size),
	T(delta_chain_at_limit_reads),
	T(delta_chain_too_deep),
	T(loose_header_says_more),
	T(loose_header_says_less),
	T(loose_header_garbage),
	T(loose_trailing_garbage),
	T(loose_absurd_size),
	T(stream_exact_size),
	T(missing_object_is_not_corrupt),
	{ NULL, NULL },
};
