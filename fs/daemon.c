/*
 * daemon.c: the state every part of the daemon shares, and nothing else:
 * the repository as it is now (swapped by the updater after gc, kept
 * alive by reference counts), the pool of sqlite connections readers
 * take turns on, the log, and the clock.  main.c sets it up; node.c,
 * ops.c, object.c, pack.c, refsnap.c, text.c and updater.c use it, and
 * it calls none of them.
 */
#include "fs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

double xfs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Where log lines go: set once, before any thread starts. */
static int log_to_stderr = 1;

void xfs_log_to_syslog(void)
{
	log_to_stderr = 0;
}

void xfs_log(struct xfs *xfs, const char *fmt, ...)
{
	va_list ap;

	char line[2048];

	/* one write per line: lines of several repositories do not mix */
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_to_stderr)
		fprintf(stderr, "xlatefs: %s%s%s\n", xfs && xfs->log_name ?
			xfs->log_name : "", xfs && xfs->log_name ? ": " : "", line);
	else
		syslog(LOG_WARNING, "%s%s%s", xfs && xfs->log_name ?
		       xfs->log_name : "", xfs && xfs->log_name ? ": " : "", line);
}

struct cache *xfs_cache(struct xfs *xfs)
{
	unsigned i = atomic_fetch_add(&xfs->next_reader, 1);

	return xfs->readers[i % xfs->nr_readers];
}

struct repo_ref *xfs_repo_get(struct xfs *xfs)
{
	struct repo_ref *r;

	pthread_mutex_lock(&xfs->repo_lock);
	r = xfs->repo;
	atomic_fetch_add(&r->refs, 1);
	pthread_mutex_unlock(&xfs->repo_lock);
	return r;
}

void xfs_repo_put(struct repo_ref *r)
{
	if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
		repo_close(r->repo);
		free(r);
	}
}

int xfs_repo_set(struct xfs *xfs, struct repo *repo)
{
	struct repo_ref *r, *old;

	/* the mount's direction was fixed by the first open (context.c) */
	if (xfs->algo && repo_algo(repo) != xfs->algo) {
		int ret = err_set(XL_EUNSUPPORTED, "%s is now a %s repository; "
				  "it was mounted as a %s one", xfs->repo_path,
				  repo_algo(repo)->name, xfs->algo->name);

		repo_close(repo);
		return ret;
	}
	if (!(r = malloc(sizeof(*r)))) {
		repo_close(repo);
		return err_set(XL_ENOMEM, "out of memory");
	}
	r->repo = repo;
	atomic_init(&r->refs, 1);	/* xfs's own */
	pthread_mutex_lock(&xfs->repo_lock);
	old = xfs->repo;
	xfs->repo = r;
	pthread_mutex_unlock(&xfs->repo_lock);
	xfs_repo_put(old);
	return 0;
}

void xfs_cache_warn(void *data, const char *message)
{
	xfs_log(data, "warning: %s", message);
}

/* ---- the connection pool --------------------------------------------------- */

int xfs_pool_open(struct xfs *xfs)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int ret;

	if ((ret = cache_open(&xfs->writer, xfs->cache_path, xfs->algo,
			      0, xfs_cache_warn, xfs)))
		return ret;
	/* enough that workers rarely wait for each other's connection */
	xfs->nr_readers = xfs->pool_readers ? xfs->pool_readers :
		cpus > 2 ? 2 * (unsigned)cpus : 4;
	if (xfs->nr_readers > 32)
		xfs->nr_readers = 32;
	if (!(xfs->readers = calloc(xfs->nr_readers, sizeof(*xfs->readers))))
		return err_set(XL_ENOMEM, "out of memory");
	for (unsigned i = 0; i < xfs->nr_readers; i++)
		if ((ret = cache_open(&xfs->readers[i], xfs->cache_path,
				      xfs->algo, 0, xfs_cache_warn, xfs)) ||
		    (xfs->page_cache_kib &&
		     (ret = cache_set_page_cache(xfs->readers[i],
						 xfs->page_cache_kib))))
			return ret;
	return 0;
}

void xfs_pool_close(struct xfs *xfs)
{
	for (unsigned i = 0; xfs->readers && i < xfs->nr_readers; i++)
		cache_close(xfs->readers[i]);
	free(xfs->readers);
	xfs->readers = NULL;
	xfs->nr_readers = 0;
	cache_close(xfs->writer);
	xfs->writer = NULL;
}
