/*
 * fuzz-delta.c: delta_sizes() and delta_apply().
 *
 * Input: two bytes of base length L (big-endian), L bytes of base (fewer
 * if the input ends), then the delta.  Invariant: a delta that applies
 * declares the base it was given and makes exactly the size it declares.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t blen, base_size, result_size;
	unsigned char *base, *delta;
	const unsigned char *p;
	struct buf out = BUF_INIT;
	int sized, ret;

	if (size < 2)
		return 0;
	blen = (size_t)data[0] << 8 | data[1];
	if (blen > size - 2)
		blen = size - 2;
	base = fuzz_copy(data + 2, blen);
	delta = fuzz_copy(data + 2 + blen, size - 2 - blen);
	if (!base || !delta)
		goto out;
	p = delta;
	sized = delta_sizes(&p, delta + (size - 2 - blen), &base_size, &result_size);
	ret = delta_apply(base, blen, delta, size - 2 - blen, &out);
	if (!ret) {
		fuzz_check(!sized);
		fuzz_check(base_size == blen);
		fuzz_check(out.len == result_size);
	}
out:
	buf_release(&out);
	free(base);
	free(delta);
	err_clear();
	return 0;
}
