/*
 * updater.c: keeping the cache up to date while the mount serves.
 *
 * One thread, with its own sqlite connection, runs the incremental
 * build every XFS_POLL_INTERVAL_MS: it finds packs the cache has not
 * finished and loose objects it does not know, names them, and commits
 * in batches.  Readers see each batch when it commits (WAL), so a new
 * commit's SHA-1 name, and the refs that point at it, show up a moment
 * after the objects land.  When nothing is new a build costs a scan of
 * the pack list and the loose object directories.
 *
 * The first build of a mount runs in the foreground, before mounting,
 * unless the `background` option asks to mount at once; then this
 * thread does it and `status` shows its progress.
 *
 * After its first build, once a process, the thread checks the whole
 * cache file (cache_check).  That check grows with the file (1.5 s at
 * a million objects), so it has no place before mounting; a file that
 * fails is marked, said in `status` and the log, and set aside at the
 * next mount.  Until then readers check every row they use, as always.
 */
#include "fs.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

struct build_progress {
	struct xfs *xfs;
	struct xlate_progress bar;
	int tty;
	uint64_t base_objects, base_translated;
	double start;
};

static void build_progress_cb(void *data, uint64_t done, uint64_t total)
{
	struct build_progress *p = data;
	struct xfs *xfs = p->xfs;
	double t = xfs_now() - p->start;

	if (p->tty)
		xlate_progress_cb(&p->bar, done, total);
	pthread_mutex_lock(&xfs->status_lock);
	if (total) {
		xfs->status.state = XFS_BUILDING;
		xfs->status.objects = p->base_objects + total;
		xfs->status.translated = p->base_translated + done;
		xfs->status.pending = total - done;
		xfs->status.rate = t > 0 ? (double)done / t : 0;
	}
	pthread_mutex_unlock(&xfs->status_lock);
}

static int pack_gone(const struct odb_pack_info *info, void *data)
{
	struct stat st;

	return stat(info->path, &st) && errno == ENOENT;
}

/* 1 if a pack the repository has open was deleted (gc, repack). */
static int packs_gone(struct repo *repo)
{
	return odb_for_each_pack(repo_odb(repo), pack_gone, NULL) == 1;
}

/*
 * Open the repository afresh, without the deleted packs, and swap it
 * in; readers still using the old one keep it until they are done.
 */
static void reopen(struct xfs *xfs)
{
	struct repo *repo;

	if (repo_open(&repo, xfs->repo_path)) {
		xfs_log(xfs, "reopening %s after a repack: %s", xfs->repo_path,
			err_msg());
		return;
	}
	if (xfs_repo_set(xfs, repo))
		xfs_log(xfs, "reopening %s after a repack: %s", xfs->repo_path,
			err_msg());
}

/*
 * Put `text` (lines, each ending in '\n') into the status field `field`
 * of `size` bytes, cut short to fit; if that changed it, say each line
 * in the log (on the terminal, for the first build before mounting).
 */
static void status_say(struct xfs *xfs, char *field, size_t size,
		       struct buf *text)
{
	int changed;

	if (text->len >= size)
		buf_setlen(text, size - 1);
	pthread_mutex_lock(&xfs->status_lock);
	changed = strcmp(field, text->len ? text->buf : "");
	if (changed)
		memcpy(field, text->len ? text->buf : "", text->len + 1);
	pthread_mutex_unlock(&xfs->status_lock);
	for (char *line = text->buf, *nl; changed && line && *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			break;	/* cut short above */
		xfs_log(xfs, "%.*s", (int)(nl - line), line);
	}
}

/*
 * Say what the repository lacks, once each time that changes, in the
 * log and in `status`.  The cache keeps the count; the words name the
 * remedy.
 */
static void note_missing(struct xfs *xfs, struct repo *repo)
{
	struct xlate_missing m;
	struct buf text = BUF_INIT;

	if (!xlate_missing_read(xfs->writer, &m) &&
	    !xlate_missing_explain(repo, &m, &text))
		status_say(xfs, xfs->status.missing, sizeof(xfs->status.missing),
			   &text);
	/* else said at the next build, or never: no harm */
	buf_release(&text);
}

/*
 * Upstream's own map, when the repository runs compat mode: the counts
 * the build kept, in `status`, and in the log each time they change
 * (the build checks the file only when it or the names changed).
 */
static void note_compat(struct xfs *xfs, const struct xlate_build_stats *st)
{
	struct buf text = BUF_INIT;
	int ret;

	if (st->compat_error[0])
		ret = buf_addf(&text, "objects/loose-object-idx (upstream's map) "
			       "cannot be checked: %s\n", st->compat_error);
	else
		ret = xlate_compat_explain(&st->compat, &text);
	if (!ret)
		status_say(xfs, xfs->status.compat, sizeof(xfs->status.compat),
			   &text);
	buf_release(&text);
}

int updater_build(struct xfs *xfs, int tty)
{
	struct build_progress p = { .xfs = xfs, .tty = tty, .start = xfs_now() };
	struct xlate_pack1_opts pack1;
	struct xlate_pack1_stats pack1_stats = { 0 };
	struct xlate_build_opts opts = {
		.unknown_headers = xfs->unknown_headers,
		.map = xfs->map,
		.progress = build_progress_cb,
		.progress_data = &p,
		.cancel = &xfs->cancel_build,
		.memo = xfs->memo,
		.pack1 = &pack1,
		.pack1_stats = &pack1_stats,
	};
	struct xlate_build_stats stats;
	struct repo_ref *repo;
	uint64_t objects = 0, untranslatable = 0;
	int ret, recount, first, gone;

	xlate_progress_init(&p.bar, stderr);
	pthread_mutex_lock(&xfs->status_lock);
	p.base_objects = xfs->status.objects;
	p.base_translated = xfs->status.translated + xfs->status.untranslatable;
	/* counting is a scan of the table: only when something may have changed */
	first = !xfs->status.builds;
	recount = first || xfs->status.state == XFS_ERROR;
	pthread_mutex_unlock(&xfs->status_lock);

	/* packs written since the last look (fetch, gc, repack) */
	repo = xfs_repo_get(xfs);
	odb_refresh(repo_odb(repo->repo));
	pack1_opts(xfs, &pack1);
	/* and the SHA-1 packs of what it finished */
	ret = xlate_build(repo->repo, xfs->writer, &opts, &stats);
	pack1_log(xfs, &pack1_stats);
	/* counted anew only when the refusals were walked again */
	if (!ret && (first || stats.retried))
		note_missing(xfs, repo->repo);
	if (!ret)
		note_compat(xfs, &stats);
	gone = packs_gone(repo->repo);
	xfs_repo_put(repo);
	if (gone)
		reopen(xfs);
	if (tty)
		xlate_progress_end(&p.bar);
	recount |= stats.new_objects || stats.emptied;
	if (!ret && recount)
		ret = cache_count(xfs->writer, &objects, &untranslatable);
	/*
	 * Snapshots made while the names were missing hide the refs (and
	 * the packs) that need them; they would be served for up to
	 * XFS_REFS_MAX_AGE more.  Make them anew before saying "ready"
	 * (once serving: the first build before mounting has no readers).
	 */
	if (!ret && xfs->nr_readers && (stats.new_objects || stats.emptied)) {
		refsnap_refresh(xfs);
		packsnap_refresh(xfs);
	}

	pthread_mutex_lock(&xfs->status_lock);
	if (ret) {
		xfs->status.state = XFS_ERROR;
		snprintf(xfs->status.error, sizeof(xfs->status.error), "%s",
			 err_msg());
	} else {
		xfs->status.state = XFS_READY;
		xfs->status.error[0] = '\0';
		if (recount) {
			xfs->status.objects = objects;
			xfs->status.untranslatable = untranslatable;
			xfs->status.translated = objects - untranslatable;
		} else {
			/* progress callbacks said "building" with base counts */
			xfs->status.objects = p.base_objects;
			xfs->status.translated = p.base_translated -
				xfs->status.untranslatable;
		}
		xfs->status.pending = 0;
		xfs->status.rate = 0;
		xfs->status.builds++;
	}
	pthread_mutex_unlock(&xfs->status_lock);
	/* once for each set of unreadable packs, not every second */
	if (!ret && (stats.broken_packs != xfs->broken_packs_logged ||
		     stats.broken_packs_sum != xfs->broken_packs_sum)) {
		if (stats.broken_packs)
			xfs_log(xfs, "%llu pack%s cannot be read and %s skipped; first: %s",
				(unsigned long long)stats.broken_packs,
				stats.broken_packs == 1 ? "" : "s",
				stats.broken_packs == 1 ? "is" : "are",
				stats.first_broken_pack);
		xfs->broken_packs_logged = stats.broken_packs;
		xfs->broken_packs_sum = stats.broken_packs_sum;
	}
	if (!ret && stats.map_disagree)
		xfs_log(xfs, "%llu line%s of the map name%s an object the "
			"repository has otherwise; ignored; first: %s",
			(unsigned long long)stats.map_disagree,
			stats.map_disagree == 1 ? "" : "s",
			stats.map_disagree == 1 ? "s" : "",
			stats.first_map_disagree);
	if (ret)
		xfs_log(xfs, "updating the cache: %s", err_msg());
	else if (stats.new_objects && !tty)
		xfs_log(xfs, "named %llu new objects (%llu untranslatable)",
			(unsigned long long)stats.new_objects,
			(unsigned long long)stats.untranslatable);
	return ret;
}

/* The whole-file check, its verdict in `status` and the log. */
static void check_cache(struct xfs *xfs)
{
	double start = xfs_now();
	int ret = cache_check(xfs->writer, &xfs->cancel_build);
	char verdict[sizeof(xfs->status.cache_check)];

	if (ret && ret != XL_ECORRUPT && atomic_load(&xfs->cancel_build))
		return;		/* stopped: again at the next wake */
	xfs->cache_checked = 1;
	if (!ret)
		snprintf(verdict, sizeof(verdict), "ok (%.2f s)",
			 xfs_now() - start);
	else
		snprintf(verdict, sizeof(verdict), "%s%s",
			 ret == XL_ECORRUPT ? "damaged: " : "not run: ", err_msg());
	pthread_mutex_lock(&xfs->status_lock);
	memcpy(xfs->status.cache_check, verdict, sizeof(verdict));
	pthread_mutex_unlock(&xfs->status_lock);
	if (ret)
		xfs_log(xfs, "checking the cache: %s", err_msg());
}

static void *updater_main(void *arg)
{
	struct xfs *xfs = arg;

	for (;;) {
		struct timespec until;
		unsigned long faults;

		updater_build(xfs, 0);
		if ((faults = map_guard_take()))
			xfs_log(xfs, "%lu mapped file%s cut off under the mount (a pack "
				"or an .idx truncated in place): what lay past the cut "
				"reads as zeros, as damage would",
				faults, faults == 1 ? " was" : "s were");
		if (!xfs->cache_checked)
			check_cache(xfs);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += XFS_POLL_INTERVAL_MS / 1000;
		until.tv_nsec += (long)(XFS_POLL_INTERVAL_MS % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&xfs->updater_lock);
		while (!xfs->stop &&
		       pthread_cond_timedwait(&xfs->updater_cond, &xfs->updater_lock,
					      &until) != ETIMEDOUT)
			;
		if (xfs->stop) {
			pthread_mutex_unlock(&xfs->updater_lock);
			return NULL;
		}
		pthread_mutex_unlock(&xfs->updater_lock);
	}
}

int updater_start(struct xfs *xfs)
{
	int ret = pthread_create(&xfs->updater, NULL, updater_main, xfs);

	if (ret)
		return err_set(XL_EIO, "starting the updater: %s", strerror(ret));
	xfs->updater_started = 1;
	return 0;
}

int updater_restart(struct xfs *xfs)
{
	if (xfs->updater_started) {
		if (pthread_tryjoin_np(xfs->updater, NULL))
			return 1;
		xfs->updater_started = 0;
	}
	atomic_store(&xfs->cancel_build, 0);
	pthread_mutex_lock(&xfs->updater_lock);
	xfs->stop = 0;
	pthread_mutex_unlock(&xfs->updater_lock);
	return updater_start(xfs);
}

int updater_stop(struct xfs *xfs)
{
	struct timespec until;

	if (!xfs->updater_started)
		return 0;
	atomic_store(&xfs->cancel_build, 1);
	pthread_mutex_lock(&xfs->updater_lock);
	xfs->stop = 1;
	pthread_cond_signal(&xfs->updater_cond);
	pthread_mutex_unlock(&xfs->updater_lock);
	/*
	 * An idle updater ends at once, and a build stops within a
	 * thousand objects.  One that does not (blobs are hashed before
	 * anything is stored) is not waited for: the cache is consistent at
	 * every commit, and the next build goes on from the last one, so
	 * the process may simply exit under it.
	 */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += XFS_STOP_WAIT_S;
	if (pthread_timedjoin_np(xfs->updater, NULL, &until)) {
		xfs_log(xfs, "a build is still running; it goes on at the next mount");
		return -1;
	}
	xfs->updater_started = 0;
	return 0;
}
