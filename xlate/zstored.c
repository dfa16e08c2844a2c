/*
 * zstored.c: zlib streams of stored (uncompressed) deflate blocks.
 *
 * Git inflates any valid zlib stream, and one made of stored blocks has
 * a length that follows from the payload's length alone,
 *
 *	2 (zlib header) + 5 per block of at most 65535 bytes + data + 4 (Adler-32)
 *
 * so a loose object file or a pack entry framed this way has a size known
 * before its content is made, and any byte of it can be found by
 * arithmetic.  Only the trailing Adler-32 needs the whole payload.
 */
#include "xlate.h"

#include <string.h>

#define STORED_BLOCK 65535u	/* the most a stored deflate block holds */
#define BLOCK_SPAN (STORED_BLOCK + 5)

static uint64_t nr_blocks(uint64_t size)
{
	/* an empty payload still needs one (final, empty) block */
	return size ? (size + STORED_BLOCK - 1) / STORED_BLOCK : 1;
}

uint64_t zstored_size(uint64_t size)
{
	return 2 + 5 * nr_blocks(size) + size + 4;
}

void zstored_piece(uint64_t size, uint64_t off, size_t len,
		   struct zstored_piece *p)
{
	uint64_t blocks = nr_blocks(size);
	uint64_t tail = 2 + 5 * blocks + size;

	memset(p, 0, sizeof(*p));
	if (off < 2) {
		/* CMF: deflate, 32 KiB window; FLG: no dictionary, check bits */
		static const unsigned char zhdr[2] = { 0x78, 0x01 };

		p->part = ZSTORED_FRAME;
		p->len = 2 - off < len ? 2 - off : len;
		memcpy(p->frame, zhdr + off, p->len);
		return;
	}
	if (off >= tail) {
		p->part = ZSTORED_ADLER;
		p->at = off - tail;
		p->len = 4 - p->at < len ? 4 - p->at : len;
		return;
	}

	uint64_t k = off - 2, i = k / BLOCK_SPAN, j = k % BLOCK_SPAN;
	uint64_t start = i * STORED_BLOCK;
	uint64_t blen = i + 1 == blocks ? size - start : STORED_BLOCK;

	if (j < 5) {
		unsigned char frame[5];

		frame[0] = i + 1 == blocks;	/* BFINAL, BTYPE 00: stored */
		frame[1] = (unsigned char)blen;
		frame[2] = (unsigned char)(blen >> 8);
		frame[3] = (unsigned char)~blen;
		frame[4] = (unsigned char)(~blen >> 8);
		p->part = ZSTORED_FRAME;
		p->len = 5 - j < len ? 5 - j : len;
		memcpy(p->frame, frame + j, p->len);
		return;
	}
	j -= 5;
	p->part = ZSTORED_PAYLOAD;
	p->at = start + j;
	p->len = blen - j < len ? blen - j : len;
}

void zstored_copy(const void *payload, uint64_t size, uint32_t adler,
		  uint64_t off, void *dst, size_t len)
{
	unsigned char *d = dst;

	while (len) {
		struct zstored_piece p;

		zstored_piece(size, off, len, &p);
		if (!p.len)
			break;	/* past the end: the caller asked too much */
		switch (p.part) {
		case ZSTORED_FRAME:
			memcpy(d, p.frame, p.len);
			break;
		case ZSTORED_PAYLOAD:
			memcpy(d, (const unsigned char *)payload + p.at, p.len);
			break;
		case ZSTORED_ADLER: {
			unsigned char be[4] = {
				(unsigned char)(adler >> 24), (unsigned char)(adler >> 16),
				(unsigned char)(adler >> 8), (unsigned char)adler,
			};

			memcpy(d, be + p.at, p.len);
			break;
		}
		}
		d += p.len;
		off += p.len;
		len -= p.len;
	}
}
