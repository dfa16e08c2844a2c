/*
 * buf.c: the growable byte buffer; invariants in odb.h.
 */
#include "odb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char buf_empty_[1];

void buf_init(struct buf *b)
{
	b->buf = buf_empty_;
	b->len = 0;
	b->alloc = 0;
	b->failed = 0;
}

void buf_release(struct buf *b)
{
	if (b->alloc)
		free(b->buf);
	buf_init(b);
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p = b->alloc ? b->buf : calloc(1, 1);

	if (len)
		*len = b->len;
	buf_init(b);
	return p;
}

void buf_attach(struct buf *b, char *mem, size_t alloc)
{
	b->buf = mem;
	b->alloc = alloc;
	b->len = 0;
	b->failed = 0;
	mem[0] = '\0';
}

int buf_grow(struct buf *b, size_t extra)
{
	size_t need, alloc;
	char *p;

	if (size_add(b->len, extra, &need) || size_add(need, 1, &need)) {
		b->failed = 1;
		return XL_ETOOBIG;
	}
	if (need <= b->alloc)
		return 0;
	alloc = b->alloc < 64 ? 64 : b->alloc;
	while (alloc < need) {
		if (alloc > SIZE_MAX / 3 * 2) {
			alloc = need;
			break;
		}
		alloc = alloc / 2 * 3;
	}
	p = realloc(b->alloc ? b->buf : NULL, alloc);
	if (!p) {
		b->failed = 1;
		return err_set(XL_ENOMEM, "out of memory (%zu bytes)", alloc);
	}
	if (!b->alloc)
		p[0] = '\0';
	b->buf = p;
	b->alloc = alloc;
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t len)
{
	int ret = buf_grow(b, len);

	if (ret)
		return ret;
	if (len)
		memcpy(b->buf + b->len, data, len);
	b->len += len;
	b->buf[b->len] = '\0';
	return 0;
}

int buf_addstr(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addch(struct buf *b, int c)
{
	char ch = (char)c;

	return buf_add(b, &ch, 1);
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return err_set(XL_EINVALID, "bad format string");
	ret = buf_grow(b, (size_t)n);
	if (ret)
		return ret;
	va_start(ap, fmt);
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int buf_setlen(struct buf *b, size_t len)
{
	if (!b->alloc) {
		if (len)
			return err_set(XL_EINVALID, "buf_setlen past allocation");
		return 0;
	}
	if (len >= b->alloc)
		return err_set(XL_EINVALID, "buf_setlen past allocation");
	b->len = len;
	b->buf[len] = '\0';
	return 0;
}

int array_grow(void *arrayp, size_t *alloc, size_t nr, size_t elem,
	       size_t first)
{
	void **array = arrayp;
	size_t n = *alloc ? *alloc : first, bytes;
	void *p;

	if (nr < *alloc)
		return 0;
	while (n <= nr)
		if (size_mul(n, 2, &n))
			return XL_ENOMEM;
	if (size_mul(n, elem, &bytes) || !(p = realloc(*array, bytes)))
		return err_set(XL_ENOMEM, "out of memory");
	*array = p;
	*alloc = n;
	return 0;
}

int buf_add_varint(struct buf *b, uint64_t v)
{
	unsigned char c[10];
	size_t n = 0;

	do {
		c[n] = v & 0x7f;
		v >>= 7;
		if (v)
			c[n] |= 0x80;
		n++;
	} while (v);
	return buf_add(b, c, n);
}

int varint_get(const unsigned char **pp, const unsigned char *end,
	       uint64_t *out)
{
	const unsigned char *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	unsigned char c;

	do {
		if (p >= end)
			return -1;
		c = *p++;
		/* bits that would fall off the top of 64 */
		if (shift > 63 || (shift > 57 && ((c & 0x7f) >> (64 - shift))))
			return -1;
		v |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	} while (c & 0x80);
	*pp = p;
	*out = v;
	return 0;
}
