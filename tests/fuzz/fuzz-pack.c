/*
 * fuzz-pack.c: pack entries: headers, OFS and REF deltas, chains, and
 * the inflating of each (pack_entry_header(), pack_read(),
 * pack_read_header()), on a pack made in memory around the input.
 *
 * Input: one byte n (at most 8 are used), n offsets of two bytes each
 * (big-endian, counted from the pack's first entry), then the entries.
 * The pack is "PACK", version 2, a count, the entries and a trailer; its
 * index lists no object, so every REF_DELTA base is missing.
 * Invariant: an entry that reads has the type and size that its header
 * read alone reports.
 */
#include "fuzz.h"

#define PACK_HDR 12

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char idx_head[8] = { 0xff, 't', 'O', 'c', 0, 0, 0, 2 };
	struct pack pack = { 0 };
	struct buf out = BUF_INIT;
	unsigned char *map = NULL, *idxmap = NULL;
	size_t n, body, rawsz = hash_sha256.rawsz, idx_len;

	if (size < 1)
		return 0;
	n = data[0] & 7;
	if (size < 1 + 2 * n)
		return 0;
	body = size - 1 - 2 * n;
	if (!(map = malloc(PACK_HDR + body + rawsz)))
		goto out;
	memcpy(map, "PACK\0\0\0\2\0\0\0\1", PACK_HDR);
	memcpy(map + PACK_HDR, data + 1 + 2 * n, body);
	memset(map + PACK_HDR + body, 0, rawsz);
	idx_len = 8 + 256 * 4 + 2 * rawsz;
	if (!(idxmap = calloc(1, idx_len)))
		goto out;
	memcpy(idxmap, idx_head, 8);
	if (idx_parse(&pack.idx, idxmap, idx_len, &hash_sha256, "fuzz.idx"))
		goto out;
	pack.path = (char *)"fuzz.pack";
	pack.map = map;
	pack.map_len = PACK_HDR + body + rawsz;
	pack.data_end = PACK_HDR + body;
	pack.algo = &hash_sha256;
	pack.cache = delta_cache_new(1 << 20);
	for (size_t i = 0; i < n; i++) {
		uint64_t off = PACK_HDR + ((size_t)data[1 + 2 * i] << 8 | data[2 + 2 * i]);
		struct pack_entry e;
		enum obj_type type, htype;
		size_t hsize;

		if (pack_entry_header(&pack, off, &e))
			continue;
		if (pack_read(&pack, off, &type, &out))
			continue;
		fuzz_check(!pack_read_header(&pack, off, &htype, &hsize));
		fuzz_check(htype == type && hsize == out.len);
	}
	delta_cache_free(pack.cache);
out:
	buf_release(&out);
	free(map);
	free(idxmap);
	err_clear();
	return 0;
}
