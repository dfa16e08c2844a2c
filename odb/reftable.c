/*
 * reftable.c: the refs of a reftable stack ($GIT_DIR/reftable/), as Git's
 * Documentation/technical/reftable describes the format.
 *
 * The stack.  tables.list names the table files, one a line, oldest
 * first.  A record in a later table replaces the record of the same name
 * in an earlier one, and a deletion record (a tombstone) removes it.
 *
 * A table, as read here:
 *
 *   header     'REFT', uint8 version, uint24 block_size,
 *              uint64 min_update_index, uint64 max_update_index, and in
 *              version 2 a uint32 hash id ("sha1" or "s256").  24 bytes
 *              (version 1, SHA-1 implied) or 28 (version 2).
 *   ref blocks 'r', uint24 block_len, ref records, uint24 restart
 *              offsets, uint16 restart count.  The first block starts at
 *              offset 0 and holds the file header: its block_len and its
 *              restart offsets count from the start of the file.  In an
 *              aligned table (block_size != 0) a block may be followed by
 *              NUL padding up to block_size; a block followed by anything
 *              else (the last one, typically) is not padded.
 *   then       ref index 'i', obj 'o', log 'g' sections: not read.
 *   footer     the header again, five uint64 positions (ref index,
 *              obj << 5 | obj_id_len, obj index, log, log index) and a
 *              CRC-32 of the bytes before it.  68 or 72 bytes.
 *
 *   ref record varint prefix_len, varint (suffix_len << 3 | type),
 *              suffix, varint update_index_delta, then by type:
 *              0 deletion; 1 object id; 2 object id + peeled id;
 *              3 varint length + symref target.  The key is the first
 *              prefix_len bytes of the previous key plus the suffix.
 *   varint     the pack's offset encoding: 7 bits a byte, big-endian,
 *              each continuation adding one before the shift.
 *
 * Only ref blocks are read: the indexes speed up lookups we do not make
 * and the log blocks are reflogs.  The footer's positions bound the ref
 * section.  Every length is checked against the bytes left before it is
 * used; keys must ascend strictly and every restart offset must land on
 * a record with no shared prefix, so that a damaged block is reported
 * rather than read as different refs.
 */
#include "odb_i.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define REFTABLE_LIST_MAX (16u << 20)	/* a larger tables.list is a lie */
#define REFTABLE_RETRIES 5	/* rereads of a stack compacted under us */
#define REFTABLE_HASH_SHA1 0x73686131u	/* "sha1" */
#define REFTABLE_HASH_S256 0x73323536u	/* "s256" */

struct reftable {
	const unsigned char *map;
	size_t len;
	const char *name;		/* for messages */
	const struct hash_algo *algo;
	size_t hdr_len;			/* 24 or 28 */
	size_t block_size;		/* 0: unaligned */
	size_t ref_end;			/* where the ref section stops */
	struct buf key;			/* the previous record's name */
	struct buf target;
	int have_key;
};

/*
 * A deletion travels through the merge as a ref whose oid has no
 * algorithm (a stored ref always has one), and is dropped at the end.
 */
static int reftable_is_tombstone(const struct ref *ref)
{
	return !ref->oid.algo;
}

static size_t get_be24(const unsigned char *p)
{
	return (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
}

/* 0, or -1 if the varint runs past `end` or past 64 bits. */
static int reftable_get_varint(const unsigned char **pp,
			       const unsigned char *end, uint64_t *out)
{
	const unsigned char *p = *pp;
	uint64_t val;

	if (p >= end)
		return -1;
	val = *p & 0x7f;
	while (*p++ & 0x80) {
		if (p >= end || val >= UINT64_MAX >> 7)
			return -1;
		val = ((val + 1) << 7) | (*p & 0x7f);
	}
	*pp = p;
	*out = val;
	return 0;
}

/*
 * Compare the key prev[0..prefix) + suffix with prev, which it shares
 * `prefix` bytes with; > 0 if it sorts after.
 */
static int reftable_key_cmp(const struct buf *prev, size_t prefix,
			    const unsigned char *suffix, size_t suffix_len)
{
	size_t rest = prev->len - prefix;
	int c = memcmp(suffix, prev->buf + prefix,
		       suffix_len < rest ? suffix_len : rest);

	if (c)
		return c;
	return suffix_len > rest ? 1 : suffix_len < rest ? -1 : 0;
}

/*
 * One record at *pp (block offset `off`), its key sharing nothing with
 * the previous one if it is a restart point.  Pushes it to arr.
 */
static int reftable_record_read(struct reftable *t, const unsigned char **pp,
				const unsigned char *end, size_t off,
				int restart, struct ref_array *arr)
{
	const unsigned char *p = *pp;
	uint64_t prefix, suffix_type, delta, target_len;
	size_t suffix_len;
	struct ref ref = { 0 };
	int type, ret;

	if (reftable_get_varint(&p, end, &prefix) ||
	    reftable_get_varint(&p, end, &suffix_type))
		return ERR_CORRUPT("reftable %s: record at %zu runs past its block",
				   t->name, off);
	suffix_len = (size_t)(suffix_type >> 3);
	type = suffix_type & 7;
	if (prefix > t->key.len || (restart && prefix))
		return ERR_CORRUPT("reftable %s: record at %zu: bad prefix length %llu",
				   t->name, off, (unsigned long long)prefix);
	if (suffix_type >> 3 > (uint64_t)(end - p))
		return ERR_CORRUPT("reftable %s: record at %zu: key runs past its block",
				   t->name, off);
	if (!prefix && !suffix_len)
		return ERR_CORRUPT("reftable %s: record at %zu: empty ref name",
				   t->name, off);
	if (memchr(p, '\0', suffix_len))
		return ERR_CORRUPT("reftable %s: record at %zu: NUL in ref name",
				   t->name, off);
	/* keys ascend strictly, through the whole table */
	if (t->have_key &&
	    reftable_key_cmp(&t->key, (size_t)prefix, p, suffix_len) <= 0)
		return ERR_CORRUPT("reftable %s: record at %zu: ref names out of order",
				   t->name, off);
	if ((ret = buf_setlen(&t->key, (size_t)prefix)) ||
	    (ret = buf_add(&t->key, p, suffix_len)))
		return ret;
	t->have_key = 1;
	p += suffix_len;
	if (reftable_get_varint(&p, end, &delta))
		return ERR_CORRUPT("reftable %s: record at %zu runs past its block",
				   t->name, off);

	ref.name = t->key.buf;
	switch (type) {
	case 0:			/* deletion: oid.algo stays NULL */
		break;
	case 1:
	case 2:
		if ((size_t)(end - p) < t->algo->rawsz * type)
			return ERR_CORRUPT("reftable %s: %s: object id runs past its block",
					   t->name, t->key.buf);
		oid_from_raw(&ref.oid, t->algo, p);
		p += t->algo->rawsz;
		if (type == 2) {
			oid_from_raw(&ref.peeled, t->algo, p);
			ref.has_peeled = 1;
			p += t->algo->rawsz;
		}
		break;
	case 3:
		if (reftable_get_varint(&p, end, &target_len) ||
		    target_len > (uint64_t)(end - p))
			return ERR_CORRUPT("reftable %s: %s: symref target runs past its block",
					   t->name, t->key.buf);
		if (!target_len || memchr(p, '\0', (size_t)target_len))
			return ERR_CORRUPT("reftable %s: %s: bad symref target",
					   t->name, t->key.buf);
		buf_reset(&t->target);
		if ((ret = buf_add(&t->target, p, (size_t)target_len)))
			return ret;
		p += target_len;
		ref.target = t->target.buf;
		ref.oid.algo = t->algo;	/* null: resolving is the caller's job */
		break;
	default:
		return ERR_CORRUPT("reftable %s: %s: unknown value type %d",
				   t->name, t->key.buf, type);
	}
	*pp = p;
	return ref_array_push(arr, &ref);
}

/*
 * The ref block whose offsets count from `base` and whose 'r' is at `hdr`
 * (past the file header in the first block).  *next gets where the block
 * after it starts.
 */
static int reftable_block_read(struct reftable *t, size_t base, size_t hdr,
			       struct ref_array *arr, size_t *next)
{
	const unsigned char *blk = t->map + base, *p, *end;
	size_t block_len, rec_start = hdr - base + 4, restarts, r = 0, stop;
	unsigned restart_count;
	int ret;

	if (t->ref_end - hdr < 4)
		return ERR_CORRUPT("reftable %s: block header at %zu cut short",
				   t->name, hdr);
	block_len = get_be24(t->map + hdr + 1);
	if (block_len > t->ref_end - base || block_len < rec_start + 2 ||
	    (t->block_size && block_len > t->block_size))
		return ERR_CORRUPT("reftable %s: ref block at %zu: bad length %zu",
				   t->name, base, block_len);
	restart_count = (unsigned)blk[block_len - 2] << 8 | blk[block_len - 1];
	if (!restart_count || (block_len - rec_start - 2) / 3 < restart_count)
		return ERR_CORRUPT("reftable %s: ref block at %zu: restart count %u does not fit",
				   t->name, base, restart_count);
	restarts = block_len - 2 - 3 * (size_t)restart_count;

	p = blk + rec_start;
	end = blk + restarts;
	while (p < end) {
		size_t off = (size_t)(p - blk), at;
		int restart = p == blk + rec_start;

		/* each restart offset must land on a record start, in order */
		if (r < restart_count) {
			at = get_be24(blk + restarts + 3 * r);
			if (at < off)
				return ERR_CORRUPT("reftable %s: ref block at %zu: restart offset %zu is not a record",
						   t->name, base, at);
			if (at == off) {
				restart = 1;
				r++;
			}
		}
		if ((ret = reftable_record_read(t, &p, end, base + off,
						restart, arr)))
			return ret;
	}
	if (r != restart_count)
		return ERR_CORRUPT("reftable %s: ref block at %zu: restart offset past the records",
				   t->name, base);

	stop = base + block_len;
	if (!t->block_size || stop == t->ref_end || t->map[stop])
		*next = stop;
	else if (t->ref_end - base < t->block_size)
		return ERR_CORRUPT("reftable %s: ref block at %zu: padding runs past the ref section",
				   t->name, base);
	else
		*next = base + t->block_size;
	return 0;
}

int reftable_parse_table(const unsigned char *map, size_t len,
			 const char *name, const struct hash_algo *algo,
			 struct ref_array *arr)
{
	struct reftable t = {
		.map = map, .len = len, .name = name,
		.key = BUF_INIT, .target = BUF_INIT,
	};
	const unsigned char *footer;
	size_t footer_len, footer_start, base, hdr, next = 0;
	int ret = 0;

	if (len < 24 || memcmp(map, "REFT", 4))
		return ERR_CORRUPT("reftable %s: not a reftable (bad magic or too short)",
				   name);
	if (map[4] == 1) {
		t.hdr_len = 24;
		t.algo = &hash_sha1;
	} else if (map[4] == 2) {
		uint32_t id;

		t.hdr_len = 28;
		if (len < 28)
			return ERR_CORRUPT("reftable %s: header cut short", name);
		id = get_be32(map + 24);
		if (id == REFTABLE_HASH_SHA1)
			t.algo = &hash_sha1;
		else if (id == REFTABLE_HASH_S256)
			t.algo = &hash_sha256;
		else
			return ERR_CORRUPT("reftable %s: unknown hash id %08x",
					   name, (unsigned)id);
	} else {
		return err_set(XL_EUNSUPPORTED, "reftable %s: unsupported version %d",
			       name, map[4]);
	}
	if (t.algo != algo)
		return ERR_CORRUPT("reftable %s: %s table in a %s repository",
				   name, t.algo->name, algo->name);
	t.block_size = get_be24(map + 5);

	/* the footer: the header again, five positions, a CRC-32 */
	footer_len = t.hdr_len + 5 * 8 + 4;
	if (len - t.hdr_len < footer_len)
		return ERR_CORRUPT("reftable %s: too short for a footer", name);
	footer_start = len - footer_len;
	footer = map + footer_start;
	if (memcmp(footer, map, t.hdr_len))
		return ERR_CORRUPT("reftable %s: footer does not repeat the header",
				   name);
	if (crc32(0, footer, (uInt)(footer_len - 4)) !=
	    get_be32(footer + footer_len - 4))
		return ERR_CORRUPT("reftable %s: footer checksum mismatch", name);
	t.ref_end = footer_start;
	for (int i = 0; i < 5; i++) {
		uint64_t pos = get_be64(footer + t.hdr_len + 8 * i);

		if (i == 1)
			pos >>= 5;	/* the low bits are obj_id_len */
		if (!pos)
			continue;
		if (pos < t.hdr_len || pos >= footer_start)
			return ERR_CORRUPT("reftable %s: section position %llu out of range",
					   name, (unsigned long long)pos);
		if (pos < t.ref_end)
			t.ref_end = (size_t)pos;
	}

	/* ref blocks until another section (or the footer) begins */
	base = 0;
	hdr = t.hdr_len;
	while (hdr < t.ref_end && map[hdr] == 'r') {
		if ((ret = reftable_block_read(&t, base, hdr, arr, &next)))
			break;
		base = hdr = next;
	}
	if (!ret && hdr < t.ref_end && !memchr("iog", map[hdr], 3))
		ret = ERR_CORRUPT("reftable %s: unknown block type 0x%02x at %zu",
				  name, map[hdr], hdr);
	buf_release(&t.key);
	buf_release(&t.target);
	return ret;
}

/*
 * Read every table named in `list`, in order, into `all`.  A table that
 * is not there is XL_ENOTFOUND with its path in `missing`: a compaction
 * may have replaced the stack since tables.list was read.
 */
static int reftable_read_stack(const char *dir, const struct buf *list,
			       const struct hash_algo *algo,
			       struct ref_array *all, struct buf *missing)
{
	struct buf name = BUF_INIT, path = BUF_INIT;
	const char *p = list->buf, *end = list->buf + list->len;
	int ret = 0;

	while (p < end && !ret) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		const unsigned char *map;
		size_t len;

		buf_reset(&name);
		if ((ret = buf_add(&name, p, n)) ||
		    (ret = path_join(&path, dir, name.buf)))
			break;
		p = nl ? nl + 1 : end;
		/* a name, not a path: the stack stays inside its directory */
		if (!n || memchr(name.buf, '/', n) || memchr(name.buf, '\0', n) ||
		    !strcmp(name.buf, ".") || !strcmp(name.buf, "..")) {
			ret = ERR_CORRUPT("%s/tables.list: bad table name \"%s\"",
					  dir, name.buf);
			break;
		}
		ret = file_map_in(dir, path.buf, &map, &len);
		if (ret == XL_ENOTFOUND) {
			buf_reset(missing);
			if (buf_addstr(missing, path.buf))
				ret = XL_ENOMEM;
			break;
		}
		if (!ret) {
			ret = reftable_parse_table(map, len, path.buf, algo, all);
			file_unmap(map, len);
		}
	}
	buf_release(&name);
	buf_release(&path);
	return ret;
}

int reftable_read_refs(const char *dir, const struct hash_algo *algo,
		       struct ref_array *arr)
{
	struct buf path = BUF_INIT, list = BUF_INIT, missing = BUF_INIT;
	struct ref_array all = { 0 };
	int ret;

	if ((ret = path_join(&path, dir, "tables.list")))
		goto out;
	for (int attempt = 0;; attempt++) {
		ret = file_read_in(dir, path.buf, REFTABLE_LIST_MAX, &list);
		if (ret == XL_ENOTFOUND) {
			ret = err_set(XL_ENOTFOUND, "%s: no tables.list", dir);
			goto out;
		}
		if (ret)
			goto out;
		ret = reftable_read_stack(dir, &list, algo, &all, &missing);
		if (ret != XL_ENOTFOUND)
			break;
		ref_array_release(&all);
		if (attempt == REFTABLE_RETRIES) {
			ret = ERR_CORRUPT("reftable %s: listed in tables.list but missing",
					  missing.buf);
			goto out;
		}
	}
	if (ret || (ret = ref_array_sort_dedup(&all)))
		goto out;
	/* the newest record of each name is left: drop the deletions */
	for (size_t i = 0; i < all.nr && !ret; i++)
		if (!reftable_is_tombstone(&all.refs[i]))
			ret = ref_array_push(arr, &all.refs[i]);
out:
	ref_array_release(&all);
	buf_release(&path);
	buf_release(&list);
	buf_release(&missing);
	return ret;
}
