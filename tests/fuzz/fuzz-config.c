/*
 * fuzz-config.c: config_parse(), and Git's boolean and integer spellings
 * on every value it finds.  Invariant: every key handed out is
 * section[.subsection].name, section and name in lower case (the section
 * may be empty, as in Git; the name may not).  A NUL byte in a quoted
 * subsection or a value cuts the string there, in Git as here, so input
 * with one is parsed but not checked.
 */
#include "fuzz.h"

#include <ctype.h>

struct seen {
	size_t keys;
	int has_nul;
};

static int each(const char *key, const char *value, void *data)
{
	const char *dot = strchr(key, '.'), *last = strrchr(key, '.');
	struct seen *s = data;
	long long n;

	s->keys++;
	if (s->has_nul)
		return 0;

	/* Git takes "[.sub]" and "[sec.]" too: only a name must follow */
	fuzz_check(dot && last && last[1]);
	for (const char *p = key; p < dot; p++)
		fuzz_check(!isupper((unsigned char)*p));
	for (const char *p = last + 1; *p; p++)
		fuzz_check(!isupper((unsigned char)*p));
	if (value) {
		(void)config_bool(value);
		(void)config_int(value, &n);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = (char *)fuzz_copy(data, size);
	struct seen s = { 0, size && memchr(data, '\0', size) != NULL };

	if (!text)
		return 0;
	(void)config_parse(text, size, "fuzz", each, &s);
	free(text);
	err_clear();
	return 0;
}
