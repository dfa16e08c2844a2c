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

/* ---- the guard of read-only maps ------------------------------------ */

/*
 * The maps the guard answers for: every map file_map_in() makes, from
 * then until file_unmap(), in a table of fixed size that the signal
 * handler reads without a lock.  A slot is taken by moving its `start`
 * from 0 with a compare-and-swap; its `end` is stored after, and the
 * handler skips a slot whose end is 0.  Leaving clears end, then start,
 * and only then unmaps, so that a slot never names a range that is
 * gone.  A map made while every slot is taken is not guarded: a fault
 * in it is SIGBUS, as it would be without the guard.
 *
 * Only these: sqlite's -shm and our own spill file are mapped too, but
 * zeros there are not refused by anyone.  A wal-index patched with
 * zeros in one process leaves it blind to what the others commit, and
 * its next commit writes over theirs (tried: the database then fails
 * its integrity check); a spill page of zeros would be summed into a
 * SHA-1 pack.  A fault there ends the process, which leaves the cache
 * as its last commit left it.
 */
#define GUARD_SLOTS 4096

struct guard_slot {
	atomic_uintptr_t start, end;
};

/*
 * The guard's state.  guard_slots and guard_faults are atomics (see
 * above); guard_old and guard_page are written once, by
 * map_guard_install() before any thread starts, then only read.
 */
static struct guard_slot guard_slots[GUARD_SLOTS];
static atomic_ulong guard_faults;
static struct sigaction guard_old;
static uintptr_t guard_page;	/* 0 until installed */

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2 && ATOMIC_LONG_LOCK_FREE == 2,
	       "the signal handler needs lock-free atomics");

/* Where the search for the slot of the map at `start` begins. */
static unsigned guard_home(uintptr_t start)
{
	return (unsigned)(((uint64_t)start * 0x9e3779b97f4a7c15ull) >> 52) %
	       GUARD_SLOTS;
}

static void guard_add(const void *map, size_t len)
{
	uintptr_t start = (uintptr_t)map, end;
	unsigned from = guard_home(start);

	if (!guard_page)
		return;
	end = (start + len + guard_page - 1) & ~(guard_page - 1);
	for (unsigned i = 0; i < GUARD_SLOTS; i++) {
		struct guard_slot *g = &guard_slots[(from + i) % GUARD_SLOTS];
		uintptr_t none = 0;

		if (atomic_compare_exchange_strong(&g->start, &none, start)) {
			atomic_store_explicit(&g->end, end, memory_order_release);
			return;
		}
	}
}

static void guard_remove(const void *map)
{
	uintptr_t start = (uintptr_t)map;
	unsigned from = guard_home(start);

	if (!guard_page)
		return;
	/* past empty slots too: one taken before may have been left since */
	for (unsigned i = 0; i < GUARD_SLOTS; i++) {
		struct guard_slot *g = &guard_slots[(from + i) % GUARD_SLOTS];

		if (atomic_load_explicit(&g->start, memory_order_relaxed) == start) {
			atomic_store(&g->end, 0);
			atomic_store(&g->start, 0);
			return;
		}
	}
}

/* The end of the guarded map that holds `at`, or 0. */
static uintptr_t guard_find(uintptr_t at)
{
	for (unsigned i = 0; i < GUARD_SLOTS; i++) {
		uintptr_t start = atomic_load_explicit(&guard_slots[i].start,
						       memory_order_acquire);
		uintptr_t end = atomic_load_explicit(&guard_slots[i].end,
						     memory_order_acquire);

		if (start && start <= at && at < end)
			return end;
	}
	return 0;
}

static long guard_map_zeros(uintptr_t at, size_t len)
{
	/*
	 * The raw system call: a sanitizer's mmap() is not meant for a
	 * signal handler.  i386 and 32-bit ARM call theirs mmap2.
	 */
#ifdef SYS_mmap2
	return syscall(SYS_mmap2, (void *)at, len, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
#else
	return syscall(SYS_mmap, (void *)at, len, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
#endif
}

static void guard_handler(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t at = (uintptr_t)si->si_addr & ~(guard_page - 1), end;
	int saved = errno;

	(void)uctx;
	/*
	 * BUS_ADRERR with an address in a guarded map: a page past the
	 * file's end (or one the kernel could not read).  Every page from
	 * there to the map's end is past it too: one map of zeros for all
	 * of them keeps a long read from splitting the map page by page.
	 */
	if (si->si_code == BUS_ADRERR && at && (end = guard_find(at)) &&
	    guard_map_zeros(at, (size_t)(end - at)) == (long)at) {
		atomic_fetch_add(&guard_faults, 1);
		errno = saved;
		return;	/* the access runs again, on zeros */
	}
	/*
	 * Not ours: put back what was there.  A fault then happens again
	 * when the access is retried; a signal sent by someone (si_code
	 * SI_USER and the like are not above 0) is raised again.
	 */
	sigaction(sig, &guard_old, NULL);
	if (si->si_code <= 0)
		raise(sig);
	errno = saved;
}

int map_guard_install(void)
{
	struct sigaction sa;
	long page = sysconf(_SC_PAGESIZE);

	if (guard_page)
		return 0;
	if (page <= 0 || (page & (page - 1)))
		return err_set(XL_EIO, "odd page size %ld", page);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &guard_old))
		return err_errno("cannot catch SIGBUS");
	guard_page = (uintptr_t)page;
	return 0;
}

unsigned long map_guard_take(void)
{
	return atomic_exchange(&guard_faults, 0);
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
	guard_add(p, (size_t)st.st_size);
	*map = p;
	*len = (size_t)st.st_size;
	return 0;
}

void file_unmap(const unsigned char *map, size_t len)
{
	if (map) {
		guard_remove(map);
		munmap((void *)map, len);
	}
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
