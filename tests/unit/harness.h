/*
 * harness.h: a small TAP test harness for the C unit tests.
 *
 * A test file defines functions with TEST(name) and lists them in a
 * TESTS table; main() comes from harness.c.  Each test prints one TAP line
 * ("ok N - name" or "not ok N - name"), checks inside a test print the
 * failing expression and location as "# " comments, and the program exits
 * non-zero if any test failed.  `t-foo NAME...` runs only the named tests.
 */
#ifndef XLATEFS_HARNESS_H
#define XLATEFS_HARNESS_H

#include <stddef.h>
#include <string.h>

struct test {
	const char *name;
	void (*fn)(void);
};

#define TEST(name) static void test_##name(void)
#define T(name) { #name, test_##name }

/* Each test file defines this table, ended by { NULL, NULL }. */
extern const struct test tests[];

void harness_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                     \
	do {                                                            \
		if (!(cond))                                            \
			harness_fail(__FILE__, __LINE__, "%s", #cond);  \
	} while (0)

#define CHECK_INT(a, b)                                                 \
	do {                                                            \
		long long a_ = (long long)(a), b_ = (long long)(b);     \
		if (a_ != b_)                                           \
			harness_fail(__FILE__, __LINE__,                \
				     "%s == %s (%lld != %lld)", #a, #b, \
				     a_, b_);                           \
	} while (0)

#define CHECK_STR(a, b)                                                 \
	do {                                                            \
		const char *a_ = (a), *b_ = (b);                        \
		if (!a_ || !b_ || strcmp(a_, b_))                       \
			harness_fail(__FILE__, __LINE__,                \
				     "%s == %s (\"%s\" != \"%s\")", #a, \
				     #b, a_ ? a_ : "(null)",            \
				     b_ ? b_ : "(null)");               \
	} while (0)

#define CHECK_MEM(a, b, n)                                              \
	do {                                                            \
		if (memcmp((a), (b), (n)))                              \
			harness_fail(__FILE__, __LINE__,                \
				     "%s == %s (%zu bytes differ)", #a, \
				     #b, (size_t)(n));                  \
	} while (0)

/*
 * A copy of n bytes placed so that its last byte ends a page and the next
 * page is inaccessible: reading one byte past the end faults at once.
 * An empty copy is a pointer to the guard page (any read faults).
 * Freed with guarded_free().
 */
void *guarded_copy(const void *data, size_t n);
void guarded_free(void *p);

/* Directory holding tests/ data (from $XL_TEST_DATA, default "tests"). */
const char *test_data_dir(void);

/*
 * Unpack tests/fixtures/NAME.tar.gz (once per process) into a scratch
 * directory and put the path of its NAME.git into `repo`.  The scratch
 * directory goes when the program exits.
 */
void fixture_repo(const char *name, char *repo, size_t size);

#endif
