/*
 * inflate.c: zlib inflation to an exact, declared size.
 *
 * Git objects always declare their inflated size, so a stream that ends
 * early, runs long, or does not end where the size says is corruption.
 * Output goes straight into the caller's buffer; nothing is allocated
 * here beyond zlib's own state.
 */
#include "odb_i.h"

#include <limits.h>
#include <string.h>
#include <zlib.h>

/* zlib counts in uInt: feed it at most this much at a time */
#define ZCHUNK ((size_t)UINT_MAX)

static int zerr(z_stream *zs, int status, const char *what)
{
	return ERR_CORRUPT("zlib: %s (%s)", what,
			   zs->msg ? zs->msg : zError(status));
}

int inflate_exact(const unsigned char *in, size_t in_len, void *dst,
		  size_t size, size_t *used)
{
	z_stream zs;
	size_t in_left = in_len, out_left = size;
	unsigned char scratch[1];
	int status, ret = 0;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK)
		return err_set(XL_ENOMEM, "zlib: cannot initialise");
	zs.next_in = (unsigned char *)in;
	zs.next_out = size ? dst : scratch;
	for (;;) {
		size_t in_chunk = in_left < ZCHUNK ? in_left : ZCHUNK;
		size_t out_chunk = out_left < ZCHUNK ? out_left : ZCHUNK;

		zs.avail_in = (uInt)in_chunk;
		/*
		 * With the output full, offer one scratch byte: a stream that
		 * still has data to give then writes it, and we catch the lie.
		 */
		if (!out_chunk) {
			zs.next_out = scratch;
			zs.avail_out = 1;
		} else {
			zs.avail_out = (uInt)out_chunk;
		}
		status = inflate(&zs, Z_NO_FLUSH);
		in_left -= in_chunk - zs.avail_in;
		if (out_chunk)
			out_left -= out_chunk - zs.avail_out;
		if (status == Z_STREAM_END) {
			if (!out_chunk && zs.avail_out == 0)
				ret = ERR_CORRUPT("zlib: inflated data longer than the declared %zu bytes",
						  size);
			else if (out_left)
				ret = ERR_CORRUPT("zlib: inflated %zu bytes, declared %zu",
						  size - out_left, size);
			break;
		}
		if (!out_chunk && zs.avail_out == 0) {
			ret = ERR_CORRUPT("zlib: inflated data longer than the declared %zu bytes",
					  size);
			break;
		}
		/*
		 * We always offer both input and output room, so "no progress
		 * possible" can only mean the input ran out.
		 */
		if (status == Z_BUF_ERROR || (status == Z_OK && !in_left)) {
			ret = ERR_CORRUPT("zlib: compressed data truncated (%zu of %zu bytes inflated)",
					  size - out_left, size);
			break;
		}
		if (status != Z_OK) {
			ret = zerr(&zs, status, "bad compressed data");
			break;
		}
	}
	if (used)
		*used = in_len - in_left;
	inflateEnd(&zs);
	return ret;
}

int inflate_prefix(const unsigned char *in, size_t in_len, void *dst,
		   size_t want, size_t *got)
{
	z_stream zs;
	int status, ret = 0;

	*got = 0;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK)
		return err_set(XL_ENOMEM, "zlib: cannot initialise");
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)(in_len < ZCHUNK ? in_len : ZCHUNK);
	zs.next_out = dst;
	zs.avail_out = (uInt)want;
	while (zs.avail_out) {
		uInt before = zs.avail_out;

		status = inflate(&zs, Z_SYNC_FLUSH);
		if (status == Z_STREAM_END)
			break;
		if (status != Z_OK && status != Z_BUF_ERROR) {
			ret = zerr(&zs, status, "bad compressed data");
			break;
		}
		if (zs.avail_out == before && status == Z_BUF_ERROR)
			break;	/* input exhausted: the caller checks *got */
	}
	*got = want - zs.avail_out;
	inflateEnd(&zs);
	return ret;
}
