/*
 * t-odb-file.c: the guard of read-only maps (map_guard_install()).
 *
 * A file mapped by file_map_in() and then cut short reads as zeros past
 * its new end, and the fault is counted; any other map cut short still
 * ends the process with SIGBUS (sqlite's -shm must not be patched).
 * Each case runs in a child, so that a SIGBUS the guard should not
 * have caught fails that case alone.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 8

/* A scratch file of PAGES pages of 'x'; its path in `path`, its size returned. */
static size_t make_file(char *path, size_t size)
{
	size_t len = PAGES * (size_t)sysconf(_SC_PAGESIZE);
	char *data = malloc(len);
	int fd;

	snprintf(path, size, "/tmp/t-odb-file.XXXXXX");
	fd = mkstemp(path);
	memset(data, 'x', len);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		len = 0;
	if (fd >= 0)
		close(fd);
	free(data);
	return len;
}

/* In a child, first: the guard over death by SIGBUS (and no core). */
static void child_setup(void)
{
	setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
	signal(SIGBUS, SIG_DFL);
	if (map_guard_install())
		_exit(2);
}

/*
 * In a child: map the file (guarded or not), cut it to one page, read
 * every page.  Exits 0 if the pages past the cut read as zeros, the
 * first page still as 'x', and one fault was counted; 1 otherwise.
 */
static void child_reads(const char *path, size_t len, int guarded)
{
	const unsigned char *map;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), map_len = len;
	unsigned long sum = 0;
	int fd;

	if (guarded) {
		if (file_map(path, &map, &map_len) || map_len != len)
			_exit(2);
	} else {
		/* as sqlite maps its -shm */
		fd = open(path, O_RDWR);
		map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED)
			_exit(2);
	}
	if (truncate(path, (off_t)page))
		_exit(2);
	for (size_t at = 0; at < len; at += 64)
		sum += map[at];
	if (map[0] != 'x' || sum != 'x' * (page / 64) || map_guard_take() != 1)
		_exit(1);
	if (guarded)
		file_unmap(map, map_len);
	_exit(0);
}

static int run_child(const char *path, size_t len, int guarded)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		child_setup();
		child_reads(path, len, guarded);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* A file made, mapped and cut in a child; how the child ended. */
static int cut_in_child(int guarded)
{
	char path[64];
	size_t len = make_file(path, sizeof(path));
	int status;

	CHECK(len > 0);
	status = run_child(path, len, guarded);
	unlink(path);
	return status;
}

TEST(guarded_map_reads_zeros)
{
	int status = cut_in_child(1);

	CHECK(WIFEXITED(status));
	CHECK_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

TEST(other_map_still_faults)
{
	int status = cut_in_child(0);

	CHECK(WIFSIGNALED(status));
	CHECK_INT(WIFSIGNALED(status) ? WTERMSIG(status) : -1, SIGBUS);
}

/* A map let go leaves its slot: the next one at that place is guarded anew. */
TEST(slots_are_reused)
{
	char path[64], small[64];
	size_t len = make_file(path, sizeof(path));
	pid_t pid;
	int status = -1;

	CHECK(len > 0);
	/* one page: a slot left behind would not cover the big map's pages */
	CHECK(make_file(small, sizeof(small)) > 0);
	CHECK_INT(truncate(small, sysconf(_SC_PAGESIZE)), 0);
	pid = fork();
	if (pid == 0) {
		const unsigned char *map;
		size_t map_len;

		child_setup();
		/* more maps than the table has slots, one at a time */
		for (int i = 0; i < 10000; i++) {
			if (file_map(small, &map, &map_len))
				_exit(2);
			file_unmap(map, map_len);
		}
		child_reads(path, len, 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	unlink(path);
	unlink(small);
}

const struct test tests[] = {
	T(guarded_map_reads_zeros),
	T(other_map_still_faults),
	T(slots_are_reused),
	{ NULL, NULL },
};
