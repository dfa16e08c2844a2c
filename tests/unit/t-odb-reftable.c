/*
 * t-odb-reftable.c: the reftable reader (reftable_read_refs) on the
 * history-reftable fixture made by upstream Git, on tables written by the
 * tiny writer below (both versions, aligned and not, several blocks,
 * every value type, a stack of layers with deletions), and on broken
 * tables.
 *
 * Broken tables go straight to the table parser from a guarded copy, so a
 * read one byte past the end of the table crashes the test.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- a tiny reftable writer ----------------------------------------- */

static void put_be(struct buf *b, uint64_t v, int n)
{
	unsigned char c[8];

	for (int i = n - 1; i >= 0; i--, v >>= 8)
		c[i] = v & 0xff;
	buf_add(b, c, n);
}

/* the pack offset encoding: each continuation byte stands for one more */
static void put_varint(struct buf *b, uint64_t v)
{
	unsigned char c[10];
	int i = 9;

	c[i] = v & 0x7f;
	while (v >>= 7)
		c[--i] = 0x80 | (--v & 0x7f);
	buf_add(b, c + i, 10 - i);
}

struct rec {
	const char *name;
	int type;			/* 0 deletion .. 3 symref */
	unsigned char id, peeled;	/* every byte of the object ids */
	const char *target;
};

struct layout {
	int version;
	const struct hash_algo *algo;
	size_t block_size;		/* 0: unaligned */
	size_t per_block;		/* records in each ref block */
	size_t restart_every;
	int pad_last;			/* pad the last block as well */
};

static size_t hdr_len(int version)
{
	return version == 2 ? 28 : 24;
}

static void table_header(struct buf *b, int version,
			 const struct hash_algo *algo, size_t block_size)
{
	buf_add(b, "REFT", 4);
	put_be(b, version, 1);
	put_be(b, block_size, 3);
	put_be(b, 1, 8);
	put_be(b, 1, 8);
	if (version == 2)
		buf_add(b, algo == &hash_sha1 ? "sha1" : "s256", 4);
}

/* The header again, the five positions, and the CRC-32 of all that. */
static void table_footer(struct buf *b, int version, const uint64_t *pos)
{
	unsigned char head[28];
	size_t start = b->len;

	memcpy(head, b->buf, hdr_len(version));
	buf_add(b, head, hdr_len(version));
	for (int i = 0; i < 5; i++)
		put_be(b, pos ? pos[i] : 0, 8);
	put_be(b, crc32(0, (unsigned char *)b->buf + start, b->len - start), 4);
}

static void put_record(struct buf *b, const char *prev, const struct rec *r,
		       const struct hash_algo *algo, int restart)
{
	size_t prefix = 0, len = strlen(r->name);

	if (prev && !restart)
		while (prefix < len && prev[prefix] == r->name[prefix])
			prefix++;
	put_varint(b, prefix);
	put_varint(b, (len - prefix) << 3 | r->type);
	buf_add(b, r->name + prefix, len - prefix);
	put_varint(b, 0);		/* update_index_delta */
	if (r->type == 1 || r->type == 2)
		for (size_t i = 0; i < algo->rawsz; i++)
			buf_addch(b, r->id);
	if (r->type == 2)
		for (size_t i = 0; i < algo->rawsz; i++)
			buf_addch(b, r->peeled);
	if (r->type == 3) {
		put_varint(b, strlen(r->target));
		buf_addstr(b, r->target);
	}
}

static void build_table(struct buf *b, const struct layout *l,
			const struct rec *r, size_t nr)
{
	buf_reset(b);
	table_header(b, l->version, l->algo, l->block_size);
	for (size_t i = 0; i < nr;) {
		size_t base = i ? b->len : 0, len_at = b->len + 1;
		size_t restarts[64], nrs = 0, block_len;

		buf_addch(b, 'r');
		put_be(b, 0, 3);
		for (size_t j = 0; j < l->per_block && i < nr; j++, i++) {
			int restart = j % l->restart_every == 0;

			if (restart)
				restarts[nrs++] = b->len - base;
			put_record(b, j ? r[i - 1].name : NULL, &r[i], l->algo,
				   restart);
		}
		for (size_t k = 0; k < nrs; k++)
			put_be(b, restarts[k], 3);
		put_be(b, nrs, 2);
		block_len = b->len - base;
		b->buf[len_at] = block_len >> 16;
		b->buf[len_at + 1] = block_len >> 8;
		b->buf[len_at + 2] = block_len;
		if (l->block_size && (i < nr || l->pad_last))
			while (b->len < base + l->block_size)
				buf_addch(b, 0);
	}
	table_footer(b, l->version, NULL);
}

/*
 * A one-block SHA-1 table around hand-made record bytes: restart offsets
 * `restarts` (nrs of them) and a restart count field of `count`.
 */
static void raw_table(struct buf *b, const void *recs, size_t n,
		      const size_t *restarts, size_t nrs, unsigned count)
{
	buf_reset(b);
	table_header(b, 1, &hash_sha1, 0);
	buf_addch(b, 'r');
	put_be(b, 28 + n + 3 * nrs + 2, 3);
	buf_add(b, recs, n);
	for (size_t k = 0; k < nrs; k++)
		put_be(b, restarts[k], 3);
	put_be(b, count, 2);
	table_footer(b, 1, NULL);
}

/*
 * Parse an image from a guarded copy; arr is released.  guarded_copy()
 * of nothing would give the guard page itself, which guarded_free()
 * cannot free: an empty image is one guarded byte, pointed past.
 */
static int parse_image(const void *data, size_t len,
		       const struct hash_algo *algo)
{
	struct ref_array arr = { 0 };
	unsigned char *copy = guarded_copy(len ? data : "", len ? len : 1);
	int ret = reftable_parse_table(copy + !len, len, "test.ref", algo,
				       &arr);

	guarded_free(copy);
	ref_array_release(&arr);
	return ret;
}

/* ---- a scratch reftable directory ----------------------------------- */

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f))
		abort();
}

static void make_dir(char *dir, size_t sz)
{
	snprintf(dir, sz, "%s/xl-reftable.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		abort();
}

static void remove_dir(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		abort();
}

/* Write tables 1.ref .. n.ref and a tables.list naming them, and read. */
static int read_stack(struct buf *const *tables, size_t n,
		      const struct hash_algo *algo, struct ref_array *arr)
{
	char dir[256], path[512];
	struct buf list = BUF_INIT;
	int ret;

	make_dir(dir, sizeof(dir));
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%zu.ref", dir, i + 1);
		write_file(path, tables[i]->buf, tables[i]->len);
		buf_addf(&list, "%zu.ref\n", i + 1);
	}
	snprintf(path, sizeof(path), "%s/tables.list", dir);
	write_file(path, list.buf, list.len);
	ret = reftable_read_refs(dir, algo, arr);
	remove_dir(dir);
	buf_release(&list);
	return ret;
}

/* Check one read ref against what the writer was given. */
static void check_ref(const struct ref *ref, const struct rec *r,
		      const struct hash_algo *algo)
{
	unsigned char raw[OID_RAWSZ_MAX];

	CHECK_STR(ref->name, r->name);
	CHECK(ref->oid.algo == algo);
	if (r->type == 3) {
		CHECK_STR(ref->target, r->target);
		CHECK(oid_is_null(&ref->oid));
		return;
	}
	CHECK(ref->target == NULL);
	memset(raw, r->id, algo->rawsz);
	CHECK_MEM(ref->oid.hash, raw, algo->rawsz);
	CHECK_INT(ref->has_peeled, r->type == 2);
	if (r->type == 2) {
		memset(raw, r->peeled, algo->rawsz);
		CHECK_MEM(ref->peeled.hash, raw, algo->rawsz);
		CHECK(ref->peeled.algo == algo);
	}
}

static const struct rec sample[] = {
	{ "HEAD", 3, 0, 0, "refs/heads/main" },
	{ "refs/heads/main", 1, 0x11, 0, NULL },
	{ "refs/heads/maint", 1, 0x12, 0, NULL },
	{ "refs/heads/topic", 1, 0x13, 0, NULL },
	{ "refs/remotes/origin/HEAD", 3, 0, 0, "refs/remotes/origin/main" },
	{ "refs/remotes/origin/main", 1, 0x14, 0, NULL },
	{ "refs/tags/v1.0", 2, 0x21, 0x22, NULL },
	{ "refs/tags/v1.0-light", 1, 0x23, 0, NULL },
	{ "refs/tags/v2.0", 2, 0x24, 0x25, NULL },
};
#define NSAMPLE (sizeof(sample) / sizeof(sample[0]))

static void check_layout(const struct layout *l)
{
	struct buf table = BUF_INIT, *tables[] = { &table };
	struct ref_array arr = { 0 };

	build_table(&table, l, sample, NSAMPLE);
	CHECK_INT(read_stack(tables, 1, l->algo, &arr), 0);
	CHECK_INT(arr.nr, NSAMPLE);
	for (size_t i = 0; i < arr.nr && i < NSAMPLE; i++)
		check_ref(&arr.refs[i], &sample[i], l->algo);
	/* and straight from memory, against a guard page */
	CHECK_INT(parse_image(table.buf, table.len, l->algo), 0);
	ref_array_release(&arr);
	buf_release(&table);
}

/* ---- the fixture made by upstream Git ------------------------------- */

TEST(fixture)
{
	char dir[256], cmd[1024], path[600], line[512];
	struct ref_array arr = { 0 };
	size_t k = 0;
	int peel_line = 0;	/* ref k - 1 had its ^{} line */
	FILE *f;

	make_dir(dir, sizeof(dir));
	snprintf(cmd, sizeof(cmd),
		 "tar -xzf '%s/fixtures/history-reftable.tar.gz' -C '%s'",
		 test_data_dir(), dir);
	CHECK_INT(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/history-reftable.git/reftable", dir);
	if (reftable_read_refs(path, &hash_sha256, &arr))
		harness_fail(__FILE__, __LINE__, "read: %s", err_msg());
	snprintf(path, sizeof(path), "%s/fixtures/history-reftable.refs.tsv",
		 test_data_dir());
	f = fopen(path, "r");
	CHECK(f != NULL);
	/* the list is sorted as the refs are: walk both in step */
	while (f && fgets(line, sizeof(line), f)) {
		char name[256], hex[65], got[65];
		const char *sym = strstr(line, "symref=");
		size_t n;

		if (sscanf(line, "%255s %64s", name, hex) != 2)
			continue;
		n = strlen(name);
		if (n > 3 && !strcmp(name + n - 3, "^{}")) {
			/*
			 * a peeled value: reported exactly where the list
			 * says the table recorded one (this fixture's
			 * table records none), and then the right one
			 */
			CHECK(k > 0);
			if (k == 0 || k > arr.nr)
				continue;
			peel_line = 1;
			CHECK_INT(arr.refs[k - 1].has_peeled,
				  strstr(line, "peeled (packed-refs)") != NULL);
			if (arr.refs[k - 1].has_peeled)
				CHECK_STR(oid_to_hex_r(got, &arr.refs[k - 1].peeled),
					  hex);
			continue;
		}
		/* a ref with no ^{} line has no peeled value */
		if (k > 0 && k <= arr.nr && !peel_line)
			CHECK(!arr.refs[k - 1].has_peeled);
		peel_line = 0;
		if (k >= arr.nr) {
			harness_fail(__FILE__, __LINE__, "%s not read", name);
			continue;
		}
		CHECK_STR(arr.refs[k].name, name);
		CHECK(arr.refs[k].oid.algo == &hash_sha256);
		if (sym) {
			char target[256];

			/* HEAD is stored as a symref; its value is main's */
			CHECK(sscanf(sym, "symref=%255s", target) == 1);
			CHECK_STR(arr.refs[k].target, target);
			CHECK(oid_is_null(&arr.refs[k].oid));
		} else {
			CHECK(arr.refs[k].target == NULL);
			CHECK_STR(oid_to_hex_r(got, &arr.refs[k].oid), hex);
		}
		k++;
	}
	if (k > 0 && k <= arr.nr && !peel_line)
		CHECK(!arr.refs[k - 1].has_peeled);
	CHECK_INT(k, arr.nr);
	CHECK(k >= 10);
	if (f)
		fclose(f);
	ref_array_release(&arr);
	remove_dir(dir);
}

/* ---- well-formed tables --------------------------------------------- */

TEST(v1_sha1_unaligned_blocks)
{
	struct layout l = { 1, &hash_sha1, 0, 4, 2, 0 };

	check_layout(&l);
	l.per_block = 1;
	l.restart_every = 1;
	check_layout(&l);
}

TEST(v2_sha1)
{
	struct layout l = { 2, &hash_sha1, 0, 100, 16, 0 };

	check_layout(&l);
}

TEST(v2_sha256_aligned_padded)
{
	struct layout l = { 2, &hash_sha256, 256, 3, 2, 0 };

	check_layout(&l);
	l.pad_last = 1;
	check_layout(&l);
	l.block_size = 4096;
	l.per_block = 100;
	check_layout(&l);
}

TEST(layers_and_deletions)
{
	static const struct rec base[] = {
		{ "HEAD", 3, 0, 0, "refs/heads/main" },
		{ "refs/heads/gone", 1, 0x01, 0, NULL },
		{ "refs/heads/main", 1, 0x02, 0, NULL },
		{ "refs/tags/t", 2, 0x03, 0x04, NULL },
	};
	static const struct rec mid[] = {
		{ "refs/heads/gone", 0, 0, 0, NULL },
		{ "refs/heads/main", 1, 0x05, 0, NULL },
		{ "refs/heads/never", 0, 0, 0, NULL },
		{ "refs/heads/new", 1, 0x06, 0, NULL },
	};
	static const struct rec top[] = {
		{ "HEAD", 3, 0, 0, "refs/heads/new" },
		{ "refs/heads/gone", 1, 0x07, 0, NULL },
		{ "refs/tags/t", 0, 0, 0, NULL },
	};
	static const struct rec want[] = {
		{ "HEAD", 3, 0, 0, "refs/heads/new" },
		{ "refs/heads/gone", 1, 0x07, 0, NULL },
		{ "refs/heads/main", 1, 0x05, 0, NULL },
		{ "refs/heads/new", 1, 0x06, 0, NULL },
	};
	struct layout l = { 2, &hash_sha256, 0, 2, 1, 0 };
	struct buf a = BUF_INIT, b = BUF_INIT, c = BUF_INIT;
	struct buf *tables[] = { &a, &b, &c };
	struct ref_array arr = { 0 };

	build_table(&a, &l, base, 4);
	build_table(&b, &l, mid, 4);
	build_table(&c, &l, top, 3);
	if (read_stack(tables, 3, &hash_sha256, &arr))
		harness_fail(__FILE__, __LINE__, "read: %s", err_msg());
	CHECK_INT(arr.nr, 4);
	for (size_t i = 0; i < arr.nr && i < 4; i++)
		check_ref(&arr.refs[i], &want[i], &hash_sha256);
	ref_array_release(&arr);

	/* without the top layer, "gone" stays deleted */
	CHECK_INT(read_stack(tables, 2, &hash_sha256, &arr), 0);
	CHECK_INT(arr.nr, 4);
	if (arr.nr == 4) {
		CHECK_STR(arr.refs[1].name, "refs/heads/main");
		CHECK_STR(arr.refs[3].name, "refs/tags/t");
	}
	ref_array_release(&arr);
	buf_release(&a);
	buf_release(&b);
	buf_release(&c);
}

TEST(empty_tables_and_stack)
{
	struct layout l = { 1, &hash_sha1, 0, 1, 1, 0 };
	struct buf empty = BUF_INIT, *tables[] = { &empty };
	struct ref_array arr = { 0 };

	build_table(&empty, &l, NULL, 0);
	CHECK_INT(empty.len, 24 + 68);
	CHECK_INT(read_stack(tables, 1, &hash_sha1, &arr), 0);
	CHECK_INT(arr.nr, 0);
	CHECK_INT(read_stack(tables, 0, &hash_sha1, &arr), 0);
	CHECK_INT(arr.nr, 0);
	buf_release(&empty);
}

TEST(no_tables_list)
{
	char dir[256];
	struct ref_array arr = { 0 };

	make_dir(dir, sizeof(dir));
	CHECK_INT(reftable_read_refs(dir, &hash_sha1, &arr), XL_ENOTFOUND);
	CHECK_INT(arr.nr, 0);
	remove_dir(dir);
}

TEST(bad_stack)
{
	char dir[256], path[512];
	struct ref_array arr = { 0 };
	static const char *const lists[] = {
		"missing.ref\n", "../x.ref\n", "a/b.ref\n", "\n", "..\n",
	};

	make_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/tables.list", dir);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		write_file(path, lists[i], strlen(lists[i]));
		CHECK_INT(reftable_read_refs(dir, &hash_sha1, &arr),
			  XL_ECORRUPT);
		CHECK_INT(arr.nr, 0);
	}
	remove_dir(dir);
}

TEST(hash_mismatch)
{
	struct layout l = { 1, &hash_sha1, 0, 4, 2, 0 };
	struct buf t = BUF_INIT, *tables[] = { &t };
	struct ref_array arr = { 0 };

	build_table(&t, &l, sample, NSAMPLE);
	CHECK_INT(read_stack(tables, 1, &hash_sha256, &arr), XL_ECORRUPT);
	l.version = 2;
	build_table(&t, &l, sample, NSAMPLE);
	CHECK_INT(read_stack(tables, 1, &hash_sha256, &arr), XL_ECORRUPT);
	l.algo = &hash_sha256;
	build_table(&t, &l, sample, NSAMPLE);
	CHECK_INT(read_stack(tables, 1, &hash_sha1, &arr), XL_ECORRUPT);
	/* an unknown hash id */
	t.buf[27] = 'x';
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha256), XL_ECORRUPT);
	CHECK_INT(arr.nr, 0);
	buf_release(&t);
}

/* ---- broken tables -------------------------------------------------- */

TEST(truncated)
{
	struct layout l = { 2, &hash_sha256, 0, 3, 2, 0 };
	struct buf t = BUF_INIT;
	int bad = 0;

	build_table(&t, &l, sample, NSAMPLE);
	for (size_t n = 0; n < t.len; n++)
		if (parse_image(t.buf, n, &hash_sha256) != XL_ECORRUPT)
			bad++;
	CHECK_INT(bad, 0);
	buf_release(&t);
}

TEST(bad_header_and_footer)
{
	struct layout l = { 1, &hash_sha1, 0, 4, 2, 0 };
	struct buf t = BUF_INIT;

	build_table(&t, &l, sample, NSAMPLE);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), 0);
	t.buf[0] = 'X';			/* magic */
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	t.buf[0] = 'R';
	t.buf[t.len - 1] ^= 1;		/* the CRC */
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	t.buf[t.len - 1] ^= 1;
	t.buf[t.len - 68 + 10] ^= 1;	/* the footer's header copy */
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	t.buf[t.len - 68 + 10] ^= 1;
	t.buf[4] = t.buf[t.len - 68 + 4] = 3;	/* a version from the future */
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_EUNSUPPORTED);
	buf_release(&t);
}

TEST(section_position_out_of_range)
{
	struct buf t = BUF_INIT;
	uint64_t pos[5] = { 0, 0, 0, 1000, 0 };

	table_header(&t, 1, &hash_sha1, 0);
	table_footer(&t, 1, pos);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	buf_reset(&t);
	pos[3] = 0;
	pos[1] = 5 << 5 | 2;		/* obj blocks inside the header */
	table_header(&t, 1, &hash_sha1, 0);
	table_footer(&t, 1, pos);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	buf_release(&t);
}

/* prefix 0, suffix "refs/a" type 1, delta 0, 20 bytes of id */
static size_t one_record(unsigned char *r)
{
	size_t n = 0;

	r[n++] = 0;
	r[n++] = 6 << 3 | 1;
	memcpy(r + n, "refs/a", 6);
	n += 6;
	r[n++] = 0;
	memset(r + n, 0xab, 20);
	return n + 20;
}

TEST(raw_block_sanity)
{
	unsigned char r[64];
	size_t n = one_record(r), restart = 28;
	struct buf t = BUF_INIT;
	struct ref_array arr = { 0 };
	void *copy;

	raw_table(&t, r, n, &restart, 1, 1);
	copy = guarded_copy(t.buf, t.len);
	CHECK_INT(reftable_parse_table(copy, t.len, "raw", &hash_sha1, &arr), 0);
	CHECK_INT(arr.nr, 1);
	if (arr.nr == 1) {
		CHECK_STR(arr.refs[0].name, "refs/a");
		CHECK_INT(arr.refs[0].oid.hash[19], 0xab);
	}
	guarded_free(copy);
	ref_array_release(&arr);
	buf_release(&t);
}

TEST(key_past_block_end)
{
	unsigned char r[64];
	size_t n = one_record(r), restart = 28;
	struct buf t = BUF_INIT;

	r[1] = 15 << 3 | 1;		/* 15 bytes of name, fewer left */
	raw_table(&t, r, 10, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* a two-byte varint claiming a long suffix */
	r[1] = 0x80 | 0x7f;
	r[2] = 0x7f;
	raw_table(&t, r, n, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* the object id cut short */
	n = one_record(r);
	raw_table(&t, r, n - 1, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* a varint running to the end of the records */
	memset(r, 0xff, 12);
	raw_table(&t, r, 12, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	buf_release(&t);
}

TEST(restart_table)
{
	unsigned char r[64];
	size_t n = one_record(r), restarts[2] = { 28, 30 };
	struct buf t = BUF_INIT;

	/* a count larger than the block can hold */
	raw_table(&t, r, n, restarts, 1, 0xffff);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	raw_table(&t, r, n, restarts, 1, 10);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* none at all */
	raw_table(&t, r, n, restarts, 0, 0);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* an offset inside a record */
	raw_table(&t, r, n, restarts, 2, 2);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* an offset before the records, and one past them */
	restarts[0] = 3;
	raw_table(&t, r, n, restarts, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	restarts[0] = 28 + n;
	raw_table(&t, r, n, restarts, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	buf_release(&t);
}

TEST(bad_records)
{
	unsigned char r[128];
	size_t n = one_record(r), restart = 28, m;
	struct buf t = BUF_INIT;

	/* a prefix on the first record */
	r[0] = 1;
	raw_table(&t, r, n, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	r[0] = 0;
	/* value types 4..7 are reserved */
	r[1] = 6 << 3 | 5;
	raw_table(&t, r, n, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	r[1] = 6 << 3 | 1;
	/* a NUL in the name */
	r[4] = 0;
	raw_table(&t, r, n, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	r[4] = 'f';
	/* a second record sorting before the first, then equal to it */
	m = one_record(r + n);
	r[n + 7] = '0';			/* "refs/0" < "refs/a" */
	raw_table(&t, r, n + m, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	r[n + 7] = 'a';
	raw_table(&t, r, n + m, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* a prefix longer than the previous name */
	r[n] = 7;
	r[n + 1] = 1 << 3 | 1;
	raw_table(&t, r, n + 3 + 20, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* a symref whose target runs past the block, or is empty */
	r[1] = 6 << 3 | 3;
	r[9] = 30;
	raw_table(&t, r, 20, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	r[9] = 0;
	raw_table(&t, r, 10, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* an empty name */
	r[1] = 0 << 3 | 0;
	r[2] = 0;
	raw_table(&t, r, 3, &restart, 1, 1);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	buf_release(&t);
}

TEST(bad_blocks)
{
	struct layout l = { 1, &hash_sha1, 0, 4, 2, 0 };
	struct buf t = BUF_INIT;
	size_t len_at = 24 + 1;
	unsigned char save;

	build_table(&t, &l, sample, NSAMPLE);
	/* the first block's length running into the footer */
	save = t.buf[len_at + 1];
	t.buf[len_at + 1] = 0x7f;
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* or too short to hold its own header and restart count */
	t.buf[len_at + 1] = 0;
	t.buf[len_at + 2] = 29;
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	t.buf[len_at + 1] = save;
	buf_release(&t);

	/* an aligned table whose padding runs past the ref section */
	l.block_size = 256;
	l.pad_last = 1;
	build_table(&t, &l, sample, 2);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), 0);
	buf_setlen(&t, 256 - 8);
	table_footer(&t, 1, NULL);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* a block longer than block_size */
	l.block_size = 40;
	l.pad_last = 0;
	build_table(&t, &l, sample, 2);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	buf_release(&t);

	/* an unknown block type after the ref blocks */
	l.block_size = 0;
	build_table(&t, &l, sample, 2);
	buf_setlen(&t, t.len - 68);
	buf_add(&t, "x\0\0\4", 4);
	table_footer(&t, 1, NULL);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), XL_ECORRUPT);
	/* a log block there is the end of the refs */
	t.buf[t.len - 68 - 4] = 'g';
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), 0);
	buf_release(&t);
}

/*
 * Every byte of a good table changed in a few ways: the parse must end
 * cleanly (any result), and a success must give sane names.
 */
TEST(every_byte_changed)
{
	struct layout l = { 2, &hash_sha1, 256, 3, 2, 0 };
	struct buf t = BUF_INIT;
	int crashed = 0;	/* a positive return, or an empty name */

	build_table(&t, &l, sample, NSAMPLE);
	CHECK_INT(parse_image(t.buf, t.len, &hash_sha1), 0);
	for (size_t i = 0; i < t.len; i++) {
		unsigned char orig = t.buf[i];
		const unsigned char vals[] = {
			0, 0xff, orig ^ 0x80, orig + 1, orig - 1, orig ^ 1,
		};

		for (size_t v = 0; v < sizeof(vals); v++) {
			struct ref_array arr = { 0 };
			void *copy;
			int ret;

			if (vals[v] == orig)
				continue;
			t.buf[i] = vals[v];
			copy = guarded_copy(t.buf, t.len);
			ret = reftable_parse_table(copy, t.len, "x", &hash_sha1,
						   &arr);
			if (ret > 0)
				crashed++;
			for (size_t k = 0; !ret && k < arr.nr; k++)
				if (!arr.refs[k].name[0])
					crashed++;
			guarded_free(copy);
			ref_array_release(&arr);
		}
		t.buf[i] = orig;
	}
	CHECK_INT(crashed, 0);
	buf_release(&t);
}

const struct test tests[] = {
	T(fixture),
	T(v1_sha1_unaligned_blocks),
	T(v2_sha1),
	T(v2_sha256_aligned_padded),
	T(layers_and_deletions),
	T(empty_tables_and_stack),
	T(no_tables_list),
	T(bad_stack),
	T(hash_mismatch),
	T(truncated),
	T(bad_header_and_footer),
	T(section_position_out_of_range),
	T(raw_block_sanity),
	T(key_past_block_end),
	T(restart_table),
	T(bad_records),
	T(bad_blocks),
	T(every_byte_changed),
	{ NULL, NULL }
};
