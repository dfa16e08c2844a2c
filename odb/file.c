/*
 * file.c: reading, mapping and naming files.
 */
#include "odb_i.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK)

/*
 * Files below a root.  A repository may come from anyone, and a mount
 * may be read by users other than the one who mounted it (allow_other):
 * a symlink below objects/ or refs/ that leads out of them would have us
 * serve a file the repository does not hold, read with the mounting
 * user's rights (a private key that happens to parse, a loose object of
 * someone else's repository).  So a file below a root is opened only
 * where its path, symlinks and all, stays below that root: openat2()
 * with RESOLVE_BENEATH from the root, which a rename cannot race.  A
 * link that stays inside is followed, as Git follows it.  The root
 * itself may be a link: objects/ kept elsewhere, or an alternate, is
 * the repository's own choice, not a file smuggled into it.
 *
 * Most paths have no link at all, and take one openat2() that refuses
 * every link; only a path with one pays for opening the root.  On a
 * kernel without openat2() (before 5.6), the resolved path is compared
 * with the resolved root instead.
 */
static long openat2_fd(int dirfd, const char *path, uint64_t resolve)
{
	struct open_how how = { .flags = OPEN_FLAGS, .resolve = resolve };

	return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* 1 if `path` resolves to a place below `root`, 0 if not, -1 on error */
static int resolves_beneath(const char *root, const char *path)
{
	char *r = realpath(root, NULL), *p = realpath(path, NULL);
	int ret = -1;

	if (r && p) {
		size_t n = strlen(r);

		ret = !strncmp(p, r, n) && (p[n] == '/' || (n == 1 && *r == '/'));
	}
	free(r);
	free(p);
	return ret;
}

static int open_in(const char *root, const char *path)
{
	size_t n = root ? strlen(root) : 0;
	long fd;
	int rfd, err;

	if (!root)
		return open(path, OPEN_FLAGS);
	fd = openat2_fd(AT_FDCWD, path, RESOLVE_NO_SYMLINKS);
	if (fd >= 0 || (errno != ELOOP && errno != ENOSYS))
		return (int)fd;
	if (strncmp(path, root, n) || path[n] != '/') {
		errno = EXDEV;	/* not below root at all */
		return -1;
	}
	if (errno == ENOSYS) {
		int fd2 = open(path, OPEN_FLAGS), in;

		if (fd2 < 0)
			return -1;
		if ((in = resolves_beneath(root, path)) != 1) {
			close(fd2);
			errno = in ? errno : EXDEV;
			return -1;
		}
		return fd2;
	}
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -1;
	fd = openat2_fd(rfd, path + n + 1, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
	err = errno;
	close(rfd);
	errno = err;
	return (int)fd;
}

static int open_error(const char *root, const char *path)
{
	if (errno == ENOENT || errno == ENOTDIR)
		return err_set(XL_ENOTFOUND, "%s: no such file", path);
	if (errno == EXDEV)	/* a fact about the repository's files */
		return err_set(XL_ECORRUPT, "%s: a symlink that leads out of %s: "
			       "not followed", path, root);
	return err_errno("cannot open %s", path);
}

DIR *dir_open_in(const char *root, const char *path)
{
	int fd;
	DIR *d;

	if (!root)
		return opendir(path);
	fd = open_in(root, path);
	if (fd < 0)
		return NULL;
	if (!(d = fdopendir(fd)))
		close(fd);	/* not a directory: ENOTDIR */
	return d;
}

int file_read(const char *path, size_t max, struct buf *out)
{
	return file_read_in(NULL, path, max, out);
}

int file_read_in(const char *root, const char *path, size_t max,
		 struct buf *out)
{
	struct stat st;
	int fd, ret = 0;

	buf_reset(out);
	fd = open_in(root, path);
	if (fd < 0)
		return open_error(root, path);
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
	return file_map_in(NULL, path, map, len);
}

int file_map_in(const char *root, const char *path,
		const unsigned char **map, size_t *len)
{
	struct stat st;
	void *p;
	int fd;

	*map = NULL;
	*len = 0;
	fd = open_in(root, path);
	if (fd < 0)
		return open_error(root, path);
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

/*
 * The guard's state: set by map_guard_install() before any thread
 * starts, then only read, but for the count, which is atomic because a
 * fault may come on any thread.
 */
static struct sigaction map_guard_old;
static uintptr_t map_guard_page;
static atomic_ulong map_guard_faults;

static void map_guard_handler(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t at = (uintptr_t)si->si_addr & ~(map_guard_page - 1);
	int saved = errno;

	(void)uctx;
	/*
	 * BUS_ADRERR with an address is the kernel's word for "this page
	 * of a mapped file is past its end".  The raw system call, not
	 * mmap(): a sanitizer's wrapper is not meant for a signal handler.
	 */
	if (si->si_code == BUS_ADRERR && at &&
	    syscall(SYS_mmap, (void *)at, (size_t)map_guard_page,
		    PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == (long)at) {
		atomic_fetch_add(&map_guard_faults, 1);
		errno = saved;
		return;	/* the access runs again, on zeros */
	}
	/*
	 * Not ours: put back what was there.  A fault then happens again
	 * when the access is retried; a signal sent by someone (si_code
	 * SI_USER and the like are not above 0) must be raised again.
	 */
	sigaction(sig, &map_guard_old, NULL);
	if (si->si_code <= 0)
		raise(sig);
	errno = saved;
}

int map_guard_install(void)
{
	struct sigaction sa;
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0 || (page & (page - 1)))
		return err_set(XL_EIO, "odd page size %ld", page);
	map_guard_page = (uintptr_t)page;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = map_guard_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &map_guard_old))
		return err_errno("cannot catch SIGBUS");
	return 0;
}

unsigned long map_guard_take(void)
{
	return atomic_exchange(&map_guard_faults, 0);
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
