/*
 * fuzz-idx.c: idx_parse() on .idx files of either version and either
 * algorithm (the first input byte picks the algorithm), then every name
 * and offset it accepts, and a lookup of each name.  Invariant: a name
 * found is found where it is.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct hash_algo *algo;
	unsigned char *map;
	struct idx idx;

	if (size < 1)
		return 0;
	algo = data[0] & 1 ? &hash_sha1 : &hash_sha256;
	if (!(map = fuzz_copy(data + 1, size - 1)))
		return 0;
	if (!idx_parse(&idx, map, size - 1, algo, "fuzz.idx")) {
		for (uint32_t i = 0; i < idx.nr && i < 4096; i++) {
			const unsigned char *name = idx_name(&idx, i);
			uint64_t off;
			uint32_t pos;

			(void)idx_offset(&idx, i, &off);
			if (!idx_find(&idx, name, &pos))
				fuzz_check(!memcmp(idx_name(&idx, pos), name,
						   algo->rawsz));
		}
	}
	free(map);
	err_clear();
	return 0;
}
