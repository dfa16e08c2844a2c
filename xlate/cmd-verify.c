/*
 * cmd-verify.c: `git xlate verify` and `git xlate show`, the forensic
 * commands.
 *
 * verify  for every object the cache names: build its SHA-1 form again,
 *         hash it and require the cached name and size; convert it back
 *         to SHA-256 form and require the stored bytes exactly (which
 *         also re-hashes to the object's own name).
 * show    one object's two forms side by side, every rewritten name
 *         listed, and what happened to its signatures.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Verify converts every tree, commit and tag both ways, and a tree
 * names hundreds of objects, mostly the same ones as the trees beside
 * it: at a million objects, a cache lookup for every name of every tree
 * both ways took verify half an hour.  So names come through memos: the
 * daemon's (SHA-256 to SHA-1) forward, and back a table of its own,
 * direct-mapped by the SHA-1 name and filled only from the cache, so
 * that what is checked is still what the cache says.
 */
#define BACK_SLOTS_MAX ((size_t)1 << 20)	/* 56 MB */
#define VERIFY_MEMO_BYTES ((size_t)64 << 20)

struct back_slot {
	unsigned char names[32 + 20];	/* the other name, then the own one */
	int full;
};

struct back {
	struct cache *cache;
	const struct hash_algo *algo;	/* the repository's */
	struct back_slot *slot;		/* mask + 1 of them; NULL: none */
	size_t mask;
};

/*
 * The reverse mapping, SHA-1 to SHA-256 (or SHA-256 to SHA-1 for a
 * SHA-1 repository), through the cache.
 */
static int map_back(void *data, const struct oid *in, struct oid *out)
{
	struct back *bk = data;
	struct back_slot *sl = NULL;
	struct cache_object co;
	int ret;

	if (bk->slot) {
		uint64_t k;

		memcpy(&k, in->hash, sizeof(k));
		sl = &bk->slot[k & bk->mask];
		if (sl->full && !memcmp(sl->names, in->hash, in->algo->rawsz)) {
			oid_from_raw(out, bk->algo, sl->names + in->algo->rawsz);
			return 0;
		}
	}
	ret = cache_get_by_sha1(bk->cache, in, &co);
	if (ret == XL_ENOTFOUND)
		ret = cache_get_gitlink(bk->cache, in, out);
	else if (!ret) {
		*out = co.sha256;
		if (sl) {
			memcpy(sl->names, in->hash, in->algo->rawsz);
			memcpy(sl->names + in->algo->rawsz, co.sha256.hash,
			       co.sha256.algo->rawsz);
			sl->full = 1;
		}
	}
	/* an object the repository lacks, named by the map */
	if (ret == XL_ENOTFOUND)
		ret = cache_get_known(bk->cache, in, out);
	return ret;
}

/* The objects to check, by where they are stored. */
struct to_check {
	struct oid oid;
	struct odb_place place;		/* pack NULL: loose */
};

struct collect {
	struct to_check *v;
	size_t nr, alloc;
};

static int collect_translated(const struct cache_object *co, void *data)
{
	struct collect *c = data;

	if (!co->sha1.algo)
		return 0;
	if (ARRAY_GROW(c->v, c->nr, c->alloc, 4096))
		return XL_ENOMEM;
	c->v[c->nr++].oid = co->sha256;
	return 0;
}

/*
 * In the order the packs store them, loose objects last: a delta comes
 * after its base and the trees of one directory after each other, so
 * bases are found in the delta-base cache and names in the memos (in
 * name order, every read rebuilt its delta chain).
 */
static int cmp_place(const void *a, const void *b)
{
	const struct odb_place *x = &((const struct to_check *)a)->place;
	const struct odb_place *y = &((const struct to_check *)b)->place;

	if (x->pack != y->pack)
		return !x->pack ? 1 : !y->pack ? -1 :
			(uintptr_t)x->pack < (uintptr_t)y->pack ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Check one object: 0 if good, else 1 with the reason in `why`. */
static int verify_one(struct cli *cli, struct xlate_memo *memo,
		      struct back *bk, const struct oid *oid,
		      struct buf *native, struct buf *sha1_form,
		      struct buf *back, struct buf *why)
{
	const struct hash_algo *other = cache_other(cli->cache);
	struct xlate_opts o = { other, repo_algo(cli->repo), map_back,
				bk, XLATE_UNKNOWN_COPY, NULL };
	struct cache_object co;
	enum obj_type type, t2;
	struct oid h;
	char hex[OID_HEXSZ_MAX + 1], hex2[OID_HEXSZ_MAX + 1];

	buf_reset(why);
	if (cache_get(cli->cache, oid, &co))
		return buf_addf(why, "vanished from the cache"), 1;
	if (odb_read(repo_odb(cli->repo), oid, &type, native))
		return buf_addf(why, "cannot read: %s", err_msg()), 1;
	hash_object(repo_algo(cli->repo), type_name(type), native->buf,
		    native->len, &h);
	if (oid_cmp(&h, oid))
		return buf_addf(why, "stored bytes hash to %s", oid_to_hex_r(hex, &h)), 1;
	if (type != co.type)
		return buf_addf(why, "is a %s, the cache says %s", type_name(type),
				type_name(co.type)), 1;
	if (xlate_sha1_form(cli->repo, cli->cache, NULL, memo,
			    cli->unknown_headers, oid, &t2, sha1_form))
		return buf_addf(why, "cannot convert: %s", err_msg()), 1;
	hash_object(other, type_name(type), sha1_form->buf, sha1_form->len, &h);
	if (oid_cmp(&h, &co.sha1))
		return buf_addf(why, "%s form hashes to %s, the cache says %s",
				other->title, oid_to_hex_r(hex, &h),
				oid_to_hex_r(hex2, &co.sha1)), 1;
	if (sha1_form->len != co.size1)
		return buf_addf(why, "%s form is %zu bytes, the cache says %llu",
				other->title, sha1_form->len,
				(unsigned long long)co.size1), 1;
	if (type == OBJ_BLOB)
		return 0;
	if (xlate_object(&o, type, sha1_form->buf, sha1_form->len, back))
		return buf_addf(why, "cannot convert back: %s", err_msg()), 1;
	if (back->len != native->len || memcmp(back->buf, native->buf, native->len))
		return buf_addf(why, "does not convert back to its stored bytes"), 1;
	return 0;
}

/*
 * A line of upstream's map (objects/loose-object-idx) that names an
 * object otherwise, or is no pair, is bad: two converters of the same
 * rules disagree.  One for an object refused here is said, not counted:
 * upstream had a pair we lack (a gitlink's), not a name we got wrong.
 */
static int verify_compat(void *data, enum xlate_compat_bad kind,
			 uint64_t lineno, const char *line,
			 const struct oid *ours, const char *why)
{
	char hex[OID_HEXSZ_MAX + 1];

	if (kind == XLATE_COMPAT_DISAGREE)
		printf("bad loose-object-idx line %llu: %s: named %s here\n",
		       (unsigned long long)lineno, line, oid_to_hex_r(hex, ours));
	else if (kind == XLATE_COMPAT_MALFORMED)
		printf("bad loose-object-idx line %llu: %s%s%s\n",
		       (unsigned long long)lineno, line, *line ? ": " : "", why);
	else
		printf("note: loose-object-idx line %llu: %s: no %s name here: %s\n",
		       (unsigned long long)lineno, line,
		       cache_other((struct cache *)data)->title, why);
	return 0;
}

int cmd_verify(struct cli *cli, int argc, char **argv)
{
	struct buf native = BUF_INIT, sha1_form = BUF_INIT, back = BUF_INIT,
		   why = BUF_INIT;
	struct collect c = { 0 };
	struct back bk = { 0 };
	struct xlate_memo *memo = NULL;
	unsigned long ok = 0, bad = 0;
	int ret;

	if (argc != 1)
		return cli_error(EXIT_USAGE, "usage: git xlate verify");
	cli->check_all = 1;
	if (!cli_cache(cli))
		return EXIT_NOTFOUND;
	/* the walk holds the cache; check after it */
	if ((ret = cache_for_each(cli->cache, CACHE_EACH_ALL, collect_translated, &c)) ||
	    (ret = xlate_memo_new(&memo, VERIFY_MEMO_BYTES))) {
		free(c.v);
		return cli_fail(NULL);
	}
	for (size_t i = 0; i < c.nr; i++)
		if (odb_place(repo_odb(cli->repo), &c.v[i].oid, &c.v[i].place)) {
			err_clear();	/* gone: verify_one() says so */
			c.v[i].place.pack = NULL;
		}
	qsort(c.v, c.nr, sizeof(*c.v), cmp_place);
	bk.cache = cli->cache;
	bk.algo = repo_algo(cli->repo);
	for (bk.mask = 1023; bk.mask + 1 < BACK_SLOTS_MAX && bk.mask + 1 < 2 * c.nr;)
		bk.mask = 2 * bk.mask + 1;
	bk.slot = calloc(bk.mask + 1, sizeof(*bk.slot));	/* NULL: no memo */
	for (size_t i = 0; i < c.nr; i++) {
		char hex[OID_HEXSZ_MAX + 1];

		if (!verify_one(cli, memo, &bk, &c.v[i].oid, &native, &sha1_form,
				&back, &why)) {
			ok++;
			continue;
		}
		bad++;
		printf("bad %s: %s\n", oid_to_hex_r(hex, &c.v[i].oid), why.buf);
	}
	free(bk.slot);
	xlate_memo_free(memo);
	/* the counts status and report show are kept, not scanned: compare */
	{
		uint64_t n, u, sn, su;

		if ((ret = cache_count(cli->cache, &n, &u)) ||
		    (ret = cache_count_rows(cli->cache, &sn, &su))) {
			cli_error(0, "cannot count: %s", err_msg());
			bad++;
		} else if (n != sn || u != su) {
			printf("bad counts: the cache says %llu objects, %llu "
			       "untranslatable; its rows are %llu and %llu\n",
			       (unsigned long long)n, (unsigned long long)u,
			       (unsigned long long)sn, (unsigned long long)su);
			bad++;
		}
	}
	printf("verify: %lu ok, %lu bad\n", ok, bad);
	{
		struct xlate_compat uc;

		if (xlate_compat_check(cli->repo, cli->cache, verify_compat, cli->cache,
				       &uc)) {
			cli_error(0, "cannot check upstream's map: %s", err_msg());
			bad++;
		} else if (uc.present) {
			printf("verify: loose-object-idx: %llu agree, %llu bad, "
			       "%llu refused here, %llu not named yet, %llu stale\n",
			       (unsigned long long)uc.agree,
			       (unsigned long long)(uc.disagree + uc.malformed),
			       (unsigned long long)uc.refused,
			       (unsigned long long)uc.unnamed,
			       (unsigned long long)uc.stale);
			bad += uc.disagree + uc.malformed;
		}
	}
	free(c.v);
	buf_release(&native);
	buf_release(&sha1_form);
	buf_release(&back);
	buf_release(&why);
	return bad ? EXIT_NOTFOUND : EXIT_OK;
}

/* ---- show ----------------------------------------------------------- */

/* Split into lines (each with its LF, if any). */
struct lines {
	const char **at;
	size_t *len;
	size_t nr;
};

static int split_lines(const struct buf *b, struct lines *l)
{
	size_t n = 0;

	for (size_t i = 0; i < b->len; i++)
		n += b->buf[i] == '\n';
	n++;
	l->at = malloc(n * sizeof(*l->at));
	l->len = malloc(n * sizeof(*l->len));
	if (!l->at || !l->len)
		return err_set(XL_ENOMEM, "out of memory");
	l->nr = 0;
	for (const char *p = b->buf, *end = b->buf + b->len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		l->at[l->nr] = p;
		l->len[l->nr++] = len;
		p += len;
	}
	return 0;
}

static int same_line(const struct lines *a, size_t i, const struct lines *b,
		     size_t j)
{
	return a->len[i] == b->len[j] && !memcmp(a->at[i], b->at[j], a->len[i]);
}

static void put_line(struct out *o, char mark, const char *p, size_t len)
{
	out_write(o, &mark, 1);
	out_write(o, " ", 1);
	/* keep binary junk and long lines readable */
	for (size_t i = 0; i < len && i < 200; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '\n')
			break;
		if (c < 0x20 && c != '\t')
			out_write(o, "?", 1);
		else
			out_write(o, &p[i], 1);
	}
	if (len > 200)
		out_str(o, "...");
	out_write(o, "\n", 1);
}

/*
 * A line diff of the two forms (longest common subsequence; objects
 * with very many lines are listed one after the other instead).
 */
static void show_diff(struct out *o, const struct buf *a, const struct buf *b)
{
	struct lines la, lb;
	uint32_t *t;
	size_t n, m, i, j;

	if (split_lines(a, &la) || split_lines(b, &lb))
		goto out;
	n = la.nr;
	m = lb.nr;
	if ((n + 1) * (m + 1) > (size_t)4 << 20 ||
	    !(t = calloc((n + 1) * (m + 1), sizeof(*t)))) {
		for (i = 0; i < n; i++)
			put_line(o, '-', la.at[i], la.len[i]);
		for (j = 0; j < m; j++)
			put_line(o, '+', lb.at[j], lb.len[j]);
		goto out;
	}
#define T(i, j) t[(i) * (m + 1) + (j)]
	for (i = n; i-- > 0;)
		for (j = m; j-- > 0;)
			T(i, j) = same_line(&la, i, &lb, j) ? T(i + 1, j + 1) + 1 :
				T(i + 1, j) > T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
	for (i = 0, j = 0; i < n || j < m;) {
		if (i < n && j < m && same_line(&la, i, &lb, j)) {
			put_line(o, ' ', la.at[i], la.len[i]);
			i++, j++;
		} else if (i < n && (j == m || T(i + 1, j) >= T(i, j + 1))) {
			put_line(o, '-', la.at[i], la.len[i]);
			i++;
		} else {
			put_line(o, '+', lb.at[j], lb.len[j]);
			j++;
		}
	}
#undef T
	free(t);
out:
	free(la.at);
	free(la.len);
	free(lb.at);
	free(lb.len);
}

struct show_refs {
	struct cli *cli;
	struct out *o;
};

static const char *const ref_kind[] = {
	[XLATE_REF_TREE_ENTRY] = "entry",
	[XLATE_REF_SUBTREE] = "subtree",
	[XLATE_REF_GITLINK] = "gitlink",
	[XLATE_REF_TREE] = "tree",
	[XLATE_REF_PARENT] = "parent",
	[XLATE_REF_MERGETAG] = "mergetag",
	[XLATE_REF_TAG_OBJECT] = "object",
};

static int show_ref(void *data, enum xlate_ref_kind kind, const struct oid *oid,
		    const char *name, size_t name_len)
{
	struct show_refs *s = data;
	struct cache_object co;
	struct oid twin;
	char hex[OID_HEXSZ_MAX + 1], line[400];

	if (xlate_builtin(oid, cache_other(s->cli->cache), &twin)) {
		co.sha1 = twin;
	} else if (kind == XLATE_REF_GITLINK) {
		if (cache_get_gitlink(s->cli->cache, oid, &co.sha1))
			co.sha1.algo = NULL;
	} else if (cache_get(s->cli->cache, oid, &co) &&
		   cache_get_known(s->cli->cache, oid, &co.sha1)) {
		co.sha1.algo = NULL;
	}
	snprintf(line, sizeof(line), "  %-8s %.*s%s%s -> ", ref_kind[kind],
		 (int)(name_len > 80 ? 80 : name_len), name ? name : "",
		 name ? " " : "", oid_to_hex_r(hex, oid));
	out_str(s->o, line);
	if (co.sha1.algo) {
		out_str(s->o, oid_to_hex_r(hex, &co.sha1));
	} else {
		snprintf(line, sizeof(line), "(no %s name)",
			 cache_other(s->cli->cache)->title);
		out_str(s->o, line);
	}
	return out_write(s->o, "\n", 1);
}

static int has_armor(const struct buf *b)
{
	static const char *const armor[] = {
		"\n-----BEGIN PGP SIGNATURE-----", "\n-----BEGIN PGP MESSAGE-----",
		"\n-----BEGIN SIGNED MESSAGE-----", "\n-----BEGIN SSH SIGNATURE-----",
	};

	for (size_t i = 0; i < 4; i++)
		if (memmem(b->buf, b->len, armor[i], strlen(armor[i])))
			return 1;
	return 0;
}

static int has_header(const struct buf *b, const char *name)
{
	const char *p = b->buf, *end = b->buf + b->len;
	size_t n = strlen(name);

	while (p < end && *p != '\n') {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if ((size_t)(end - p) > n && !memcmp(p, name, n) && p[n] == ' ')
			return 1;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* The header a signature over a form of `algo` takes in the other form. */
static const char *sig_header(const struct hash_algo *algo)
{
	return algo == &hash_sha1 ? "gpgsig" : "gpgsig-sha256";
}

/* How the signatures of `native` (own's form) fare in other's form. */
static void show_signatures(struct out *o, enum obj_type type,
			    const struct buf *native,
			    const struct hash_algo *own,
			    const struct hash_algo *other)
{
	char line[300];

	if (type == OBJ_COMMIT) {
		int g1 = has_header(native, "gpgsig"), g2 = has_header(native, "gpgsig-sha256");

		if (g1 || g2)
			out_str(o, "  commit signature headers (gpgsig, gpgsig-sha256) are copied as they are:\n"
				   "  each signs its own form with both headers removed, so both stay valid\n");
		if (memmem(native->buf, native->len, "\nmergetag ", 10))
			out_str(o, "  each mergetag's embedded tag is converted as a tag (its object line\n"
				   "  rewritten, its signatures swapped as below)\n");
		if (!g1 && !g2 && !memmem(native->buf, native->len, "\nmergetag ", 10))
			out_str(o, "  none\n");
		return;
	}
	if (type == OBJ_TAG) {
		int body = has_armor(native),
		    theirs = has_header(native, sig_header(other)),
		    ours = has_header(native, sig_header(own));

		if (body) {
			snprintf(line, sizeof(line),
				 "  the in-body signature (over the %s form) moves into a\n"
				 "  %s header of the %s form\n",
				 own->title, sig_header(own), other->title);
			out_str(o, line);
		}
		if (theirs) {
			snprintf(line, sizeof(line),
				 "  the %s header (a signature over the %s form) becomes the\n"
				 "  %s form's in-body signature\n",
				 sig_header(other), other->title, other->title);
			out_str(o, line);
		}
		if (ours) {
			snprintf(line, sizeof(line),
				 "  a %s header in a %s form is dropped, as upstream does\n",
				 sig_header(own), own->title);
			out_str(o, line);
		}
		if (!body && !theirs && !ours)
			out_str(o, "  none\n");
		return;
	}
	out_str(o, "  none\n");
}

int cmd_show(struct cli *cli, int argc, char **argv)
{
	struct buf native = BUF_INIT, sha1_form = BUF_INIT;
	const struct hash_algo *given, *own, *other;
	struct cache_object co;
	struct show_refs sr;
	enum obj_type type;
	struct oid oid;
	struct out o;
	char hex[OID_HEXSZ_MAX + 1], line[300];
	int ret;

	if (argc != 2)
		return cli_error(EXIT_USAGE, "usage: git xlate show NAME");
	if (!cli_cache(cli))
		return EXIT_NOTFOUND;
	if ((ret = xlate_resolve(cli->repo, cli->cache, argv[1], &oid, &given)) ||
	    (ret = cache_get(cli->cache, &oid, &co)) ||
	    (ret = odb_read(repo_odb(cli->repo), &oid, &type, &native)))
		return cli_fail(argv[1]);
	own = repo_algo(cli->repo);
	other = cache_other(cli->cache);
	if (out_init(&o, 1, 1 << 20))
		return cli_fail(NULL);
	sr.cli = cli;
	sr.o = &o;

	snprintf(line, sizeof(line), "%s %s\n", type_name(type), oid_to_hex_r(hex, &oid));
	out_str(&o, line);
	if (co.sha1.algo) {
		snprintf(line, sizeof(line), "  %-6s %s\n", other->name,
			 oid_to_hex_r(hex, &co.sha1));
		out_str(&o, line);
		snprintf(line, sizeof(line), "  size   %llu bytes in %s form, %llu in %s form\n",
			 (unsigned long long)co.size256, own->title,
			 (unsigned long long)co.size1, other->title);
		out_str(&o, line);
	} else {
		snprintf(line, sizeof(line), "  %-6s none: ", other->name);
		out_str(&o, line);
		out_str(&o, co.reason ? co.reason : "untranslatable");
		out_write(&o, "\n", 1);
	}

	out_str(&o, "\nnames rewritten:\n");
	if (type == OBJ_BLOB)
		out_str(&o, "  none: a blob's two forms are the same bytes\n");
	else
		xlate_refs(repo_algo(cli->repo), type, native.buf, native.len,
			   show_ref, &sr);

	if (type != OBJ_BLOB) {
		out_str(&o, "\nsignatures:\n");
		show_signatures(&o, type, &native, own, other);
	}

	if (co.sha1.algo && type != OBJ_BLOB && type != OBJ_TREE &&
	    !xlate_sha1_form(cli->repo, cli->cache, NULL, NULL,
			     cli->unknown_headers, &oid, &type, &sha1_form)) {
		snprintf(line, sizeof(line), "\n--- %s form\n+++ %s form\n",
			 own->title, other->title);
		out_str(&o, line);
		show_diff(&o, &native, &sha1_form);
	}
	ret = out_flush(&o);
	out_release(&o);
	buf_release(&native);
	buf_release(&sha1_form);
	return ret ? cli_fail(NULL) : EXIT_OK;
}
