/*
 * file.c: reading, mapping and naming files.
 */
#include "odb_i.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_error(const char *path)
{
	if (errno == ENOENT || errno == ENOTDIR)
		return err_set(XL_ENOTFOUND, "%s: no such file", path);
	return err_errno("cannot open %s", path);
}

int file_read(const char *path, size_t max, struct buf *out)
{
	struct stat st;
	int fd, ret = 0;

	buf_reset(out);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return open_error(path);
	if (fstat(fd, &st)) {
		ret = err_errno("cannot stat %s", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = err_set(XL_EIO, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		ret = err_set(XL_ETOOBIG, "%s: %lld bytes, more than %zu",
			      path, (long long)st.st_size, max);
		goto out;
	}
	/* the size is a hint: the file may change under us */
	for (;;) {
		ssize_t n;

		if ((ret = buf_grow(out, 8192)))
			goto out;
		n = read(fd, out->buf + out->len, out->alloc - out->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = err_errno("cannot read %s", path);
			goto out;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		out->buf[out->len] = '\0';
		if (out->len > max) {
			ret = err_set(XL_ETOOBIG, "%s: more than %zu bytes",
				      path, max);
			goto out;
		}
	}
out:
	close(fd);
	if (ret)
		buf_release(out);
	return ret;
}

int file_map(const char *path, const unsigned char **map, size_t *len)
{
	struct stat st;
	void *p;
	int fd;

	*map = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return open_error(path);
	if (fstat(fd, &st)) {
		int ret = err_errno("cannot stat %s", path);

		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(XL_EIO, "%s: not a regular file", path);
	}
	if (st.st_size == 0) {
		close(fd);
		return 0;
	}
	/*
	 * A private read-only mapping stays valid even if `git gc` deletes
	 * or replaces the file while we use it.
	 */
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return err_errno("cannot map %s", path);
	*map = p;
	*len = (size_t)st.st_size;
	return 0;
}

void file_unmap(const unsigned char *map, size_t len)
{
	if (map)
		munmap((void *)map, len);
}

int path_join(struct buf *out, const char *dir, const char *name)
{
	size_t n = strlen(dir);

	buf_reset(out);
	if (buf_add(out, dir, n))
		return XL_ENOMEM;
	if (n && dir[n - 1] != '/' && buf_addch(out, '/'))
		return XL_ENOMEM;
	return buf_addstr(out, name);
}

int path_absolute(struct buf *out, const char *path)
{
	struct buf tmp = BUF_INIT;
	const char *p;
	int ret;

	if (path[0] != '/') {
		char *cwd = getcwd(NULL, 0);

		if (!cwd)
			return err_errno("cannot get the current directory");
		ret = buf_addstr(&tmp, cwd);
		free(cwd);
		if (ret || (ret = buf_addch(&tmp, '/')))
			goto out;
	}
	if ((ret = buf_addstr(&tmp, path)))
		goto out;

	/* rebuild component by component, resolving . and .. lexically */
	buf_reset(out);
	p = tmp.buf;
	while (*p) {
		const char *q;
		size_t n;

		while (*p == '/')
			p++;
		q = strchr(p, '/');
		n = q ? (size_t)(q - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* skip */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			char *slash = strrchr(out->buf, '/');

			buf_setlen(out, slash ? (size_t)(slash - out->buf) : 0);
		} else if ((ret = buf_addch(out, '/')) ||
			   (ret = buf_add(out, p, n))) {
			goto out;
		}
		p += n;
	}
	if (!out->len)
		ret = buf_addch(out, '/');
out:
	buf_release(&tmp);
	return ret;
}
