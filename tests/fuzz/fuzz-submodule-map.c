/*
 * fuzz-submodule-map.c: xlate_read_map(), the file of
 * "<sha256-hex> <sha1-hex>" lines given with submodule_map=.
 * Invariant: the pairs it reads, written out again, read back the same.
 */
#include "fuzz.h"
#include "../../xlate/xlate.h"

struct pairs {
	struct buf text;	/* the pairs, written out again */
	size_t nr;
};

static int note_pair(void *data, const struct oid *o256, const struct oid *o1)
{
	struct pairs *p = data;
	char a[OID_HEXSZ_MAX + 1], b[OID_HEXSZ_MAX + 1];

	p->nr++;
	return buf_addf(&p->text, "%s %s\n", oid_to_hex_r(a, o256),
			oid_to_hex_r(b, o1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pairs first = { BUF_INIT, 0 }, again = { BUF_INIT, 0 };
	char *dir = fuzz_tmpdir(), path[4200];

	if (!dir || fuzz_write(dir, "map", data, size))
		goto out;
	snprintf(path, sizeof(path), "%s/map", dir);
	if (xlate_read_map(path, note_pair, &first))
		goto out;
	fuzz_check(!fuzz_write(dir, "again", first.text.buf, first.text.len));
	snprintf(path, sizeof(path), "%s/again", dir);
	fuzz_check(!xlate_read_map(path, note_pair, &again));
	fuzz_check(again.nr == first.nr && again.text.len == first.text.len &&
		   !memcmp(again.text.buf, first.text.buf, first.text.len));
out:
	buf_release(&first.text);
	buf_release(&again.text);
	fuzz_rmtree(dir);
	err_clear();
	return 0;
}
