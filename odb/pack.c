/*
 * pack.c: pack files, their entries, and delta chains.
 *
 * Reading one object (pack_read):
 *
 *   1. Walk down the chain from the requested entry towards a whole
 *      object, one entry header at a time, remembering each delta in
 *      `links` (an inline array that moves to the heap when it grows).
 *      The walk stops early at an entry the delta-base cache holds.
 *      OFS_DELTA bases lie strictly before their delta, so those links
 *      cannot loop; a REF_DELTA may name any entry of the pack, so each
 *      REF hop is checked against the links so far (a cycle is
 *      corruption), and the whole chain is capped at ODB_MAX_DELTA_DEPTH.
 *   2. Inflate the base (or take it from the cache).
 *   3. Unwind: inflate each delta and apply it to the current base.  Each
 *      base used on the way is offered to the cache, as Git does; the
 *      final result goes to the caller's buffer.
 *
 * There is no recursion, memory is the chain's bases plus the cache's
 * budget, and a lying header is caught before it costs an allocation:
 * sizes are checked against what the compressed bytes could possibly
 * hold (inflate_size_plausible) and deltas prove their result size
 * before it is allocated (delta.c).
 *
 * A REF_DELTA base must be in the same pack, as Git requires of packs on
 * disk (thin packs are only ever on the wire).
 */
#include "odb_i.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PACK_HDR_LEN 12

static int pack_fail(const struct pack *pack, uint64_t offset, int ret)
{
	err_wrap("%s: entry at offset %llu", pack->path,
		 (unsigned long long)offset);
	return ret;
}

/*
 * Types of deltas.  A delta's type is its chain's base's, which
 * pack_read_header() finds by reading every header down the chain: a
 * cache miss in the mapped pack for each, ten to fifty of them for a
 * typical chain, and the chains of neighbouring versions share most of
 * their links.  So the type each link was found to make is remembered,
 * by offset, in a table of one word a slot, and the next walk that
 * meets a remembered link stops there.  The pack never changes, so a
 * slot that holds the offset holds its type; slots are read and written
 * with relaxed atomics, and two threads writing one slot lose only a
 * hint.  A slot for every four entries, from 2^10 to 2^16 (512 KiB).
 */
#define TYPES_MIN 1024
#define TYPES_MAX 65536

static void types_init(struct pack *pack)
{
	size_t n = TYPES_MIN;

	while (n < TYPES_MAX && n < pack->idx.nr / 4)
		n *= 2;
	if ((pack->types = calloc(n, sizeof(*pack->types))))
		pack->types_mask = n - 1;
}

static size_t types_slot(const struct pack *pack, uint64_t offset)
{
	return (size_t)((offset * 0x9e3779b97f4a7c15ull) >> 32) &
	       pack->types_mask;
}

static enum obj_type types_get(const struct pack *pack, uint64_t offset)
{
	uint64_t v;

	if (!pack->types)
		return OBJ_NONE;
	v = atomic_load_explicit(&pack->types[types_slot(pack, offset)],
				 memory_order_relaxed);
	return v >> 3 == offset ? (enum obj_type)(v & 7) : OBJ_NONE;
}

static void types_put(const struct pack *pack, uint64_t offset,
		      enum obj_type type)
{
	if (pack->types && offset < (UINT64_C(1) << 61))
		atomic_store_explicit(&pack->types[types_slot(pack, offset)],
				      offset << 3 | (uint64_t)type,
				      memory_order_relaxed);
}

int pack_open(struct pack **out, const char *root, const char *idx_path,
	      const struct hash_algo *algo, struct delta_cache *cache)
{
	struct pack *pack = calloc(1, sizeof(*pack));
	const unsigned char *idx_map = NULL;
	size_t idx_len = 0, n = strlen(idx_path);
	int ret;

	*out = NULL;
	if (!pack)
		return err_set(XL_ENOMEM, "out of memory");
	pack->algo = algo;
	pack->cache = cache;
	if (n < 4 || strcmp(idx_path + n - 4, ".idx")) {
		free(pack);
		return err_set(XL_EINVALID, "%s: not an .idx path", idx_path);
	}
	pack->path = malloc(n + 2);
	if (!pack->path) {
		free(pack);
		return err_set(XL_ENOMEM, "out of memory");
	}
	memcpy(pack->path, idx_path, n - 4);
	memcpy(pack->path + n - 4, ".pack", 6);

	if ((ret = file_map_in(root, idx_path, &idx_map, &idx_len)))
		goto fail;
	if ((ret = idx_parse(&pack->idx, idx_map, idx_len, algo, idx_path)))
		goto fail;
	if ((ret = file_map_in(root, pack->path, &pack->map, &pack->map_len)))
		goto fail;
	if (pack->map_len < PACK_HDR_LEN + algo->rawsz ||
	    memcmp(pack->map, "PACK", 4)) {
		ret = ERR_CORRUPT("%s: not a pack file", pack->path);
		goto fail;
	}
	if (get_be32(pack->map + 4) != 2 && get_be32(pack->map + 4) != 3) {
		ret = err_set(XL_EUNSUPPORTED, "%s: pack version %u not supported",
			      pack->path, get_be32(pack->map + 4));
		goto fail;
	}
	if (get_be32(pack->map + 8) != pack->idx.nr) {
		ret = ERR_CORRUPT("%s: pack has %u objects, its index %u",
				  pack->path, get_be32(pack->map + 8),
				  pack->idx.nr);
		goto fail;
	}
	pack->data_end = pack->map_len - algo->rawsz;
	if (memcmp(pack->map + pack->data_end, pack->idx.pack_checksum,
		   algo->rawsz)) {
		ret = ERR_CORRUPT("%s: checksum does not match its index",
				  pack->path);
		goto fail;
	}
	types_init(pack);
	*out = pack;
	return 0;
fail:
	file_unmap(idx_map, idx_len);
	file_unmap(pack->map, pack->map_len);
	free(pack->path);
	free(pack);
	return ret;
}

void pack_close(struct pack *pack)
{
	if (!pack)
		return;
	file_unmap(pack->idx.map, pack->idx.map_len);
	file_unmap(pack->map, pack->map_len);
	free((void *)pack->types);
	free(pack->path);
	free(pack);
}

int pack_entry_header(const struct pack *pack, uint64_t offset,
		      struct pack_entry *out)
{
	const unsigned char *p, *end = pack->map + pack->data_end;
	unsigned shift = 4;
	uint64_t size;
	unsigned char c;

	memset(out, 0, sizeof(*out));
	out->offset = offset;
	if (offset < PACK_HDR_LEN || offset >= pack->data_end)
		return ERR_CORRUPT("offset %llu outside the pack's entries",
				   (unsigned long long)offset);
	p = pack->map + offset;
	c = *p++;
	out->type = (enum obj_type)((c >> 4) & 7);
	size = c & 15;
	while (c & 0x80) {
		if (p >= end)
			return ERR_CORRUPT("truncated entry header");
		if (shift > 57)
			return ERR_CORRUPT("entry size varint too long");
		c = *p++;
		size |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	}
	if (size > SIZE_MAX)
		return ERR_CORRUPT("entry size %llu too large",
				   (unsigned long long)size);
	out->size = (size_t)size;

	switch (out->type) {
	case OBJ_COMMIT:
	case OBJ_TREE:
	case OBJ_BLOB:
	case OBJ_TAG:
		break;
	case OBJ_OFS_DELTA: {
		uint64_t off;

		if (p >= end)
			return ERR_CORRUPT("truncated delta base offset");
		c = *p++;
		off = c & 0x7f;
		while (c & 0x80) {
			if (p >= end)
				return ERR_CORRUPT("truncated delta base offset");
			if (off >= (UINT64_MAX >> 7) - 1)
				return ERR_CORRUPT("delta base offset overflows");
			c = *p++;
			off = ((off + 1) << 7) | (c & 0x7f);
		}
		if (off == 0 || off > offset - PACK_HDR_LEN)
			return ERR_CORRUPT("delta base offset %llu out of range",
					   (unsigned long long)off);
		out->base = offset - off;
		break;
	}
	case OBJ_REF_DELTA:
		if ((size_t)(end - p) < pack->algo->rawsz)
			return ERR_CORRUPT("truncated delta base name");
		out->base_name = p;
		p += pack->algo->rawsz;
		break;
	default:
		return ERR_CORRUPT("invalid entry type %d", out->type);
	}
	if (p >= end)
		return ERR_CORRUPT("entry has no data");
	out->data = (size_t)(p - pack->map);
	return 0;
}

/* Inflate an entry's data (whole object or delta) into out. */
static int pack_inflate(const struct pack *pack, const struct pack_entry *e,
			struct buf *out)
{
	size_t avail = pack->data_end - e->data;
	int ret;

	buf_reset(out);
	if (!inflate_size_plausible(avail, e->size))
		return ERR_CORRUPT("declares %zu bytes, more than the %zu compressed bytes left can hold",
				   e->size, avail);
	if ((ret = buf_grow(out, e->size)))
		return ret;
	if ((ret = inflate_exact(pack->map + e->data, avail, out->buf,
				 e->size, NULL)))
		return ret;
	out->len = e->size;
	out->buf[out->len] = '\0';
	return 0;
}

/* Where the REF_DELTA base named in e lives in this pack. */
static int pack_ref_base(const struct pack *pack, const struct pack_entry *e,
			 uint64_t *base)
{
	uint32_t pos;
	char hex[OID_HEXSZ_MAX + 1];
	struct oid oid;

	if (idx_find(&pack->idx, e->base_name, &pos)) {
		oid_from_raw(&oid, pack->algo, e->base_name);
		return ERR_CORRUPT("delta base %s is not in the pack",
				   oid_to_hex_r(hex, &oid));
	}
	return idx_offset(&pack->idx, pos, base);
}

struct chain {
	struct pack_entry inline_links[16];
	struct pack_entry *links;
	size_t nr, alloc;
};

static void chain_init(struct chain *ch)
{
	ch->links = ch->inline_links;
	ch->nr = 0;
	ch->alloc = sizeof(ch->inline_links) / sizeof(ch->inline_links[0]);
}

static void chain_release(struct chain *ch)
{
	if (ch->links != ch->inline_links)
		free(ch->links);
}

static int chain_push(struct chain *ch, const struct pack_entry *e)
{
	if (ch->nr >= ODB_MAX_DELTA_DEPTH)
		return err_set(XL_ETOOBIG, "delta chain deeper than %d",
			       ODB_MAX_DELTA_DEPTH);
	if (ch->nr == ch->alloc) {
		size_t alloc = ch->alloc * 2;
		struct pack_entry *p;

		if (ch->links == ch->inline_links) {
			p = malloc(alloc * sizeof(*p));
			if (p)
				memcpy(p, ch->links, ch->nr * sizeof(*p));
		} else {
			p = realloc(ch->links, alloc * sizeof(*p));
		}
		if (!p)
			return err_set(XL_ENOMEM, "out of memory");
		ch->links = p;
		ch->alloc = alloc;
	}
	ch->links[ch->nr++] = *e;
	return 0;
}

/*
 * Step from delta entry e to its base's offset, refusing REF_DELTA loops.
 */
static int chain_next(const struct pack *pack, const struct chain *ch,
		      const struct pack_entry *e, uint64_t *next)
{
	int ret;

	if (e->type == OBJ_OFS_DELTA) {
		*next = e->base;
		return 0;
	}
	if ((ret = pack_ref_base(pack, e, next)))
		return ret;
	for (size_t i = 0; i < ch->nr; i++)
		if (ch->links[i].offset == *next)
			return ERR_CORRUPT("REF_DELTA cycle through offset %llu",
					   (unsigned long long)*next);
	return 0;
}

/* A spare buffer for the result of delta, a base to be put in the cache. */
static void spare_for(struct delta_cache *cache, const struct buf *delta,
		      struct buf *out)
{
	const unsigned char *p = (const unsigned char *)delta->buf;
	size_t base_size, result_size;

	if (!delta_sizes(&p, p + delta->len, &base_size, &result_size))
		delta_cache_spare(cache, result_size, out);
}

int pack_read(struct pack *pack, uint64_t offset, enum obj_type *type,
	      struct buf *out)
{
	struct chain ch;
	struct pack_entry e;
	struct delta_cache_entry *base = NULL;
	struct buf tmp = BUF_INIT, delta = BUF_INIT;
	uint64_t cur = offset;
	const unsigned char *bdata;
	size_t blen;
	int ret;

	buf_reset(out);
	chain_init(&ch);

	/* 1. down the chain */
	for (;;) {
		if ((base = delta_cache_get(pack->cache, pack, cur)))
			break;
		if ((ret = pack_entry_header(pack, cur, &e)))
			goto fail;
		if (e.type != OBJ_OFS_DELTA && e.type != OBJ_REF_DELTA)
			break;
		if ((ret = chain_push(&ch, &e)) ||
		    (ret = chain_next(pack, &ch, &e, &cur)))
			goto fail;
	}

	/* 2. the base: a whole object needs no cache when it is the answer */
	if (!base) {
		if (!ch.nr) {
			if ((ret = pack_inflate(pack, &e, out)))
				goto fail;
			*type = e.type;
			chain_release(&ch);
			return 0;
		}
		delta_cache_spare(pack->cache, e.size, &tmp);
		if ((ret = pack_inflate(pack, &e, &tmp)))
			goto fail;
		base = delta_cache_put(pack->cache, pack, cur, e.type, &tmp);
		if (!base) {
			ret = err_set(XL_ENOMEM, "out of memory");
			goto fail;
		}
	}
	bdata = delta_cache_data(base, &blen, type);

	/* 3. up again, applying each delta */
	for (size_t i = ch.nr; i-- > 0;) {
		struct buf *dst = i ? &tmp : out;

		cur = ch.links[i].offset;
		if ((ret = pack_inflate(pack, &ch.links[i], &delta)))
			goto fail;
		if (i)
			spare_for(pack->cache, &delta, &tmp);
		if ((ret = delta_apply(bdata, blen,
				       (const unsigned char *)delta.buf,
				       delta.len, dst)))
			goto fail;
		delta_cache_unref(pack->cache, base);
		base = NULL;
		if (!i)
			break;
		base = delta_cache_put(pack->cache, pack, cur, *type, &tmp);
		if (!base) {
			ret = err_set(XL_ENOMEM, "out of memory");
			goto fail;
		}
		bdata = delta_cache_data(base, &blen, NULL);
	}
	if (!ch.nr) {
		/* the answer itself was cached as someone's base */
		if ((ret = buf_add(out, bdata, blen)))
			goto fail;
		delta_cache_unref(pack->cache, base);
	}
	buf_release(&delta);
	chain_release(&ch);
	return 0;
fail:
	delta_cache_unref(pack->cache, base);
	buf_release(&tmp);
	buf_release(&delta);
	buf_release(out);
	chain_release(&ch);
	return pack_fail(pack, cur, ret);
}

int pack_read_header(struct pack *pack, uint64_t offset,
		     enum obj_type *type, size_t *size)
{
	struct chain ch;
	struct pack_entry e, top = { 0 };
	uint64_t cur = offset;
	int ret;

	/*
	 * Only the type is wanted from the chain, so it is walked header by
	 * header without consulting the delta-base cache: in the common
	 * --batch-check walk nothing is cached, and a lookup per level
	 * costs more than reading the next header.
	 */
	chain_init(&ch);
	for (;;) {
		enum obj_type known = cur == offset ? OBJ_NONE :
				      types_get(pack, cur);

		if (known >= OBJ_COMMIT && known <= OBJ_TAG) {
			*type = known;
			break;
		}
		if ((ret = pack_entry_header(pack, cur, &e)))
			goto fail;
		if (cur == offset)
			top = e;
		if (e.type != OBJ_OFS_DELTA && e.type != OBJ_REF_DELTA) {
			*type = e.type;
			break;
		}
		if ((ret = chain_push(&ch, &e)) ||
		    (ret = chain_next(pack, &ch, &e, &cur)))
			goto fail;
	}
	/* every delta on the way makes that type */
	for (size_t i = 0; i < ch.nr; i++)
		types_put(pack, ch.links[i].offset, *type);
	chain_release(&ch);
	if (!size)
		return 0;
	if (top.type != OBJ_OFS_DELTA && top.type != OBJ_REF_DELTA) {
		*size = top.size;
	} else {
		/* the result size is the delta's second varint */
		unsigned char hdr[20];
		const unsigned char *p = hdr;
		size_t got, base_size;

		cur = offset;
		if ((ret = inflate_prefix(pack->map + top.data,
					  pack->data_end - top.data, hdr,
					  top.size < sizeof(hdr) ? top.size : sizeof(hdr),
					  &got)) ||
		    (ret = delta_sizes(&p, hdr + got, &base_size, size)))
			return pack_fail(pack, cur, ret);
	}
	return 0;
fail:
	chain_release(&ch);
	return pack_fail(pack, cur, ret);
}

/* ---- entries in pack order (for writers of other packs) ---------------- */

struct off_pos {
	uint64_t offset;
	uint32_t pos;
};

/*
 * The pack's (offset, pos) pairs in offset order, ties (a corrupt idx)
 * in pos order: a radix sort, a byte of the offset at a time from the
 * lowest, over the bytes the offsets use (three for a pack under 16
 * MiB).  Stable, and the pairs come in pos order.  It replaced a qsort()
 * of the entries, two thirds of this function's time.  0 and *out
 * (malloc'd), or an error.
 */
static int sorted_offsets(const struct pack *pack, uint32_t nr,
			  struct off_pos **out)
{
	struct off_pos *v = malloc((nr ? nr : 1) * sizeof(*v));
	struct off_pos *tmp = malloc((nr ? nr : 1) * sizeof(*tmp));
	struct off_pos *src = v, *dst = tmp, *t;
	uint64_t all = 0;
	int ret;

	if (!v || !tmp) {
		free(v);
		free(tmp);
		return err_set(XL_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < nr; i++) {
		if ((ret = idx_offset(&pack->idx, i, &v[i].offset))) {
			free(v);
			free(tmp);
			return ret;
		}
		v[i].pos = i;
		all |= v[i].offset;
	}
	for (unsigned shift = 0; shift < 64 && all >> shift; shift += 8) {
		uint32_t count[256] = { 0 }, at = 0;

		for (uint32_t i = 0; i < nr; i++)
			count[src[i].offset >> shift & 255]++;
		for (unsigned d = 0; d < 256; d++) {
			uint32_t c = count[d];

			count[d] = at;
			at += c;
		}
		for (uint32_t i = 0; i < nr; i++)
			dst[count[src[i].offset >> shift & 255]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	free(dst);
	*out = src;
	return 0;
}

/* The index of the entry at `offset` in the sorted array, or ODB_NO_BASE. */
static uint32_t entry_at(const struct odb_pack_entry *e, uint32_t nr,
			 uint64_t offset)
{
	uint32_t lo = 0, hi = nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (e[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && e[lo].offset == offset && e[lo].type != OBJ_NONE ?
		lo : ODB_NO_BASE;
}

int odb_pack_entries(const struct odb_pack_info *info,
		     struct odb_pack_entry **out)
{
	const struct pack *pack = info->pack;
	uint32_t nr = pack->idx.nr, *by_pos = NULL;
	struct odb_pack_entry *e;
	struct off_pos *sorted = NULL;
	int ret = 0;

	*out = NULL;
	if ((ret = sorted_offsets(pack, nr, &sorted)))
		return ret;
	if (!(e = calloc(nr ? nr : 1, sizeof(*e))) ||
	    !(by_pos = malloc((nr ? nr : 1) * sizeof(*by_pos)))) {
		free(e);
		free(sorted);
		return err_set(XL_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < nr; i++) {
		e[i].offset = sorted[i].offset;
		e[i].pos = sorted[i].pos;
	}
	free(sorted);
	for (uint32_t i = 0; i < nr; i++) {
		struct pack_entry pe;

		by_pos[e[i].pos] = i;
		e[i].end = i + 1 < nr ? e[i + 1].offset : pack->data_end;
		e[i].base = ODB_NO_BASE;
		if ((i && e[i - 1].offset == e[i].offset) ||
		    pack_entry_header(pack, e[i].offset, &pe)) {
			e[i].type = OBJ_NONE;
			e[i].end = e[i].offset;
			continue;
		}
		e[i].type = pe.type;
		e[i].size = pe.size;
		e[i].data = pe.data;
		if (e[i].data >= e[i].end)
			e[i].type = OBJ_NONE;
		else if (pe.type == OBJ_OFS_DELTA)	/* its base comes first */
			e[i].base = entry_at(e, i, pe.base);
	}
	err_clear();
	for (uint32_t i = 0; i < nr; i++) {
		struct pack_entry pe;
		uint32_t pos;

		if (e[i].type == OBJ_REF_DELTA &&
			   !pack_entry_header(pack, e[i].offset, &pe) &&
			   !idx_find(&pack->idx, pe.base_name, &pos)) {
			e[i].base = by_pos[pos];
			if (e[i].base == i || e[e[i].base].type == OBJ_NONE)
				e[i].base = ODB_NO_BASE;
		}
	}
	free(by_pos);
	*out = e;
	return 0;
}
