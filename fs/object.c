/*
 * object.c: the content of object files.
 *
 * A file in objects-sha1/ or objects-sha256/ is the raw form of its
 * object.  A file in sha1/objects or sha256/objects is what Git expects
 * of a loose object: a zlib stream of "type size\0" followed by the
 * content.  We never compress: a stream of stored deflate blocks
 * (xlate/zstored.c) is valid zlib that any inflater reads, and its
 * length follows from the content's length alone, so stat() and readdir
 * need only the size the cache already knows, and a read at any offset
 * is answered without building the stream.  Only the trailing Adler-32
 * needs every byte, and it is computed as the content passes.
 *
 * Objects are made whole when opened (a tree or commit has to be
 * converted whole anyway), except blobs of XFS_STREAM_MIN bytes or
 * more: their SHA-1 form is their stored form, so they are streamed
 * from the repository a piece at a time.  The kernel reads a file
 * mostly in order, but its read-ahead requests reach our worker
 * threads in any order, so the last XFS_STREAM_WINDOW bytes that went
 * by are kept in a ring and a lagging request is served from there;
 * only a read further back starts the stream again.  (A blob stored as
 * a delta is rebuilt whole by the stream, as Git does.)
 *
 * Content made whole is let go of once as many bytes as the file holds
 * have been read (the kernel keeps them in its page cache), so memory
 * follows the files being read now, not the files held open; a read
 * after that makes it again.
 */
#include "fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define XFS_STREAM_WINDOW (4u << 20)

struct objfile {
	pthread_mutex_t lock;	/* the kernel may read one file on several threads */
	struct oid name;	/* as the file is named (for log lines) */
	struct repo_ref *repo;	/* held from open to close: a stream uses it */
	struct oid sha256;
	int sha1_form;		/* serve the SHA-1 form */
	int loaded;		/* objfile_load() has succeeded */
	enum obj_type type;
	int loose;		/* framed as a loose object */
	char hdr[32];
	size_t hdrlen;		/* 0 unless loose */
	uint64_t size;		/* content bytes */
	uint64_t payload;	/* hdrlen + size: what the zlib stream carries */
	uint64_t file_size;
	uLong adler;		/* of the payload, once adler_known */
	int adler_known;

	struct buf data;	/* the whole content, unless streaming */
	uint64_t served;	/* bytes read out of it since it was made */
	int streaming;
	struct odb_stream *st;
	uint64_t st_pos;	/* content bytes the stream has given */
	uLong st_adler;		/* of hdr + those bytes */
	char *ring;		/* content byte p at ring[p % XFS_STREAM_WINDOW],
				   for p in the window before st_pos */
};

uint64_t loose_file_size(uint64_t payload)
{
	return zstored_size(payload);
}

size_t loose_header(char *buf, enum obj_type type, uint64_t size)
{
	/* snprintf's NUL is the header's own terminator */
	return (size_t)snprintf(buf, 32, "%s %llu", type_name(type),
				(unsigned long long)size) + 1;
}

static uLong adler_update(uLong adler, const char *p, size_t len)
{
	while (len) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;

		adler = adler32(adler, (const Bytef *)p, n);
		p += n;
		len -= n;
	}
	return adler;
}

/* A failed stream is not trusted any further: the next read starts again. */
static int stream_broken(struct objfile *f)
{
	if (f->st)
		odb_stream_close(f->st);
	f->st = NULL;
	f->st_pos = 0;
	return EIO;
}

static int stream_restart(struct xfs *xfs, struct objfile *f)
{
	char hex[OID_HEXSZ_MAX + 1];
	enum obj_type type;
	size_t size;

	if (f->st)
		odb_stream_close(f->st);
	f->st = NULL;
	f->st_pos = 0;
	if (odb_stream_open(repo_odb(f->repo->repo), &f->sha256, &f->st, &type,
			    &size)) {
		xfs_log(xfs, "%s: %s", oid_to_hex_r(hex, &f->sha256), err_msg());
		return EIO;
	}
	if (type != f->type || size != f->size) {
		xfs_log(xfs, "%s: is now a %s of %zu bytes, was a %s of %llu",
			oid_to_hex_r(hex, &f->sha256), type_name(type), size,
			type_name(f->type), (unsigned long long)f->size);
		return stream_broken(f);
	}
	f->st_adler = adler_update(adler32(0, NULL, 0), f->hdr, f->hdrlen);
	return 0;
}

/*
 * Take `len` more bytes from the stream into the ring, and into dst
 * too unless it is NULL (bytes skipped over to reach a read ahead).
 */
static int stream_take(struct xfs *xfs, struct objfile *f, char *dst,
		       size_t len)
{
	char hex[OID_HEXSZ_MAX + 1];

	if (!f->st)
		return EIO;
	while (len) {
		size_t at = f->st_pos % XFS_STREAM_WINDOW;
		size_t want = XFS_STREAM_WINDOW - at, got;
		char *p = f->ring + at;

		if (want > len)
			want = len;
		if (odb_stream_read(f->st, p, want, &got)) {
			xfs_log(xfs, "%s: %s", oid_to_hex_r(hex, &f->sha256), err_msg());
			return stream_broken(f);
		}
		if (!got) {
			xfs_log(xfs, "%s: ends %llu bytes early",
				oid_to_hex_r(hex, &f->sha256),
				(unsigned long long)(f->size - f->st_pos));
			return stream_broken(f);
		}
		f->st_adler = adler_update(f->st_adler, p, got);
		f->st_pos += got;
		len -= got;
		if (dst) {
			memcpy(dst, p, got);
			dst += got;
		}
	}
	if (f->st_pos == f->size) {
		f->adler = f->st_adler;
		f->adler_known = 1;
	}
	return 0;
}

/* Content bytes [off, off+len) into dst; len fits in the content. */
static int content_read(struct xfs *xfs, struct objfile *f, uint64_t off,
			char *dst, size_t len)
{
	uint64_t behind;
	int ret;

	if (!f->streaming) {
		memcpy(dst, f->data.buf + off, len);
		return 0;
	}
	behind = f->st_pos < XFS_STREAM_WINDOW ? f->st_pos : XFS_STREAM_WINDOW;
	if (f->st && off < f->st_pos && off >= f->st_pos - behind) {
		/* a lagging request: from the ring, then on from the stream */
		while (len && off < f->st_pos) {
			size_t at = off % XFS_STREAM_WINDOW;
			size_t n = XFS_STREAM_WINDOW - at;

			if (n > f->st_pos - off)
				n = f->st_pos - off;
			if (n > len)
				n = len;
			memcpy(dst, f->ring + at, n);
			dst += n;
			off += n;
			len -= n;
		}
		return len ? stream_take(xfs, f, dst, len) : 0;
	}
	if ((!f->st || off < f->st_pos) && (ret = stream_restart(xfs, f)))
		return ret;
	if ((ret = stream_take(xfs, f, NULL, off - f->st_pos)))
		return ret;
	return stream_take(xfs, f, dst, len);
}

/* Payload bytes (header, then content) [off, off+len) into dst. */
static int payload_read(struct xfs *xfs, struct objfile *f, uint64_t off,
			char *dst, size_t len)
{
	if (off < f->hdrlen) {
		size_t n = f->hdrlen - off < len ? f->hdrlen - off : len;

		memcpy(dst, f->hdr + off, n);
		dst += n;
		off += n;
		len -= n;
	}
	return len ? content_read(xfs, f, off - f->hdrlen, dst, len) : 0;
}

static int need_adler(struct xfs *xfs, struct objfile *f)
{
	int ret;

	if (f->adler_known)
		return 0;
	/* only a stream lacks it: run the stream to its end */
	if (!f->st && (ret = stream_restart(xfs, f)))
		return ret;
	return stream_take(xfs, f, NULL, f->size - f->st_pos);
}

int objfile_open(struct xfs *xfs, const struct node *n, struct objfile **out)
{
	struct objfile *f = calloc(1, sizeof(*f));

	if (!f)
		return ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	buf_init(&f->data);
	f->repo = xfs_repo_get(xfs);
	f->name = n->name;
	f->sha256 = n->sha256;
	f->type = n->type;
	f->size = n->size;
	f->sha1_form = view_translated(xfs, n->view);
	f->loose = view_is_loose(n->view);
	if (f->loose)
		f->hdrlen = loose_header(f->hdr, n->type, n->size);
	f->payload = f->hdrlen + f->size;
	f->file_size = f->loose ? loose_file_size(f->payload) : f->size;
	f->streaming = n->type == OBJ_BLOB && n->size >= XFS_STREAM_MIN;
	*out = f;
	return 0;
}

/* Make the content on the first read: whole, or the start of a stream. */
static int objfile_load(struct xfs *xfs, struct objfile *f)
{
	char hex[OID_HEXSZ_MAX + 1];
	enum obj_type type;
	int ret;

	if (f->streaming) {
		if (!f->ring && !(f->ring = malloc(XFS_STREAM_WINDOW)))
			return ENOMEM;
		if ((ret = stream_restart(xfs, f)))
			return ret;
		f->loaded = 1;
		return 0;
	}
	if (f->sha1_form && f->type != OBJ_BLOB)
		ret = xlate_sha1_form(f->repo->repo, xfs_cache(xfs), NULL,
				      xfs->memo, xfs->unknown_headers, &f->sha256, &type,
				      &f->data);
	else
		ret = odb_read(repo_odb(f->repo->repo), &f->sha256, &type,
			       &f->data);
	if (ret) {
		xfs_log(xfs, "%s: %s", oid_to_hex_r(hex, &f->name), err_msg());
		buf_release(&f->data);
		return ret == XL_ENOMEM ? ENOMEM : EIO;
	}
	if (type != f->type || f->data.len != f->size) {
		/* st_size was promised from the cache: never serve other bytes */
		xfs_log(xfs, "%s: the cache says a %s of %llu bytes, the object "
			"is a %s of %zu", oid_to_hex_r(hex, &f->name),
			type_name(f->type), (unsigned long long)f->size,
			type_name(type), f->data.len);
		buf_release(&f->data);
		return EIO;
	}
	f->adler = adler_update(adler_update(adler32(0, NULL, 0), f->hdr,
					     f->hdrlen),
				f->data.buf, f->data.len);
	f->adler_known = 1;
	f->loaded = 1;
	return 0;
}

/* One piece of a loose file at `off`: framing bytes, or payload. */
static int loose_read(struct xfs *xfs, struct objfile *f, uint64_t off,
		      char *dst, size_t len, size_t *got)
{
	struct zstored_piece p;
	int ret;

	zstored_piece(f->payload, off, len, &p);
	*got = p.len;
	switch (p.part) {
	case ZSTORED_FRAME:
		memcpy(dst, p.frame, p.len);
		return 0;
	case ZSTORED_ADLER: {
		unsigned char be[4];

		if ((ret = need_adler(xfs, f)))
			return ret;
		be[0] = (unsigned char)(f->adler >> 24);
		be[1] = (unsigned char)(f->adler >> 16);
		be[2] = (unsigned char)(f->adler >> 8);
		be[3] = (unsigned char)f->adler;
		memcpy(dst, be + p.at, p.len);
		return 0;
	}
	case ZSTORED_PAYLOAD:
		break;
	}
	return payload_read(xfs, f, p.at, dst, p.len);
}

int objfile_read(struct xfs *xfs, struct objfile *f, uint64_t off, char *dst,
		 size_t len, size_t *got)
{
	int ret = 0;

	*got = 0;
	if (off >= f->file_size)
		return 0;
	if (len > f->file_size - off)
		len = f->file_size - off;
	pthread_mutex_lock(&f->lock);
	if (!f->loaded)
		ret = objfile_load(xfs, f);
	if (ret) {
		/* the next read tries again */
	} else if (!f->loose) {
		ret = content_read(xfs, f, off, dst, len);
		if (!ret)
			*got = len;
	} else {
		while (!ret && *got < len) {
			size_t n;

			ret = loose_read(xfs, f, off + *got, dst + *got,
					 len - *got, &n);
			*got += n;
		}
	}
	if (!ret && !f->streaming) {
		f->served += *got;
		if (f->served >= f->file_size) {
			buf_release(&f->data);
			f->loaded = 0;
			f->served = 0;
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (ret)
		*got = 0;
	return ret;
}

void objfile_close(struct objfile *f)
{
	if (!f)
		return;
	if (f->st)
		odb_stream_close(f->st);
	xfs_repo_put(f->repo);
	buf_release(&f->data);
	free(f->ring);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
