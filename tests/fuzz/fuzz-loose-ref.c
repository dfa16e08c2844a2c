/*
 * fuzz-loose-ref.c: a loose ref file (loose_ref_parse()), either
 * algorithm (the first input byte picks).  Invariant: what it reads,
 * written out again as Git writes it ("<hex>\n" or "ref: <target>\n"),
 * reads back the same.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct hash_algo *algo;
	struct buf text = BUF_INIT, again = BUF_INIT;
	struct ref ref, ref2;
	char hex[OID_HEXSZ_MAX + 1];

	if (size < 1)
		return 0;
	algo = data[0] & 1 ? &hash_sha1 : &hash_sha256;
	/* as file_read() leaves a file: NUL-terminated */
	if (buf_add(&text, data + 1, size - 1))
		goto out;
	if (loose_ref_parse(algo, "fuzz", "refs/heads/fuzz", &text, &ref))
		goto out;
	if (ref.target)
		buf_addf(&again, "ref: %s\n", ref.target);
	else
		buf_addf(&again, "%s\n", oid_to_hex_r(hex, &ref.oid));
	fuzz_check(!loose_ref_parse(algo, "again", "refs/heads/fuzz", &again, &ref2));
	fuzz_check(!ref.target == !ref2.target);
	fuzz_check(ref.target ? !strcmp(ref.target, ref2.target) :
		   !oid_cmp(&ref.oid, &ref2.oid));
	ref_release(&ref2);
	ref_release(&ref);
out:
	buf_release(&text);
	buf_release(&again);
	err_clear();
	return 0;
}
