/*
 * fuzz-cache.c: opening a cache file that is not what we wrote
 * (cache_open() with every check, then reading every row), seeded with
 * caches that git xlate built for the fixtures.  A file that fails the
 * checks is moved aside and replaced, as a mount would do.  Invariant:
 * a cache that opens and reads through has as many rows as it counts.
 */
#include "fuzz.h"
#include "../../cache/cache.h"

static int count_row(const struct cache_object *co, void *data)
{
	(*(uint64_t *)data)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *dir = fuzz_tmpdir(), path[4200];
	struct cache *cache;
	uint64_t objects, bad, rows = 0;

	if (!dir || fuzz_write(dir, "c.sqlite", data, size))
		goto out;
	snprintf(path, sizeof(path), "%s/c.sqlite", dir);
	if (cache_open(&cache, path, &hash_sha256, CACHE_OPEN_CHECK_ALL, NULL, NULL))
		goto out;
	if (!cache_count(cache, &objects, &bad) &&
	    !cache_for_each(cache, CACHE_EACH_ALL, count_row, &rows))
		fuzz_check(rows == objects);
	cache_close(cache);
out:
	fuzz_rmtree(dir);
	err_clear();
	return 0;
}
