/*
 * harness.c: main() and helpers for the unit tests; see harness.h.
 */
#include "harness.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int current_failed;	/* set by harness_fail while a test runs */

void harness_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "# %s:%d: check failed: ", file, line);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	current_failed = 1;
}

struct guard {
	void *base;
	size_t total;
};

void *guarded_copy(const void *data, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* at least one byte of body, so that p never sits on the guard page */
	size_t body = (n + sizeof(struct guard) + 1 + page - 1) / page * page;
	size_t total = body + page;
	unsigned char *base, *p;
	struct guard g;

	base = mmap(NULL, total, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		abort();
	if (mprotect(base + body, page, PROT_NONE))
		abort();
	p = base + body - n;
	g.base = base;
	g.total = total;
	memcpy(base, &g, sizeof(g));
	if (n)
		memcpy(p, data, n);
	return p;
}

void guarded_free(void *p)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/*
	 * Start from the byte before p: for an empty copy p is the guard
	 * page itself, and otherwise p - 1 still lies in the copy's pages.
	 */
	unsigned char *base = (unsigned char *)((uintptr_t)((char *)p - 1) &
						~(page - 1));
	struct guard g;

	/* the header sits at the start of the first page: walk back to it */
	for (;;) {
		memcpy(&g, base, sizeof(g));
		if (g.base == base)
			break;
		base -= page;
	}
	munmap(g.base, g.total);
}

static char fixture_dir[256];	/* the scratch directory, once made */

static void fixture_cleanup(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fixture_dir);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", fixture_dir);
}

void fixture_repo(const char *name, char *repo, size_t size)
{
	char cmd[1024], path[512];
	struct stat st;

	if (!fixture_dir[0]) {
		snprintf(fixture_dir, sizeof(fixture_dir), "%s/xl-fixture.XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(fixture_dir))
			abort();
		atexit(fixture_cleanup);
	}
	/* history-loose.tar.gz holds history-loose.git, and so on */
	snprintf(repo, size, "%s/%s.git", fixture_dir, name);
	snprintf(path, sizeof(path), "%s", repo);
	if (!stat(path, &st))
		return;
	snprintf(cmd, sizeof(cmd), "tar -xzf '%s/fixtures/%s.tar.gz' -C '%s'",
		 test_data_dir(), name, fixture_dir);
	if (system(cmd))
		abort();
}

const char *test_data_dir(void)
{
	const char *d = getenv("XL_TEST_DATA");

	return d && *d ? d : "tests";
}

int main(int argc, char **argv)
{
	int n = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (const struct test *t = tests; t->name; t++) {
		if (argc > 1) {
			int want = 0;

			for (int i = 1; i < argc; i++)
				if (!strcmp(argv[i], t->name))
					want = 1;
			if (!want)
				continue;
		}
		current_failed = 0;
		t->fn();
		n++;
		printf("%sok %d - %s\n", current_failed ? "not " : "", n,
		       t->name);
		failed += current_failed;
	}
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
