/*
 * fuzz-compat.c: xlate_compat_check(), which reads upstream Git's own
 * objects/loose-object-idx ("# loose-object-idx" and "<sha256> <sha1>"
 * lines) and judges every line against the cache.  The repository is
 * an empty SHA-256 one; its cache names three objects, which the seeds
 * use: one translated (ONE256 -> ONE1), one untranslatable for good,
 * one refused for now.  Invariants: every line after the header is
 * counted in exactly one class, and the callback hears of exactly the
 * bad ones (disagree, refused, malformed).
 */
#include "fuzz.h"
#include "../../cache/cache.h"
#include "../../xlate/xlate.h"

#define ONE256 "1111111111111111111111111111111111111111111111111111111111111111"
#define ONE1 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define BAD256 "2222222222222222222222222222222222222222222222222222222222222222"
#define LATER256 "3333333333333333333333333333333333333333333333333333333333333333"

static const char config[] =
	"[core]\n\trepositoryformatversion = 1\n\tbare = true\n"
	"[extensions]\n\tobjectformat = sha256\n";

struct heard {
	uint64_t bad, header;
};

static int hear(void *data, enum xlate_compat_bad kind, uint64_t lineno,
		const char *line, const struct oid *ours, const char *why)
{
	struct heard *h = data;

	fuzz_check(line && (why || kind == XLATE_COMPAT_DISAGREE));
	fuzz_check((kind == XLATE_COMPAT_DISAGREE) == !!ours);
	h->bad++;
	h->header += kind == XLATE_COMPAT_MALFORMED && lineno == 1;
	return 0;
}

static int put(struct cache *c, const char *hex256, const char *hex1,
	       const char *reason, int retry)
{
	struct cache_object co = { .type = OBJ_BLOB, .size256 = 3 };

	if (oid_from_hex(&co.sha256, &hash_sha256, hex256) ||
	    (hex1 && oid_from_hex(&co.sha1, &hash_sha1, hex1)))
		return -1;
	co.size1 = hex1 ? 3 : 0;
	co.reason = reason;
	co.retry = retry;
	return cache_put(c, &co);
}

/*
 * The repository and its cache, made by the first input and kept for
 * the others: only the file changes, and xlate_compat_check() reads it
 * afresh each time.  (Making a cache per input ran 35 inputs a second.)
 * libFuzzer and the replay driver run inputs on one thread.
 */
static struct {
	char *dir;
	struct repo *repo;
	struct cache *cache;
} kept;

static void teardown(void)
{
	cache_close(kept.cache);
	repo_close(kept.repo);
	fuzz_rmtree(kept.dir);
}

static int setup(void)
{
	char path[4200];

	if (!(kept.dir = fuzz_tmpdir()))
		return -1;
	atexit(teardown);
	if (fuzz_write(kept.dir, "r.git/HEAD", "ref: refs/heads/main\n", 21) ||
	    fuzz_write(kept.dir, "r.git/config", config, sizeof(config) - 1) ||
	    fuzz_write(kept.dir, "r.git/refs/heads/.keep", "", 0) ||
	    fuzz_write(kept.dir, "r.git/objects/info/.keep", "", 0))
		return -1;
	snprintf(path, sizeof(path), "%s/r.git", kept.dir);
	fuzz_check(!repo_open(&kept.repo, path));
	snprintf(path, sizeof(path), "%s/c.sqlite", kept.dir);
	fuzz_check(!cache_open(&kept.cache, path, &hash_sha256, 0, NULL, NULL));
	fuzz_check(!cache_begin(kept.cache) &&
		   !put(kept.cache, ONE256, ONE1, NULL, 0) &&
		   !put(kept.cache, BAD256, NULL, "fuzzed refusal", 0) &&
		   !put(kept.cache, LATER256, NULL, "a missing blob", 1) &&
		   !cache_commit(kept.cache));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xlate_compat c;
	struct heard h = { 0, 0 };

	if ((!kept.repo && setup()) ||
	    fuzz_write(kept.dir, "r.git/objects/loose-object-idx", data, size))
		goto out;
	if (!xlate_compat_check(kept.repo, kept.cache, hear, &h, &c)) {
		fuzz_check(c.present);
		fuzz_check(c.agree + c.disagree + c.refused + c.unnamed + c.stale +
			   (c.malformed - h.header) == c.lines);
		fuzz_check(h.bad == c.disagree + c.refused + c.malformed);
	}
out:
	err_clear();
	return 0;
}
