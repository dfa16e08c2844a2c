/*
 * loose.c: loose objects, objects/xx/<rest of the hex name>.
 *
 * A loose object is zlib("type SP size NUL" + content).  The size must be
 * canonical decimal (no sign, no leading zero), the type one of the four,
 * and the stream must inflate to exactly that many bytes and then end,
 * with nothing after it in the file.
 */
#include "odb_i.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* "commit " + 20 digits + NUL fits easily */
#define LOOSE_HDR_MAX 64

int loose_parse_header(const unsigned char *p, size_t len,
		       enum obj_type *type, size_t *size, size_t *hdr_len)
{
	const unsigned char *end = p + len, *start = p, *sp;
	uint64_t v = 0;

	sp = memchr(p, ' ', len);
	if (!sp)
		return ERR_CORRUPT("loose object header has no type");
	*type = type_from_name((const char *)p, (size_t)(sp - p));
	if (*type == OBJ_NONE)
		return ERR_CORRUPT("loose object has unknown type '%.*s'",
				   (int)(sp - p < 32 ? sp - p : 32), p);
	p = sp + 1;
	if (p >= end || *p < '0' || *p > '9')
		return ERR_CORRUPT("loose object header has no size");
	if (*p == '0' && p + 1 < end && p[1] != '\0')
		return ERR_CORRUPT("loose object size is not canonical");
	while (p < end && *p >= '0' && *p <= '9') {
		if (v > (SIZE_MAX - 9) / 10)
			return ERR_CORRUPT("loose object size too large");
		v = v * 10 + (uint64_t)(*p++ - '0');
	}
	if (p >= end || *p != '\0')
		return ERR_CORRUPT("loose object header is not terminated");
	*size = (size_t)v;
	*hdr_len = (size_t)(p + 1 - start);
	return 0;
}

void loose_path(struct buf *out, const char *objdir, const struct oid *oid)
{
	char hex[OID_HEXSZ_MAX + 1];

	oid_to_hex_r(hex, oid);
	buf_reset(out);
	buf_addf(out, "%s/%.2s/%s", objdir, hex, hex + 2);
}

/*
 * Map the file and parse its header.  On success the caller owns the
 * mapping and gets where the compressed stream is.
 */
static int loose_open(const char *objdir, const char *path,
		      const unsigned char **map, size_t *map_len,
		      enum obj_type *type, size_t *size, unsigned char *hdr,
		      size_t *hdr_got, size_t *hdr_len)
{
	int ret;

	if ((ret = file_map_in(objdir, path, map, map_len)))
		return ret;
	if ((ret = inflate_prefix(*map, *map_len, hdr, LOOSE_HDR_MAX,
				  hdr_got)) ||
	    (ret = loose_parse_header(hdr, *hdr_got, type, size, hdr_len))) {
		file_unmap(*map, *map_len);
		*map = NULL;
		return err_wrap("%s", path);
	}
	return 0;
}

int loose_decode(const unsigned char *map, size_t map_len, const char *what,
		 enum obj_type *type, struct buf *out)
{
	unsigned char hdr[LOOSE_HDR_MAX];
	size_t size, got, hdr_len, total, used;
	int ret;

	buf_reset(out);
	if ((ret = inflate_prefix(map, map_len, hdr, LOOSE_HDR_MAX, &got)) ||
	    (ret = loose_parse_header(hdr, got, type, &size, &hdr_len)))
		return err_wrap("%s", what);
	if (!inflate_size_plausible(map_len, size))
		return ERR_CORRUPT("%s: declares %zu bytes in a %zu-byte file",
				   what, size, map_len);
	/*
	 * Inflate header and content in one pass into one buffer, then
	 * move the content down: simpler than resuming a stream, and the
	 * header is a few bytes.
	 */
	/* into the caller's buffer, so that a reused buffer is reused */
	if ((ret = size_add(size, hdr_len, &total)) ||
	    (ret = buf_grow(out, total)))
		goto out;
	if ((ret = inflate_exact(map, map_len, out->buf, total, &used))) {
		/* zlib counted header bytes too; say what the header claimed */
		err_wrap("%s (header: %s of %zu bytes)", what, type_name(*type),
			 size);
		goto out;
	}
	if (used != map_len) {
		ret = ERR_CORRUPT("%s: garbage after the compressed object", what);
		goto out;
	}
	memmove(out->buf, out->buf + hdr_len, size);
	out->len = size;
	out->buf[size] = '\0';
out:
	if (ret)
		buf_reset(out);
	return ret;
}

int loose_read(const char *objdir, const struct oid *oid,
	       enum obj_type *type, struct buf *out)
{
	struct buf path = BUF_INIT;
	const unsigned char *map = NULL;
	size_t map_len = 0;
	int ret;

	buf_reset(out);
	loose_path(&path, objdir, oid);
	if (!(ret = file_map_in(objdir, path.buf, &map, &map_len)))
		ret = loose_decode(map, map_len, path.buf, type, out);
	file_unmap(map, map_len);
	buf_release(&path);
	return ret;
}

int loose_read_header(const char *objdir, const struct oid *oid,
		      enum obj_type *type, size_t *size)
{
	struct buf path = BUF_INIT;
	unsigned char hdr[LOOSE_HDR_MAX];
	const unsigned char *map = NULL;
	size_t map_len = 0, got, hdr_len;
	int ret;

	loose_path(&path, objdir, oid);
	ret = loose_open(objdir, path.buf, &map, &map_len, type, size, hdr, &got,
			 &hdr_len);
	file_unmap(map, map_len);
	buf_release(&path);
	return ret;
}

int loose_has(const char *objdir, const struct oid *oid)
{
	struct buf path = BUF_INIT;
	const unsigned char *map;
	size_t len;
	int ret;

	loose_path(&path, objdir, oid);
	ret = file_map_in(objdir, path.buf, &map, &len);
	if (!ret)
		file_unmap(map, len);
	buf_release(&path);
	/*
	 * A file there that cannot be opened (permissions, a symlink that
	 * leads out) is there: reading it says why, where "not found"
	 * would hide it.
	 */
	return ret != XL_ENOTFOUND;
}

static int cmp_raw32(const void *a, const void *b)
{
	return memcmp(a, b, OID_RAWSZ_MAX);
}

int loose_list(const char *objdir, const struct hash_algo *algo,
	       unsigned fanout, struct buf *names)
{
	struct buf dir = BUF_INIT;
	size_t start = names->len, rawsz = algo->rawsz;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	buf_addf(&dir, "%s/%02x", objdir, fanout);
	d = dir_open_in(objdir, dir.buf);
	buf_release(&dir);
	if (!d)
		return 0;	/* no such fanout directory: no objects */
	while ((de = readdir(d))) {
		unsigned char raw[OID_RAWSZ_MAX] = { (unsigned char)fanout };
		struct oid oid;
		char hex[OID_HEXSZ_MAX + 1];

		if (strlen(de->d_name) != algo->hexsz - 2)
			continue;
		hex[0] = "0123456789abcdef"[fanout >> 4];
		hex[1] = "0123456789abcdef"[fanout & 15];
		memcpy(hex + 2, de->d_name, algo->hexsz - 2);
		if (oid_from_hex(&oid, algo, hex))
			continue;	/* a temporary file, not an object */
		memcpy(raw, oid.hash, rawsz);
		/* fixed 32-byte records sort with one comparator */
		if ((ret = buf_add(names, raw, OID_RAWSZ_MAX)))
			break;
	}
	closedir(d);
	if (!ret)
		qsort(names->buf + start, (names->len - start) / OID_RAWSZ_MAX,
		      OID_RAWSZ_MAX, cmp_raw32);
	return ret;
}
