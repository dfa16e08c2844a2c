/*
 * fuzz-loose.c: a loose object file: the zlib stream, its "type size\0"
 * header and the content (loose_decode()).  Invariant: what decodes,
 * written again as Git writes it, decodes to the same type and bytes.
 */
#include "fuzz.h"

#include <zlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf out = BUF_INIT, again = BUF_INIT, raw = BUF_INIT;
	unsigned char *map = fuzz_copy(data, size), *z = NULL;
	enum obj_type type, type2;
	uLongf zlen;

	if (!map)
		return 0;
	if (loose_decode(map, size, "fuzz", &type, &out))
		goto out;
	fuzz_check(type_name(type) != NULL);
	buf_addf(&raw, "%s %zu", type_name(type), out.len);
	buf_addch(&raw, '\0');
	buf_add(&raw, out.buf, out.len);
	zlen = compressBound(raw.len);
	if (!(z = malloc(zlen)) ||
	    compress2(z, &zlen, (const Bytef *)raw.buf, raw.len, 1) != Z_OK)
		goto out;
	fuzz_check(!loose_decode(z, zlen, "again", &type2, &again));
	fuzz_check(type2 == type);
	fuzz_check(again.len == out.len && !memcmp(again.buf, out.buf, out.len));
out:
	free(z);
	free(map);
	buf_release(&out);
	buf_release(&again);
	buf_release(&raw);
	err_clear();
	return 0;
}
