/*
 * context.c: one repository's daemon state, from set-up to teardown.
 *
 * A single mount has one struct xfs for its life; a forge mount
 * (forge.c) has one per repository it has served, and puts the idle
 * ones to sleep to stay within its bound.  The state falls in two
 * parts:
 *
 *   kept      what the kernel may still name after the repository went
 *             idle: the inode table (object nodes it holds, versions of
 *             HEAD and packed-refs), the paths and the options
 *   awake     what costs descriptors, memory or a thread: the open
 *             repository (its packs mapped), the sqlite connections, the
 *             memo of SHA-1 names, the snapshots of refs and packs, the
 *             updater thread
 *
 * xfs_setup() makes both; xfs_sleep() lets go of the second and
 * xfs_wake() makes it again, bringing the cache up to date before it
 * returns, so that a reader never sees a repository half named.
 *
 * The order in a single mount is set by fork (main.c): set-up and the
 * first build before fuse_daemonize(), then xfs_start() after it, since
 * neither threads nor sqlite connections may cross a fork.
 */
#include "fs.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The generated files that depend on the repository's configuration. */
static int make_texts(struct xfs *xfs, struct repo *repo)
{
	return text_readme(xfs, &xfs->readme) ?:
	       text_config(XFS_GIT1, repo_promisor(repo), &xfs->config[XFS_GIT1]) ?:
	       text_config(XFS_GIT256, repo_promisor(repo),
			   &xfs->config[XFS_GIT256]);
}

static void release_texts(struct xfs *xfs)
{
	buf_release(&xfs->readme);
	buf_release(&xfs->config[XFS_GIT1]);
	buf_release(&xfs->config[XFS_GIT256]);
}

/*
 * Open the repository and make it current.  The first open fixes which
 * way the mount goes (xfs->algo); a SHA-1 repository goes the other way
 * round, its sha256/ made by translation.
 */
static int open_repo(struct xfs *xfs, struct repo **out)
{
	struct repo *repo;
	int ret;

	if ((ret = repo_open(&repo, xfs->repo_path)))
		return ret;
	if (!xfs->algo) {
		xfs->algo = repo_algo(repo);
		xfs->own = xfs->algo == &hash_sha1 ? XFS_GIT1 : XFS_GIT256;
		xfs->other = xfs->own == XFS_GIT1 ? XFS_GIT256 : XFS_GIT1;
	}
	if ((ret = xfs_repo_set(xfs, repo)))
		return ret;
	*out = repo;
	return 0;
}

/* An absolute path for `path`, which need not exist yet (we chdir later). */
static int absolute(const char *path, struct buf *out)
{
	char real[PATH_MAX], cwd[PATH_MAX];

	if (realpath(path, real))
		return buf_addstr(out, real);
	if (errno != ENOENT)
		return err_errno("%s", path);
	errno = 0;
	if (path[0] == '/')
		return buf_addstr(out, path);
	if (!getcwd(cwd, sizeof(cwd)))
		return err_errno("getcwd");
	return buf_addf(out, "%s/%s", cwd, path);
}

int xfs_setup(struct xfs *xfs, const struct xfs_conf *conf)
{
	char real[PATH_MAX];
	struct buf path = BUF_INIT;
	struct repo *repo;
	int ret;

	pthread_mutex_init(&xfs->repo_lock, NULL);
	pthread_mutex_init(&xfs->snap_lock, NULL);
	pthread_cond_init(&xfs->snap_cond, NULL);
	pthread_mutex_init(&xfs->pack_lock, NULL);
	pthread_mutex_init(&xfs->status_lock, NULL);
	pthread_mutex_init(&xfs->updater_lock, NULL);
	pthread_cond_init(&xfs->updater_cond, NULL);
	pthread_mutex_init(&xfs->handles_lock, NULL);
	xfs->status.state = XFS_BUILDING;
	xfs->memo_bytes = conf->memo_bytes ? conf->memo_bytes : XFS_MEMO_BYTES;
	xfs->pool_readers = conf->readers;
	xfs->page_cache_kib = conf->page_cache_kib;
	xfs->unknown_headers = conf->unknown_headers;
	xfs->background = conf->background;
	xfs->uid = getuid();
	xfs->gid = getgid();
	xfs->mounted = conf->mounted ? conf->mounted : time(NULL);

	if (!realpath(conf->repo, real))
		return err_errno("%s", conf->repo);
	if (!(xfs->repo_path = strdup(real)))
		return err_set(XL_ENOMEM, "out of memory");
	if ((ret = open_repo(xfs, &repo)))
		return ret;
	ret = conf->cache ? absolute(conf->cache, &path) :
		cache_default_path(repo_commondir(repo), &path);
	if (ret || !(xfs->cache_path = buf_detach(&path, NULL)))
		return ret ? ret : err_set(XL_ENOMEM, "out of memory");
	if (conf->map) {
		if (!realpath(conf->map, real))
			return err_errno("map %s", conf->map);
		if (!(xfs->map = strdup(real)))
			return err_set(XL_ENOMEM, "out of memory");
	}
	if ((ret = make_texts(xfs, repo)) ||
	    /* a forge's thousands of repositories start small */
	    (ret = node_table_new(&xfs->nodes, xfs->forge ? 64 : 4096) ?
		   XL_ENOMEM : 0) ||
	    (ret = xlate_memo_new(&xfs->memo, xfs->memo_bytes)))
		return ret;
	xfs->awake = 1;
	return 0;
}

int xfs_first_build(struct xfs *xfs)
{
	int ret = cache_open(&xfs->writer, xfs->cache_path, xfs->algo, 0,
			     xfs_cache_warn, xfs);

	if (!ret)
		ret = updater_build(xfs, !xfs->forge && isatty(2));
	cache_close(xfs->writer);
	xfs->writer = NULL;
	return ret;
}

int xfs_start(struct xfs *xfs)
{
	int ret = xfs_pool_open(xfs);

	if (ret)
		return ret;
	/*
	 * The first snapshot of the refs, before serving.  Each later one
	 * keeps a ref that moved to a commit not named yet at its value in
	 * the one before (refsnap.c): without one before, a push right
	 * after mounting made HEAD's branch look unborn in sha1/ ("does
	 * not have any commits yet") until the build had named it.
	 */
	refsnap_put(refsnap_get(xfs));
	return updater_start(xfs);
}

int xfs_sleep(struct xfs *xfs)
{
	if (!xfs->awake)
		return 0;
	if (updater_stop(xfs))
		return -1;	/* its build still runs: stay awake */
	xfs->stop = 0;
	atomic_store(&xfs->cancel_build, 0);
	xfs_pool_close(xfs);
	refsnap_teardown(xfs);
	pack_teardown(xfs);
	xlate_memo_free(xfs->memo);
	xfs->memo = NULL;
	release_texts(xfs);
	xfs_repo_put(xfs->repo);
	xfs->repo = NULL;
	xfs->awake = 0;
	return 0;
}

int xfs_wake(struct xfs *xfs)
{
	struct repo *repo;
	int ret;

	if (xfs->awake)
		return 0;
	if ((ret = open_repo(xfs, &repo)) ||
	    (ret = make_texts(xfs, repo)) ||
	    (ret = xlate_memo_new(&xfs->memo, xfs->memo_bytes)))
		goto fail;
	/*
	 * Named before the first reader comes in.  A build that fails
	 * (a damaged object, say) leaves the rest readable, as in a
	 * mount with -o background: status tells what went wrong.
	 */
	if (xfs_first_build(xfs))
		xfs_log(xfs, "%s", err_msg());
	if ((ret = xfs_start(xfs)))
		goto fail;
	xfs->awake = 1;
	return 0;
fail:
	xfs->awake = 1;		/* let xfs_sleep() undo whatever was done */
	xfs_sleep(xfs);
	return ret;
}

void xfs_teardown(struct xfs *xfs)
{
	xfs_handles_close(xfs);	/* they hold packs and the repository */
	xfs_pool_close(xfs);
	refsnap_teardown(xfs);
	pack_teardown(xfs);
	node_table_free(xfs->nodes);
	xfs->nodes = NULL;
	xlate_memo_free(xfs->memo);
	xfs->memo = NULL;
	xfs_repo_put(xfs->repo);
	xfs->repo = NULL;
	release_texts(xfs);
	free(xfs->repo_path);
	free(xfs->cache_path);
	free(xfs->map);
	xfs->repo_path = xfs->cache_path = xfs->map = NULL;
}
