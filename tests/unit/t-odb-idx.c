/*
 * t-odb-idx.c: pack index parsing (idx_parse, idx_find, idx_offset,
 * idx_name) on v1 and v2 images built in memory, for 20- and 32-byte
 * names, and on broken ones.
 *
 * Every image is handed to idx_parse() from a guarded copy, so a read
 * past the end of the file crashes the test.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- a tiny .idx writer --------------------------------------------- */

struct entry {
	unsigned char name[OID_RAWSZ_MAX];
	uint64_t offset;
};

static void put_be32(struct buf *b, uint32_t v)
{
	unsigned char c[4] = { v >> 24, v >> 16, v >> 8, v };

	buf_add(b, c, 4);
}

static void put_be64(struct buf *b, uint64_t v)
{
	put_be32(b, (uint32_t)(v >> 32));
	put_be32(b, (uint32_t)v);
}

static const unsigned char pack_sum_byte = 0xa5, idx_sum_byte = 0x5a;

/*
 * The index of entries e[0..nr) (sorted by the caller) as `version`
 * writes it.  v2 puts offsets of 2^31 and more in the large table, in
 * entry order; v1 can only hold 32-bit offsets.
 */
static void build_idx(struct buf *b, int version, const struct hash_algo *algo,
		      const struct entry *e, uint32_t nr)
{
	size_t rawsz = algo->rawsz;
	uint32_t count = 0, nlarge = 0;

	buf_reset(b);
	if (version == 2) {
		buf_add(b, "\377tOc", 4);
		put_be32(b, 2);
	}
	for (int i = 0; i < 256; i++) {
		while (count < nr && e[count].name[0] <= i)
			count++;
		put_be32(b, count);
	}
	if (version == 1) {
		for (uint32_t i = 0; i < nr; i++) {
			put_be32(b, (uint32_t)e[i].offset);
			buf_add(b, e[i].name, rawsz);
		}
	} else {
		for (uint32_t i = 0; i < nr; i++)
			buf_add(b, e[i].name, rawsz);
		for (uint32_t i = 0; i < nr; i++)
			put_be32(b, 0xdeadbeef);	/* CRC32s: not read */
		for (uint32_t i = 0; i < nr; i++) {
			if (e[i].offset >= 0x80000000u)
				put_be32(b, 0x80000000u | nlarge++);
			else
				put_be32(b, (uint32_t)e[i].offset);
		}
		for (uint32_t i = 0; i < nr; i++)
			if (e[i].offset >= 0x80000000u)
				put_be64(b, e[i].offset);
	}
	for (size_t i = 0; i < rawsz; i++)
		buf_addch(b, pack_sum_byte);
	for (size_t i = 0; i < rawsz; i++)
		buf_addch(b, idx_sum_byte);
}

static int cmp_entry(const void *a, const void *b)
{
	return memcmp(((const struct entry *)a)->name,
		      ((const struct entry *)b)->name, OID_RAWSZ_MAX);
}

/*
 * nr entries with real object names (blobs "0", "1", ...) plus names
 * starting with 00 and ff, so that both ends of the fanout are used.
 */
static struct entry *make_entries(const struct hash_algo *algo, uint32_t nr)
{
	struct entry *e = calloc(nr, sizeof(*e));

	if (!e)
		abort();
	for (uint32_t i = 0; i < nr; i++) {
		char content[32];
		struct oid oid;
		int n = snprintf(content, sizeof(content), "%u", i);

		hash_object(algo, "blob", content, (size_t)n, &oid);
		memcpy(e[i].name, oid.hash, algo->rawsz);
		e[i].offset = 12 + 100 * (uint64_t)i;
	}
	if (nr > 2) {
		memset(e[0].name, 0, algo->rawsz);
		e[0].name[algo->rawsz - 1] = 1;
		memset(e[1].name, 0xff, algo->rawsz);
	}
	qsort(e, nr, sizeof(*e), cmp_entry);
	return e;
}

/* idx_parse on a guarded copy; *g gets the copy (free with guarded_free) */
static int parse(struct idx *idx, const struct buf *b,
		 const struct hash_algo *algo, void **g)
{
	*g = guarded_copy(b->buf, b->len);
	return idx_parse(idx, *g, b->len, algo, "test.idx");
}

/* Look every entry up and check name, position and offset. */
static void check_lookups(const struct idx *idx, const struct entry *e,
			  uint32_t nr)
{
	size_t rawsz = idx->algo->rawsz;

	CHECK_INT(idx->nr, nr);
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t pos = 12345;
		uint64_t off = 0;

		CHECK_INT(idx_find(idx, e[i].name, &pos), 0);
		CHECK_INT(pos, i);
		CHECK_MEM(idx_name(idx, i), e[i].name, rawsz);
		CHECK_INT(idx_offset(idx, i, &off), 0);
		CHECK(off == e[i].offset);
		if (off != e[i].offset)
			break;
	}
	/* a name next to each real one is absent, and goes right after it */
	for (uint32_t i = 0; i < nr; i++) {
		unsigned char raw[OID_RAWSZ_MAX];
		uint32_t pos = 12345;
		size_t k = rawsz;

		memcpy(raw, e[i].name, rawsz);
		/* the next name up (skip if it would wrap) */
		while (k-- > 0 && raw[k] == 0xff)
			raw[k] = 0;
		if (k == (size_t)-1)
			continue;
		raw[k]++;
		if (i + 1 < nr && !memcmp(raw, e[i + 1].name, rawsz))
			continue;
		CHECK_INT(idx_find(idx, raw, &pos), XL_ENOTFOUND);
		CHECK_INT(pos, i + 1);
	}
	CHECK(idx->pack_checksum[0] == pack_sum_byte);
	CHECK(idx->pack_checksum[rawsz - 1] == pack_sum_byte);
	CHECK(idx->pack_checksum[rawsz] == idx_sum_byte);
}

/*
 * The parsed index has nr objects: a failed check when not, so that a
 * wrong count fails the test rather than skipping the lookups (which
 * would read past the table).
 */
static int count_is(const struct idx *idx, uint32_t nr)
{
	CHECK_INT(idx->nr, nr);
	return idx->nr == nr;
}

static void good_index(int version, const struct hash_algo *algo, uint32_t nr)
{
	struct entry *e = make_entries(algo, nr);
	struct buf b = BUF_INIT;
	struct idx idx;
	void *g;

	build_idx(&b, version, algo, e, nr);
	CHECK_INT(parse(&idx, &b, algo, &g), 0);
	CHECK_INT(idx.version, version);
	CHECK(idx.algo == algo);
	CHECK_INT(idx.nr_large, 0);
	if (count_is(&idx, nr))
		check_lookups(&idx, e, nr);
	guarded_free(g);
	buf_release(&b);
	free(e);
}

TEST(v1_sha1)
{
	good_index(1, &hash_sha1, 300);
}

TEST(v1_sha256)
{
	good_index(1, &hash_sha256, 300);
}

TEST(v2_sha1)
{
	good_index(2, &hash_sha1, 300);
}

TEST(v2_sha256)
{
	good_index(2, &hash_sha256, 300);
}

TEST(one_object_each)
{
	good_index(1, &hash_sha1, 1);
	good_index(2, &hash_sha1, 1);
	good_index(1, &hash_sha256, 1);
	good_index(2, &hash_sha256, 1);
}

TEST(empty_indexes)
{
	static const unsigned char any[OID_RAWSZ_MAX] = { 0x42 };
	const struct hash_algo *algos[2] = { &hash_sha1, &hash_sha256 };

	for (int a = 0; a < 2; a++) {
		for (int v = 1; v <= 2; v++) {
			struct buf b = BUF_INIT;
			struct idx idx;
			uint32_t pos = 99;
			void *g;

			build_idx(&b, v, algos[a], NULL, 0);
			CHECK_INT(parse(&idx, &b, algos[a], &g), 0);
			CHECK_INT(idx.nr, 0);
			CHECK_INT(idx.version, v);
			CHECK_INT(idx_find(&idx, any, &pos), XL_ENOTFOUND);
			CHECK_INT(pos, 0);
			guarded_free(g);
			buf_release(&b);
		}
	}
}

TEST(v2_large_offsets)
{
	const struct hash_algo *algos[2] = { &hash_sha1, &hash_sha256 };

	for (int a = 0; a < 2; a++) {
		const struct hash_algo *algo = algos[a];
		struct entry *e = make_entries(algo, 6);
		struct buf b = BUF_INIT;
		struct idx idx;
		void *g;

		/* one small offset (the first entry of any pack is), five big */
		e[0].offset = 0x7fffffff;	/* the largest 31-bit one */
		e[1].offset = 0x80000000u;	/* the smallest large one */
		e[2].offset = 0xffffffffu;
		e[3].offset = (uint64_t)1 << 32;
		e[4].offset = 0xffffffffffull;
		e[5].offset = 12;
		build_idx(&b, 2, algo, e, 6);
		CHECK_INT(parse(&idx, &b, algo, &g), 0);
		CHECK_INT(idx.nr_large, 4);
		if (count_is(&idx, 6))
			check_lookups(&idx, e, 6);
		guarded_free(g);

		/* nr-1 = 5 large offsets is the most a pack can need */
		e[5].offset = (uint64_t)1 << 40;
		build_idx(&b, 2, algo, e, 6);
		CHECK_INT(parse(&idx, &b, algo, &g), 0);
		CHECK_INT(idx.nr_large, 5);
		if (count_is(&idx, 6))
			check_lookups(&idx, e, 6);
		guarded_free(g);
		buf_release(&b);
		free(e);
	}
}

/* ---- broken indexes ------------------------------------------------- */

TEST(too_short)
{
	const struct hash_algo *algos[2] = { &hash_sha1, &hash_sha256 };

	for (int a = 0; a < 2; a++) {
		size_t rawsz = algos[a]->rawsz;
		struct buf b = BUF_INIT;
		struct idx idx;
		void *g;

		/* empty, a v2 header alone, and one byte short of minimal */
		size_t lens1[] = { 0, 4, 8, 1024, 1024 + 2 * rawsz - 1 };
		size_t lens2[] = { 8, 9, 8 + 1024, 8 + 1024 + 2 * rawsz - 1 };

		build_idx(&b, 1, algos[a], NULL, 0);
		for (size_t i = 0; i < sizeof(lens1) / sizeof(lens1[0]); i++) {
			CHECK_INT(idx_parse(&idx, g = guarded_copy(b.buf, lens1[i]),
					    lens1[i], algos[a], "t.idx"),
				  XL_ECORRUPT);
			guarded_free(g);
		}
		build_idx(&b, 2, algos[a], NULL, 0);
		for (size_t i = 0; i < sizeof(lens2) / sizeof(lens2[0]); i++) {
			CHECK_INT(idx_parse(&idx, g = guarded_copy(b.buf, lens2[i]),
					    lens2[i], algos[a], "t.idx"),
				  XL_ECORRUPT);
			guarded_free(g);
		}
		buf_release(&b);
	}
	/* a SHA-1-sized empty index is too short for SHA-256 */
	{
		struct buf b = BUF_INIT;
		struct idx idx;
		void *g;

		build_idx(&b, 2, &hash_sha1, NULL, 0);
		CHECK_INT(parse(&idx, &b, &hash_sha256, &g), XL_ECORRUPT);
		guarded_free(g);
		buf_release(&b);
	}
}

TEST(fanout_not_monotonic)
{
	for (int v = 1; v <= 2; v++) {
		struct entry *e = make_entries(&hash_sha1, 20);
		struct buf b = BUF_INIT;
		size_t fan = v == 2 ? 8 : 0;
		struct idx idx;
		void *g;

		build_idx(&b, v, &hash_sha1, e, 20);
		/* fanout[0x80] one more than fanout[0x81] */
		b.buf[fan + 4 * 0x80 + 3] = (char)(get_be32((unsigned char *)
			b.buf + fan + 4 * 0x81) + 1);
		CHECK_INT(parse(&idx, &b, &hash_sha1, &g), XL_ECORRUPT);
		CHECK(strstr(err_msg(), "test.idx") != NULL);
		guarded_free(g);
		/* a decrease in the very last entry changes nr: also caught */
		build_idx(&b, v, &hash_sha1, e, 20);
		b.buf[fan + 4 * 0xff + 3] = 0;
		CHECK_INT(parse(&idx, &b, &hash_sha1, &g), XL_ECORRUPT);
		guarded_free(g);
		buf_release(&b);
		free(e);
	}
}

TEST(size_formula_v1)
{
	const struct hash_algo *algos[2] = { &hash_sha1, &hash_sha256 };

	for (int a = 0; a < 2; a++) {
		struct entry *e = make_entries(algos[a], 10);
		struct buf b = BUF_INIT, c = BUF_INIT;
		struct idx idx;
		void *g;

		build_idx(&b, 1, algos[a], e, 10);
		/* one byte missing */
		CHECK_INT(idx_parse(&idx, g = guarded_copy(b.buf, b.len - 1),
				    b.len - 1, algos[a], "t.idx"), XL_ECORRUPT);
		guarded_free(g);
		/* one byte extra, and one whole entry extra */
		buf_add(&c, b.buf, b.len);
		buf_addch(&c, 0);
		CHECK_INT(parse(&idx, &c, algos[a], &g), XL_ECORRUPT);
		guarded_free(g);
		buf_add(&c, b.buf, 4 + algos[a]->rawsz - 1);
		CHECK_INT(parse(&idx, &c, algos[a], &g), XL_ECORRUPT);
		guarded_free(g);
		/* an index of the other algorithm's size */
		CHECK_INT(parse(&idx, &b, algos[!a], &g), XL_ECORRUPT);
		guarded_free(g);
		buf_release(&b);
		buf_release(&c);
		free(e);
	}
}

TEST(size_formula_v2)
{
	const struct hash_algo *algos[2] = { &hash_sha1, &hash_sha256 };

	for (int a = 0; a < 2; a++) {
		struct entry *e = make_entries(algos[a], 3);
		struct buf b = BUF_INIT, c = BUF_INIT;
		struct idx idx;
		void *g;

		build_idx(&b, 2, algos[a], e, 3);
		/* one byte short */
		CHECK_INT(idx_parse(&idx, g = guarded_copy(b.buf, b.len - 1),
				    b.len - 1, algos[a], "t.idx"), XL_ECORRUPT);
		guarded_free(g);
		/* 4 extra bytes: not a whole large offset */
		buf_add(&c, b.buf, b.len);
		buf_add(&c, "\0\0\0\0", 4);
		CHECK_INT(parse(&idx, &c, algos[a], &g), XL_ECORRUPT);
		guarded_free(g);
		/* 2 * 8 extra: nr-1 large offsets is allowed */
		buf_add(&c, "\0\0\0\0\0\0\0\0\0\0\0\0", 12);
		CHECK_INT(parse(&idx, &c, algos[a], &g), 0);
		CHECK_INT(idx.nr_large, 2);
		guarded_free(g);
		/* 3 * 8 extra: more large offsets than a pack can need */
		buf_add(&c, "\0\0\0\0\0\0\0\0", 8);
		CHECK_INT(parse(&idx, &c, algos[a], &g), XL_ECORRUPT);
		guarded_free(g);
		buf_release(&b);
		buf_release(&c);
		free(e);
	}
	/* an empty v2 index may have no large offsets at all */
	{
		struct buf b = BUF_INIT;
		struct idx idx;
		void *g;

		build_idx(&b, 2, &hash_sha256, NULL, 0);
		buf_add(&b, "\0\0\0\0\0\0\0\0", 8);
		CHECK_INT(parse(&idx, &b, &hash_sha256, &g), XL_ECORRUPT);
		guarded_free(g);
		buf_release(&b);
	}
}

TEST(large_offset_index_out_of_range)
{
	const struct hash_algo *algos[2] = { &hash_sha1, &hash_sha256 };

	for (int a = 0; a < 2; a++) {
		const struct hash_algo *algo = algos[a];
		struct entry *e = make_entries(algo, 4);
		size_t offsets = 8 + 1024 + 4 * (algo->rawsz + 4);
		struct buf b = BUF_INIT;
		struct idx idx;
		uint64_t off;
		void *g;
		int ret;

		e[0].offset = 12;
		e[1].offset = 0x80000000u;
		e[2].offset = 0x90000000u;
		e[3].offset = 40;
		build_idx(&b, 2, algo, e, 4);
		CHECK_INT(get_be32((unsigned char *)b.buf + offsets + 4),
			  0x80000000u);
		CHECK_INT(get_be32((unsigned char *)b.buf + offsets + 8),
			  0x80000001u);
		/* entry 2 names large offset 2 of 2: one past the table */
		b.buf[offsets + 11] = 2;
		ret = parse(&idx, &b, algo, &g);
		if (!ret) {
			/* then idx_offset must catch it where it is used */
			CHECK_INT(idx_offset(&idx, 2, &off), XL_ECORRUPT);
			CHECK_INT(idx_offset(&idx, 1, &off), 0);
			CHECK(off == 0x80000000u);
			CHECK_INT(idx_offset(&idx, 3, &off), 0);
			CHECK_INT(off, 40);
		} else {
			CHECK_INT(ret, XL_ECORRUPT);
		}
		guarded_free(g);
		/* far out of range: 0x7fffffff */
		build_idx(&b, 2, algo, e, 4);
		memcpy(b.buf + offsets + 8, "\xff\xff\xff\xff", 4);
		ret = parse(&idx, &b, algo, &g);
		if (!ret)
			CHECK_INT(idx_offset(&idx, 2, &off), XL_ECORRUPT);
		else
			CHECK_INT(ret, XL_ECORRUPT);
		guarded_free(g);
		/* a large index into a table that is empty */
		e[1].offset = 20;
		e[2].offset = 30;
		build_idx(&b, 2, algo, e, 4);
		memcpy(b.buf + offsets + 4, "\x80\x00\x00\x00", 4);
		ret = parse(&idx, &b, algo, &g);
		if (!ret) {
			CHECK_INT(idx.nr_large, 0);
			CHECK_INT(idx_offset(&idx, 1, &off), XL_ECORRUPT);
		} else {
			CHECK_INT(ret, XL_ECORRUPT);
		}
		guarded_free(g);
		buf_release(&b);
		free(e);
	}
}

TEST(unsupported_versions)
{
	static const uint32_t versions[] = { 3, 1, 0, 0xffffffffu };

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		struct entry *e = make_entries(&hash_sha256, 5);
		struct buf b = BUF_INIT;
		struct idx idx;
		void *g;

		build_idx(&b, 2, &hash_sha256, e, 5);
		b.buf[4] = (char)(versions[i] >> 24);
		b.buf[5] = (char)(versions[i] >> 16);
		b.buf[6] = (char)(versions[i] >> 8);
		b.buf[7] = (char)versions[i];
		CHECK_INT(parse(&idx, &b, &hash_sha256, &g), XL_EUNSUPPORTED);
		guarded_free(g);
		/* the header alone is enough to tell */
		CHECK_INT(idx_parse(&idx, g = guarded_copy(b.buf, 8), 8, &hash_sha256,
				    "t.idx"), XL_EUNSUPPORTED);
		guarded_free(g);
		buf_release(&b);
		free(e);
	}
}

const struct test tests[] = {
	T(v1_sha1),
	T(v1_sha256),
	T(v2_sha1),
	T(v2_sha256),
	T(one_object_each),
	T(empty_indexes),
	T(v2_large_offsets),
	T(too_short),
	T(fanout_not_monotonic),
	T(size_formula_v1),
	T(size_formula_v2),
	T(large_offset_index_out_of_range),
	T(unsupported_versions),
	{ NULL, NULL },
};
