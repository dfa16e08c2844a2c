/*
 * cli.h: what the git-xlate subcommands share (inside xlate/ only).
 */
#ifndef XLATEFS_CLI_H
#define XLATEFS_CLI_H

#include "../odb/odb.h"

#include <string.h>

/* Exit codes of the contract (DESIGN.md §3). */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_NOTFOUND = 1,	/* unknown or ambiguous name, unreadable object */
	EXIT_USAGE = 2,
};

#include "xlate.h"
#include "../cache/cache.h"

/* Global options, parsed by main.c before the subcommand. */
struct cli {
	const char *repo_path;	/* -C, or GIT_DIR, or "." */
	const char *cache_path;	/* --cache, or NULL for the default */
	const char *map;		/* --map (or --submodule-map) */
	enum xlate_unknown unknown_headers;	/* --unknown-headers */
	struct repo *repo;	/* opened on demand by cli_repo() */
	struct cache *cache;	/* opened on demand by cli_cache() */
	int built;		/* the cache was brought up to date */
	int check_all;		/* check the whole cache file on open (verify) */
	int threads;		/* build --threads; 0: one per online processor */
	int fold;		/* build --fold */
	struct xlate_pack1_stats pack1_stats;	/* the last build's layouts */
};

/* Open the repository (once); prints the reason and returns NULL on failure. */
struct repo *cli_repo(struct cli *cli);

/*
 * Open the cache and bring it up to date with the repository (once per
 * run; quick when nothing is new), with a progress bar when stderr is a
 * terminal.  Prints the reason and returns NULL on failure.
 */
struct cache *cli_cache(struct cli *cli);

/* Build (or update) the cache; progress on a terminal.  Returns 0 or an XL_E code. */
int cli_build(struct cli *cli, struct xlate_build_stats *stats);

/* "git xlate: <msg>" on stderr; returns code. */
int cli_error(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The last odb error as a CLI exit: usage, not found, or other failure. */
int cli_fail(const char *what);

/*
 * Buffered writing to a file descriptor: output goes out in large
 * writes; data larger than the buffer goes straight through.
 */
struct out {
	int fd;
	char *buf;
	size_t len, cap;
	int failed;		/* a write failed (EPIPE...): stop producing */
};

int out_init(struct out *o, int fd, size_t cap);
void out_release(struct out *o);
int out_write(struct out *o, const void *data, size_t len);
int out_flush(struct out *o);

static inline int out_str(struct out *o, const char *s)
{
	return out_write(o, s, strlen(s));
}

int cmd_cat_file(struct cli *cli, int argc, char **argv);
int cmd_build(struct cli *cli, int argc, char **argv);
int cmd_map(struct cli *cli, int argc, char **argv);
int cmd_export(struct cli *cli, int argc, char **argv);
int cmd_report(struct cli *cli, int argc, char **argv);
int cmd_verify(struct cli *cli, int argc, char **argv);
int cmd_show(struct cli *cli, int argc, char **argv);

/* Write a tree's entries as `git ls-tree` does (names of `algo`). */
int print_tree(struct out *o, const struct hash_algo *algo,
	       const struct buf *tree, int quote_high);

#endif
