/*
 * fuzz-alternates.c: objects/info/alternates, read when an object
 * directory is opened (odb_open()): one directory a line, absolute or
 * relative, comments, blank lines; loops and depth.  The input is the
 * alternates file of a scratch object directory that holds one more
 * object directory, "alt/objects", which names the first one back.
 * Invariant: the odb opens or refuses, and closes; nothing more to say.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *dir = fuzz_tmpdir(), objdir[4200], back[4300];
	struct odb *odb;

	if (!dir)
		return 0;
	snprintf(objdir, sizeof(objdir), "%s/objects", dir);
	snprintf(back, sizeof(back), "%s\n", objdir);
	if (fuzz_write(dir, "objects/info/alternates", data, size) ||
	    fuzz_write(dir, "alt/objects/info/alternates", back, strlen(back)) ||
	    fuzz_write(dir, "objects/pack/.keep", "", 0))
		goto out;
	if (!odb_open(&odb, objdir, &hash_sha256))
		odb_close(odb);
out:
	fuzz_rmtree(dir);
	err_clear();
	return 0;
}
