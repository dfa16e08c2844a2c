/*
 * t-odb-delta.c: delta_sizes() and delta_apply() on crafted deltas.
 *
 * Every base and delta is placed against a guard page (guarded_copy), so
 * a parser that reads one byte too far crashes the test.  On failure the
 * output buffer must be empty, even if it held something before.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <stdlib.h>

/* ---- helpers -------------------------------------------------------- */

/* Append v as a delta size varint (little-endian base 128). */
static void put_varint(struct buf *b, uint64_t v)
{
	do {
		unsigned char c = v & 0x7f;

		v >>= 7;
		if (v)
			c |= 0x80;
		buf_addch(b, c);
	} while (v);
}

static void put_sizes(struct buf *d, uint64_t base, uint64_t result)
{
	put_varint(d, base);
	put_varint(d, result);
}

static void put_insert(struct buf *d, const char *s)
{
	size_t n = strlen(s);

	buf_addch(d, (int)n);
	buf_add(d, s, n);
}

/* A copy op with every offset and size byte present that is non-zero. */
static void put_copy(struct buf *d, uint32_t off, uint32_t len)
{
	unsigned char op = 0x80, bytes[7];
	size_t n = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char c = (off >> (8 * i)) & 0xff;

		if (c) {
			op |= 1u << i;
			bytes[n++] = c;
		}
	}
	for (int i = 0; i < 3; i++) {
		unsigned char c = (len >> (8 * i)) & 0xff;

		if (c) {
			op |= 0x10u << i;
			bytes[n++] = c;
		}
	}
	buf_addch(d, op);
	buf_add(d, bytes, n);
}

/*
 * Apply delta to base with both inputs guarded; `out` is first filled
 * with stale bytes so that the "empty on failure" rule is observable.
 */
static int apply(const void *base, size_t base_len, const void *delta,
		 size_t delta_len, struct buf *out)
{
	void *gb = guarded_copy(base, base_len);
	void *gd = guarded_copy(delta, delta_len);
	int ret;

	buf_reset(out);
	buf_addstr(out, "stale output");
	ret = delta_apply(gb, base_len, gd, delta_len, out);
	if (ret) {
		CHECK_INT(out->len, 0);
		CHECK_INT(out->buf[0], 0);
	} else {
		CHECK_INT(out->buf[out->len], 0);
	}
	guarded_free(gb);
	guarded_free(gd);
	return ret;
}

static int apply_buf(const char *base, const struct buf *d, struct buf *out)
{
	return apply(base, strlen(base), d->buf, d->len, out);
}

/* Byte i of the big test base: varies with every byte of i. */
static unsigned char pattern(size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u;

	return (unsigned char)(x >> 24 ^ x >> 13 ^ i);
}

/* ---- delta_sizes ---------------------------------------------------- */

static int sizes(const void *bytes, size_t n, size_t *base, size_t *result,
		 size_t *consumed)
{
	unsigned char *g = guarded_copy(bytes, n);
	const unsigned char *p = g;
	int ret = delta_sizes(&p, g + n, base, result);

	*consumed = (size_t)(p - g);
	guarded_free(g);
	return ret;
}

TEST(sizes_simple)
{
	static const unsigned char d[] = { 0x05, 0x7f, 0x99 };
	size_t b = 1, r = 1, used;

	CHECK_INT(sizes(d, sizeof(d), &b, &r, &used), 0);
	CHECK_INT(b, 5);
	CHECK_INT(r, 127);
	CHECK_INT(used, 2);
}

TEST(sizes_multibyte)
{
	/* 0x80 0x01 = 128; 0xff 0xff 0x03 = 0xffff */
	static const unsigned char d[] = { 0x80, 0x01, 0xff, 0xff, 0x03 };
	size_t b, r, used;

	CHECK_INT(sizes(d, sizeof(d), &b, &r, &used), 0);
	CHECK_INT(b, 128);
	CHECK_INT(r, 0xffff);
	CHECK_INT(used, 5);
}

TEST(sizes_large)
{
	struct buf d = BUF_INIT;
	size_t b, r, used;

	put_sizes(&d, (uint64_t)1 << 40, ((uint64_t)1 << 63) + 5);
	CHECK_INT(sizes(d.buf, d.len, &b, &r, &used), 0);
	CHECK(b == (size_t)1 << 40);
	CHECK(r == ((size_t)1 << 63) + 5);
	CHECK_INT(used, d.len);
	buf_release(&d);
}

TEST(sizes_truncated)
{
	static const unsigned char one[] = { 0x05 };
	static const unsigned char cont[] = { 0x05, 0x80 };
	static const unsigned char cont1[] = { 0x80 };
	size_t b, r, used;

	CHECK_INT(sizes("", 0, &b, &r, &used), XL_ECORRUPT);
	CHECK_INT(sizes(one, sizeof(one), &b, &r, &used), XL_ECORRUPT);
	CHECK_INT(sizes(cont, sizeof(cont), &b, &r, &used), XL_ECORRUPT);
	CHECK_INT(sizes(cont1, sizeof(cont1), &b, &r, &used), XL_ECORRUPT);
}

TEST(sizes_varint_too_long)
{
	/* 11 bytes: more than 64 bits can hold, whatever their value */
	unsigned char d[13];
	size_t b, r, used;

	memset(d, 0x80, 10);
	d[10] = 0x00;
	d[11] = 0x01;
	d[12] = 0x01;
	CHECK_INT(sizes(d, sizeof(d), &b, &r, &used), XL_ECORRUPT);
	/* the same for the result size */
	d[0] = 0x01;
	memset(d + 1, 0x80, 10);
	d[11] = 0x00;
	CHECK_INT(sizes(d, 12, &b, &r, &used), XL_ECORRUPT);
}

TEST(sizes_varint_over_64_bits)
{
	/*
	 * Ten bytes whose last one carries bits above bit 63: the value is
	 * 8 + 2^64, not 8.  It must be refused, not silently truncated.
	 */
	static const unsigned char d[] = {
		0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02,
		0x08,
	};
	size_t b = 0, r = 0, used;
	int ret = sizes(d, sizeof(d), &b, &r, &used);

	CHECK_INT(ret, XL_ECORRUPT);
	if (!ret)
		harness_fail(__FILE__, __LINE__,
			     "10-byte varint 8+2^64 accepted as base size %zu",
			     b);
}

TEST(apply_varint_over_64_bits)
{
	/* the same overlong base size in a delta that is otherwise fine */
	static const unsigned char d[] = {
		0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02,
		0x08, 0x90, 0x08,
	};
	struct buf out = BUF_INIT;

	CHECK_INT(apply("abcdefgh", 8, d, sizeof(d), &out), XL_ECORRUPT);
	buf_release(&out);
}

/* ---- good deltas ---------------------------------------------------- */

TEST(insert_only)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 0, 5);
	put_insert(&d, "hello");
	CHECK_INT(apply("", 0, d.buf, d.len, &out), 0);
	CHECK_INT(out.len, 5);
	CHECK_MEM(out.buf, "hello", 5);
	buf_release(&d);
	buf_release(&out);
}

TEST(insert_127)
{
	struct buf d = BUF_INIT, out = BUF_INIT;
	char lit[128];

	memset(lit, 'x', 127);
	lit[127] = '\0';
	put_sizes(&d, 3, 127);
	put_insert(&d, lit);
	CHECK_INT(d.buf[2], 127);
	CHECK_INT(apply_buf("abc", &d, &out), 0);
	CHECK_INT(out.len, 127);
	CHECK_MEM(out.buf, lit, 127);
	buf_release(&d);
	buf_release(&out);
}

TEST(copy_whole_base)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 8, 8);
	put_copy(&d, 0, 8);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), 0);
	CHECK_INT(out.len, 8);
	CHECK_MEM(out.buf, "abcdefgh", 8);
	buf_release(&d);
	buf_release(&out);
}

TEST(copy_and_insert_mixed)
{
	struct buf d = BUF_INIT, out = BUF_INIT;
	const char *base = "The quick brown fox";
	const char *want = "quick! The fox, brown";

	put_sizes(&d, strlen(base), strlen(want));
	put_copy(&d, 4, 5);		/* quick */
	put_insert(&d, "! ");
	put_copy(&d, 0, 4);		/* "The " */
	put_copy(&d, 16, 3);		/* fox */
	put_insert(&d, ", ");
	put_copy(&d, 10, 5);		/* brown */
	CHECK_INT(apply_buf(base, &d, &out), 0);
	CHECK_INT(out.len, strlen(want));
	CHECK_MEM(out.buf, want, strlen(want));
	buf_release(&d);
	buf_release(&out);
}

TEST(empty_result)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 4, 0);
	CHECK_INT(apply_buf("abcd", &d, &out), 0);
	CHECK_INT(out.len, 0);
	buf_release(&d);
	buf_release(&out);
}

TEST(copy_with_explicit_zero_bytes)
{
	/*
	 * Offset and size bytes may be present and zero: op 0xff with
	 * offset 2 (bytes 02 00 00 00) and size 3 (bytes 03 00 00).
	 */
	static const unsigned char d[] = {
		0x08, 0x03, 0xff, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00,
	};
	struct buf out = BUF_INIT;

	CHECK_INT(apply("abcdefgh", 8, d, sizeof(d), &out), 0);
	CHECK_INT(out.len, 3);
	CHECK_MEM(out.buf, "cde", 3);
	buf_release(&out);
}

/*
 * All 128 copy opcodes 0x80..0xff: each offset byte (bits 0-3) and size
 * byte (bits 4-6) present or not, each present byte with its own value,
 * so that a byte read into the wrong position gives a different range.
 * Offset bytes 0x03 0x02 0x01 0x01 and size bytes 0x05 0x01 0x01 need a
 * base of 0x01010203 + 0x10105 bytes.
 */
TEST(copy_all_opcode_combinations)
{
	static const unsigned char offb[4] = { 0x03, 0x02, 0x01, 0x01 };
	static const unsigned char lenb[3] = { 0x05, 0x01, 0x01 };
	size_t base_len = 0x01020400;
	unsigned char *raw = malloc(base_len), *base;
	struct buf out = BUF_INIT;
	int bad = 0;

	if (!raw)
		abort();
	for (size_t i = 0; i < base_len; i++)
		raw[i] = pattern(i);
	base = guarded_copy(raw, base_len);
	free(raw);

	for (unsigned op = 0x80; op <= 0xff; op++) {
		struct buf d = BUF_INIT;
		unsigned char *gd;
		size_t off = 0, len = 0;
		int ret;

		for (int i = 0; i < 4; i++)
			if (op & (1u << i))
				off |= (size_t)offb[i] << (8 * i);
		for (int i = 0; i < 3; i++)
			if (op & (0x10u << i))
				len |= (size_t)lenb[i] << (8 * i);
		if (!len)
			len = 0x10000;
		put_sizes(&d, base_len, len);
		buf_addch(&d, (int)op);
		for (int i = 0; i < 4; i++)
			if (op & (1u << i))
				buf_addch(&d, offb[i]);
		for (int i = 0; i < 3; i++)
			if (op & (0x10u << i))
				buf_addch(&d, lenb[i]);
		gd = guarded_copy(d.buf, d.len);
		ret = delta_apply(base, base_len, gd, d.len, &out);
		if (ret || out.len != len || memcmp(out.buf, base + off, len)) {
			harness_fail(__FILE__, __LINE__,
				     "op %02x: want %zu bytes at %zu, got ret %d len %zu (%s)",
				     op, len, off, ret, out.len, err_msg());
			bad++;
		}
		guarded_free(gd);
		buf_release(&d);
		if (bad > 5)
			break;
	}
	guarded_free(base);
	buf_release(&out);
}

TEST(copy_size_zero_means_64k)
{
	size_t n = 0x10000 + 7;
	unsigned char *raw = malloc(n);
	struct buf d = BUF_INIT, out = BUF_INIT;

	if (!raw)
		abort();
	for (size_t i = 0; i < n; i++)
		raw[i] = pattern(i);
	/* op 0x80: no offset, no size bytes: 0x10000 bytes from 0 */
	put_sizes(&d, n, 0x10000);
	buf_addch(&d, 0x80);
	CHECK_INT(apply(raw, n, d.buf, d.len, &out), 0);
	CHECK_INT(out.len, 0x10000);
	CHECK_MEM(out.buf, raw, 0x10000);
	/* op 0x91 07 00: offset 7, a size byte that is zero: also 0x10000 */
	buf_reset(&d);
	put_sizes(&d, n, 0x10000);
	buf_addch(&d, 0x91);
	buf_addch(&d, 0x07);
	buf_addch(&d, 0x00);
	CHECK_INT(apply(raw, n, d.buf, d.len, &out), 0);
	CHECK_INT(out.len, 0x10000);
	CHECK_MEM(out.buf, raw + 7, 0x10000);
	/* a declared result of 0 with that op: the copy overruns it */
	buf_reset(&d);
	put_sizes(&d, n, 0);
	buf_addch(&d, 0x80);
	CHECK_INT(apply(raw, n, d.buf, d.len, &out), XL_ECORRUPT);
	/* a base one byte short of 0x10000 */
	buf_reset(&d);
	put_sizes(&d, 0xffff, 0x10000);
	buf_addch(&d, 0x80);
	CHECK_INT(apply(raw, 0xffff, d.buf, d.len, &out), XL_ECORRUPT);
	free(raw);
	buf_release(&d);
	buf_release(&out);
}

/* ---- sizes must agree ----------------------------------------------- */

TEST(copy_ends_exactly_at_base_end)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 8, 3);
	put_copy(&d, 5, 3);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), 0);
	CHECK_MEM(out.buf, "fgh", 3);
	/* one byte further */
	buf_reset(&d);
	put_sizes(&d, 8, 3);
	put_copy(&d, 6, 3);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_release(&d);
	buf_release(&out);
}

TEST(base_size_mismatch)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 9, 3);
	put_insert(&d, "xyz");
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_reset(&d);
	put_sizes(&d, 7, 3);
	put_insert(&d, "xyz");
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_reset(&d);
	put_sizes(&d, 0, 3);
	put_insert(&d, "xyz");
	CHECK_INT(apply_buf("a", &d, &out), XL_ECORRUPT);
	buf_release(&d);
	buf_release(&out);
}

TEST(copy_outside_base)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	/* offset just past the end */
	put_sizes(&d, 8, 1);
	put_copy(&d, 8, 1);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	/* offset far past the end */
	buf_reset(&d);
	put_sizes(&d, 8, 1);
	put_copy(&d, 0x01000000, 1);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	/* offset + size would wrap a 32-bit sum */
	buf_reset(&d);
	put_sizes(&d, 8, 0xffffff);
	put_copy(&d, 0xffffffffu, 0xffffff);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	/* size larger than the base */
	buf_reset(&d);
	put_sizes(&d, 8, 9);
	put_copy(&d, 0, 9);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	/* any copy from an empty base */
	buf_reset(&d);
	put_sizes(&d, 0, 1);
	put_copy(&d, 0, 1);
	CHECK_INT(apply("", 0, d.buf, d.len, &out), XL_ECORRUPT);
	buf_release(&d);
	buf_release(&out);
}

TEST(insert_past_end_of_delta)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	/* insert of 5 with only 3 literal bytes left */
	put_sizes(&d, 0, 5);
	buf_addch(&d, 5);
	buf_add(&d, "abc", 3);
	CHECK_INT(apply("", 0, d.buf, d.len, &out), XL_ECORRUPT);
	/* insert op as the very last byte */
	buf_reset(&d);
	put_sizes(&d, 0, 1);
	buf_addch(&d, 1);
	CHECK_INT(apply("", 0, d.buf, d.len, &out), XL_ECORRUPT);
	buf_release(&d);
	buf_release(&out);
}

TEST(truncated_copy_op)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	/* every copy op, cut after each of its argument bytes but the last */
	for (unsigned op = 0x81; op <= 0xff; op++) {
		int nargs = __builtin_popcount(op & 0x7f);

		for (int keep = 0; keep < nargs; keep++) {
			buf_reset(&d);
			put_sizes(&d, 8, 1);
			buf_addch(&d, (int)op);
			for (int i = 0; i < keep; i++)
				buf_addch(&d, 0);
			if (apply_buf("abcdefgh", &d, &out) != XL_ECORRUPT) {
				harness_fail(__FILE__, __LINE__,
					     "op %02x cut after %d of %d bytes accepted",
					     op, keep, nargs);
				goto done;
			}
		}
	}
done:
	buf_release(&d);
	buf_release(&out);
}

TEST(opcode_zero)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 8, 3);
	put_insert(&d, "ab");
	buf_addch(&d, 0);
	put_insert(&d, "c");
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	CHECK(strstr(err_msg(), "opcode") != NULL);
	/* opcode 0 as the only instruction, with result size 0 */
	buf_reset(&d);
	put_sizes(&d, 8, 0);
	buf_addch(&d, 0);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_release(&d);
	buf_release(&out);
}

TEST(result_longer_than_declared)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 8, 3);
	put_insert(&d, "hello");
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_reset(&d);
	put_sizes(&d, 8, 3);
	put_copy(&d, 0, 2);
	put_copy(&d, 0, 2);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	/* right length, then one more instruction */
	buf_reset(&d);
	put_sizes(&d, 8, 3);
	put_copy(&d, 0, 3);
	put_insert(&d, "x");
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_release(&d);
	buf_release(&out);
}

TEST(result_shorter_than_declared)
{
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 8, 6);
	put_insert(&d, "hello");
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_reset(&d);
	put_sizes(&d, 8, 9);
	put_copy(&d, 0, 8);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	/* no instructions at all for a non-empty result */
	buf_reset(&d);
	put_sizes(&d, 8, 1);
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_release(&d);
	buf_release(&out);
}

TEST(huge_declared_result_no_allocation)
{
	/* a claim of 2^62 bytes with one byte of instructions */
	struct buf d = BUF_INIT, out = BUF_INIT;

	put_sizes(&d, 8, (uint64_t)1 << 62);
	put_insert(&d, "x");
	CHECK_INT(apply_buf("abcdefgh", &d, &out), XL_ECORRUPT);
	buf_release(&d);
	buf_release(&out);
}

TEST(truncated_size_header_in_apply)
{
	static const unsigned char d[] = { 0x08, 0x80 };
	struct buf out = BUF_INIT;

	CHECK_INT(apply("abcdefgh", 8, d, sizeof(d), &out), XL_ECORRUPT);
	CHECK_INT(apply("abcdefgh", 8, d, 0, &out), XL_ECORRUPT);
	buf_release(&out);
}

const struct test tests[] = {
	T(sizes_simple),
	T(sizes_multibyte),
	T(sizes_large),
	T(sizes_truncated),
	T(sizes_varint_too_long),
	T(sizes_varint_over_64_bits),
	T(apply_varint_over_64_bits),
	T(insert_only),
	T(insert_127),
	T(copy_whole_base),
	T(copy_and_insert_mixed),
	T(empty_result),
	T(copy_with_explicit_zero_bytes),
	T(copy_all_opcode_combinations),
	T(copy_size_zero_means_64k),
	T(copy_ends_exactly_at_base_end),
	T(base_size_mismatch),
	T(copy_outside_base),
	T(insert_past_end_of_delta),
	T(truncated_copy_op),
	T(opcode_zero),
	T(result_longer_than_declared),
	T(result_shorter_than_declared),
	T(huge_declared_result_no_allocation),
	T(truncated_size_header_in_apply),
	{ NULL, NULL },
};
