/*
 * missing.c: what a repository lacks, and how to say so.
 *
 * A partial clone (git clone --filter=blob:none) has every commit and
 * tree but not the blobs; a shallow clone (--depth) has not the parents
 * of its boundary commits.  Neither is broken for Git, which fetches or
 * stops there, but a SHA-1 name covers everything an object refers to,
 * so the trees above a missing blob and every commit above those have
 * none.  The build counts what is missing (build.c, "What the repository
 * lacks") and keeps the count in the cache's meta "missing" as
 * "<blobs> <trees> <commits> <other>"; the mount's `status`, its log and
 * `git xlate report` say it in words, with the Git command that would
 * bring the objects.
 */
#include "xlate_i.h"
#include "../cache/cache.h"

#include <stdio.h>
#include <string.h>

#define MISSING_KEY "missing"

int xlate_missing_store(struct cache *cache, const struct xlate_missing *m)
{
	char v[100];

	snprintf(v, sizeof(v), "%llu %llu %llu %llu",
		 (unsigned long long)m->blobs, (unsigned long long)m->trees,
		 (unsigned long long)m->commits, (unsigned long long)m->other);
	return cache_meta_put(cache, MISSING_KEY, v);
}

int xlate_missing_read(struct cache *cache, struct xlate_missing *out)
{
	struct buf v = BUF_INIT;
	unsigned long long n[4];
	char extra;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = cache_meta_get(cache, MISSING_KEY, &v);
	if (ret == XL_ENOTFOUND) {
		ret = 0;
	} else if (!ret && sscanf(v.buf, "%llu %llu %llu %llu%c", &n[0], &n[1],
				  &n[2], &n[3], &extra) == 4) {
		out->known = 1;
		out->blobs = n[0];
		out->trees = n[1];
		out->commits = n[2];
		out->other = n[3];
	}
	buf_release(&v);
	return ret;
}

/* "N blob(s)" */
static int add_count(struct buf *out, uint64_t n, const char *what)
{
	return buf_addf(out, "%llu %s%s", (unsigned long long)n, what,
			n == 1 ? "" : "s");
}

/* A path as a shell takes it back: quoted unless plainly safe. */
static int add_path(struct buf *out, const char *path)
{
	int ret;

	if (path[strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			"0123456789/._-+:@")] == '\0')
		return buf_addstr(out, path);
	if ((ret = buf_addch(out, '\'')))
		return ret;
	for (const char *p = path; *p && !ret; p++)
		ret = *p == '\'' ? buf_addstr(out, "'\\''") : buf_addch(out, *p);
	return ret ?: buf_addch(out, '\'');
}

/*
 * Before Git 2.49: everything at once, as a clone would, which a
 * refetch does only once the remote's filter is gone (with it, Git
 * fetches again exactly what it has).
 */
static int refetch(struct buf *out, const char *dir, const char *remote)
{
	if (!remote)
		return buf_addstr(out, ", or all at once with `git -C ") ?:
		       add_path(out, dir) ?:
		       buf_addstr(out, " fetch --refetch` from the remote it came from");
	return buf_addstr(out, ", or all at once with `git -C ") ?:
	       add_path(out, dir) ?:
	       buf_addf(out, " config --unset remote.%s.partialclonefilter && git -C ",
			remote) ?:
	       add_path(out, dir) ?:
	       buf_addf(out, " fetch --refetch %s`", remote);
}

int xlate_missing_explain(struct repo *repo, const struct xlate_missing *m,
			  struct buf *out)
{
	const char *remote = repo_promisor(repo);
	const char *dir = repo_gitdir(repo);
	int partial = remote || repo_has_promisor_packs(repo);
	uint64_t boundary = 0;
	int ret = 0;

	if (!m->known)
		return 0;
	if (m->commits && repo_shallow_count(repo, &boundary))
		err_clear();	/* unreadable: said as not shallow */

	if (m->blobs || m->trees) {
		if (m->blobs)
			ret = add_count(out, m->blobs, "blob");
		if (!ret && m->blobs && m->trees)
			ret = buf_addstr(out, " and ");
		if (!ret && m->trees)
			ret = add_count(out, m->trees, "tree");
		if (ret)
			return ret;
		if (partial) {
			ret = buf_addstr(out, " missing (partial clone; promisor remote ") ?:
			      buf_addstr(out, remote ? remote : "not named in the config") ?:
			      buf_addstr(out, "): fetch them with `git -C ") ?:
			      add_path(out, dir) ?:
			      buf_addstr(out, " backfill` (Git 2.49 and later)") ?:
			      refetch(out, dir, remote) ?:
			      buf_addch(out, '\n');
		} else {
			ret = buf_addstr(out, " missing, and this is no partial clone: "
					 "the repository is incomplete (`git fsck` "
					 "names what it lacks)\n");
		}
		if (ret)
			return ret;
	}
	if (m->commits) {
		if ((ret = add_count(out, m->commits, "commit")))
			return ret;
		if (boundary) {
			ret = buf_addstr(out, " missing (shallow clone: ") ?:
			      add_count(out, boundary, "boundary commit") ?:
			      buf_addstr(out, "): fetch the history with `git -C ") ?:
			      add_path(out, dir) ?:
			      buf_addstr(out, " fetch --unshallow`\n");
		} else {
			ret = buf_addstr(out, " missing, and this is no shallow clone: "
					 "the repository is incomplete (`git fsck` "
					 "names what it lacks)\n");
		}
		if (ret)
			return ret;
	}
	if (m->other)
		ret = add_count(out, m->other, "tag target") ?:
		      buf_addstr(out, " missing: the repository is incomplete "
				 "(`git fsck` names what it lacks)\n");
	return ret;
}
