/*
 * main.c: git-xlate, the command-line face of xlatefs.
 *
 *   git xlate [-C REPO] [--cache FILE] [--map FILE]
 *             [--unknown-headers=fail|copy] COMMAND [ARGS]
 *
 * Git runs `git-xlate` from PATH for `git xlate`.  Exit status: 0 on
 * success, 1 when a name is unknown or ambiguous or an object cannot be
 * read, 2 on usage errors; every failure prints one line on stderr.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: git xlate [-C REPO] [--cache FILE] [--map FILE]\n"
	"                 [--unknown-headers=fail|copy] COMMAND [ARGS]\n"
	"\n"
	"commands:\n"
	"   build                  create or bring the cache up to date\n"
	"   map NAME...            the other name of each object\n"
	"   cat-file (-t | -s | -e | -p | TYPE) NAME\n"
	"   cat-file (--batch | --batch-check)[=FORMAT] [--batch-all-objects] [--buffer]\n"
	"   show NAME              both forms side by side, rewritten names marked\n"
	"   verify                 re-hash every SHA-1 form and convert it back\n"
	"   report                 untranslatable objects, hidden refs, gitlinks\n"
	"   export [--format=tsv|loose-object-idx]\n"
	"\n"
	"See git-xlate(1).\n";

int cli_error(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("git xlate: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int cli_fail(const char *what)
{
	int code = err_code();

	if (what)
		cli_error(0, "%s: %s", what, err_msg());
	else
		cli_error(0, "%s", err_msg());
	return code == XL_EINVALID ? EXIT_USAGE : EXIT_NOTFOUND;
}

struct repo *cli_repo(struct cli *cli)
{
	if (!cli->repo && repo_open(&cli->repo, cli->repo_path)) {
		cli_fail(NULL);
		return NULL;
	}
	return cli->repo;
}

static void warn_cb(void *data, const char *message)
{
	cli_error(0, "warning: %s", message);
}

int cli_build(struct cli *cli, struct xlate_build_stats *stats)
{
	struct xlate_progress p;
	/* and the SHA-1 packs a mount serves, so that it starts at once */
	struct xlate_pack1_opts po = {
		.unknown_headers = cli->unknown_headers,
		.threads = cli->threads,
	};
	struct xlate_build_opts opts = {
		.pack1 = &po,
		.pack1_stats = &cli->pack1_stats,
		.threads = cli->threads,
		.unknown_headers = cli->unknown_headers,
		.map = cli->map,
		.fold = cli->fold,
		.progress = isatty(2) ? xlate_progress_cb : NULL,
		.progress_data = &p,
	};
	struct buf path = BUF_INIT;
	int ret;

	if (!cli_repo(cli))
		return XL_ENOTFOUND;
	if (!cli->cache) {
		if (cli->cache_path)
			ret = buf_addstr(&path, cli->cache_path);
		else
			ret = cache_default_path(repo_commondir(cli->repo), &path);
		if (!ret)
			ret = cache_open(&cli->cache, path.buf, repo_algo(cli->repo),
					 CACHE_OPEN_MAP | (cli->check_all ?
							   CACHE_OPEN_CHECK_ALL : 0),
					 warn_cb, NULL);
		buf_release(&path);
		if (ret)
			return ret;
	}
	xlate_progress_init(&p, stderr);
	ret = xlate_build(cli->repo, cli->cache, &opts, stats);
	xlate_progress_end(&p);
	if (!ret && stats->unreadable)
		cli_error(0, "warning: %llu object%s cannot be read and %s left "
			  "for the next build, with what needs %s (see git xlate "
			  "report); first: %s",
			  (unsigned long long)stats->unreadable,
			  stats->unreadable == 1 ? "" : "s",
			  stats->unreadable == 1 ? "is" : "are",
			  stats->unreadable == 1 ? "it" : "them",
			  stats->first_unreadable);
	if (!ret && stats->map_disagree)
		cli_error(0, "warning: %llu line%s of the map name%s an object "
			  "the repository has otherwise; ignored, as its own "
			  "conversion names it; first: %s",
			  (unsigned long long)stats->map_disagree,
			  stats->map_disagree == 1 ? "" : "s",
			  stats->map_disagree == 1 ? "s" : "",
			  stats->first_map_disagree);
	if (!ret && stats->broken_packs)
		cli_error(0, "warning: %llu pack%s cannot be read and %s skipped; "
			  "first: %s", (unsigned long long)stats->broken_packs,
			  stats->broken_packs == 1 ? "" : "s",
			  stats->broken_packs == 1 ? "is" : "are",
			  stats->first_broken_pack);
	if (!ret)
		cli->built = 1;
	return ret;
}

struct cache *cli_cache(struct cli *cli)
{
	struct xlate_build_stats stats;

	if (!cli->built && cli_build(cli, &stats)) {
		cli_fail(NULL);
		return NULL;
	}
	return cli->cache;
}

/* ---- output buffer -------------------------------------------------- */

int out_init(struct out *o, int fd, size_t cap)
{
	struct stat st;

	/*
	 * Bulk output usually goes down a pipe to another process.  With
	 * the default 64 KiB pipe every few writes block and both sides
	 * keep switching; a pipe as large as our buffer lets a whole
	 * buffer go in one write while the reader catches up.  Best effort:
	 * the kernel may cap the size (pipe-max-size) or refuse.
	 */
	if (!fstat(fd, &st) && S_ISFIFO(st.st_mode))
		fcntl(fd, F_SETPIPE_SZ, (int)cap);
	o->fd = fd;
	o->len = 0;
	o->cap = cap;
	o->failed = 0;
	o->buf = malloc(cap);
	return o->buf ? 0 : err_set(XL_ENOMEM, "out of memory");
}

void out_release(struct out *o)
{
	free(o->buf);
	o->buf = NULL;
}

static int write_all(struct out *o, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(o->fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/*
			 * The reader went away (`| head`): end as Git and
			 * every filter does, by SIGPIPE, quietly.  We ignore
			 * it only so that write() says which descriptor it
			 * was; nothing is left to save (the cache commits
			 * before any output).
			 */
			if (errno == EPIPE) {
				signal(SIGPIPE, SIG_DFL);
				raise(SIGPIPE);
			}
			o->failed = 1;
			return err_errno("write error");
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int out_flush(struct out *o)
{
	int ret;

	if (o->failed)
		return XL_EIO;
	ret = write_all(o, o->buf, o->len);
	o->len = 0;
	return ret;
}

int out_write(struct out *o, const void *data, size_t len)
{
	if (o->failed)
		return XL_EIO;
	if (len <= o->cap - o->len) {
		memcpy(o->buf + o->len, data, len);
		o->len += len;
		return 0;
	}
	if (out_flush(o))
		return XL_EIO;
	if (len >= o->cap)
		return write_all(o, data, len);
	memcpy(o->buf, data, len);
	o->len = len;
	return 0;
}

/* ---- dispatch ------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(struct cli *cli, int argc, char **argv);
} commands[] = {
	{ "build", cmd_build },
	{ "map", cmd_map },
	{ "cat-file", cmd_cat_file },
	{ "show", cmd_show },
	{ "verify", cmd_verify },
	{ "report", cmd_report },
	{ "export", cmd_export },
};

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	const char *git_dir = getenv("GIT_DIR");
	int i, ret;

	/* a closed pipe is an ordinary end of output, reported by write() */
	signal(SIGPIPE, SIG_IGN);
	/* a pack cut short under us is damage, not death (odb.h) */
	if (map_guard_install())
		return cli_error(EXIT_FAILURE, "%s", err_msg());
	cli.repo_path = git_dir && *git_dir ? git_dir : ".";
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		/* --submodule-map: the map's first name, when gitlinks were all it named */
		if (!strcmp(a, "-C") || !strcmp(a, "--cache") ||
		    !strcmp(a, "--map") || !strcmp(a, "--submodule-map")) {
			if (++i >= argc)
				return cli_error(EXIT_USAGE, "%s needs an argument", a);
			if (a[1] == 'C')
				cli.repo_path = argv[i];
			else if (a[2] == 'c')
				cli.cache_path = argv[i];
			else
				cli.map = argv[i];
		} else if (!strncmp(a, "--cache=", 8)) {
			cli.cache_path = a + 8;
		} else if (!strncmp(a, "--map=", 6)) {
			cli.map = a + 6;
		} else if (!strncmp(a, "--submodule-map=", 16)) {
			cli.map = a + 16;
		} else if (!strcmp(a, "--unknown-headers=fail")) {
			cli.unknown_headers = XLATE_UNKNOWN_FAIL;
		} else if (!strcmp(a, "--unknown-headers=copy")) {
			cli.unknown_headers = XLATE_UNKNOWN_COPY;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return EXIT_OK;
		} else {
			fputs(usage_text, stderr);
			return cli_error(EXIT_USAGE, "unknown option '%s'", argv[i]);
		}
	}
	if (i >= argc) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	for (size_t c = 0; c < sizeof(commands) / sizeof(*commands); c++) {
		if (strcmp(argv[i], commands[c].name))
			continue;
		ret = commands[c].fn(&cli, argc - i, argv + i);
		cache_close(cli.cache);
		repo_close(cli.repo);
		return ret;
	}
	fputs(usage_text, stderr);
	return cli_error(EXIT_USAGE, "unknown command '%s'", argv[i]);
}
