/*
 * idx.c: pack index files, versions 1 and 2, for 20- and 32-byte names.
 *
 *   v1: fanout[256] (be32 cumulative counts), then nr entries of
 *       (be32 offset, name), then the pack checksum and the idx checksum.
 *   v2: "\377tOc", be32 version 2, fanout[256], nr names (sorted),
 *       nr CRC32s, nr be32 offsets (MSB set: index into the next table),
 *       nr_large be64 offsets, pack checksum, idx checksum.
 *
 * Nothing is read from the tables until the file's length agrees with the
 * format's formula and the fanout is non-decreasing, so every later
 * lookup is in bounds by construction.  The trailing checksum of the idx
 * itself is not re-hashed: reading is what we do millions of times, and
 * a bad table entry is caught where it is used (offset range checks).
 */
#include "odb_i.h"

#include <string.h>

#define IDX_FANOUT_BYTES (256 * 4)

static const unsigned char idx_v2_magic[4] = { 0xff, 't', 'O', 'c' };

int idx_parse(struct idx *idx, const unsigned char *map, size_t len,
	      const struct hash_algo *algo, const char *path)
{
	size_t rawsz = algo->rawsz, hdr = 0, min_len, max_len, n;
	uint32_t prev = 0;

	memset(idx, 0, sizeof(*idx));
	idx->map = map;
	idx->map_len = len;
	idx->algo = algo;

	if (len >= 8 && !memcmp(map, idx_v2_magic, 4)) {
		uint32_t version = get_be32(map + 4);

		if (version != 2)
			return err_set(XL_EUNSUPPORTED,
				       "%s: index version %u not supported",
				       path, version);
		idx->version = 2;
		hdr = 8;
	} else {
		idx->version = 1;
	}
	if (len < hdr + IDX_FANOUT_BYTES + 2 * rawsz)
		return ERR_CORRUPT("%s: index file too small (%zu bytes)", path,
				   len);
	idx->fanout = map + hdr;
	for (int i = 0; i < 256; i++) {
		uint32_t c = get_be32(idx->fanout + 4 * i);

		if (c < prev)
			return ERR_CORRUPT("%s: fanout decreases at byte %02x",
					   path, i);
		prev = c;
	}
	idx->nr = prev;
	n = idx->nr;

	if (idx->version == 1) {
		/* 4-byte offset + name per entry */
		min_len = hdr + IDX_FANOUT_BYTES + n * (4 + rawsz) + 2 * rawsz;
		if (len != min_len)
			return ERR_CORRUPT("%s: v1 index of %zu objects should be %zu bytes, is %zu",
					   path, n, min_len, len);
		idx->names = map + hdr + IDX_FANOUT_BYTES;
	} else {
		/*
		 * names + CRC32 + offsets, two checksums, and up to nr-1
		 * large offsets (an offset < 2^31 never needs one).
		 */
		min_len = hdr + IDX_FANOUT_BYTES + n * (rawsz + 4 + 4) +
			  2 * rawsz;
		max_len = min_len + (n ? (n - 1) * 8 : 0);
		if (len < min_len || len > max_len || (len - min_len) % 8)
			return ERR_CORRUPT("%s: v2 index of %zu objects cannot be %zu bytes",
					   path, n, len);
		idx->names = map + hdr + IDX_FANOUT_BYTES;
		idx->offsets = idx->names + n * (rawsz + 4);
		idx->large = idx->offsets + n * 4;
		idx->nr_large = (uint32_t)((len - min_len) / 8);
	}
	idx->pack_checksum = map + len - 2 * rawsz;
	return 0;
}

const unsigned char *idx_name(const struct idx *idx, uint32_t i)
{
	if (idx->version == 1)
		return idx->names + (size_t)i * (4 + idx->algo->rawsz) + 4;
	return idx->names + (size_t)i * idx->algo->rawsz;
}

int idx_offset(const struct idx *idx, uint32_t i, uint64_t *out)
{
	uint32_t off;

	if (idx->version == 1) {
		*out = get_be32(idx->names + (size_t)i * (4 + idx->algo->rawsz));
		return 0;
	}
	off = get_be32(idx->offsets + (size_t)i * 4);
	if (!(off & 0x80000000u)) {
		*out = off;
		return 0;
	}
	off &= 0x7fffffffu;
	if (off >= idx->nr_large)
		return ERR_CORRUPT("index entry %u names large offset %u of %u",
				   i, off, idx->nr_large);
	*out = get_be64(idx->large + (size_t)off * 8);
	return 0;
}

int idx_find(const struct idx *idx, const unsigned char *raw, uint32_t *pos)
{
	size_t rawsz = idx->algo->rawsz;
	uint32_t lo = raw[0] ? get_be32(idx->fanout + 4 * (raw[0] - 1)) : 0;
	uint32_t hi = get_be32(idx->fanout + 4 * raw[0]);

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = memcmp(idx_name(idx, mid), raw, rawsz);

		if (!c) {
			*pos = mid;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	return XL_ENOTFOUND;
}
