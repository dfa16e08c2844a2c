/*
 * fuzz-packed-refs.c: packed_refs_parse(), either algorithm (the first
 * input byte picks).  Invariant: the refs it reads, written out again as
 * a packed-refs file, read back the same (names, names of objects,
 * peeled names, broken marks).
 */
#include "fuzz.h"

static void write_refs(const struct ref_array *arr, struct buf *out)
{
	char hex[OID_HEXSZ_MAX + 1];

	buf_addstr(out, "# pack-refs with: peeled fully-peeled sorted \n");
	for (size_t i = 0; i < arr->nr; i++) {
		const struct ref *r = &arr->refs[i];

		if (r->broken)
			continue;	/* its name was changed to print it */
		buf_addf(out, "%s %s\n", oid_to_hex_r(hex, &r->oid), r->name);
		if (r->has_peeled)
			buf_addf(out, "^%s\n", oid_to_hex_r(hex, &r->peeled));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct hash_algo *algo;
	struct ref_array arr = { 0 }, again = { 0 };
	struct buf text = BUF_INIT;
	unsigned char *p;
	size_t j = 0;

	if (size < 1)
		return 0;
	algo = data[0] & 1 ? &hash_sha1 : &hash_sha256;
	if (!(p = fuzz_copy(data + 1, size - 1)))
		return 0;
	if (packed_refs_parse((const char *)p, size - 1, algo, "fuzz", &arr))
		goto out;
	write_refs(&arr, &text);
	fuzz_check(!packed_refs_parse(text.buf, text.len, algo, "again", &again));
	for (size_t i = 0; i < arr.nr; i++) {
		const struct ref *a = &arr.refs[i], *b;

		if (a->broken)
			continue;
		fuzz_check(j < again.nr);
		b = &again.refs[j++];
		fuzz_check(!b->broken && !strcmp(a->name, b->name));
		fuzz_check(!oid_cmp(&a->oid, &b->oid));
		fuzz_check(a->has_peeled == b->has_peeled);
		fuzz_check(!a->has_peeled || !oid_cmp(&a->peeled, &b->peeled));
	}
	fuzz_check(j == again.nr);
out:
	ref_array_release(&arr);
	ref_array_release(&again);
	buf_release(&text);
	free(p);
	err_clear();
	return 0;
}
