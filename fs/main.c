/*
 * main.c: xlatefs, the daemon.
 *
 *   xlatefs [-f] [-d] [-o OPTIONS] REPO MOUNTPOINT
 *
 * Start-up, in this order because of fork: fuse_daemonize() forks, and
 * neither threads nor sqlite connections may cross a fork.  So the
 * repository is opened and (unless -o background) the cache brought up
 * to date in the foreground, with a progress bar on a terminal; that
 * connection is closed; the file system is mounted and the process
 * detaches; only then are the sqlite connections opened and the updater
 * thread started.  SIGTERM, SIGINT and SIGHUP end the loop (libfuse's
 * handlers), and the mount is taken down on the way out, as with
 * `fusermount3 -u`.
 */
#include "fs.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

struct options {
	char *repo;
	char *cache;
	char *map;
	char *unknown_headers;
	int background;
	int help, version;
};

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("cache=%s", cache),
	OPT("map=%s", map),
	OPT("submodule_map=%s", map),	/* its first name */
	OPT("unknown_headers=%s", unknown_headers),
	OPT("background", background),
	OPT("-h", help),
	OPT("--help", help),
	OPT("-V", version),
	OPT("--version", version),
	FUSE_OPT_END
};

static const char usage_text[] =
	"usage: xlatefs [-f] [-d] [-o OPTIONS] REPO MOUNTPOINT\n"
	"\n"
	"Mount the SHA-256 Git repository REPO read-only at MOUNTPOINT, as\n"
	"itself (MOUNTPOINT/sha256) and as the SHA-1 repository it would be\n"
	"(MOUNTPOINT/sha1).  Unmount with: fusermount3 -u MOUNTPOINT\n"
	"\n"
	"xlatefs options:\n"
	"    -o cache=FILE              the translation cache (default: beside the repository)\n"
	"    -o map=FILE                SHA-1 names of objects the repository lacks\n"
	"                               (submodule commits, a partial or shallow clone's)\n"
	"    -o unknown_headers=fail|copy   commits with unknown headers (default fail)\n"
	"    -o background              mount at once and translate in the background\n"
	"    -f                         stay in the foreground (log to stderr)\n"
	"    -d                         debug: foreground, and FUSE's own trace\n"
	"\n"
	"See xlatefs(1).\n";

/* The first non-option argument is the repository; the mount point goes on to libfuse. */
static int option_proc(void *data, const char *arg, int key,
		       struct fuse_args *outargs)
{
	struct options *o = data;

	if (key == FUSE_OPT_KEY_NONOPT && !o->repo) {
		o->repo = strdup(arg);
		return 0;
	}
	return 1;
}


static int setup(struct xfs *xfs, struct options *o)
{
	char real[PATH_MAX];
	struct buf path = BUF_INIT;
	struct repo *repo;
	int ret;

	if (!realpath(o->repo, real))
		return err_errno("%s", o->repo);
	if (!(xfs->repo_path = strdup(real)))
		return err_set(XL_ENOMEM, "out of memory");
	pthread_mutex_init(&xfs->repo_lock, NULL);
	if ((ret = repo_open(&repo, xfs->repo_path)) ||
	    (ret = xfs_repo_set(xfs, repo)))
		return ret;
	if (repo_algo(repo) != &hash_sha256)
		return err_set(XL_EUNSUPPORTED, "%s is a %s repository; xlatefs "
			       "translates SHA-256 repositories", xfs->repo_path,
			       repo_algo(repo)->name);
	if (o->cache) {
		if (!realpath(o->cache, real) && errno != ENOENT)
			return err_errno("%s", o->cache);
		/* a new file: make the path absolute by hand (we chdir later) */
		if (errno == ENOENT && o->cache[0] != '/') {
			char cwd[PATH_MAX];

			if (!getcwd(cwd, sizeof(cwd)))
				return err_errno("getcwd");
			ret = buf_addf(&path, "%s/%s", cwd, o->cache);
		} else {
			ret = buf_addstr(&path, errno == ENOENT ? o->cache : real);
		}
		errno = 0;
	} else {
		ret = cache_default_path(repo_commondir(repo), &path);
	}
	if (ret || !(xfs->cache_path = buf_detach(&path, NULL)))
		return ret ? ret : err_set(XL_ENOMEM, "out of memory");
	if (o->map) {
		if (!realpath(o->map, real))
			return err_errno("map %s", o->map);
		if (!(xfs->map = strdup(real)))
			return err_set(XL_ENOMEM, "out of memory");
	}
	if (!o->unknown_headers || !strcmp(o->unknown_headers, "fail"))
		xfs->unknown_headers = XLATE_UNKNOWN_FAIL;
	else if (!strcmp(o->unknown_headers, "copy"))
		xfs->unknown_headers = XLATE_UNKNOWN_COPY;
	else
		return err_set(XL_EINVALID, "unknown_headers=%s: want fail or copy",
			       o->unknown_headers);
	xfs->background = o->background;
	xfs->uid = getuid();
	xfs->gid = getgid();
	xfs->mounted = time(NULL);
	if ((ret = text_readme(xfs, &xfs->readme)) ||
	    (ret = text_config(XFS_GIT1, repo_promisor(repo),
			       &xfs->config[XFS_GIT1])) ||
	    (ret = text_config(XFS_GIT256, repo_promisor(repo),
			       &xfs->config[XFS_GIT256])) ||
	    (ret = node_table_new(&xfs->nodes) ? XL_ENOMEM : 0) ||
	    (ret = xlate_memo_new(&xfs->memo, XFS_MEMO_BYTES)))
		return ret;
	pthread_mutex_init(&xfs->snap_lock, NULL);
	pthread_cond_init(&xfs->snap_cond, NULL);
	pthread_mutex_init(&xfs->pack_lock, NULL);
	pthread_mutex_init(&xfs->status_lock, NULL);
	pthread_mutex_init(&xfs->updater_lock, NULL);
	pthread_cond_init(&xfs->updater_cond, NULL);
	xfs->status.state = XFS_BUILDING;
	return 0;
}

static void teardown(struct xfs *xfs)
{
	xfs_pool_close(xfs);
	refsnap_teardown(xfs);
	pack_teardown(xfs);
	node_table_free(xfs->nodes);
	xlate_memo_free(xfs->memo);
	xfs_repo_put(xfs->repo);
	buf_release(&xfs->readme);
	buf_release(&xfs->config[XFS_GIT1]);
	buf_release(&xfs->config[XFS_GIT256]);
	free(xfs->repo_path);
	free(xfs->cache_path);
	free(xfs->map);
}

/* -ofsname=PATH, with libfuse's escapes for ',' and '\\' */
static int add_fsname(struct fuse_args *args, const char *path)
{
	struct buf b = BUF_INIT;
	int ret = buf_addstr(&b, "-ofsname=");

	for (const char *p = path; !ret && *p; p++)
		ret = (*p == ',' || *p == '\\' ? buf_addch(&b, '\\') : 0) ?:
		      buf_addch(&b, *p);
	if (!ret)
		ret = fuse_opt_add_arg(args, b.buf);
	buf_release(&b);
	return ret;
}

/* The first build, before mounting: a user who waits sees why. */
static int first_build(struct xfs *xfs)
{
	int ret = cache_open(&xfs->writer, xfs->cache_path, &hash_sha256,
			     CACHE_OPEN_CHECK_ALL, xfs_cache_warn, xfs);

	if (!ret)
		ret = updater_build(xfs, isatty(2));
	cache_close(xfs->writer);
	xfs->writer = NULL;
	return ret;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd;
	struct options o = { 0 };
	struct xfs xfs;
	struct fuse_session *se = NULL;
	struct fuse_loop_config *loop = NULL;
	int ret = 1, mounted = 0, busy;

	memset(&xfs, 0, sizeof(xfs));
	memset(&cmd, 0, sizeof(cmd));
	if (fuse_opt_parse(&args, &o, option_spec, option_proc) ||
	    fuse_parse_cmdline(&args, &cmd)) {
		fputs(usage_text, stderr);
		ret = 2;
		goto out;
	}
	if (o.help) {
		fputs(usage_text, stdout);
		fputs("\nFUSE options:\n", stdout);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out;
	}
	if (o.version) {
		printf("xlatefs 0.1 (libfuse %s)\n", fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (!o.repo || !cmd.mountpoint) {
		fputs(usage_text, stderr);
		ret = 2;
		goto out;
	}
	xfs.foreground = cmd.foreground;
	xfs.debug = cmd.debug;

	if (setup(&xfs, &o)) {
		fprintf(stderr, "xlatefs: %s\n", err_msg());
		goto out;
	}
	if (!xfs.background && first_build(&xfs)) {
		fprintf(stderr, "xlatefs: %s\n", err_msg());
		goto out;
	}

	/* read-only in the kernel too; named after the repository in mount(8) */
	if (fuse_opt_add_arg(&args, "-oro,default_permissions,subtype=xlatefs") ||
	    add_fsname(&args, xfs.repo_path)) {
		fputs("xlatefs: out of memory\n", stderr);
		goto out;
	}
	if (!(se = fuse_session_new(&args, &xfs_ops, sizeof(xfs_ops), &xfs)))
		goto out;
	if (fuse_set_signal_handlers(se))
		goto out;
	if (fuse_session_mount(se, cmd.mountpoint))
		goto out;
	mounted = 1;
	if (!cmd.foreground) {
		openlog("xlatefs", LOG_PID, LOG_DAEMON);
		xfs_log_to_syslog();
	}
	fuse_daemonize(cmd.foreground);

	if (xfs_pool_open(&xfs)) {
		xfs_log(&xfs, "%s", err_msg());
		goto out;
	}
	if (updater_start(&xfs)) {
		xfs_log(&xfs, "%s", err_msg());
		goto out;
	}
	if (cmd.singlethread) {
		ret = fuse_session_loop(se) ? 1 : 0;
	} else {
		if (!(loop = fuse_loop_cfg_create()))
			goto out;
		fuse_loop_cfg_set_max_threads(loop, 64);
		fuse_loop_cfg_set_idle_threads(loop, 8);
		ret = fuse_session_loop_mt(se, loop) ? 1 : 0;
	}
out:
	/* unmount first: nobody serves the mount from here on */
	if (se && mounted)
		fuse_session_unmount(se);
	busy = updater_stop(&xfs);
	if (se) {
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
	}
	if (loop)
		fuse_loop_cfg_destroy(loop);
	if (busy)
		_exit(ret);	/* the build thread still uses everything, and
				   exit()'s handlers (OpenSSL's) would pull
				   things from under it */
	teardown(&xfs);
	free(cmd.mountpoint);
	free(o.repo);
	free(o.cache);
	free(o.map);
	free(o.unknown_headers);
	fuse_opt_free_args(&args);
	return ret;
}
