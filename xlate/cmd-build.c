/*
 * cmd-build.c: `git xlate build`, and the commands that list what the
 * cache knows: `map`, `export`, `report`.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- build ---------------------------------------------------------- */

/*
 * What the repository lacks (m, as the cache counted it), in words: one
 * line a cause to `o`, or with `o` NULL each as a warning.
 */
static int say_missing(struct cli *cli, const struct xlate_missing *m,
		       struct out *o)
{
	struct buf text = BUF_INIT;
	int ret;

	if ((ret = xlate_missing_explain(cli->repo, m, &text)))
		goto out;
	for (char *line = text.buf, *nl; line && *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			break;
		*nl = '\0';
		if (o) {
			out_str(o, "  ");
			out_str(o, line);
			out_write(o, "\n", 1);
		} else {
			cli_error(0, "warning: %s", line);
		}
	}
out:
	buf_release(&text);
	return ret;
}

int cmd_build(struct cli *cli, int argc, char **argv)
{
	struct xlate_build_stats st;
	int verbose = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		char *end;
		long n;

		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			verbose = 1;
			continue;
		}
		if (!strcmp(a, "--fold")) {
			cli->fold = 1;
			continue;
		}
		if (!strncmp(a, "--threads=", 10))
			v = a + 10;
		else if (!strcmp(a, "--threads") && i + 1 < argc)
			v = argv[++i];
		if (!v)
			return cli_error(EXIT_USAGE,
					 "usage: git xlate build [-v] [--threads N] [--fold]");
		n = strtol(v, &end, 10);
		if (!*v || *end || n < 1 || n > 64)
			return cli_error(EXIT_USAGE, "--threads takes a number "
					 "from 1 to 64, not '%s'", v);
		cli->threads = (int)n;
	}
	/*
	 * No whole-file check: it would cost an incremental build at a
	 * million objects 1.5 s of its 3.  A file marked damaged by a
	 * mount's check is set aside at open; verify checks it whole.
	 */
	if (cli_build(cli, &st))
		return cli_fail(NULL);
	if (verbose || isatty(2))
		fprintf(stderr, "%llu objects; %llu newly named, %llu untranslatable%s\n",
			(unsigned long long)st.objects,
			(unsigned long long)st.new_objects,
			(unsigned long long)st.untranslatable,
			st.untranslatable ? " (see git xlate report)" : "");
	/* the usual reason for objects without a name, each time */
	{
		struct xlate_missing m;

		if (xlate_missing_read(cli->cache, &m) || say_missing(cli, &m, NULL))
			return cli_fail(NULL);
	}
	/* upstream's own map, when the repository keeps one */
	if (st.compat_error[0])
		cli_error(0, "warning: cannot check %s", st.compat_error);
	if (st.compat.disagree || st.compat.refused || st.compat.malformed ||
	    (verbose && st.compat.present)) {
		struct buf text = BUF_INIT;

		if (!xlate_compat_explain(&st.compat, &text) && text.len) {
			text.buf[text.len - 1] = '\0';
			cli_error(0, "%s%s", st.compat.disagree || st.compat.malformed ?
				  "warning: " : "", text.buf);
		}
		buf_release(&text);
	}
	if (verbose)
		fprintf(stderr, "seconds: gather %.3f, classify %.3f, blobs %.3f, "
			"trees/commits/tags %.3f, store %.3f, layout %.3f, "
			"fold %.3f\n",
			st.secs_gather, st.secs_classify, st.secs_blobs,
			st.secs_walk, st.secs_store, st.secs_layout,
			st.secs_fold);
	if (verbose && st.folded)
		fprintf(stderr, "recent rows: %llu folded into the big table\n",
			(unsigned long long)st.folded);
	if (verbose && st.spill_bytes)
		fprintf(stderr, "kept for the layout: %.1f MB; %s packs: %llu "
			"tree deltas, %llu of them made while naming\n",
			(double)st.spill_bytes / 1e6,
			hash_algo_other(repo_algo(cli->repo))->title,
			(unsigned long long)cli->pack1_stats.tree_deltas,
			(unsigned long long)cli->pack1_stats.tree_deltas_walked);
	if (verbose && cli->pack1_stats.gated)
		fprintf(stderr, "%s packs: %llu laid out while the rows went in, "
			"%llu of them ready before the rows were, %llu of them "
			"holding all they may\n",
			hash_algo_other(repo_algo(cli->repo))->title,
			(unsigned long long)cli->pack1_stats.gated,
			(unsigned long long)cli->pack1_stats.gate_waits,
			(unsigned long long)cli->pack1_stats.gate_full);
	if (verbose && st.trees)
		fprintf(stderr, "trees: %llu converted, %llu of them against a "
			"version named before\n", (unsigned long long)st.trees,
			(unsigned long long)st.trees_against);
	if (verbose && st.new_objects)
		fprintf(stderr, "rows: %s\n", st.bulk ?
			"stored at the end, in name order" :
			"stored while naming, a batch at a time");
	if (verbose)
		fprintf(stderr, "refusals for now: %s\n", st.retried ?
			"walked again" :
			"left alone (nothing has arrived that they could wait for)");
	/*
	 * Everything else is named and committed (cli_build warned), but
	 * the repository has objects that cannot be read: that is exit 1,
	 * "an object cannot be read", as for any other command.
	 */
	return st.unreadable ? EXIT_NOTFOUND : EXIT_OK;
}

/* ---- map ------------------------------------------------------------ */

int cmd_map(struct cli *cli, int argc, char **argv)
{
	struct cache *cache;
	int status = EXIT_OK;

	if (argc < 2)
		return cli_error(EXIT_USAGE, "usage: git xlate map NAME...");
	if (!(cache = cli_cache(cli)))
		return EXIT_NOTFOUND;
	for (int i = 1; i < argc; i++) {
		const struct hash_algo *given;
		struct cache_object co;
		struct oid oid;
		char hex[OID_HEXSZ_MAX + 1];
		int ret;

		ret = xlate_resolve(cli->repo, cache, argv[i], &oid, &given);
		if (!ret)
			ret = cache_get(cache, &oid, &co);
		if (ret) {
			cli_error(0, "%s: %s", argv[i], err_msg());
			status = ret == XL_EINVALID ? EXIT_USAGE : EXIT_NOTFOUND;
			continue;
		}
		if (given == cache_other(cache)) {
			puts(oid_to_hex_r(hex, &co.sha256));
		} else if (co.sha1.algo) {
			puts(oid_to_hex_r(hex, &co.sha1));
		} else {
			cli_error(0, "%s: %s has no %s name: %s", argv[i],
				  oid_to_hex_r(hex, &oid),
				  cache_other(cache)->title, co.reason);
			status = EXIT_NOTFOUND;
		}
	}
	return status;
}

/* ---- export --------------------------------------------------------- */

static int export_tsv(const struct cache_object *co, void *data)
{
	struct out *o = data;
	char hex[OID_HEXSZ_MAX + 1];

	out_str(o, oid_to_hex_r(hex, &co->sha256));
	out_write(o, "\t", 1);
	out_str(o, co->sha1.algo ? oid_to_hex_r(hex, &co->sha1) : "-");
	out_write(o, "\t", 1);
	out_str(o, type_name(co->type) ? type_name(co->type) : "unknown");
	return out_write(o, "\n", 1);
}

static int export_idx(const struct cache_object *co, void *data)
{
	struct out *o = data;
	char hex[OID_HEXSZ_MAX + 1];
	struct oid twin;

	/* upstream never writes its built-in pairs into the table */
	if (!co->sha1.algo ||
	    xlate_builtin(&co->sha256, hash_algo_other(co->sha256.algo), &twin))
		return 0;
	out_str(o, oid_to_hex_r(hex, &co->sha256));
	out_write(o, " ", 1);
	out_str(o, oid_to_hex_r(hex, &co->sha1));
	return out_write(o, "\n", 1);
}

/* A pair for an object the repository lacks (a gitlink's, a map's). */
static int export_pair(const struct oid *sha256, const struct oid *sha1,
		       void *data)
{
	struct cache_object co = { .sha256 = *sha256, .sha1 = *sha1 };

	return export_idx(&co, data);
}

/*
 * The loose-object-idx holds what upstream's compat mode needs to find
 * every object by either name: the objects' pairs, then those of what
 * they refer to and the repository lacks, without which upstream cannot
 * convert a tree holding a gitlink (it converts a tree only when it can
 * map every entry) or what refers to a blob a partial clone left out.
 */
int cmd_export(struct cli *cli, int argc, char **argv)
{
	int idx = 0, ret;
	struct cache *cache;
	struct out o;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--format=tsv"))
			idx = 0;
		else if (!strcmp(argv[i], "--format=loose-object-idx"))
			idx = 1;
		else
			return cli_error(EXIT_USAGE,
					 "usage: git xlate export [--format=tsv|loose-object-idx]");
	}
	if (!(cache = cli_cache(cli)))
		return EXIT_NOTFOUND;
	if (out_init(&o, 1, 1 << 20))
		return cli_fail(NULL);
	if (idx)
		out_str(&o, "# loose-object-idx\n");
	ret = cache_for_each(cache, CACHE_EACH_ALL, idx ? export_idx : export_tsv, &o);
	if (!ret && idx)
		ret = cache_for_each_pair(cache, export_pair, &o);
	if (!ret)
		ret = out_flush(&o);
	out_release(&o);
	return ret ? cli_fail(NULL) : EXIT_OK;
}

/* ---- report --------------------------------------------------------- */

static int report_object(const struct cache_object *co, void *data)
{
	struct out *o = data;
	char hex[OID_HEXSZ_MAX + 1];

	out_str(o, "  ");
	out_str(o, oid_to_hex_r(hex, &co->sha256));
	out_write(o, " ", 1);
	out_str(o, type_name(co->type) ? type_name(co->type) : "unknown");
	out_str(o, ": ");
	out_str(o, co->reason ? co->reason : "untranslatable");
	if (co->retry)
		out_str(o, " [retried by the next build]");
	return out_write(o, "\n", 1);
}

struct hidden {
	struct cache *cache;
	struct out *o;
	unsigned long n;
};

static int report_ref(const struct ref *ref, void *data)
{
	struct hidden *h = data;
	struct cache_object co;
	char hex[OID_HEXSZ_MAX + 1];

	if (ref->broken) {
		/* in neither view, as Git ignores it */
		h->n++;
		out_str(h->o, "  ");
		out_str(h->o, ref->name);
		return out_str(h->o, " (packed-refs: a name Git refuses; Git ignores it too)\n");
	}
	if (oid_is_null(&ref->oid) || cache_get(h->cache, &ref->oid, &co) ||
	    co.sha1.algo)
		return 0;
	h->n++;
	out_str(h->o, "  ");
	out_str(h->o, ref->name);
	out_str(h->o, " -> ");
	out_str(h->o, oid_to_hex_r(hex, &ref->oid));
	out_str(h->o, ref->target ? " (symbolic, via " : "");
	if (ref->target) {
		out_str(h->o, ref->target);
		out_str(h->o, ")");
	}
	return out_write(h->o, "\n", 1);
}

static int report_gitlink(const struct oid *tree, const char *path,
			  const struct oid *c256, const struct oid *c1, void *data)
{
	struct hidden *h = data;	/* n counts gitlinks here */
	struct out *o = h->o;
	char hex[OID_HEXSZ_MAX + 1];

	h->n++;
	out_str(o, "  ");
	out_str(o, path);
	out_str(o, " in tree ");
	out_str(o, oid_to_hex_r(hex, tree));
	out_str(o, ": ");
	out_str(o, oid_to_hex_r(hex, c256));
	out_str(o, " -> ");
	/* recorded without its other name: the tree it is in was refused */
	if (c1) {
		out_str(o, oid_to_hex_r(hex, c1));
	} else {
		out_str(o, "(no ");
		out_str(o, cache_other(h->cache)->title);
		out_str(o, " name)");
	}
	return out_write(o, "\n", 1);
}

/* A line of upstream's map that is not as ours: "  line N: TEXT: why" */
static int report_compat(void *data, enum xlate_compat_bad kind,
			 uint64_t lineno, const char *line,
			 const struct oid *ours, const char *why)
{
	struct hidden *h = data;
	struct out *o = h->o;
	char hex[OID_HEXSZ_MAX + 1], num[32];

	snprintf(num, sizeof(num), "  line %llu: ", (unsigned long long)lineno);
	out_str(o, num);
	out_str(o, line);
	switch (kind) {
	case XLATE_COMPAT_DISAGREE:
		out_str(o, ": named ");
		out_str(o, oid_to_hex_r(hex, ours));
		out_str(o, " here");
		break;
	case XLATE_COMPAT_REFUSED:
		out_str(o, ": no ");
		out_str(o, cache_other(h->cache)->title);
		out_str(o, " name here: ");
		out_str(o, why);
		break;
	case XLATE_COMPAT_MALFORMED:
		out_str(o, *line ? ": " : "");
		out_str(o, why);
		break;
	}
	return out_write(o, "\n", 1);
}

int cmd_report(struct cli *cli, int argc, char **argv)
{
	struct cache *cache;
	const struct hash_algo *other;
	uint64_t objects, bad;
	struct hidden h = { 0 }, g = { 0 };
	struct xlate_missing missing;
	struct ref head;
	struct out o;
	char line[160];
	int ret;

	if (argc != 1)
		return cli_error(EXIT_USAGE, "usage: git xlate report");
	if (!(cache = cli_cache(cli)))
		return EXIT_NOTFOUND;
	other = cache_other(cache);
	if (out_init(&o, 1, 1 << 20))
		return cli_fail(NULL);
	h.cache = cache;
	h.o = &o;
	if ((ret = cache_count(cache, &objects, &bad)))
		goto out;
	snprintf(line, sizeof(line), "objects: %llu, translated: %llu, untranslatable: %llu\n",
		 (unsigned long long)objects, (unsigned long long)(objects - bad),
		 (unsigned long long)bad);
	out_str(&o, line);

	/* the usual reason, said first: a partial or shallow clone */
	if ((ret = xlate_missing_read(cache, &missing)))
		goto out;
	if (missing.blobs || missing.trees || missing.commits || missing.other) {
		snprintf(line, sizeof(line), "\nmissing from the repository "
			 "(what refers to them has no %s name):\n", other->title);
		out_str(&o, line);
		if ((ret = say_missing(cli, &missing, &o)))
			goto out;
	}

	out_str(&o, "\nuntranslatable objects:\n");
	if ((ret = cache_for_each(cache, CACHE_EACH_UNTRANSLATABLE, report_object, &o)))
		goto out;

	snprintf(line, sizeof(line), "\nrefs left out of the %s view:\n",
		 other->title);
	out_str(&o, line);
	if (!refs_read(cli->repo, "HEAD", &head)) {
		ret = report_ref(&head, &h);
		ref_release(&head);
	}
	if (!ret)
		ret = refs_for_each(cli->repo, report_ref, &h);
	if (ret)
		goto out;

	out_str(&o, "\ngitlinks (submodule commits named by the submodule map):\n");
	g.o = &o;
	g.cache = cache;
	if ((ret = cache_for_each_gitlink(cache, report_gitlink, &g)))
		goto out;
	{
		struct xlate_compat c;
		struct buf text = BUF_INIT;

		if (!(ret = xlate_compat_path(cli->repo, &text)) &&
		    !access(text.buf, F_OK)) {
			out_str(&o, "\nupstream's map (objects/loose-object-idx):\n");
			ret = xlate_compat_check(cli->repo, cache, report_compat,
						 &g, &c);
			buf_reset(&text);
			if (!ret && !(ret = xlate_compat_explain(&c, &text))) {
				out_str(&o, "  ");
				out_str(&o, text.buf);
			}
		}
		buf_release(&text);
		if (ret)
			goto out;
	}
	snprintf(line, sizeof(line), "\n%llu untranslatable, %lu refs hidden, %lu gitlinks\n",
		 (unsigned long long)bad, h.n, g.n);
	out_str(&o, line);
	ret = out_flush(&o);
out:
	out_release(&o);
	return ret ? cli_fail(NULL) : EXIT_OK;
}
