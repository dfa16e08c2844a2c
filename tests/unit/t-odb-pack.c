/*
 * t-odb-pack.c: pack entry headers (pack_entry_header) on crafted bytes
 * in a fake struct pack.
 *
 * The fake pack is "PACK", version, count, then the crafted entry bytes.
 * Unless a test says otherwise, data_end is the end of a guarded copy, so
 * reading one byte at or past data_end crashes the test.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <stdlib.h>
#include <zlib.h>

/* ---- a fake pack ---------------------------------------------------- */

struct fake {
	struct pack pack;
	unsigned char *mem;
};

/*
 * A pack of the 12-byte header, `pad` filler bytes, and then bytes
 * e[0..n): the entry under test starts at 12 + pad.  `trailer` bytes
 * of 0x00 follow data_end inside the mapping (0: data_end is the end).
 */
static void fake_open(struct fake *f, const struct hash_algo *algo,
		      size_t pad, const void *e, size_t n, size_t trailer)
{
	size_t len = 12 + pad + n + trailer;
	unsigned char *b = calloc(1, len);

	if (!b)
		abort();
	memcpy(b, "PACK\0\0\0\2\0\0\0\1", 12);
	memset(b + 12, 0x33, pad);	/* a blob entry header, size 3: filler */
	memcpy(b + 12 + pad, e, n);
	f->mem = guarded_copy(b, len);
	free(b);
	memset(&f->pack, 0, sizeof(f->pack));
	f->pack.path = (char *)"fake.pack";
	f->pack.map = f->mem;
	f->pack.map_len = len;
	f->pack.data_end = len - trailer;
	f->pack.algo = algo;
}

static void fake_close(struct fake *f)
{
	guarded_free(f->mem);
}

/* The header of an entry made of bytes e[0..n) at offset 12 + pad. */
static int header(const struct hash_algo *algo, size_t pad, const void *e,
		  size_t n, struct pack_entry *out)
{
	struct fake f;
	int ret;

	fake_open(&f, algo, pad, e, n, 0);
	ret = pack_entry_header(&f.pack, 12 + pad, out);
	fake_close(&f);
	return ret;
}

/* Append an entry header: type and size, as Git writes it. */
static void put_type_size(struct buf *b, int type, uint64_t size)
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

/* Append an OFS_DELTA distance as Git writes it (the "+1" encoding). */
static void put_ofs(struct buf *b, uint64_t ofs)
{
	unsigned char tmp[16];
	size_t pos = sizeof(tmp) - 1;

	tmp[pos] = ofs & 0x7f;
	while (ofs >>= 7)
		tmp[--pos] = 0x80 | (--ofs & 0x7f);
	buf_add(b, tmp + pos, sizeof(tmp) - pos);
}

/* ---- sizes and types ------------------------------------------------ */

TEST(base_types)
{
	for (int type = OBJ_COMMIT; type <= OBJ_TAG; type++) {
		unsigned char e[2] = { (unsigned char)(type << 4 | 5), 0x78 };
		struct pack_entry pe;

		CHECK_INT(header(&hash_sha1, 0, e, 2, &pe), 0);
		CHECK_INT(pe.type, type);
		CHECK_INT(pe.size, 5);
		CHECK_INT(pe.offset, 12);
		CHECK_INT(pe.data, 13);
		CHECK(pe.base_name == NULL);
	}
}

TEST(size_varint_every_length)
{
	/*
	 * One header byte holds 4 bits, each further byte 7: lengths 1..9
	 * hold sizes up to 2^60 - 1.  For each length check the largest and
	 * smallest size of that length and a mixed bit pattern.
	 */
	for (int len = 1; len <= 9; len++) {
		unsigned bits = 4 + 7 * (unsigned)(len - 1);
		uint64_t max = ((uint64_t)1 << bits) - 1;
		uint64_t min = len == 1 ? 0 : (uint64_t)1 << (bits - 7);
		uint64_t mixed = 0x0123456789abcdefull & max;
		uint64_t sizes[3] = { max, min, mixed };

		for (int k = 0; k < 3; k++) {
			struct buf b = BUF_INIT;
			struct pack_entry pe;
			int ret;

			put_type_size(&b, OBJ_BLOB, sizes[k]);
			if (sizes[k] >= min && (int)b.len != len) {
				harness_fail(__FILE__, __LINE__,
					     "writer: %zu bytes for a length-%d size",
					     b.len, len);
			}
			buf_addch(&b, 0x78);	/* one byte of data */
			ret = header(&hash_sha256, 7, b.buf, b.len, &pe);
			if (ret || pe.size != sizes[k] ||
			    pe.data != 12 + 7 + b.len - 1) {
				harness_fail(__FILE__, __LINE__,
					     "size %llu in %d bytes: ret %d size %zu data %zu",
					     (unsigned long long)sizes[k], len,
					     ret, pe.size, pe.data);
			}
			CHECK_INT(pe.type, OBJ_BLOB);
			buf_release(&b);
		}
	}
}

TEST(size_explicit_bytes)
{
	/* 0xb5 0x01: blob, 5 | 1 << 4 = 21 */
	static const unsigned char a[] = { 0xb5, 0x01, 0x78 };
	static const unsigned char b[] = { 0xbf, 0x80, 0x80, 0x00, 0x78 };
	struct pack_entry pe;

	CHECK_INT(header(&hash_sha1, 0, a, sizeof(a), &pe), 0);
	CHECK_INT(pe.type, OBJ_BLOB);
	CHECK_INT(pe.size, 21);
	CHECK_INT(pe.data, 14);
	/* non-minimal encodings (Git reads them too) */
	CHECK_INT(header(&hash_sha1, 0, b, sizeof(b), &pe), 0);
	CHECK_INT(pe.size, 15);
	CHECK_INT(pe.data, 16);
}

TEST(size_varint_too_long)
{
	/* a tenth header byte would carry bits 60..66: refused */
	unsigned char e[11];
	struct pack_entry pe;

	e[0] = 0xbf;
	memset(e + 1, 0x80, 8);
	e[9] = 0x00;
	e[10] = 0x78;
	CHECK_INT(header(&hash_sha1, 0, e, sizeof(e), &pe), XL_ECORRUPT);
	/* nine bytes, all bits set: 2^60 - 1 is still a size */
	memset(e + 1, 0xff, 7);
	e[8] = 0x7f;
	e[9] = 0x78;
	CHECK_INT(header(&hash_sha1, 0, e, 10, &pe), 0);
	CHECK(pe.size == ((uint64_t)1 << 60) - 1);
	CHECK_INT(pe.data, 12 + 9);
}

TEST(types_0_and_5_refused)
{
	static const unsigned char t0[] = { 0x05, 0x78 };
	static const unsigned char t5[] = { 0x55, 0x78 };
	static const unsigned char t0long[] = { 0x85, 0x01, 0x78 };
	struct pack_entry pe;

	CHECK_INT(header(&hash_sha1, 0, t0, sizeof(t0), &pe), XL_ECORRUPT);
	CHECK_INT(header(&hash_sha1, 0, t5, sizeof(t5), &pe), XL_ECORRUPT);
	CHECK_INT(header(&hash_sha256, 0, t0long, sizeof(t0long), &pe),
		  XL_ECORRUPT);
	CHECK(strstr(err_msg(), "type") != NULL);
}

/* ---- OFS_DELTA ------------------------------------------------------ */

/* Header of an OFS_DELTA entry with distance bytes d[0..n), at `at`. */
static int ofs_header(size_t at, const unsigned char *d, size_t n,
		      struct pack_entry *pe)
{
	struct buf b = BUF_INIT;
	int ret;

	put_type_size(&b, OBJ_OFS_DELTA, 9);
	buf_add(&b, d, n);
	buf_addch(&b, 0x78);
	ret = header(&hash_sha1, at - 12, b.buf, b.len, pe);
	buf_release(&b);
	return ret;
}

TEST(ofs_delta_plus_one_rule)
{
	static const struct {
		unsigned char bytes[4];
		size_t n;
		uint64_t distance;
	} cases[] = {
		{ { 0x01 }, 1, 1 },
		{ { 0x7f }, 1, 127 },
		{ { 0x80, 0x00 }, 2, 128 },	/* not 0: the "+1" rule */
		{ { 0x80, 0x01 }, 2, 129 },
		{ { 0x81, 0x00 }, 2, 256 },
		{ { 0xff, 0x7f }, 2, 16511 },
		{ { 0x80, 0x80, 0x00 }, 3, 16512 },
		{ { 0x80, 0x80, 0x80, 0x00 }, 4, 2113664 },
	};
	size_t at = 12 + 2113664 + 5;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pack_entry pe;
		int ret = ofs_header(at, cases[i].bytes, cases[i].n, &pe);

		if (ret || pe.base != at - cases[i].distance ||
		    pe.data != at + 1 + cases[i].n) {
			harness_fail(__FILE__, __LINE__,
				     "case %zu: ret %d base %llu (want %llu) data %zu",
				     i, ret, (unsigned long long)pe.base,
				     (unsigned long long)(at - cases[i].distance),
				     pe.data);
		}
		CHECK_INT(pe.type, OBJ_OFS_DELTA);
		CHECK_INT(pe.size, 9);
		CHECK_INT(pe.offset, at);
	}
}

TEST(ofs_delta_round_trip)
{
	/* distances of every encoded length, written as Git writes them */
	static const uint64_t d[] = {
		1, 2, 126, 127, 128, 129, 255, 256, 16383, 16384, 16511,
		16512, 16513, 100000, 2113663, 2113664, 2113665,
	};
	size_t at = 12 + 2113665;

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		struct buf b = BUF_INIT;
		struct pack_entry pe;
		int ret;

		put_ofs(&b, d[i]);
		ret = ofs_header(at, (unsigned char *)b.buf, b.len, &pe);
		if (ret || pe.base != at - d[i])
			harness_fail(__FILE__, __LINE__,
				     "distance %llu: ret %d base %llu",
				     (unsigned long long)d[i], ret,
				     (unsigned long long)pe.base);
		buf_release(&b);
	}
}

TEST(ofs_delta_range)
{
	static const unsigned char zero[] = { 0x00 };
	struct buf b = BUF_INIT;
	struct pack_entry pe;
	size_t at = 12 + 300;

	/* distance 0 would make the entry its own base */
	CHECK_INT(ofs_header(at, zero, 1, &pe), XL_ECORRUPT);
	/* the base may be the first entry (offset 12), not before it */
	put_ofs(&b, 300);
	CHECK_INT(ofs_header(at, (unsigned char *)b.buf, b.len, &pe), 0);
	CHECK_INT(pe.base, 12);
	buf_reset(&b);
	put_ofs(&b, 301);
	CHECK_INT(ofs_header(at, (unsigned char *)b.buf, b.len, &pe),
		  XL_ECORRUPT);
	buf_reset(&b);
	put_ofs(&b, 312);	/* offset 0 */
	CHECK_INT(ofs_header(at, (unsigned char *)b.buf, b.len, &pe),
		  XL_ECORRUPT);
	buf_reset(&b);
	put_ofs(&b, 313);	/* would wrap below 0 */
	CHECK_INT(ofs_header(at, (unsigned char *)b.buf, b.len, &pe),
		  XL_ECORRUPT);
	buf_reset(&b);
	put_ofs(&b, (uint64_t)1 << 40);
	CHECK_INT(ofs_header(at, (unsigned char *)b.buf, b.len, &pe),
		  XL_ECORRUPT);
	/* the first entry can have no OFS base at all */
	buf_reset(&b);
	put_ofs(&b, 1);
	CHECK_INT(ofs_header(12, (unsigned char *)b.buf, b.len, &pe),
		  XL_ECORRUPT);
	buf_release(&b);
}

TEST(ofs_delta_overflow)
{
	/* a distance varint far longer than 64 bits */
	unsigned char d[20];
	struct pack_entry pe;

	memset(d, 0xff, 19);
	d[19] = 0x7f;
	CHECK_INT(ofs_header(12 + 100, d, sizeof(d), &pe), XL_ECORRUPT);
	/* 0x80 bytes grow by the +1 rule too */
	memset(d, 0x80, 19);
	d[19] = 0x00;
	CHECK_INT(ofs_header(12 + 100, d, sizeof(d), &pe), XL_ECORRUPT);
}

TEST(ofs_delta_truncated)
{
	/* header ends where the distance should start, or inside it */
	static const unsigned char none[] = { 0x69 };
	static const unsigned char part[] = { 0x69, 0x80 };
	static const unsigned char part2[] = { 0x69, 0x80, 0x80 };
	struct pack_entry pe;

	CHECK_INT(header(&hash_sha1, 100, none, sizeof(none), &pe),
		  XL_ECORRUPT);
	CHECK_INT(header(&hash_sha1, 100, part, sizeof(part), &pe),
		  XL_ECORRUPT);
	CHECK_INT(header(&hash_sha1, 100, part2, sizeof(part2), &pe),
		  XL_ECORRUPT);
}

/* ---- REF_DELTA ------------------------------------------------------ */

TEST(ref_delta)
{
	const struct hash_algo *algos[2] = { &hash_sha1, &hash_sha256 };

	for (int a = 0; a < 2; a++) {
		size_t rawsz = algos[a]->rawsz;
		unsigned char e[1 + OID_RAWSZ_MAX + 1];
		struct pack_entry pe;
		struct fake f;

		e[0] = 0x75;	/* REF_DELTA, size 5 */
		for (size_t i = 0; i < rawsz; i++)
			e[1 + i] = (unsigned char)(0xa0 + i);
		e[1 + rawsz] = 0x78;
		fake_open(&f, algos[a], 50, e, rawsz + 2, 0);
		CHECK_INT(pack_entry_header(&f.pack, 62, &pe), 0);
		CHECK_INT(pe.type, OBJ_REF_DELTA);
		CHECK_INT(pe.size, 5);
		CHECK(pe.base_name == f.mem + 63);
		CHECK_INT(pe.data, 63 + rawsz);
		fake_close(&f);

		/* the name cut short by data_end, at every length */
		for (size_t n = 0; n < rawsz; n++) {
			if (header(algos[a], 50, e, 1 + n, &pe) != XL_ECORRUPT)
				harness_fail(__FILE__, __LINE__,
					     "%s name cut to %zu bytes accepted",
					     algos[a]->name, n);
		}
		/* the whole name, then nothing */
		CHECK_INT(header(algos[a], 50, e, 1 + rawsz, &pe), XL_ECORRUPT);
	}
}

TEST(ref_delta_sha1_name_in_sha256_pack)
{
	/* 20 name bytes and a byte of data are not a 32-byte name */
	unsigned char e[22];
	struct pack_entry pe;

	e[0] = 0x75;
	memset(e + 1, 0xab, 20);
	e[21] = 0x78;
	CHECK_INT(header(&hash_sha256, 0, e, sizeof(e), &pe), XL_ECORRUPT);
	CHECK_INT(header(&hash_sha1, 0, e, sizeof(e), &pe), 0);
}

/* ---- bounds --------------------------------------------------------- */

TEST(offset_out_of_range)
{
	static const unsigned char e[] = { 0x35, 0x78 };
	struct pack_entry pe;
	struct fake f;

	fake_open(&f, &hash_sha1, 0, e, sizeof(e), 20);
	for (uint64_t off = 0; off < 12; off++)
		CHECK_INT(pack_entry_header(&f.pack, off, &pe), XL_ECORRUPT);
	CHECK_INT(pack_entry_header(&f.pack, 12, &pe), 0);
	/* the last byte before data_end has no data after it */
	CHECK_INT(pack_entry_header(&f.pack, 13, &pe), XL_ECORRUPT);
	CHECK_INT(pack_entry_header(&f.pack, 14, &pe), XL_ECORRUPT);
	CHECK_INT(pack_entry_header(&f.pack, 20, &pe), XL_ECORRUPT);
	CHECK_INT(pack_entry_header(&f.pack, UINT64_MAX, &pe), XL_ECORRUPT);
	CHECK_INT(pack_entry_header(&f.pack, (uint64_t)1 << 63, &pe),
		  XL_ECORRUPT);
	fake_close(&f);
}

TEST(header_runs_past_data_end)
{
	/* size varint still continuing at data_end */
	static const unsigned char c1[] = { 0xb5 };
	static const unsigned char c2[] = { 0xb5, 0x81 };
	/* a header that ends exactly at data_end: no data */
	static const unsigned char c3[] = { 0x35 };
	static const unsigned char c4[] = { 0xb5, 0x01 };
	struct pack_entry pe;
	struct fake f;

	CHECK_INT(header(&hash_sha1, 0, c1, sizeof(c1), &pe), XL_ECORRUPT);
	CHECK_INT(header(&hash_sha1, 0, c2, sizeof(c2), &pe), XL_ECORRUPT);
	CHECK_INT(header(&hash_sha1, 0, c3, sizeof(c3), &pe), XL_ECORRUPT);
	CHECK_INT(header(&hash_sha1, 0, c4, sizeof(c4), &pe), XL_ECORRUPT);

	/*
	 * With a trailer after data_end (zero bytes that would end the
	 * varint), the header must still stop at data_end.
	 */
	fake_open(&f, &hash_sha1, 0, c2, sizeof(c2), 20);
	CHECK_INT(pack_entry_header(&f.pack, 12, &pe), XL_ECORRUPT);
	fake_close(&f);
	fake_open(&f, &hash_sha1, 0, c4, sizeof(c4), 20);
	CHECK_INT(pack_entry_header(&f.pack, 12, &pe), XL_ECORRUPT);
	fake_close(&f);
	{
		/* a REF_DELTA name that would end inside the trailer */
		unsigned char e[11];

		e[0] = 0x75;
		memset(e + 1, 0xcd, 10);
		fake_open(&f, &hash_sha1, 0, e, sizeof(e), 20);
		CHECK_INT(pack_entry_header(&f.pack, 12, &pe), XL_ECORRUPT);
		fake_close(&f);
	}
	{
		/* an OFS distance continuing into the trailer */
		static const unsigned char e[] = { 0x69, 0x80 };

		fake_open(&f, &hash_sha1, 200, e, sizeof(e), 20);
		CHECK_INT(pack_entry_header(&f.pack, 212, &pe), XL_ECORRUPT);
		fake_close(&f);
	}
}

/* ---- the delta-base cache ------------------------------------------- */

/* A buffer holding s (what delta_cache_put() takes). */
static struct buf *bytes_of(const char *s)
{
	static __thread struct buf b;

	buf_init(&b);
	if (buf_addstr(&b, s))
		abort();
	return &b;
}

/*
 * Emptying the cache (odb_release_memory(), before a build's layout)
 * lets every entry go but one a reader still holds, which stays whole
 * until its last user lets go; the budget stays, and the cache fills
 * again.
 */
TEST(delta_cache_empty)
{
	struct delta_cache *c = delta_cache_new(1 << 20);
	struct pack pack = { 0 };
	struct delta_cache_entry *held, *e;
	size_t len;

	CHECK(c);
	for (uint64_t off = 12; off < 12 + 100; off += 10) {
		e = delta_cache_put(c, &pack, off, OBJ_TREE, bytes_of("base"));
		CHECK(e);
		delta_cache_unref(c, e);
	}
	held = delta_cache_get(c, &pack, 42);
	CHECK(held);
	delta_cache_empty(c);
	CHECK_INT(delta_cache_budget(c), 1 << 20);
	for (uint64_t off = 12; off < 12 + 100; off += 10)
		CHECK(!delta_cache_get(c, &pack, off));
	CHECK_MEM(delta_cache_data(held, &len, NULL), "base", 4);
	CHECK_INT(len, 4);
	delta_cache_unref(c, held);	/* freed now: ASan says if not */
	e = delta_cache_put(c, &pack, 42, OBJ_TREE, bytes_of("again"));
	CHECK(e);
	delta_cache_unref(c, e);
	e = delta_cache_get(c, &pack, 42);
	CHECK(e);
	CHECK_MEM(delta_cache_data(e, &len, NULL), "again", 5);
	delta_cache_unref(c, e);
	delta_cache_free(c);
}

/*
 * A kilobyte whose bytes say which offset it was made for, in a spare
 * buffer of c's when one fits.
 */
static struct buf *kib_for(struct delta_cache *c, uint64_t off)
{
	static __thread struct buf b;

	buf_init(&b);
	delta_cache_spare(c, 1024, &b);
	if (buf_grow(&b, 1024))
		abort();
	memset(b.buf, (int)(off % 251), 1024);
	buf_setlen(&b, 1024);
	return &b;
}

static int kib_is_for(const unsigned char *p, size_t len, uint64_t off)
{
	if (len != 1024)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (p[i] != off % 251)
			return 0;
	return 1;
}

/*
 * The cache is split into shards with a lock each, and the budget is
 * the whole cache's: however the keys fall, it never holds more, and
 * once full it stays about full (a shard evicts its own oldest), with
 * the newest entry in it.
 */
TEST(delta_cache_budget_is_the_whole_cache_s)
{
	struct delta_cache *c = delta_cache_new(64 * 1024);
	struct pack pack = { 0 };
	struct delta_cache_entry *e;
	size_t held, len;

	CHECK(c);
	for (uint64_t off = 0; off < 2000 * 7; off += 7) {
		e = delta_cache_put(c, &pack, off, OBJ_BLOB, kib_for(c, off));
		CHECK(e);
		delta_cache_unref(c, e);
		held = 0;
		if (off % 700)
			continue;
		for (uint64_t o = 0; o <= off; o += 7)
			if ((e = delta_cache_get(c, &pack, o))) {
				const unsigned char *p = delta_cache_data(e, &len, NULL);

				CHECK(kib_is_for(p, len, o));
				delta_cache_unref(c, e);
				held++;
			}
		CHECK(held <= 64);
		CHECK(off < 64 * 7 || held >= 56);
		e = delta_cache_get(c, &pack, off);
		CHECK(e);
		delta_cache_unref(c, e);
	}
	delta_cache_set_budget(c, 8 * 1024);
	held = 0;
	for (uint64_t o = 0; o < 2000 * 7; o += 7)
		if ((e = delta_cache_get(c, &pack, o))) {
			delta_cache_unref(c, e);
			held++;
		}
	CHECK(held <= 8);
	delta_cache_free(c);
}

/*
 * An entry's buffer, let go, comes back as a spare for a rebuild that
 * needs about as much room: the same bytes, not a fresh malloc.  Not
 * one much bigger than asked (the cache counts lengths, not room), and
 * none once the cache is emptied (odb_release_memory() wants the memory
 * back).  ASan checks that nothing is freed twice or lost.
 */
TEST(delta_cache_spares)
{
	struct delta_cache *c = delta_cache_new(64 * 1024);
	struct pack pack = { 0 };
	struct delta_cache_entry *e;
	struct buf b = BUF_INIT;
	const unsigned char *first;
	size_t len;
	int reused = 0;

	CHECK(c);
	delta_cache_spare(c, 1024, &b);
	CHECK_INT(b.alloc, 0);		/* nothing let go yet */
	e = delta_cache_put(c, &pack, 0, OBJ_BLOB, kib_for(c, 0));
	CHECK(e);
	first = delta_cache_data(e, &len, NULL);
	delta_cache_unref(c, e);
	/* more kilobytes push it out; the next is made in its buffer */
	for (uint64_t off = 7; off < 1000 * 7 && !reused; off += 7) {
		e = delta_cache_put(c, &pack, off, OBJ_BLOB, kib_for(c, off));
		CHECK(e);
		reused = delta_cache_data(e, &len, NULL) == first;
		delta_cache_unref(c, e);
	}
	CHECK_INT(reused, 1);
	CHECK(!delta_cache_get(c, &pack, 0));
	/* one let go now is kept, and given out */
	e = delta_cache_put(c, &pack, 999, OBJ_BLOB, kib_for(c, 999));
	delta_cache_unref(c, e);
	delta_cache_spare(c, 1024, &b);
	CHECK(b.alloc >= 1025);
	e = delta_cache_put(c, &pack, 998, OBJ_BLOB, &b);
	CHECK(e);
	CHECK_INT(b.alloc, 0);		/* taken */
	delta_cache_unref(c, e);
	/* the buffers go round, and every entry holds what was put */
	for (uint64_t off = 7; off < 1000 * 7; off += 7)
		if ((e = delta_cache_get(c, &pack, off))) {
			CHECK(kib_is_for(delta_cache_data(e, &len, NULL), len, off));
			delta_cache_unref(c, e);
		}
	/* a spare for a kilobyte, not for ten bytes */
	e = delta_cache_put(c, &pack, 1000, OBJ_BLOB, kib_for(c, 1000));
	delta_cache_unref(c, e);
	delta_cache_spare(c, 10, &b);
	CHECK_INT(b.alloc, 0);
	delta_cache_spare(c, 1000, &b);
	CHECK(b.alloc >= 1001);
	buf_release(&b);
	/* emptied: no spares either */
	delta_cache_empty(c);
	delta_cache_spare(c, 1024, &b);
	CHECK_INT(b.alloc, 0);
	delta_cache_free(c);
}

struct hammer {
	struct delta_cache *c;
	struct pack *pack;
	unsigned seed;
	int bad;
};

/* Gets and puts on a few hundred keys, as readers of one pack do. */
static void *hammer_main(void *arg)
{
	struct hammer *h = arg;

	for (int i = 0; i < 20000; i++) {
		uint64_t off;
		struct delta_cache_entry *e;
		const unsigned char *p;
		size_t len;

		h->seed = h->seed * 1103515245u + 12345u;
		off = (h->seed >> 8) % 512;
		if (!(e = delta_cache_get(h->c, h->pack, off)))
			e = delta_cache_put(h->c, h->pack, off, OBJ_TREE,
					    kib_for(h->c, off));
		if (!e) {
			h->bad++;
			continue;
		}
		p = delta_cache_data(e, &len, NULL);
		if (!kib_is_for(p, len, off))
			h->bad++;
		delta_cache_unref(h->c, e);
	}
	return NULL;
}

/*
 * Four threads at once, with evictions all the time: every entry read
 * holds the bytes put for its key (and ASan and TSan watch the counts).
 */
TEST(delta_cache_threads)
{
	struct delta_cache *c = delta_cache_new(100 * 1024);
	struct pack pack = { 0 };
	struct hammer h[4];
	pthread_t tid[4];

	CHECK(c);
	for (int t = 0; t < 4; t++) {
		h[t] = (struct hammer){ c, &pack, (unsigned)t * 7919u + 1, 0 };
		CHECK(!pthread_create(&tid[t], NULL, hammer_main, &h[t]));
	}
	for (int t = 0; t < 4; t++) {
		pthread_join(tid[t], NULL);
		CHECK_INT(h[t].bad, 0);
	}
	delta_cache_free(c);
}

/* ---- types of deltas, remembered ------------------------------------ */

/* Append a whole entry: header, then data deflated. */
static void put_entry(struct buf *b, int type, const void *data, size_t n,
		      uint64_t ofs)
{
	unsigned char z[256];
	uLongf zn = sizeof(z);

	if (compress(z, &zn, data, n) != Z_OK)
		abort();
	put_type_size(b, type, n);
	if (type == OBJ_OFS_DELTA)
		put_ofs(b, ofs);
	buf_add(b, z, zn);
}

/*
 * A blob, then three OFS deltas, each against the one before: the
 * walk from the last reads every header once, and remembers the type
 * for each delta on the way.  A walk that meets a remembered delta
 * stops there: shown by changing the blob's header to a tree's after
 * the first walk (the pack never changes, so no reader would see it;
 * here it tells a remembered type from one read again).  A walk from
 * the first delta, remembered for itself only as a link of other
 * chains, reads on to the base: it is the top there, whose header is
 * read for its size anyway.
 */
TEST(delta_types_remembered)
{
	/* delta: base size 5, result size 5, copy 0..5 */
	static const unsigned char delta[] = { 5, 5, 0x90, 5 };
	struct buf b = BUF_INIT;
	uint64_t at[4];
	struct fake f;
	enum obj_type type;
	size_t size;

	at[0] = 12;
	put_entry(&b, OBJ_BLOB, "hello", 5, 0);
	for (int i = 1; i < 4; i++) {
		at[i] = 12 + b.len;
		put_entry(&b, OBJ_OFS_DELTA, delta, sizeof(delta), at[i] - at[i - 1]);
	}
	fake_open(&f, &hash_sha256, 0, b.buf, b.len, 0);
	f.pack.types = calloc(1024, sizeof(*f.pack.types));
	f.pack.types_mask = 1023;
	CHECK(f.pack.types != NULL);
	CHECK_INT(pack_read_header(&f.pack, at[3], &type, &size), 0);
	CHECK_INT(type, OBJ_BLOB);
	CHECK_INT(size, 5);
	/* the blob's header now says tree (size 5) */
	f.mem[at[0]] = (unsigned char)(OBJ_TREE << 4 | 5);
	CHECK_INT(pack_read_header(&f.pack, at[3], &type, &size), 0);
	CHECK_INT(type, OBJ_BLOB);
	CHECK_INT(pack_read_header(&f.pack, at[2], &type, &size), 0);
	CHECK_INT(type, OBJ_BLOB);
	/* the top of a walk is read, and its base when it is the next link */
	CHECK_INT(pack_read_header(&f.pack, at[1], &type, &size), 0);
	CHECK_INT(type, OBJ_TREE);
	/* without the table, every walk reads every header */
	free((void *)f.pack.types);
	f.pack.types = NULL;
	CHECK_INT(pack_read_header(&f.pack, at[3], &type, &size), 0);
	CHECK_INT(type, OBJ_TREE);
	fake_close(&f);
	buf_release(&b);
}

const struct test tests[] = {
	T(base_types),
	T(size_varint_every_length),
	T(size_explicit_bytes),
	T(size_varint_too_long),
	T(types_0_and_5_refused),
	T(ofs_delta_plus_one_rule),
	T(ofs_delta_round_trip),
	T(ofs_delta_range),
	T(ofs_delta_overflow),
	T(ofs_delta_truncated),
	T(ref_delta),
	T(ref_delta_sha1_name_in_sha256_pack),
	T(offset_out_of_range),
	T(header_runs_past_data_end),
	T(delta_cache_empty),
	T(delta_cache_budget_is_the_whole_cache_s),
	T(delta_cache_spares),
	T(delta_cache_threads),
	T(delta_types_remembered),
	{ NULL, NULL },
};
