/*
 * inflate.c: zlib inflation to an exact, declared size.
 *
 * Git objects always declare their inflated size, so a stream that ends
 * early, runs long, or does not end where the size says is corruption.
 * Output goes straight into the caller's buffer; nothing is allocated
 * here beyond zlib's own state.
 *
 * That state (about 40 KiB with the window) is kept per thread and reset
 * between objects: allocating and freeing it per object showed up as a
 * tenth of the time of reading a whole pack.  Each thread owns its
 * stream, so no lock is needed; the key is created once and the stream
 * freed when its thread exits (FUSE worker threads come and go).
 */
#include "odb_i.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static pthread_key_t zs_key;
static pthread_once_t zs_once = PTHREAD_ONCE_INIT;

static void zs_destroy(void *p)
{
	inflateEnd(p);
	free(p);
}

static void zs_key_create(void)
{
	if (pthread_key_create(&zs_key, zs_destroy))
		abort();	/* only when the process is out of keys at start */
}

/* This thread's inflate stream, reset for a new zlib stream. */
static z_stream *zs_get(void)
{
	z_stream *zs;

	pthread_once(&zs_once, zs_key_create);
	zs = pthread_getspecific(zs_key);
	if (zs) {
		if (inflateReset(zs) == Z_OK)
			return zs;
		inflateEnd(zs);
	} else if (!(zs = calloc(1, sizeof(*zs)))) {
		err_set(XL_ENOMEM, "zlib: out of memory");
		return NULL;
	}
	memset(zs, 0, sizeof(*zs));
	if (inflateInit(zs) != Z_OK) {
		free(zs);
		pthread_setspecific(zs_key, NULL);
		err_set(XL_ENOMEM, "zlib: cannot initialise");
		return NULL;
	}
	pthread_setspecific(zs_key, zs);
	return zs;
}

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
	z_stream *zsp = zs_get();
	size_t in_left = in_len, out_left = size;
	unsigned char scratch[1];
	int status, ret = 0;

	if (!zsp)
		return XL_ENOMEM;
	zsp->next_in = (unsigned char *)in;
	zsp->next_out = size ? dst : scratch;
	for (;;) {
		size_t in_chunk = in_left < ZCHUNK ? in_left : ZCHUNK;
		size_t out_chunk = out_left < ZCHUNK ? out_left : ZCHUNK;

		zsp->avail_in = (uInt)in_chunk;
		/*
		 * With the output full, offer one scratch byte: a stream that
		 * still has data to give then writes it, and we catch the lie.
		 */
		if (!out_chunk) {
			zsp->next_out = scratch;
			zsp->avail_out = 1;
		} else {
			zsp->avail_out = (uInt)out_chunk;
		}
		status = inflate(zsp, Z_NO_FLUSH);
		in_left -= in_chunk - zsp->avail_in;
		if (out_chunk)
			out_left -= out_chunk - zsp->avail_out;
		if (status == Z_STREAM_END) {
			if (!out_chunk && zsp->avail_out == 0)
				ret = ERR_CORRUPT("zlib: inflated data longer than the declared %zu bytes",
						  size);
			else if (out_left)
				ret = ERR_CORRUPT("zlib: inflated %zu bytes, declared %zu",
						  size - out_left, size);
			break;
		}
		if (!out_chunk && zsp->avail_out == 0) {
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
			ret = zerr(zsp, status, "bad compressed data");
			break;
		}
	}
	if (used)
		*used = in_len - in_left;
	return ret;
}

int inflate_prefix(const unsigned char *in, size_t in_len, void *dst,
		   size_t want, size_t *got)
{
	z_stream *zsp = zs_get();
	int status, ret = 0;

	*got = 0;
	if (!zsp)
		return XL_ENOMEM;
	zsp->next_in = (unsigned char *)in;
	zsp->avail_in = (uInt)(in_len < ZCHUNK ? in_len : ZCHUNK);
	zsp->next_out = dst;
	zsp->avail_out = (uInt)want;
	while (zsp->avail_out) {
		uInt before = zsp->avail_out;

		status = inflate(zsp, Z_SYNC_FLUSH);
		if (status == Z_STREAM_END)
			break;
		if (status != Z_OK && status != Z_BUF_ERROR) {
			ret = zerr(zsp, status, "bad compressed data");
			break;
		}
		if (zsp->avail_out == before && status == Z_BUF_ERROR)
			break;	/* input exhausted: the caller checks *got */
	}
	*got = want - zsp->avail_out;
	return ret;
}
