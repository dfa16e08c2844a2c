/*
 * compat.c: upstream Git's own map, checked against ours.
 *
 * A repository that runs upstream's compat mode
 * (extensions.compatObjectFormat = sha1) records the SHA-1 name of each
 * object it writes in objects/loose-object-idx: a line
 * "# loose-object-idx", then one "<sha256-hex> <sha1-hex>" line a pair
 * (gitformat-loose(5)); a SHA-1 repository with compatObjectFormat =
 * sha256, "<sha1-hex> <sha256-hex>": the repository's own name first.  Upstream appends and never removes: objects
 * pruned since keep their lines.  Both converters follow the same rules,
 * so every line must name an object as xlatefs does; one that does not
 * is a bug on one side, or a file tampered with, and either way a SHA-1
 * client of the mount and one of upstream would disagree about names.
 *
 * Each line is one of:
 *
 *   agree       the object's SHA-1 name here is the line's
 *   disagree    it has another one here: listed
 *   refused     it has none here, for good (a gitlink no map names, an
 *               unknown header under --unknown-headers=fail): listed,
 *               since upstream did name it
 *   unnamed     the repository has it, but the cache has not named it
 *               yet, or refused it only for now: checked again later
 *   stale       the repository does not have it (pruned since): counted
 *   malformed   no pair, or no header first: listed (upstream refuses
 *               to load such a file at all)
 *
 * A line for an object the repository lacks is compared with the names
 * the cache knows for such objects (gitlink targets, map pairs) before
 * it counts as stale.
 *
 * The build checks the file when it changes, or when it named objects
 * and lines were still unnamed or stale, and keeps the counts in the
 * cache's meta "compat" with the identity of the file they were counted
 * from, so that the mount's `status` can say them without reading it;
 * `git xlate report` and `verify` check it whole each time.  A check
 * costs one cache lookup a line.
 */
#include "xlate_i.h"
#include "../cache/cache.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define COMPAT_FILE "loose-object-idx"
#define COMPAT_HEADER "# loose-object-idx"
#define COMPAT_KEY "compat"
/* a pair is 64 + 1 + 40 characters: a longer line is no pair */
#define LINE_MAX_LEN 160

int xlate_compat_path(struct repo *repo, struct buf *out)
{
	buf_reset(out);
	return buf_addf(out, "%s/" COMPAT_FILE, repo_objdir(repo));
}

struct check {
	struct repo *repo;
	struct cache *cache;
	xlate_compat_fn fn;
	void *data;
	struct xlate_compat *c;
};

/* The line's pair against our name for it (ours NULL: none, for `why`). */
static int judge(struct check *k, uint64_t lineno, const char *line,
		 const struct oid *theirs, const struct oid *ours,
		 const char *why)
{
	if (ours && !oid_cmp(theirs, ours)) {
		k->c->agree++;
		return 0;
	}
	if (ours)
		k->c->disagree++;
	else
		k->c->refused++;
	return k->fn ? k->fn(k->data, ours ? XLATE_COMPAT_DISAGREE :
			     XLATE_COMPAT_REFUSED, lineno, line, ours, why) : 0;
}

static int malformed(struct check *k, uint64_t lineno, const char *line,
		     const char *why)
{
	k->c->malformed++;
	return k->fn ? k->fn(k->data, XLATE_COMPAT_MALFORMED, lineno, line,
			     NULL, why) : 0;
}

static int check_line(struct check *k, uint64_t lineno, const char *line,
		      size_t len)
{
	const struct hash_algo *algo = repo_algo(k->repo);
	const struct hash_algo *other = hash_algo_other(algo);
	struct cache_object co;
	struct oid o256, o1, ours;
	int ret;

	k->c->lines++;
	if (len != algo->hexsz + 1 + other->hexsz || line[algo->hexsz] != ' ' ||
	    oid_from_hex(&o256, algo, line) ||
	    oid_from_hex(&o1, other, line + algo->hexsz + 1)) {
		err_clear();
		return malformed(k, lineno, line, "not a pair of names");
	}
	/* upstream never writes its built-in pairs, but would agree */
	if (xlate_builtin(&o256, other, &ours))
		return judge(k, lineno, line, &o1, &ours, NULL);
	ret = cache_get(k->cache, &o256, &co);
	if (!ret) {
		if (co.sha1.algo)
			return judge(k, lineno, line, &o1, &co.sha1, NULL);
		if (co.retry) {
			k->c->unnamed++;
			return 0;
		}
		return judge(k, lineno, line, &o1, NULL,
			     co.reason ? co.reason : "untranslatable");
	}
	if (ret != XL_ENOTFOUND)
		return ret;
	/* an object the repository lacks: a gitlink's or a map's name? */
	ret = cache_get_known(k->cache, &o256, &ours);
	if (ret == XL_ENOTFOUND)
		ret = cache_get_gitlink(k->cache, &o256, &ours);
	if (!ret)
		return judge(k, lineno, line, &o1, &ours, NULL);
	if (ret != XL_ENOTFOUND)
		return ret;
	err_clear();
	if (odb_has(repo_odb(k->repo), &o256))
		k->c->unnamed++;
	else
		k->c->stale++;
	return 0;
}

/*
 * Read one line of at most LINE_MAX_LEN characters into line (without
 * its newline), the rest of a longer one skipped: *len gets its length,
 * or LINE_MAX_LEN + 1 when it was longer.  Returns 1 for a line, 0 at
 * the end, or XL_EIO.
 */
static int read_line(FILE *f, char *line, size_t *len)
{
	size_t n = 0;
	int ch;

	while ((ch = getc(f)) != EOF && ch != '\n') {
		if (n < LINE_MAX_LEN)
			line[n] = (char)ch;
		n += n <= LINE_MAX_LEN;
	}
	if (ferror(f))
		return err_errno("reading " COMPAT_FILE);
	line[n <= LINE_MAX_LEN ? n : LINE_MAX_LEN] = '\0';
	*len = n;
	return ch != EOF || n ? 1 : 0;
}

int xlate_compat_check(struct repo *repo, struct cache *cache,
		       xlate_compat_fn fn, void *data, struct xlate_compat *out)
{
	struct check k = { repo, cache, fn, data, out };
	struct buf path = BUF_INIT;
	char line[LINE_MAX_LEN + 1];
	uint64_t lineno = 0;
	size_t len = 0;
	FILE *f;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = xlate_compat_path(repo, &path)))
		return ret;
	f = fopen(path.buf, "r");
	if (!f) {
		ret = errno == ENOENT ? 0 : err_errno("%s", path.buf);
		buf_release(&path);
		return ret;
	}
	out->present = 1;
	while ((ret = read_line(f, line, &len)) == 1) {
		if (lineno++)
			ret = check_line(&k, lineno, line, len);
		else if (len != strlen(COMPAT_HEADER) || strcmp(line, COMPAT_HEADER))
			ret = malformed(&k, lineno, line,
					"the first line is not \"" COMPAT_HEADER "\"");
		else
			ret = 0;
		if (ret)
			break;
	}
	if (!ret && !lineno)
		ret = malformed(&k, 1, "", "empty: no \"" COMPAT_HEADER "\" line");
	if (ret)
		err_wrap("%s", path.buf);
	fclose(f);
	buf_release(&path);
	return ret;
}

/* ---- the counts kept for the mount -------------------------------------- */

/* Which file the counts were made from: it is only ever appended to. */
static void identity(const struct stat *st, char *out, size_t size)
{
	snprintf(out, size, "%llu:%llu:%lld:%lld.%09ld",
		 (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
		 (long long)st->st_size, (long long)st->st_mtim.tv_sec,
		 st->st_mtim.tv_nsec);
}

static int compat_get(struct cache *cache, char *id, size_t idsize,
		      struct xlate_compat *c)
{
	struct buf v = BUF_INIT;
	unsigned long long n[7];
	char extra;
	int ret, fields;

	memset(c, 0, sizeof(*c));
	*id = '\0';
	ret = cache_meta_get(cache, COMPAT_KEY, &v);
	if (ret == XL_ENOTFOUND) {
		buf_release(&v);
		return 0;
	}
	if (!ret) {
		char fmt[64];

		snprintf(fmt, sizeof(fmt), "%%%zus %%llu %%llu %%llu %%llu %%llu "
			 "%%llu %%llu%%c", idsize - 1);
		fields = sscanf(v.buf, fmt, id, &n[0], &n[1], &n[2], &n[3],
				&n[4], &n[5], &n[6], &extra);
		if (fields == 8) {
			c->present = strcmp(id, "-") != 0;
			c->lines = n[0];
			c->agree = n[1];
			c->disagree = n[2];
			c->refused = n[3];
			c->unnamed = n[4];
			c->stale = n[5];
			c->malformed = n[6];
		} else {
			*id = '\0';	/* not ours: counted again */
		}
	}
	buf_release(&v);
	return ret;
}

int xlate_compat_update(struct repo *repo, struct cache *cache, int named,
			struct xlate_compat *out)
{
	struct buf path = BUF_INIT;
	struct stat st;
	char was[128], now[128], v[400];
	struct xlate_compat old;
	int ret;

	if ((ret = compat_get(cache, was, sizeof(was), &old)) ||
	    (ret = xlate_compat_path(repo, &path)))
		goto out;
	if (stat(path.buf, &st))
		snprintf(now, sizeof(now), "-");
	else
		identity(&st, now, sizeof(now));
	*out = old;
	/* the same file, and nothing new that could settle a line */
	if (!strcmp(was, now) && (!named || !(old.unnamed + old.stale)))
		goto out;
	if (strcmp(now, "-") && (ret = xlate_compat_check(repo, cache, NULL,
							  NULL, out)))
		goto out;
	if (!strcmp(now, "-"))
		memset(out, 0, sizeof(*out));
	snprintf(v, sizeof(v), "%s %llu %llu %llu %llu %llu %llu %llu", now,
		 (unsigned long long)out->lines, (unsigned long long)out->agree,
		 (unsigned long long)out->disagree,
		 (unsigned long long)out->refused,
		 (unsigned long long)out->unnamed,
		 (unsigned long long)out->stale,
		 (unsigned long long)out->malformed);
	ret = cache_meta_put(cache, COMPAT_KEY, v);
out:
	buf_release(&path);
	return ret;
}

int xlate_compat_explain(const struct xlate_compat *c, struct buf *out)
{
	int ret;

	if (!c->present)
		return 0;
	ret = buf_addf(out, "objects/" COMPAT_FILE " (upstream's map): %llu "
		       "line%s, %llu agree", (unsigned long long)c->lines,
		       c->lines == 1 ? "" : "s", (unsigned long long)c->agree);
	if (!ret && c->disagree)
		ret = buf_addf(out, ", %llu DISAGREE", (unsigned long long)c->disagree);
	if (!ret && c->refused)
		ret = buf_addf(out, ", %llu named there and refused here",
			       (unsigned long long)c->refused);
	if (!ret && c->malformed)
		ret = buf_addf(out, ", %llu malformed", (unsigned long long)c->malformed);
	if (!ret && c->unnamed)
		ret = buf_addf(out, ", %llu not named yet", (unsigned long long)c->unnamed);
	if (!ret && c->stale)
		ret = buf_addf(out, ", %llu for objects not in the repository "
			       "(pruned since, or a submodule's)",
			       (unsigned long long)c->stale);
	if (!ret && (c->disagree || c->refused || c->malformed))
		ret = buf_addstr(out, " (`git xlate report` lists them)");
	/* what upstream could name and we cannot: its pairs, lent as a map */
	if (!ret && c->refused)
		ret = buf_addstr(out, "; --map objects/loose-object-idx lends "
				 "upstream's pairs for objects the repository lacks");
	return ret ?: buf_addch(out, '\n');
}
