/*
 * main.c: xlatefs, the daemon.
 *
 *   xlatefs [-f] [-d] [-o OPTIONS] REPO MOUNTPOINT
 *   xlatefs [-f] [-d] [-o OPTIONS] --root DIR MOUNTPOINT   (forge.c)
 *
 * Start-up, in this order because of fork: fuse_daemonize() forks, and
 * neither threads nor sqlite connections may cross a fork.  So the
 * repository is opened and (unless -o background) the cache brought up
 * to date in the foreground, with a progress bar on a terminal; that
 * connection is closed; the file system is mounted and the process
 * detaches; only then are the sqlite connections opened and the updater
 * thread started.  A forge mount opens nothing before the fork: each of
 * its repositories starts when first used.  SIGTERM, SIGINT and SIGHUP end the loop (libfuse's
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
	char *root;
	char *cache;
	char *map;
	char *unknown_headers;
	unsigned max_open;
	unsigned memo_mib, page_cache_mib;
	int background;
	int help, version;
};

#define OPT(t, p) { t, offsetof(struct options, p), 1 }
static const struct fuse_opt option_spec[] = {
	OPT("cache=%s", cache),
	OPT("root=%s", root),
	OPT("--root=%s", root),
	OPT("--root %s", root),
	OPT("max_open=%u", max_open),
	OPT("memo_mib=%u", memo_mib),
	OPT("page_cache_mib=%u", page_cache_mib),
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
	"       xlatefs [-f] [-d] [-o OPTIONS] --root DIR MOUNTPOINT\n"
	"\n"
	"Mount the SHA-256 Git repository REPO read-only at MOUNTPOINT, as\n"
	"itself (MOUNTPOINT/sha256) and as the SHA-1 repository it would be\n"
	"(MOUNTPOINT/sha1).  With --root, mount every SHA-256 repository\n"
	"under DIR so, each at MOUNTPOINT/<its path under DIR>/.\n"
	"Unmount with: fusermount3 -u MOUNTPOINT\n"
	"\n"
	"xlatefs options:\n"
	"    --root DIR, -o root=DIR    a forge: every repository under DIR\n"
	"    -o max_open=N              with --root: repositories kept open while idle\n"
	"                               (default 32)\n"
	"    -o memo_mib=N              memory for recent SHA-1 names (default 32; 4 with --root)\n"
	"    -o page_cache_mib=N        each sqlite reader's page cache (default 64; 8 with --root)\n"
	"    -o cache=FILE              the translation cache (default: beside the repository)\n"
	"    -o map=FILE                SHA-1 names of objects the repository lacks\n"
	"                               (submodule commits, a partial or shallow clone's)\n"
	"    -o unknown_headers=fail|copy   commits with unknown headers (default fail)\n"
	"    -o background              mount at once and translate in the background\n"
	"    -f                         stay in the foreground (log to stderr)\n"
	"    -d                         debug: foreground, and FUSE's own trace\n"
	"\n"
	"See xlatefs(1).\n";

/*
 * The first non-option argument is the repository, unless --root came
 * before it; the mount point goes on to libfuse.
 */
static int option_proc(void *data, const char *arg, int key,
		       struct fuse_args *outargs)
{
	struct options *o = data;

	/* with --root (given first), the only one is the mount point */
	if (key == FUSE_OPT_KEY_NONOPT && !o->repo && !o->root) {
		o->repo = strdup(arg);
		return 0;
	}
	return 1;
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

/* Parse unknown_headers=; 0 or XL_EINVALID. */
static int parse_unknown(const char *v, enum xlate_unknown *out)
{
	if (!v || !strcmp(v, "fail"))
		*out = XLATE_UNKNOWN_FAIL;
	else if (!strcmp(v, "copy"))
		*out = XLATE_UNKNOWN_COPY;
	else
		return err_set(XL_EINVALID, "unknown_headers=%s: want fail or copy", v);
	return 0;
}

/*
 * Check the options and set up what must be ready before the fork: a
 * single mount's repository and first build, or a forge's root.
 */
static int prepare(struct options *o, struct xfs *xfs, struct forge **forge)
{
	enum xlate_unknown unknown = XLATE_UNKNOWN_FAIL;
	int ret;

	if ((ret = parse_unknown(o->unknown_headers, &unknown)))
		return ret;
	if (o->memo_mib > 4096 || o->page_cache_mib > 4096)
		return err_set(XL_EINVALID, "memo_mib= and page_cache_mib= "
			       "take at most 4096 (MiB)");
	if (o->root) {
		struct forge_conf fc = {
			.root = o->root,
			.unknown_headers = unknown,
			.max_open = o->max_open,
			.memo_bytes = (size_t)o->memo_mib << 20,
			.page_cache_kib = o->page_cache_mib << 10,
		};

		if (o->repo)
			return err_set(XL_EINVALID, "--root %s and a repository "
				       "(%s): give one or the other", o->root,
				       o->repo);
		if (o->cache || o->map || o->background)
			return err_set(XL_EINVALID, "cache=, map= and background "
				       "are for one repository, not --root "
				       "(each repository keeps its cache beside it)");
		return forge_new(forge, &fc);
	}
	if (o->max_open)
		return err_set(XL_EINVALID, "max_open= is for --root");
	struct xfs_conf conf = {
		.repo = o->repo,
		.cache = o->cache,
		.map = o->map,
		.unknown_headers = unknown,
		.background = o->background,
		.memo_bytes = (size_t)o->memo_mib << 20,
		.page_cache_kib = o->page_cache_mib << 10,
	};

	if ((ret = xfs_setup(xfs, &conf)))
		return ret;
	return xfs->background ? 0 : xfs_first_build(xfs);
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd;
	struct options o = { 0 };
	struct xfs xfs;
	struct forge *forge = NULL;
	struct fuse_lowlevel_ops ops;
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
	if ((!o.repo && !o.root) || !cmd.mountpoint) {
		fputs(usage_text, stderr);
		ret = 2;
		goto out;
	}
	xfs.foreground = cmd.foreground;
	xfs.debug = cmd.debug;

	/* a pack cut short under us is damage, not death (odb.h) */
	if (map_guard_install() || prepare(&o, &xfs, &forge)) {
		fprintf(stderr, "xlatefs: %s\n", err_msg());
		goto out;
	}

	/* read-only in the kernel too; named after the repository in mount(8) */
	if (fuse_opt_add_arg(&args, "-oro,default_permissions,subtype=xlatefs") ||
	    add_fsname(&args, forge ? o.root : xfs.repo_path)) {
		fputs("xlatefs: out of memory\n", stderr);
		goto out;
	}
	ops = forge ? forge_ops : xfs_ops;
	xfs_ops_readonly(&ops);
	se = fuse_session_new(&args, &ops, sizeof(ops),
			      forge ? (void *)forge : (void *)&xfs);
	if (!se)
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

	if (forge ? forge_start(forge) : xfs_start(&xfs)) {
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
	busy = forge ? forge_free(forge) : updater_stop(&xfs);
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
	if (!forge)
		xfs_teardown(&xfs);
	free(cmd.mountpoint);
	free(o.repo);
	free(o.root);
	free(o.cache);
	free(o.map);
	free(o.unknown_headers);
	fuse_opt_free_args(&args);
	return ret;
}
