/*
 * text.c: the generated text files: README, status, the Git directories'
 * config, and (through the refs snapshot) HEAD, packed-refs and the
 * loose files of symbolic refs.
 */
#include "fs.h"

static int text_config_base(enum xfs_git git, struct buf *out);

#include <string.h>

int text_readme(struct xfs *xfs, struct buf *out)
{
	int reverse = xfs->algo == &hash_sha1;

	return buf_addf(out,
		"This is an xlatefs mount: the Git repository\n"
		"\n"
		"    %s\n"
		"\n"
		"read-only, as itself (%s) and as the %s repository it %s.\n"
		"\n"
		"    sha1/             a bare SHA-1 Git directory: git --git-dir=sha1 log\n"
		"    sha256/           %s\n"
		"    objects-sha1/     XX/YYYY...: the raw SHA-1 form of each object\n"
		"    objects-sha256/   XX/YYYY...: the raw SHA-256 form\n"
		"    status            translation state, one \"key: value\" a line\n"
		"\n"
		"Object files carry the extended attributes user.git.type,\n"
		"user.git.size, user.git.sha1 and user.git.sha256 (getfattr -d).\n"
		"Refs whose objects cannot be translated are left out of %s/;\n"
		"`git xlate -C %s report` says why.\n"
		"\n"
		"The name mapping is cached in\n"
		"\n"
		"    %s\n"
		"\n"
		"Unmount with: fusermount3 -u MOUNTPOINT\n",
		xfs->repo_path, xfs->algo->title,
		hash_algo_other(xfs->algo)->title,
		reverse ? "will become" : "would be",
		reverse ? "the same repository in SHA-256 form, as upstream Git's "
			  "rules make it:\n"
			  "                      git --git-dir=sha256 log" :
			  "the same repository in its own SHA-256 form",
		hash_algo_other(xfs->algo)->name, xfs->repo_path,
		xfs->cache_path);
}

/*
 * Enough for stock Git to read the directory and never try to write
 * to it: no automatic gc or maintenance, no reflogs, no commit-graph
 * written by fetches.  A partial clone's promisor remote is named as
 * such (without a URL: its server speaks SHA-256), so that stock git
 * takes the objects it lacks as promised, as it does in the repository
 * (the packs are marked too: a .promisor file beside each).
 */
int text_config(enum xfs_git git, const char *promisor, struct buf *out)
{
	int ret = text_config_base(git, out);

	if (ret || !promisor)
		return ret;
	ret = buf_addstr(out, "[remote \"");
	for (const char *p = promisor; !ret && *p; p++)
		ret = (*p == '"' || *p == '\\' ? buf_addch(out, '\\') : 0) ?:
		      buf_addch(out, *p);
	return ret ?: buf_addstr(out, "\"]\n\tpromisor = true\n");
}

static int text_config_base(enum xfs_git git, struct buf *out)
{
	return buf_addf(out,
		"[core]\n"
		"\trepositoryformatversion = %d\n"
		"\tfilemode = true\n"
		"\tbare = true\n"
		"\tlogallrefupdates = false\n"
		"%s"
		"[gc]\n"
		"\tauto = 0\n"
		"\tautoPackLimit = 0\n"
		"\tautoDetach = false\n"
		"[maintenance]\n"
		"\tauto = false\n"
		"[fetch]\n"
		"\twriteCommitGraph = false\n"
		"[receive]\n"
		"\tdenyNonFastForwards = true\n"
		"\tdenyDeletes = true\n",
		git == XFS_GIT256 ? 1 : 0,
		git == XFS_GIT256 ? "[extensions]\n\tobjectFormat = sha256\n" : "");
}

static const char *state_name(enum xfs_state s)
{
	switch (s) {
	case XFS_BUILDING:
		return "building";
	case XFS_READY:
		return "ready";
	default:
		return "error";
	}
}

int text_status(struct xfs *xfs, struct buf *out)
{
	struct xfs_status s;
	struct refsnap *snap = refsnap_get(xfs);
	uint64_t hidden = snap ? snap->view[xfs->other].hidden : 0;
	int ret;

	pthread_mutex_lock(&xfs->status_lock);
	s = xfs->status;
	pthread_mutex_unlock(&xfs->status_lock);
	ret = buf_addf(out,
		"state: %s\n"
		"objects: %llu\n"
		"translated: %llu\n"
		"untranslatable: %llu\n"
		"pending: %llu\n"
		"rate: %.0f\n"
		"hidden_refs: %llu\n"
		"builds: %llu\n"
		"cache: %s\n"
		"repository: %s\n"
		"direction: %s to %s\n",
		state_name(s.state), (unsigned long long)s.objects,
		(unsigned long long)s.translated,
		(unsigned long long)s.untranslatable,
		(unsigned long long)s.pending, s.rate,
		(unsigned long long)hidden, (unsigned long long)s.builds,
		xfs->cache_path, xfs->repo_path, xfs->algo->name,
		hash_algo_other(xfs->algo)->name);
	if (!ret)
		ret = buf_addf(out, "memory: memo %zu MiB, sqlite page cache up to "
			       "%u MiB for each of %u readers\n",
			       xfs->memo_bytes >> 20, (xfs->page_cache_kib ?
			       xfs->page_cache_kib : CACHE_PAGE_CACHE_KIB) >> 10,
			       xfs->nr_readers);
	if (!ret)
		ret = buf_addf(out, "cache_check: %s\n",
			       s.cache_check[0] ? s.cache_check : "pending");
	if (!ret && s.error[0])
		ret = buf_addf(out, "error: %s\n", s.error);
	/* why objects have no name, a line a cause */
	for (char *line = s.missing, *nl; !ret && *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			break;
		ret = buf_addf(out, "missing: %.*s\n", (int)(nl - line), line);
	}
	/* upstream's own map (compat mode), checked against ours */
	if (!ret && s.compat[0])
		ret = buf_addf(out, "upstream_map: %s", s.compat);
	/* refs left out of the translated view: `git xlate report` says why */
	for (size_t i = 0; snap && !ret && i < snap->view[xfs->other].nr_hidden_names; i++)
		ret = buf_addf(out, "hidden_ref: %s\n",
			       snap->view[xfs->other].hidden_names[i]);
	refsnap_put(snap);
	return ret;
}

/* The bytes of a snapshotted file in `snap`, or NULL (a symref gone since). */
static const char *snap_text(const struct refsnap *snap, const struct node *n,
			     size_t *len)
{
	const struct refsnap_view *v = &snap->view[n->git];
	const struct symref_file *s;

	if (n->kind == NODE_SYMREF) {
		if (!(s = refsnap_find(v, n->path)))
			return NULL;
		*len = s->len;
		return s->content;
	}
	if (n->text == TEXT_HEAD) {
		*len = v->head.len;
		return v->head.buf;
	}
	if (n->text == TEXT_SHALLOW) {
		*len = v->shallow.len;
		return v->shallow.buf;
	}
	*len = v->packed_refs.len;
	return v->packed_refs.buf;
}

size_t text_size(struct xfs *xfs, const struct node *n)
{
	struct refsnap *snap;
	struct buf b = BUF_INIT;
	size_t len = 0;

	if (node_is_version(n))
		return n->size;
	if (n->kind == NODE_TEXT && n->text == TEXT_README)
		return xfs->readme.len;
	if (n->kind == NODE_TEXT && n->text == TEXT_CONFIG)
		return xfs->config[n->git].len;
	if (n->kind == NODE_TEXT && n->text == TEXT_INFO_PACKS) {
		struct packsnap *ps = packsnap_get(xfs);

		len = ps ? ps->info_packs[n->git].len : 0;
		packsnap_put(ps);
		return len;
	}
	if (n->kind == NODE_TEXT && n->text == TEXT_STATUS) {
		text_status(xfs, &b);
		len = b.len;
		buf_release(&b);
		return len;
	}
	if ((snap = refsnap_get(xfs)) && !snap_text(snap, n, &len))
		len = 0;
	refsnap_put(snap);
	return len;
}

int text_content(struct xfs *xfs, const struct node *n, struct buf *out)
{
	struct refsnap *snap;
	int ret = 0;

	buf_reset(out);
	if (node_is_version(n))
		return node_version_bytes(xfs, n, out);
	if (n->kind == NODE_TEXT) {
		switch (n->text) {
		case TEXT_README:
			return buf_add(out, xfs->readme.buf, xfs->readme.len);
		case TEXT_CONFIG:
			return buf_add(out, xfs->config[n->git].buf,
				       xfs->config[n->git].len);
		case TEXT_STATUS:
			return text_status(xfs, out);
		case TEXT_INFO_PACKS: {
			struct packsnap *ps = packsnap_get(xfs);

			ret = ps ? buf_add(out, ps->info_packs[n->git].buf,
					   ps->info_packs[n->git].len) : XL_EIO;
			packsnap_put(ps);
			return ret;
		}
		default:
			break;
		}
	}
	const char *text;
	size_t len;

	if (!(snap = refsnap_get(xfs)))
		return XL_EIO;
	/* a symref gone since the lookup: empty until the kernel asks again */
	if ((text = snap_text(snap, n, &len)))
		ret = buf_add(out, text, len);
	refsnap_put(snap);
	return ret;
}
