/*
 * delta.c: Git's binary delta format, applied with every bound checked.
 *
 * A delta is two little-endian base-128 sizes (base, result) and then
 * instructions: 1xxxxxxx copies a range of the base (the low four bits
 * say which offset bytes follow, the next three which size bytes; a size
 * of 0 means 0x10000), 0xxxxxxx with a value of 1..127 inserts that many
 * literal bytes, and 0x00 is reserved.  The base size must match, and the
 * instructions must produce exactly the result size.
 *
 * The result size is only a claim, so delta_apply() runs the instructions
 * twice: once to prove that they are all in bounds and add up to the
 * claim, and only then, after allocating exactly that much, to copy.  A
 * lying delta therefore costs no allocation at all.
 */
#include "odb_i.h"

#include <string.h>

int delta_sizes(const unsigned char **pp, const unsigned char *end,
		size_t *base_size, size_t *result_size)
{
	const unsigned char *p = *pp;
	size_t *outs[2] = { base_size, result_size };

	for (int i = 0; i < 2; i++) {
		uint64_t v = 0;
		unsigned shift = 0;
		unsigned char c;

		do {
			if (p >= end)
				return ERR_CORRUPT("delta: truncated size header");
			c = *p++;
			/* bits that would fall off the top of 64 */
			if (shift > 63 || (shift > 57 && ((c & 0x7f) >> (64 - shift))))
				return ERR_CORRUPT("delta: size varint too long");
			v |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
		} while (c & 0x80);
		if (v > SIZE_MAX)
			return ERR_CORRUPT("delta: size %llu too large",
					   (unsigned long long)v);
		*outs[i] = (size_t)v;
	}
	*pp = p;
	return 0;
}

/*
 * Walk the instructions; with out == NULL only check them.  Returns 0 or
 * XL_ECORRUPT.
 */
static int delta_run(const unsigned char *base, size_t base_len,
		     const unsigned char *p, const unsigned char *end,
		     unsigned char *out, size_t result_size)
{
	size_t produced = 0;

	while (p < end) {
		unsigned char op = *p++;

		if (op & 0x80) {
			size_t off = 0, len = 0;

			for (int i = 0; i < 4; i++) {
				if (!(op & (1u << i)))
					continue;
				if (p >= end)
					return ERR_CORRUPT("delta: truncated copy offset");
				off |= (size_t)*p++ << (8 * i);
			}
			for (int i = 0; i < 3; i++) {
				if (!(op & (0x10u << i)))
					continue;
				if (p >= end)
					return ERR_CORRUPT("delta: truncated copy size");
				len |= (size_t)*p++ << (8 * i);
			}
			if (!len)
				len = 0x10000;
			if (off > base_len || len > base_len - off)
				return ERR_CORRUPT("delta: copy of %zu bytes at %zu reads outside the %zu-byte base",
						   len, off, base_len);
			if (len > result_size - produced)
				return ERR_CORRUPT("delta: copy runs past the declared result size %zu",
						   result_size);
			if (out)
				memcpy(out + produced, base + off, len);
			produced += len;
		} else if (op) {
			size_t len = op;

			if (len > (size_t)(end - p))
				return ERR_CORRUPT("delta: truncated insert");
			if (len > result_size - produced)
				return ERR_CORRUPT("delta: insert runs past the declared result size %zu",
						   result_size);
			if (out)
				memcpy(out + produced, p, len);
			p += len;
			produced += len;
		} else {
			return ERR_CORRUPT("delta: reserved opcode 0");
		}
	}
	if (produced != result_size)
		return ERR_CORRUPT("delta: produced %zu bytes, declared %zu",
				   produced, result_size);
	return 0;
}

int delta_apply(const unsigned char *base, size_t base_len,
		const unsigned char *delta, size_t delta_len, struct buf *out)
{
	const unsigned char *p = delta, *end = delta + delta_len;
	size_t base_size, result_size;
	int ret;

	buf_reset(out);
	if ((ret = delta_sizes(&p, end, &base_size, &result_size)))
		return ret;
	if (base_size != base_len)
		return ERR_CORRUPT("delta: expects a %zu-byte base, base has %zu",
				   base_size, base_len);
	if ((ret = delta_run(base, base_len, p, end, NULL, result_size)))
		return ret;
	if ((ret = buf_grow(out, result_size)))
		return ret;
	delta_run(base, base_len, p, end, (unsigned char *)out->buf,
		  result_size);
	out->len = result_size;
	out->buf[out->len] = '\0';
	return 0;
}
