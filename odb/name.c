/*
 * name.c: revision names, as `git cat-file` and `git rev-parse` take them.
 *
 *   NAME    := BASE SUFFIX* [ ':' PATH ]
 *   BASE    := full hex | ref (Git's DWIM order) | HEAD | @ | abbreviated hex
 *   SUFFIX  := '^{' [TYPE] '}' | '^' [N] | '~' [N]
 *
 * The order of BASE lookups is Git's: a full-length hex name is taken as
 * is, then refs, then abbreviations.  Every step (peeling tags, walking
 * parents, walking a path into trees) is a loop, never recursion, and
 * each is bounded by the input's length or by PEEL_MAX.
 */
#include "odb_i.h"

#include <stdlib.h>
#include <string.h>

#define PEEL_MAX 10000	/* tag-of-tag chains longer than this are refused */

/* The first "key <hex>" header of a commit or tag, or XL_ENOTFOUND. */
static int header_oid(const struct buf *obj, const char *key, size_t nth,
		      const struct hash_algo *algo, struct oid *out)
{
	const char *p = obj->buf, *end = obj->buf + obj->len;
	size_t klen = strlen(key);

	while (p < end && *p != '\n') {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n == klen + 1 + algo->hexsz && !memcmp(p, key, klen) &&
		    p[klen] == ' ' && nth-- == 0)
			return oid_from_hex(out, algo, p + klen + 1) ?
				ERR_CORRUPT("bad %s line", key) : 0;
		p += n + 1;
	}
	return XL_ENOTFOUND;
}

static int describe_mismatch(const struct oid *oid, enum obj_type have,
			     enum obj_type want)
{
	char hex[OID_HEXSZ_MAX + 1];

	return err_set(XL_ENOTFOUND, "%s is a %s, not a %s",
		       oid_to_hex_r(hex, oid), type_name(have),
		       type_name(want));
}

int repo_peel(struct repo *repo, const struct oid *oid, enum obj_type want,
	      struct oid *out)
{
	struct buf obj = BUF_INIT;
	struct oid cur = *oid;
	enum obj_type type;
	int ret = 0;

	for (int hops = 0;; hops++) {
		if (hops > PEEL_MAX) {
			ret = err_set(XL_ETOOBIG, "tag chain longer than %d",
				      PEEL_MAX);
			break;
		}
		if ((ret = odb_read_header(repo->odb, &cur, &type, NULL)))
			break;
		if (type == want || (want == OBJ_NONE && type != OBJ_TAG))
			break;
		if (type == OBJ_TAG) {
			if ((ret = odb_read(repo->odb, &cur, &type, &obj)))
				break;
			ret = header_oid(&obj, "object", 0, repo->algo, &cur);
		} else if (type == OBJ_COMMIT && want == OBJ_TREE) {
			if ((ret = odb_read(repo->odb, &cur, &type, &obj)))
				break;
			ret = header_oid(&obj, "tree", 0, repo->algo, &cur);
		} else {
			ret = describe_mismatch(&cur, type, want);
			break;
		}
		if (ret == XL_ENOTFOUND)
			ret = ERR_CORRUPT("object has no target line");
		if (ret)
			break;
	}
	buf_release(&obj);
	if (!ret)
		*out = cur;
	return ret;
}

/* ---- the base name -------------------------------------------------- */

static const char *const dwim_rules[] = {
	"%.*s", "refs/%.*s", "refs/tags/%.*s", "refs/heads/%.*s",
	"refs/remotes/%.*s", "refs/remotes/%.*s/HEAD",
};

static int is_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (hex_value((unsigned char)s[i]) < 0)
			return 0;
	return 1;
}

static int resolve_base(struct repo *repo, const char *s, size_t len,
			struct oid *out)
{
	struct buf name = BUF_INIT;

	if (len == repo->algo->hexsz && is_hex(s, len))
		return oid_from_hex(out, repo->algo, s);
	if (len == 1 && s[0] == '@') {
		s = "HEAD";
		len = 4;
	}
	if (len && memchr(s, '\0', len) == NULL) {
		for (size_t i = 0; i < sizeof(dwim_rules) / sizeof(*dwim_rules); i++) {
			struct ref ref;
			int unborn;

			buf_reset(&name);
			buf_addf(&name, dwim_rules[i], (int)len, s);
			/*
			 * As Git, a broken or unborn ref is skipped and the next
			 * rule tried; bad names never reach the disk (refs.c).
			 */
			if (refs_read(repo, name.buf, &ref)) {
				err_clear();
				continue;
			}
			unborn = oid_is_null(&ref.oid);
			*out = ref.oid;
			ref_release(&ref);
			if (unborn)
				continue;
			buf_release(&name);
			return 0;
		}
	}
	buf_release(&name);
	if (len >= 4 && len < repo->algo->hexsz && is_hex(s, len))
		return odb_resolve_prefix(repo->odb, s, len, out);
	return err_set(XL_ENOTFOUND, "not a valid object name: %.*s", (int)len, s);
}

/* ---- suffixes ------------------------------------------------------- */

static int nth_parent(struct repo *repo, struct oid *cur, size_t n)
{
	struct buf obj = BUF_INIT;
	enum obj_type type;
	int ret;

	if ((ret = repo_peel(repo, cur, OBJ_COMMIT, cur)))
		return ret;
	if (n == 0)
		return 0;
	if ((ret = odb_read(repo->odb, cur, &type, &obj)))
		return ret;
	ret = header_oid(&obj, "parent", n - 1, repo->algo, cur);
	buf_release(&obj);
	if (ret == XL_ENOTFOUND)
		ret = err_set(XL_ENOTFOUND, "commit has no parent %zu", n);
	return ret;
}

static size_t parse_count(const char **p, const char *end, size_t dflt)
{
	size_t n = 0;

	if (*p >= end || **p < '0' || **p > '9')
		return dflt;
	while (*p < end && **p >= '0' && **p <= '9') {
		if (n > 100000000)
			n = 100000000;	/* absurd counts just walk off the end */
		n = n * 10 + (size_t)(*(*p)++ - '0');
	}
	return n;
}

/* Walk `path` from the tree-ish cur. */
static int walk_path(struct repo *repo, struct oid *cur, const char *path)
{
	struct buf tree = BUF_INIT;
	size_t rawsz = repo->algo->rawsz;
	int ret;

	/* "rev:" names the tree itself */
	if ((ret = repo_peel(repo, cur, OBJ_TREE, cur)))
		return ret;
	while (*path) {
		const char *slash = strchr(path, '/');
		size_t n = slash ? (size_t)(slash - path) : strlen(path);
		const char *p, *end;
		enum obj_type type;
		int found = 0;

		if (!n) {
			path++;
			continue;
		}
		if ((ret = repo_peel(repo, cur, OBJ_TREE, cur)) ||
		    (ret = odb_read(repo->odb, cur, &type, &tree)))
			break;
		for (p = tree.buf, end = tree.buf + tree.len; p < end;) {
			const char *sp = memchr(p, ' ', (size_t)(end - p));
			const char *nul = sp ? memchr(sp, '\0', (size_t)(end - sp)) : NULL;

			if (!nul || (size_t)(end - nul - 1) < rawsz) {
				ret = ERR_CORRUPT("malformed tree");
				break;
			}
			if ((size_t)(nul - sp - 1) == n && !memcmp(sp + 1, path, n)) {
				oid_from_raw(cur, repo->algo,
					     (const unsigned char *)nul + 1);
				found = 1;
				break;
			}
			p = nul + 1 + rawsz;
		}
		if (ret)
			break;
		if (!found) {
			ret = err_set(XL_ENOTFOUND, "path '%.*s' does not exist",
				      (int)n, path);
			break;
		}
		path += n;
	}
	buf_release(&tree);
	return ret;
}

int repo_resolve_name(struct repo *repo, const char *name, struct oid *out)
{
	const char *colon = strchr(name, ':');
	const char *end = colon ? colon : name + strlen(name);
	const char *p = name;
	size_t base_len;
	int ret;

	if (colon == name)
		return err_set(XL_ENOTFOUND, "%s: the index is not available",
			       name);
	while (p < end && *p != '^' && *p != '~')
		p++;
	base_len = (size_t)(p - name);
	if ((ret = resolve_base(repo, name, base_len, out)))
		return ret;

	while (p < end) {
		char op = *p++;

		if (op == '^' && p < end && *p == '{') {
			const char *close = memchr(p, '}', (size_t)(end - p));
			enum obj_type want;
			size_t n;

			if (!close)
				return err_set(XL_ENOTFOUND, "bad revision '%s'", name);
			n = (size_t)(close - p - 1);
			if (n == 0) {
				want = OBJ_NONE;
			} else if (n == 6 && !memcmp(p + 1, "object", 6)) {
				if (!odb_has(repo->odb, out))
					return err_set(XL_ENOTFOUND, "missing object");
				p = close + 1;
				continue;
			} else if ((want = type_from_name(p + 1, n)) == OBJ_NONE) {
				return err_set(XL_ENOTFOUND, "bad revision '%s'", name);
			}
			if ((ret = repo_peel(repo, out, want, out)))
				return ret;
			p = close + 1;
		} else if (op == '^') {
			if ((ret = nth_parent(repo, out, parse_count(&p, end, 1))))
				return ret;
		} else if (op == '~') {
			size_t n = parse_count(&p, end, 1);

			if ((ret = repo_peel(repo, out, OBJ_COMMIT, out)))
				return ret;
			while (n-- > 0)
				if ((ret = nth_parent(repo, out, 1)))
					return ret;
		} else {
			return err_set(XL_ENOTFOUND, "bad revision '%s'", name);
		}
	}
	if (colon)
		return walk_path(repo, out, colon + 1);
	return 0;
}
