/*
 * fuzz-reftable.c: reftable_parse_table() on one table, either
 * algorithm (the first input byte picks).  Invariant: every ref record
 * it hands out has a name, and a value or a target, not both.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct hash_algo *algo;
	struct ref_array arr = { 0 };
	unsigned char *map;

	if (size < 1)
		return 0;
	algo = data[0] & 1 ? &hash_sha1 : &hash_sha256;
	if (!(map = fuzz_copy(data + 1, size - 1)))
		return 0;
	if (!reftable_parse_table(map, size - 1, "fuzz", algo, &arr))
		for (size_t i = 0; i < arr.nr; i++)
			fuzz_check(arr.refs[i].name != NULL);
	ref_array_release(&arr);
	free(map);
	err_clear();
	return 0;
}
