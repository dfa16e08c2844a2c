/*
 * files.c: scratch files for the targets whose parsers read files
 * (linked into each of those targets only).
 */
#include "fuzz.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

char *fuzz_tmpdir(void)
{
	char tmpl[] = "/tmp/xl-fuzz.XXXXXX";
	char *d = mkdtemp(tmpl);

	return d ? strdup(d) : NULL;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

void fuzz_rmtree(char *dir)
{
	if (dir)
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

int fuzz_write(const char *dir, const char *name, const void *p, size_t len)
{
	char path[4096];
	int fd;

	for (const char *s = strchr(name, '/'); s; s = strchr(s + 1, '/')) {
		snprintf(path, sizeof(path), "%s/%.*s", dir, (int)(s - name), name);
		mkdir(path, 0700);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (len && write(fd, p, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return close(fd);
}
