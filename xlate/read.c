/*
 * read.c: objects and names seen through the cache: the SHA-1 form of a
 * stored object, and names of either algorithm.
 */
#include "xlate.h"
#include "../cache/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cache_map {
	struct cache *cache;
	const struct xlate_names *names;	/* may be NULL */
	struct xlate_memo *memo;
	uint64_t generation;	/* of the memo, before the cache was asked */
};

int xlate_names_get(const struct xlate_names *names, struct cache *cache,
		    const struct oid *sha256, struct cache_object *out)
{
	int ret;

	if (names && (ret = names->get(names->data, sha256, out)) != XL_ENOTFOUND)
		return ret;
	return cache_get(cache, sha256, out);
}

static int map_by_cache(void *data, const struct oid *in, struct oid *out)
{
	struct cache_map *m = data;
	struct cache_object co;
	char hex[OID_HEXSZ_MAX + 1];
	int ret = XL_ENOTFOUND, asked_cache = 0;

	/* the caller's table first: it is exact, and cheaper than the memo */
	if (m->names && (ret = m->names->map(m->names->data, in, out)) !=
			XL_ENOTFOUND)
		return ret;
	if (ret == XL_ENOTFOUND) {
		if (xlate_memo_get(m->memo, in, out))
			return 0;
		ret = cache_get(m->cache, in, &co);
		asked_cache = 1;
	}
	if (ret == XL_ENOTFOUND && asked_cache) {
		/* one the repository lacks, named by the map (--map) */
		ret = cache_get_known(m->cache, in, out);
		if (!ret) {
			xlate_memo_put(m->memo, m->generation, in, out);
			return 0;
		}
	}
	if (ret == XL_ENOTFOUND)
		return err_set(XL_ENOTFOUND, "no %s name known for %s",
			       cache_other(m->cache)->title,
			       oid_to_hex_r(hex, in));
	if (ret)
		return ret;
	if (!co.sha1.algo)
		return err_set(XL_EUNSUPPORTED, "%s is untranslatable: %s",
			       oid_to_hex_r(hex, in), co.reason);
	*out = co.sha1;
	if (asked_cache)
		xlate_memo_put(m->memo, m->generation, in, out);
	return 0;
}

/*
 * A gitlink: the repository's own name for the commit if it has one, as
 * the build did; else the one the build recorded from the submodule map.
 */
static int map_gitlink_by_cache(void *data, const struct oid *in,
				struct oid *out)
{
	struct cache_map *m = data;
	struct cache_object co;
	char hex[OID_HEXSZ_MAX + 1];
	int ret = xlate_names_get(m->names, m->cache, in, &co);

	if (ret != XL_ENOTFOUND)
		return map_by_cache(data, in, out);
	ret = cache_get_gitlink(m->cache, in, out);
	if (ret == XL_ENOTFOUND)
		return err_set(XL_ENOTFOUND, "no %s name known for %s",
			       cache_other(m->cache)->title,
			       oid_to_hex_r(hex, in));
	return ret;
}

int xlate_sha1_form(struct repo *repo, struct cache *cache,
		    const struct xlate_names *names, struct xlate_memo *memo,
		    enum xlate_unknown unknown_headers,
		    const struct oid *sha256, enum obj_type *type,
		    struct buf *out)
{
	struct cache_map m = {
		cache, names, memo, xlate_memo_generation(memo),
	};
	struct xlate_opts o = { repo_algo(repo), hash_algo_other(repo_algo(repo)),
				map_by_cache, &m,
				unknown_headers, map_gitlink_by_cache };
	struct buf native = BUF_INIT;
	struct cache_object co;
	char hex[OID_HEXSZ_MAX + 1];
	int ret;

	buf_reset(out);
	ret = xlate_names_get(names, cache, sha256, &co);
	if (!ret && !co.sha1.algo)
		return err_set(XL_EUNSUPPORTED, "%s is untranslatable: %s",
			       oid_to_hex_r(hex, sha256), co.reason);
	if (ret && ret != XL_ENOTFOUND)
		return ret;
	if ((ret = odb_read(repo_odb(repo), sha256, type, &native)))
		return ret;
	if (*type == OBJ_BLOB) {
		/* the same bytes: hand the buffer over instead of copying */
		buf_release(out);
		*out = native;
	} else {
		ret = xlate_object(&o, *type, native.buf, native.len, out);
		buf_release(&native);
	}
	/*
	 * The cache's size is what stat() and pack headers promise: a form
	 * of another size means the cache and the repository disagree
	 * (a tampered cache, or a bug), and must not be served.
	 */
	if (!ret && co.sha1.algo && out->len != co.size1) {
		ret = ERR_CORRUPT("cache %s says the %s form of %s is %llu "
				  "bytes, but it is %zu", cache_path(cache),
				  cache_other(cache)->title,
				  oid_to_hex_r(hex, sha256),
				  (unsigned long long)co.size1, out->len);
		buf_reset(out);
	}
	return ret;
}

static int is_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (hex_value((unsigned char)s[i]) < 0)
			return 0;
	return 1;
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

/*
 * A full or abbreviated name of the other algorithm (SHA-1 in a SHA-256
 * repository), through the cache.
 */
static int resolve_sha1(struct cache *cache, const char *hex, size_t len,
			struct oid *sha256)
{
	const struct hash_algo *other = cache_other(cache);
	struct cache_object co;
	struct oid o1;
	int ret;

	if (len == other->hexsz) {
		oid_from_hex(&o1, other, hex);
		ret = cache_get_by_sha1(cache, &o1, &co);
	} else {
		ret = cache_resolve_prefix(cache, other, hex, len, &co);
	}
	if (!ret)
		*sha256 = co.sha256;
	else if (ret == XL_ENOTFOUND)
		err_set(XL_ENOTFOUND, "no object with %s name %.*s",
			other->title, (int)len, hex);
	return ret;
}

/*
 * `name` as a ref, by Git's DWIM rules (the list repo_resolve_name()
 * uses); a broken or unborn ref is skipped, as Git does.
 */
static int dwim_ref(struct repo *repo, const char *name, struct oid *out)
{
	static const char *const rules[] = {
		"%s", "refs/%s", "refs/tags/%s", "refs/heads/%s",
		"refs/remotes/%s", "refs/remotes/%s/HEAD",
	};
	struct buf full = BUF_INIT;
	int ret = XL_ENOTFOUND;

	for (size_t i = 0; i < sizeof(rules) / sizeof(*rules) && ret; i++) {
		struct ref ref;

		buf_reset(&full);
		if (buf_addf(&full, rules[i], name)) {
			ret = XL_ENOMEM;
			break;
		}
		if (refs_read(repo, full.buf, &ref)) {
			err_clear();
			continue;
		}
		if (!oid_is_null(&ref.oid)) {
			*out = ref.oid;
			ret = 0;
		}
		ref_release(&ref);
	}
	buf_release(&full);
	return ret;
}

int xlate_resolve(struct repo *repo, struct cache *cache, const char *name,
		  struct oid *sha256, const struct hash_algo **given)
{
	size_t len = strlen(name);
	const struct hash_algo *force = NULL;
	const struct hash_algo *own = repo_algo(repo);
	const struct hash_algo *other = cache_other(cache);
	struct oid a, b;
	char *base;
	int ret, r256, r1;

	if (ends_with(name, len, "^{sha1}")) {
		force = &hash_sha1;
		len -= 7;
	} else if (ends_with(name, len, "^{sha256}")) {
		force = &hash_sha256;
		len -= 9;
	}
	if (!(base = strndup(name, len)))
		return err_set(XL_ENOMEM, "out of memory");

	if (!is_hex(base, len) || len < 4 || len > 64) {
		/* a ref or a revision expression: resolved natively */
		ret = repo_resolve_name(repo, base, sha256);
		*given = force ? force : own;
	} else if (force == other) {
		ret = len <= other->hexsz ? resolve_sha1(cache, base, len, sha256) :
			err_set(XL_ENOTFOUND, "%s is too long for a %s name",
				name, other->title);
		*given = force;
	} else if (force == own || len == own->hexsz || len > other->hexsz) {
		ret = repo_resolve_name(repo, base, sha256);
		*given = own;
	} else if (len == other->hexsz || len > own->hexsz) {
		/* a full other name, or one too long to be the repository's */
		ret = resolve_sha1(cache, base, len, sha256);
		*given = other;
	} else if (!dwim_ref(repo, base, &a)) {
		/*
		 * A ref whose name is also hex: Git 2.39 takes the ref
		 * (`git cat-file -t 1234` with a branch 1234), and warns
		 * "refname '1234' is ambiguous." when the name is also the
		 * abbreviation of exactly one object.  Of either kind, here.
		 */
		if (!odb_resolve_prefix(repo_odb(repo), base, len, &b) ||
		    !resolve_sha1(cache, base, len, &b))
			fprintf(stderr, "warning: refname '%s' is ambiguous.\n", base);
		err_clear();
		*sha256 = a;
		*given = own;
		ret = 0;
	} else {
		/* abbreviated hex: it may abbreviate a name of either kind */
		r256 = repo_resolve_name(repo, base, &a);
		r1 = resolve_sha1(cache, base, len, &b);
		if (r256 == XL_EAMBIGUOUS || r1 == XL_EAMBIGUOUS ||
		    (!r256 && !r1 && oid_cmp(&a, &b))) {
			ret = err_set(XL_EAMBIGUOUS, "short name %s is ambiguous", name);
		} else if (!r256) {
			*sha256 = a;
			*given = own;
			ret = 0;
		} else if (!r1) {
			*sha256 = b;
			*given = other;
			ret = 0;
		} else {
			ret = err_set(XL_ENOTFOUND, "not a valid object name: %s", name);
		}
	}
	free(base);
	return ret;
}
