/*
 * odb.c: the object database of one repository.
 *
 * Sources are the repository's objects directory and its alternates
 * (objects/info/alternates, followed breadth-first to a depth of 5 as
 * Git does, each directory once).  Each source has packs and loose
 * objects.  A lookup tries the packs, most recently useful first, then
 * loose files, and when both miss it rescans the pack directories once
 * (a `git gc` may just have moved the object into a new pack) before
 * answering "not found".
 *
 * Packs are only ever added, never closed before odb_close(): readers
 * walk the pack list and use a pack without any lock (see struct odb),
 * and delta-cache keys (pack pointers) can never be recycled.  A pack whose
 * files cannot be opened is remembered with its reason, so a missing
 * object can be blamed on it ("not found; pack X is unreadable: ...")
 * instead of silently reported missing.
 *
 * Git pretends the empty tree exists in every repository; so do we.
 */
#include "odb_i.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define ALTERNATE_DEPTH 5

struct broken_pack {
	char *path;
	char *reason;
	struct broken_pack *next;
};

static const unsigned char empty_tree_sha1[20] = {
	0x4b, 0x82, 0x5d, 0xc6, 0x42, 0xcb, 0x6e, 0xb9, 0xa0, 0x60,
	0xe5, 0x4b, 0xf8, 0xd6, 0x92, 0x88, 0xfb, 0xee, 0x49, 0x04,
};
static const unsigned char empty_tree_sha256[32] = {
	0x6e, 0xf1, 0x9b, 0x41, 0x22, 0x5c, 0x53, 0x69, 0xf1, 0xc1, 0x04,
	0xd4, 0x5d, 0x8d, 0x85, 0xef, 0xa9, 0xb0, 0x57, 0xb5, 0x3b, 0x14,
	0xb4, 0xb9, 0xb9, 0x39, 0xdd, 0x74, 0xde, 0xcc, 0x53, 0x21,
};

static int is_empty_tree(const struct oid *oid)
{
	if (oid->algo->id == HASH_SHA1)
		return !memcmp(oid->hash, empty_tree_sha1, 20);
	return !memcmp(oid->hash, empty_tree_sha256, 32);
}

/* ---- sources and alternates ----------------------------------------- */

static int source_add(struct odb *odb, const char *dir, int depth)
{
	struct odb_source **pp = &odb->sources, *s;
	struct buf abs = BUF_INIT;
	struct stat st;
	int ret;

	if ((ret = path_absolute(&abs, dir)))
		return ret;
	for (; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->objdir, abs.buf)) {
			buf_release(&abs);
			return 0;	/* already known */
		}
	if (stat(abs.buf, &st) || !S_ISDIR(st.st_mode)) {
		ret = err_set(XL_ENOTFOUND, "object directory %s does not exist",
			      abs.buf);
		buf_release(&abs);
		return ret;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		buf_release(&abs);
		return err_set(XL_ENOMEM, "out of memory");
	}
	s->objdir = buf_detach(&abs, NULL);
	s->depth = depth;
	*pp = s;
	return 0;
}

/*
 * Read objects/info/alternates of `src`: one directory per line, absolute
 * or relative to src's objects directory, '#' comments.  (Git also
 * accepts C-quoted lines for odd paths; those are not supported.)
 */
static int source_read_alternates(struct odb *odb, struct odb_source *src)
{
	struct buf path = BUF_INIT, text = BUF_INIT, dir = BUF_INIT;
	const char *p, *end;
	int ret;

	path_join(&path, src->objdir, "info/alternates");
	ret = file_read_in(src->objdir, path.buf, 1 << 20, &text);
	buf_release(&path);
	if (ret == XL_ENOTFOUND) {
		err_clear();
		return 0;
	}
	if (ret)
		return ret;
	if (src->depth > ALTERNATE_DEPTH) {
		/* Git ignores stores nested deeper, with a warning */
		buf_release(&text);
		return 0;
	}
	for (p = text.buf, end = text.buf + text.len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct buf line = BUF_INIT;

		buf_add(&line, p, n);
		p += n + (nl ? 1 : 0);
		while (line.len && (line.buf[line.len - 1] == '\r' ||
				    line.buf[line.len - 1] == ' '))
			buf_setlen(&line, line.len - 1);
		if (!line.len || line.buf[0] == '#') {
			buf_release(&line);
			continue;
		}
		if (line.buf[0] == '/')
			ret = buf_addstr(&dir, line.buf);
		else
			ret = path_join(&dir, src->objdir, line.buf);
		buf_release(&line);
		if (ret)
			break;
		ret = source_add(odb, dir.buf, src->depth + 1);
		buf_reset(&dir);
		if (ret == XL_ENOTFOUND) {
			/* Git warns about a dead alternate and goes on */
			err_clear();
			ret = 0;
		}
		if (ret)
			break;
	}
	buf_release(&dir);
	buf_release(&text);
	return ret;
}

/* ---- packs ---------------------------------------------------------- */

static int pack_known(struct odb *odb, const char *idx_path)
{
	size_t n = strlen(idx_path) - 4;

	for (struct pack *p = odb->packs; p; p = p->next)
		if (!strncmp(p->path, idx_path, n) && !strcmp(p->path + n, ".pack"))
			return 1;
	return 0;
}

static struct broken_pack **broken_head(struct odb *odb);

/*
 * Forget the packs that failed to open: each scan tries them again, as
 * a failure may have been passing (a pack being written, ENOMEM).
 */
static void broken_clear(struct odb *odb)
{
	struct broken_pack **head = broken_head(odb);

	while (*head) {
		struct broken_pack *b = *head;

		*head = b->next;
		free(b->path);
		free(b->reason);
		free(b);
	}
}

/* Note a pack (or pack directory) that could not be opened, and why. */
static void broken_add(struct odb *odb, const char *path, const char *reason)
{
	struct broken_pack *b = calloc(1, sizeof(*b));

	if (!b)
		return;	/* it is only a note */
	b->path = strdup(path);
	b->reason = strdup(reason);
	b->next = *broken_head(odb);
	*broken_head(odb) = b;
}

/*
 * Scan each source's pack directory for .idx files we have not opened.
 * Caller holds odb->scan_lock.
 */
static int odb_scan_packs(struct odb *odb)
{
	broken_clear(odb);
	for (struct odb_source *s = odb->sources; s; s = s->next) {
		struct buf dir = BUF_INIT, path = BUF_INIT;
		struct dirent *de;
		DIR *d;

		path_join(&dir, s->objdir, "pack");
		d = dir_open_in(s->objdir, dir.buf);
		if (!d) {
			if (errno == EXDEV)
				broken_add(odb, dir.buf, "a symlink that leads out of "
					   "the objects directory: not followed");
			buf_release(&dir);
			continue;
		}
		while ((de = readdir(d))) {
			size_t n = strlen(de->d_name);
			struct pack *pack;
			int ret;

			if (n < 5 || strcmp(de->d_name + n - 4, ".idx"))
				continue;
			path_join(&path, dir.buf, de->d_name);
			if (pack_known(odb, path.buf))
				continue;
			ret = pack_open(&pack, s->objdir, path.buf, odb->algo,
					odb->cache);
			if (ret == XL_ENOTFOUND) {
				/* an .idx without its .pack: a repack in flight */
				err_clear();
				continue;
			}
			if (ret) {
				broken_add(odb, path.buf, err_msg());
				err_clear();
				continue;
			}
			/* publish only once the pack is complete */
			pack->next = atomic_load_explicit(&odb->packs,
							  memory_order_relaxed);
			atomic_store_explicit(&odb->packs, pack,
					      memory_order_release);
		}
		closedir(d);
		buf_release(&path);
		buf_release(&dir);
	}
	return 0;
}

/* ---- open and close ------------------------------------------------- */

struct odb_full {
	struct odb odb;
	struct broken_pack *broken;	/* guarded by odb.scan_lock */
};

static struct broken_pack **broken_head(struct odb *odb)
{
	return &((struct odb_full *)odb)->broken;
}

int odb_open(struct odb **out, const char *objdir,
	     const struct hash_algo *algo)
{
	struct odb_full *full = calloc(1, sizeof(*full));
	struct odb *odb = &full->odb;
	int ret;

	*out = NULL;
	if (!full)
		return err_set(XL_ENOMEM, "out of memory");
	odb->algo = algo;
	pthread_mutex_init(&odb->scan_lock, NULL);
	odb->cache = delta_cache_new(ODB_DELTA_CACHE_DEFAULT);
	if (!odb->cache) {
		ret = err_set(XL_ENOMEM, "out of memory");
		goto fail;
	}
	if ((ret = source_add(odb, objdir, 0)))
		goto fail;
	/*
	 * Breadth-first over alternates: source_add() appends, so this
	 * loop visits each store once, with no recursion.
	 */
	for (struct odb_source *s = odb->sources; s; s = s->next)
		if ((ret = source_read_alternates(odb, s)))
			goto fail;
	odb_scan_packs(odb);
	*out = odb;
	return 0;
fail:
	odb_close(odb);
	return ret;
}

void odb_close(struct odb *odb)
{
	struct odb_full *full = (struct odb_full *)odb;

	if (!odb)
		return;
	for (struct pack *p = odb->packs, *next; p; p = next) {
		next = p->next;
		pack_close(p);
	}
	broken_clear(odb);
	while (odb->sources) {
		struct odb_source *s = odb->sources;

		odb->sources = s->next;
		free(s->objdir);
		free(s);
	}
	delta_cache_free(odb->cache);
	pthread_mutex_destroy(&odb->scan_lock);
	free(full);
}

int odb_refresh(struct odb *odb)
{
	int ret;

	pthread_mutex_lock(&odb->scan_lock);
	ret = odb_scan_packs(odb);
	pthread_mutex_unlock(&odb->scan_lock);
	return ret;
}

void odb_set_delta_cache_limit(struct odb *odb, size_t bytes)
{
	delta_cache_set_budget(odb->cache, bytes);
}

size_t odb_delta_cache_limit(struct odb *odb)
{
	return delta_cache_budget(odb->cache);
}

void odb_release_memory(struct odb *odb)
{
	delta_cache_empty(odb->cache);
}

/* ---- lookup --------------------------------------------------------- */

/*
 * Find the pack entry for oid.  Packs are never freed while the odb
 * lives, so the returned pointer needs no lock.
 */
static int odb_find_packed(struct odb *odb, const struct oid *oid,
			   struct pack **pack_out, uint64_t *offset)
{
	int ret = XL_ENOTFOUND;

	for (struct pack *p = atomic_load_explicit(&odb->packs, memory_order_acquire);
	     p; p = p->next) {
		uint32_t pos;

		if (idx_find(&p->idx, oid->hash, &pos))
			continue;
		ret = idx_offset(&p->idx, pos, offset);
		if (ret)
			err_wrap("%s", p->path);
		*pack_out = p;
		break;
	}
	return ret;
}

static int odb_not_found(struct odb *odb, const struct oid *oid)
{
	char hex[OID_HEXSZ_MAX + 1];
	struct broken_pack *b;
	int ret;

	oid_to_hex_r(hex, oid);
	pthread_mutex_lock(&odb->scan_lock);
	b = *broken_head(odb);
	/* still "not found", but the broken pack that may hold it is named */
	if (b)
		ret = err_set(XL_ENOTFOUND,
			      "object %s not found (pack %s is unreadable: %s)",
			      hex, b->path, b->reason);
	else
		ret = err_set(XL_ENOTFOUND, "object %s not found", hex);
	pthread_mutex_unlock(&odb->scan_lock);
	return ret;
}

enum odb_where { ODB_PACKED, ODB_LOOSE };

struct odb_loc {
	enum odb_where where;
	struct pack *pack;
	uint64_t offset;
	const char *objdir;
};

/* Where is oid?  Tries packs, loose, then packs again after a rescan. */
static int odb_locate(struct odb *odb, const struct oid *oid,
		      struct odb_loc *loc)
{
	int ret;

	for (int pass = 0; pass < 2; pass++) {
		ret = odb_find_packed(odb, oid, &loc->pack, &loc->offset);
		if (ret != XL_ENOTFOUND) {
			loc->where = ODB_PACKED;
			return ret;
		}
		if (pass)
			break;
		for (struct odb_source *s = odb->sources; s; s = s->next) {
			if (loose_has(s->objdir, oid)) {
				loc->where = ODB_LOOSE;
				loc->objdir = s->objdir;
				return 0;
			}
		}
		odb_refresh(odb);
	}
	return odb_not_found(odb, oid);
}

/* Where the delta base of the entry at (pack, offset) is (see odb_place()). */
static int placed_base(struct pack *pack, uint64_t offset, uint64_t *base)
{
	struct pack_entry e;
	uint32_t pos;
	int ret;

	*base = ODB_NO_PLACE;
	if ((ret = pack_entry_header(pack, offset, &e)))
		return ret;
	if (e.type == OBJ_OFS_DELTA)
		*base = e.base;
	else if (e.type == OBJ_REF_DELTA && !idx_find(&pack->idx, e.base_name, &pos))
		return idx_offset(&pack->idx, pos, base);
	return 0;
}

int odb_place(struct odb *odb, const struct oid *oid, struct odb_place *out)
{
	struct odb_loc loc;
	int ret;

	out->pack = NULL;
	out->offset = 0;
	out->base = ODB_NO_PLACE;
	if ((ret = odb_locate(odb, oid, &loc)) || loc.where != ODB_PACKED)
		return ret;
	if ((ret = placed_base(loc.pack, loc.offset, &out->base)))
		return ret;
	out->pack = loc.pack;
	out->offset = loc.offset;
	return 0;
}

int odb_placed_base(struct odb *odb, const void *pack, uint64_t offset,
		    uint64_t *base)
{
	/* packs live as long as their odb: the pointer is still good */
	(void)odb;
	return placed_base((struct pack *)pack, offset, base);
}

int odb_read_placed(struct odb *odb, const void *pack, uint64_t offset,
		    enum obj_type *type, struct buf *out)
{
	/* packs live as long as their odb: the pointer is still good */
	(void)odb;
	return pack_read((struct pack *)pack, offset, type, out);
}

static int odb_wrap(const struct oid *oid, int ret)
{
	char hex[OID_HEXSZ_MAX + 1];

	if (ret && ret != XL_ENOTFOUND)
		err_wrap("object %s", oid_to_hex_r(hex, oid));
	return ret;
}

int odb_read(struct odb *odb, const struct oid *oid, enum obj_type *type,
	     struct buf *out)
{
	size_t size;

	return odb_read_small(odb, oid, type, &size, out, SIZE_MAX);
}

/*
 * The lookups below go round twice when a loose object vanishes between
 * being found and being read: `git gc` packs it and prunes the file, and
 * the second round finds it in the new pack.
 */
int odb_read_small(struct odb *odb, const struct oid *oid,
		   enum obj_type *type, size_t *size, struct buf *out,
		   size_t limit)
{
	struct pack_entry e;
	struct odb_loc loc;
	int ret;

	for (int round = 0;; round++) {
		buf_reset(out);
		if ((ret = odb_locate(odb, oid, &loc))) {
			if (ret == XL_ENOTFOUND && is_empty_tree(oid)) {
				err_clear();
				*type = OBJ_TREE;
				*size = 0;
				return 0;
			}
			return ret;
		}
		if (loc.where == ODB_PACKED) {
			if ((ret = pack_entry_header(loc.pack, loc.offset, &e))) {
				err_wrap("%s", loc.pack->path);
				return odb_wrap(oid, ret);
			}
			if (e.size > limit && e.type != OBJ_OFS_DELTA &&
			    e.type != OBJ_REF_DELTA) {
				*type = e.type;
				*size = e.size;
				return 1;
			}
			ret = pack_read(loc.pack, loc.offset, type, out);
			break;
		}
		ret = loose_read_header(loc.objdir, oid, type, size);
		if (!ret && *size > limit)
			return 1;
		if (!ret)
			ret = loose_read(loc.objdir, oid, type, out);
		if (ret != XL_ENOTFOUND || round)
			break;
		odb_refresh(odb);
	}
	*size = out->len;
	return odb_wrap(oid, ret);
}

int odb_read_header(struct odb *odb, const struct oid *oid,
		    enum obj_type *type, size_t *size)
{
	struct odb_loc loc;
	enum obj_type t = OBJ_TREE;
	size_t s = 0;
	int ret;

	for (int round = 0;; round++) {
		if ((ret = odb_locate(odb, oid, &loc))) {
			if (ret != XL_ENOTFOUND || !is_empty_tree(oid))
				return ret;
			err_clear();
			ret = 0;
			break;
		}
		if (loc.where == ODB_PACKED)
			ret = pack_read_header(loc.pack, loc.offset, &t, &s);
		else
			ret = loose_read_header(loc.objdir, oid, &t, &s);
		if (ret != XL_ENOTFOUND || loc.where == ODB_PACKED || round)
			break;
		odb_refresh(odb);
	}
	if (ret)
		return odb_wrap(oid, ret);
	if (type)
		*type = t;
	if (size)
		*size = s;
	return 0;
}

int odb_has(struct odb *odb, const struct oid *oid)
{
	struct odb_loc loc;

	if (!odb_locate(odb, oid, &loc))
		return 1;
	err_clear();
	return is_empty_tree(oid);
}

/* ---- enumeration ---------------------------------------------------- */

static int cmp_raw32(const void *a, const void *b)
{
	return memcmp(a, b, OID_RAWSZ_MAX);
}

/* All names with first byte b, as sorted unique 32-byte records. */
static int odb_slice(struct odb *odb, unsigned b, struct buf *names)
{
	size_t rawsz = odb->algo->rawsz, n;
	int ret = 0;

	buf_reset(names);
	for (struct pack *p = atomic_load_explicit(&odb->packs, memory_order_acquire);
	     p && !ret; p = p->next) {
		const struct idx *idx = &p->idx;
		uint32_t lo = b ? get_be32(idx->fanout + 4 * (b - 1)) : 0;
		uint32_t hi = get_be32(idx->fanout + 4 * b);

		if ((ret = buf_grow(names, (size_t)(hi - lo) * OID_RAWSZ_MAX)))
			break;
		for (uint32_t i = lo; i < hi; i++) {
			unsigned char *dst = (unsigned char *)names->buf + names->len;

			memcpy(dst, idx_name(idx, i), rawsz);
			memset(dst + rawsz, 0, OID_RAWSZ_MAX - rawsz);
			names->len += OID_RAWSZ_MAX;
		}
	}
	for (struct odb_source *s = odb->sources; s && !ret; s = s->next)
		ret = loose_list(s->objdir, odb->algo, b, names);
	if (ret)
		return ret;
	n = names->len / OID_RAWSZ_MAX;
	qsort(names->buf, n, OID_RAWSZ_MAX, cmp_raw32);
	/* drop duplicates (an object in two packs, or packed and loose) */
	if (n > 1) {
		size_t w = 1;

		for (size_t r = 1; r < n; r++)
			if (memcmp(names->buf + (w - 1) * OID_RAWSZ_MAX,
				   names->buf + r * OID_RAWSZ_MAX, OID_RAWSZ_MAX))
				memmove(names->buf + w++ * OID_RAWSZ_MAX,
					names->buf + r * OID_RAWSZ_MAX,
					OID_RAWSZ_MAX);
		n = w;
	}
	names->len = n * OID_RAWSZ_MAX;
	return 0;
}

int odb_for_each_object(struct odb *odb, odb_each_fn fn, void *data)
{
	struct buf names = BUF_INIT;
	int ret = 0;

	for (unsigned b = 0; b < 256 && !ret; b++) {
		if ((ret = odb_slice(odb, b, &names)))
			break;
		for (size_t i = 0; i < names.len / OID_RAWSZ_MAX && !ret; i++) {
			struct oid oid;

			oid_from_raw(&oid, odb->algo,
				     (unsigned char *)names.buf + i * OID_RAWSZ_MAX);
			ret = fn(&oid, data);
		}
	}
	buf_release(&names);
	return ret;
}

static void pack_info(struct pack *p, struct odb_pack_info *info);

int odb_for_each_pack(struct odb *odb, odb_pack_fn fn, void *data)
{
	int ret = 0;

	for (struct pack *p = atomic_load_explicit(&odb->packs, memory_order_acquire);
	     p && !ret; p = p->next) {
		struct odb_pack_info info;

		pack_info(p, &info);
		ret = fn(&info, data);
	}
	return ret;
}

int odb_for_each_broken_pack(struct odb *odb, odb_broken_fn fn, void *data)
{
	int ret = 0;

	pthread_mutex_lock(&odb->scan_lock);
	for (struct broken_pack *b = *broken_head(odb); b && !ret; b = b->next)
		ret = fn(b->path ? b->path : "?", b->reason ? b->reason : "?", data);
	pthread_mutex_unlock(&odb->scan_lock);
	return ret;
}

void odb_pack_object(const struct odb_pack_info *info, uint32_t i,
		     struct oid *out)
{
	const struct pack *p = info->pack;

	oid_from_raw(out, p->algo, idx_name(&p->idx, i));
}

static void pack_info(struct pack *p, struct odb_pack_info *info)
{
	struct oid sum;

	memset(info, 0, sizeof(*info));
	info->path = p->path;
	oid_from_raw(&sum, p->algo, p->idx.pack_checksum);
	oid_to_hex_r(info->checksum, &sum);
	info->objects = p->idx.nr;
	info->pack = p;
}

int odb_find_pack(struct odb *odb, const char *hex, struct odb_pack_info *out)
{
	for (struct pack *p = atomic_load_explicit(&odb->packs, memory_order_acquire);
	     p; p = p->next) {
		pack_info(p, out);
		if (!strcmp(out->checksum, hex))
			return 0;
	}
	memset(out, 0, sizeof(*out));
	return err_set(XL_ENOTFOUND, "no pack-%s.pack", hex);
}

const unsigned char *odb_pack_map(const struct odb_pack_info *info,
				  size_t *len)
{
	const struct pack *p = info->pack;

	*len = p->map_len;
	return p->map;
}

int odb_pack_has(const struct odb_pack_info *info, const struct oid *oid)
{
	const struct pack *p = info->pack;
	uint32_t pos;

	return oid->algo == p->algo && !idx_find(&p->idx, oid->hash, &pos);
}

int odb_for_each_loose(struct odb *odb, odb_each_fn fn, void *data)
{
	struct buf names = BUF_INIT;
	int ret = 0;

	for (struct odb_source *s = odb->sources; s && !ret; s = s->next) {
		for (unsigned b = 0; b < 256 && !ret; b++) {
			buf_reset(&names);
			if ((ret = loose_list(s->objdir, odb->algo, b, &names)))
				break;
			for (size_t i = 0; i < names.len / OID_RAWSZ_MAX && !ret; i++) {
				struct oid oid;

				oid_from_raw(&oid, odb->algo, (unsigned char *)names.buf +
					     i * OID_RAWSZ_MAX);
				ret = fn(&oid, data);
			}
		}
	}
	buf_release(&names);
	return ret;
}

int odb_resolve_prefix(struct odb *odb, const char *hex, size_t len,
		       struct oid *out)
{
	unsigned char want[OID_RAWSZ_MAX] = { 0 };
	struct buf names = BUF_INIT;
	size_t full = len / 2, found = 0;
	int ret;

	if (len < 4 || len > odb->algo->hexsz)
		return err_set(XL_EINVALID, "'%.*s' is not an abbreviated name",
			       (int)len, hex);
	for (size_t i = 0; i < len; i++) {
		int v = hex_value((unsigned char)hex[i]);

		if (v < 0)
			return err_set(XL_EINVALID, "'%.*s' is not hex",
				       (int)len, hex);
		want[i / 2] |= (unsigned char)(i % 2 ? v : v << 4);
	}
	if ((ret = odb_slice(odb, want[0], &names)))
		return ret;
	for (size_t i = 0; i < names.len / OID_RAWSZ_MAX; i++) {
		const unsigned char *n = (unsigned char *)names.buf + i * OID_RAWSZ_MAX;

		if (memcmp(n, want, full))
			continue;
		if (len % 2 && (n[full] & 0xf0) != want[full])
			continue;
		if (found++ == 0)
			oid_from_raw(out, odb->algo, n);
	}
	buf_release(&names);
	if (!found)
		return err_set(XL_ENOTFOUND, "no object named %.*s", (int)len, hex);
	if (found > 1)
		return err_set(XL_EAMBIGUOUS, "short name %.*s is ambiguous",
			       (int)len, hex);
	return 0;
}

/* ---- streaming ------------------------------------------------------ */

struct odb_stream {
	z_stream zs;
	int zlive;			/* zs initialised */
	int loose;			/* no bytes may follow the zlib stream */
	int finished;			/* the stream's end has been checked */
	const unsigned char *map;	/* loose file mapping, ours to unmap */
	size_t map_len;
	size_t in_left;			/* input not yet given to zlib */
	size_t left;			/* content bytes still to hand out */
	unsigned char pend[64];		/* content inflated with a loose header */
	size_t pend_off, pend_len;
	struct buf whole;		/* a rebuilt delta, served from memory */
	size_t whole_off;
	int in_memory;
	char hex[OID_HEXSZ_MAX + 1];	/* for messages */
};

/* Give zlib its next piece of input (it counts in 32 bits). */
static void stream_feed(struct odb_stream *st)
{
	size_t piece;

	if (st->zs.avail_in || !st->in_left)
		return;
	piece = st->in_left < ((size_t)1 << 30) ? st->in_left : (size_t)1 << 30;
	st->zs.avail_in = (uInt)piece;
	st->in_left -= piece;
}

int odb_stream_open(struct odb *odb, const struct oid *oid,
		    struct odb_stream **out, enum obj_type *type, size_t *size)
{
	struct odb_stream *st = calloc(1, sizeof(*st));
	struct odb_loc loc;
	struct pack_entry e;
	struct buf path = BUF_INIT;
	size_t hdr_len;
	int ret;

	*out = NULL;
	if (!st)
		return err_set(XL_ENOMEM, "out of memory");
	buf_init(&st->whole);
	oid_to_hex_r(st->hex, oid);
	if ((ret = odb_locate(odb, oid, &loc)))
		goto fail_plain;

	if (loc.where == ODB_PACKED) {
		if ((ret = pack_entry_header(loc.pack, loc.offset, &e))) {
			err_wrap("%s", loc.pack->path);
			goto fail;
		}
		if (e.type == OBJ_OFS_DELTA || e.type == OBJ_REF_DELTA) {
			/* a delta has to be rebuilt whole, as in Git */
			if ((ret = pack_read(loc.pack, loc.offset, type,
					     &st->whole)))
				goto fail;
			st->in_memory = 1;
			*size = st->left = st->whole.len;
			*out = st;
			return 0;
		}
		if (!inflate_size_plausible(loc.pack->data_end - e.data, e.size)) {
			ret = ERR_CORRUPT("%s: entry at %llu declares %zu bytes, more than its data can hold",
					  loc.pack->path,
					  (unsigned long long)loc.offset, e.size);
			goto fail;
		}
		if (inflateInit(&st->zs) != Z_OK) {
			ret = err_set(XL_ENOMEM, "zlib: cannot initialise");
			goto fail;
		}
		st->zlive = 1;
		st->zs.next_in = (unsigned char *)loc.pack->map + e.data;
		st->in_left = loc.pack->data_end - e.data;
		*type = e.type;
		*size = st->left = e.size;
		*out = st;
		return 0;
	}

	loose_path(&path, loc.objdir, oid);
	if ((ret = file_map_in(loc.objdir, path.buf, &st->map, &st->map_len)))
		goto fail;
	if (inflateInit(&st->zs) != Z_OK) {
		ret = err_set(XL_ENOMEM, "zlib: cannot initialise");
		goto fail;
	}
	st->zlive = 1;
	st->loose = 1;
	st->zs.next_in = (unsigned char *)st->map;
	st->in_left = st->map_len;
	st->zs.next_out = st->pend;
	st->zs.avail_out = sizeof(st->pend);
	/* inflate just the header's worth, then serve what follows */
	while (st->zs.avail_out &&
	       !memchr(st->pend, '\0', sizeof(st->pend) - st->zs.avail_out)) {
		int z;

		stream_feed(st);
		z = inflate(&st->zs, Z_SYNC_FLUSH);
		if (z == Z_STREAM_END)
			break;
		if (z != Z_OK) {
			ret = ERR_CORRUPT("%s: bad compressed data", path.buf);
			goto fail;
		}
	}
	st->pend_len = sizeof(st->pend) - st->zs.avail_out;
	ret = loose_parse_header(st->pend, st->pend_len, type, size, &hdr_len);
	if (!ret && !inflate_size_plausible(st->map_len, *size))
		ret = ERR_CORRUPT("declares %zu bytes in a %zu-byte file",
				  *size, st->map_len);
	if (!ret && st->pend_len - hdr_len > *size)
		ret = ERR_CORRUPT("longer than its header says");
	if (ret) {
		err_wrap("%s", path.buf);
		goto fail;
	}
	buf_release(&path);
	st->pend_off = hdr_len;
	st->left = *size;
	*out = st;
	return 0;
fail:
	odb_wrap(oid, ret);
fail_plain:
	buf_release(&path);
	odb_stream_close(st);
	return ret;
}

/*
 * All content handed out: the zlib stream must end right here (and, for
 * a loose file, nothing may follow it), as inflate_exact() requires of
 * whole reads.
 */
static int stream_finish(struct odb_stream *st)
{
	unsigned char extra;
	int z;

	st->finished = 1;
	if (st->in_memory)
		return 0;
	st->zs.next_out = &extra;
	st->zs.avail_out = 1;
	do {
		stream_feed(st);
		z = inflate(&st->zs, Z_SYNC_FLUSH);
	} while (z == Z_OK && st->zs.avail_out && (st->zs.avail_in || st->in_left));
	if (z != Z_STREAM_END || !st->zs.avail_out)
		return ERR_CORRUPT("object %s: compressed data does not end at the declared size",
				   st->hex);
	if (st->loose && (st->zs.avail_in || st->in_left))
		return ERR_CORRUPT("object %s: garbage after the compressed data",
				   st->hex);
	return 0;
}

int odb_stream_read(struct odb_stream *st, void *dst, size_t len, size_t *got)
{
	unsigned char *d = dst;
	size_t n;

	*got = 0;
	if (!st->left)
		return st->finished ? 0 : stream_finish(st);
	if (st->in_memory) {
		n = st->whole.len - st->whole_off;
		if (n > len)
			n = len;
		memcpy(d, st->whole.buf + st->whole_off, n);
		st->whole_off += n;
		st->left -= n;
		*got = n;
		return 0;
	}
	if (st->pend_off < st->pend_len) {
		n = st->pend_len - st->pend_off;
		if (n > len)
			n = len;
		memcpy(d, st->pend + st->pend_off, n);
		st->pend_off += n;
		st->left -= n;
		*got = n;
		return 0;
	}
	if (len > st->left)
		len = st->left;
	if (len > UINT32_MAX)
		len = UINT32_MAX;
	st->zs.next_out = d;
	st->zs.avail_out = (uInt)len;
	while (st->zs.avail_out) {
		int z;

		stream_feed(st);
		z = inflate(&st->zs, Z_SYNC_FLUSH);
		if (z == Z_STREAM_END)
			break;
		if (z == Z_BUF_ERROR && !st->zs.avail_in && !st->in_left)
			break;	/* input exhausted: reported below */
		if (z != Z_OK)
			return ERR_CORRUPT("object %s: bad compressed data",
					   st->hex);
	}
	n = len - st->zs.avail_out;
	st->left -= n;
	if (!n || (st->left && st->zs.avail_out))
		return ERR_CORRUPT("object %s: data ends %zu bytes early",
				   st->hex, st->left);
	*got = n;
	return 0;
}

void odb_stream_close(struct odb_stream *st)
{
	if (!st)
		return;
	if (st->zlive)
		inflateEnd(&st->zs);
	file_unmap(st->map, st->map_len);
	buf_release(&st->whole);
	free(st);
}
