/*
 * fuzz.h: what every fuzz target shares.
 *
 * Each tests/fuzz/fuzz-*.c is one libFuzzer target: it defines
 * LLVMFuzzerTestOneInput() and, where its format has one, checks an
 * invariant, not just "no crash" (fuzz_check() aborts, which both
 * libFuzzer and the replay driver report).  `make fuzz` links each with
 * libFuzzer; `make check` links each with driver.c instead and replays
 * its seeds and every input that ever found a bug (tests/fuzz/regress/).
 */
#ifndef XLATEFS_FUZZ_H
#define XLATEFS_FUZZ_H

#include "../../odb/odb_i.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define fuzz_check(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: invariant failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

/*
 * A copy of the input in a buffer of its own size, so that AddressSanitizer
 * sees a read one byte past the end (libFuzzer's own buffer is exact too,
 * but the replay driver's is not).
 */
static inline unsigned char *fuzz_copy(const uint8_t *data, size_t size)
{
	unsigned char *p = malloc(size ? size : 1);

	if (p && size)
		memcpy(p, data, size);
	return p;
}

/*
 * A scratch directory of this run's own (mkdtemp), for targets whose
 * parser reads files; fuzz_rmtree() removes it again.  NULL on failure.
 */
char *fuzz_tmpdir(void);
void fuzz_rmtree(char *dir);
/* Write len bytes to dir/name (directories on the way are made). */
int fuzz_write(const char *dir, const char *name, const void *p, size_t len);

#endif
