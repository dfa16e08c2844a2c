/*
 * fuzz-resolve.c: names as `git xlate cat-file --batch` reads them from
 * its input lines (xlate_resolve(): hex of either algorithm, full or
 * abbreviated, refs with Git's DWIM rules, ^{type}, ^N, ~N, :path,
 * ^{sha1}/^{sha256}), against a real repository and its cache: the one
 * named by $XL_FUZZ_REPO (run.sh and t0510 point it at a fixture that
 * seed.sh kept, with its cache built).  The repository is opened once,
 * on the first input, and kept: this harness runs on one thread.
 * Each line of the input (at most 16) is one name.  Invariant: a name
 * that resolves, written as the full hex of what it resolved to,
 * resolves to the same object.
 */
#include "fuzz.h"
#include "../../cache/cache.h"
#include "../../xlate/xlate.h"

static struct {
	struct repo *repo;
	struct cache *cache;
	int tried;
} fixture;

static int open_fixture(void)
{
	const char *path = getenv("XL_FUZZ_REPO");
	char cpath[4200];

	if (fixture.tried)
		return fixture.repo && fixture.cache ? 0 : -1;
	fixture.tried = 1;
	if (!path) {
		fprintf(stderr, "fuzz-resolve: XL_FUZZ_REPO is not set\n");
		return -1;
	}
	snprintf(cpath, sizeof(cpath), "%s/xlatefs-cache.sqlite", path);
	if (repo_open(&fixture.repo, path) ||
	    cache_open(&fixture.cache, cpath, &hash_sha256, 0, NULL, NULL)) {
		fprintf(stderr, "fuzz-resolve: %s: %s\n", path, err_msg());
		return -1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf name = BUF_INIT;
	const struct hash_algo *given;
	struct oid oid, again;
	char hex[OID_HEXSZ_MAX + 1];

	if (open_fixture())
		abort();	/* not a finding: the harness cannot run */
	/* input lines, as cat-file reads them (a NUL ends a name too) */
	for (size_t i = 0, lines = 0; i <= size && lines < 16; i++) {
		if (i < size && data[i] != '\n') {
			if (data[i])
				buf_addch(&name, data[i]);
			continue;
		}
		lines++;
		if (!xlate_resolve(fixture.repo, fixture.cache, name.buf, &oid,
				   &given)) {
			fuzz_check(oid.algo == &hash_sha256);
			fuzz_check(!xlate_resolve(fixture.repo, fixture.cache,
						  oid_to_hex_r(hex, &oid), &again,
						  &given));
			fuzz_check(!oid_cmp(&oid, &again));
		}
		buf_reset(&name);
		err_clear();
	}
	buf_release(&name);
	err_clear();
	return 0;
}
