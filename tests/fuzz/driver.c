/*
 * driver.c: run a fuzz target over files, without libFuzzer.
 *
 *   fuzz-TARGET-replay FILE|DIR...
 *
 * Each file (each file of a directory, not recursively) is one input.
 * Prints "replayed N inputs" and exits 0; a target that finds a bug
 * aborts (and AddressSanitizer, where built in, says where).
 */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		perror(path);
		return -1;
	}
	do {
		if (len == cap) {
			unsigned char *p;

			cap = cap ? 2 * cap : 65536;
			if (!(p = realloc(buf, cap))) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long n = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct dirent *de;
		DIR *d;

		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 2;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]))
				return 2;
			n++;
			continue;
		}
		if (!(d = opendir(argv[i]))) {
			perror(argv[i]);
			return 2;
		}
		while ((de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (stat(path, &st) || !S_ISREG(st.st_mode))
				continue;
			if (run_file(path)) {
				closedir(d);
				return 2;
			}
			n++;
		}
		closedir(d);
	}
	printf("replayed %lu inputs\n", n);
	return 0;
}
