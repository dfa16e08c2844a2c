/*
 * cat-file.c: `git xlate cat-file`, byte for byte what `git cat-file`
 * prints, on names of the repository's own algorithm.
 *
 *   cat-file -t|-s|-e|-p NAME      type, size, existence, pretty content
 *   cat-file TYPE NAME             raw content, peeling tags (and a commit
 *                                  to its tree) to reach TYPE, as Git does
 *   cat-file --batch[=FMT]         "<name> <type> <size>\n<content>\n" per
 *   cat-file --batch-check[=FMT]   stdin line, "<line> missing\n" or
 *                                  "<line> ambiguous\n" when unknown
 *     --batch-all-objects          every object once, in name order
 *     --buffer                     do not flush after each object
 *     --unordered                  accepted; the order is name order anyway
 *
 * Like Git, output is flushed after every object unless --buffer or
 * --batch-all-objects is given, so cat-file can serve a pipe
 * interactively.  Blobs above STREAM_MIN are streamed, not held whole.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_CAP (1u << 20)
#define STREAM_MIN ((size_t)32 << 20)

enum batch_mode { BATCH_NONE, BATCH_CHECK, BATCH_CONTENTS };

struct batch {
	enum batch_mode mode;
	const char *format;	/* NULL: the default "%(objectname) %(objecttype) %(objectsize)" */
	int need_rest;		/* the format uses %(rest): split names at blanks */
	int all;
	int buffer;
	struct cli *cli;
	struct repo *repo;
	struct out out;
	struct buf obj;		/* reused for every object */
	struct buf line;
};

/* ---- tree pretty-printing (ls-tree's format) ------------------------ */

/* Git's canon_mode(): what tree-walk reports for whatever mode is stored. */
static unsigned canon_mode(unsigned mode)
{
	switch (mode & 0170000) {
	case 0100000:
		return 0100000 | ((mode & 0100) ? 0755 : 0644);
	case 0120000:
		return 0120000;
	case 0040000:
		return 0040000;
	default:
		return 0160000;
	}
}

/*
 * Git's quote_c_style: a name with a control character, '"', '\\', or
 * (with core.quotePath on, the default) any byte >= 0x80 is printed in
 * double quotes with C escapes (\a \b \t \n \v \f \r \" \\, others \ooo).
 */
static int quote_name(struct out *o, const char *name, size_t len,
		      int quote_high)
{
	static const char letters[] = "\a\b\t\n\v\f\r";
	static const char escapes[] = "abtnvfr";
	size_t i;
	char tmp[8];

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c == '"' || c == '\\' || c == 0x7f ||
		    (c >= 0x80 && quote_high))
			break;
	}
	if (i == len)
		return out_write(o, name, len);
	out_write(o, "\"", 1);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		const char *e = c ? strchr(letters, c) : NULL;

		if (c == '"' || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)c;
			out_write(o, tmp, 2);
		} else if (e) {
			tmp[0] = '\\';
			tmp[1] = escapes[e - letters];
			out_write(o, tmp, 2);
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && quote_high)) {
			snprintf(tmp, sizeof(tmp), "\\%03o", c);
			out_write(o, tmp, 4);
		} else {
			out_write(o, &name[i], 1);
		}
	}
	return out_write(o, "\"", 1);
}

int print_tree(struct out *o, const struct hash_algo *algo,
	       const struct buf *tree, int quote_high)
{
	const char *p = tree->buf, *end = tree->buf + tree->len;
	char hex[OID_HEXSZ_MAX + 1], head[32];

	while (p < end) {
		const char *sp = memchr(p, ' ', (size_t)(end - p)), *nul;
		unsigned mode = 0;
		struct oid oid;
		const char *type;

		if (!sp || sp == p)
			return ERR_CORRUPT("malformed mode in tree entry");
		for (const char *m = p; m < sp; m++) {
			if (*m < '0' || *m > '7' || mode > 0777777)
				return ERR_CORRUPT("malformed mode in tree entry");
			mode = mode * 8 + (unsigned)(*m - '0');
		}
		nul = memchr(sp + 1, '\0', (size_t)(end - sp - 1));
		if (!nul || (size_t)(end - nul - 1) < algo->rawsz)
			return ERR_CORRUPT("too-short tree object");
		if (nul == sp + 1)
			return ERR_CORRUPT("empty filename in tree entry");
		mode = canon_mode(mode);
		oid_from_raw(&oid, algo, (const unsigned char *)nul + 1);
		type = (mode & 0170000) == 0040000 ? "tree" :
		       (mode & 0170000) == 0160000 ? "commit" : "blob";
		snprintf(head, sizeof(head), "%06o %s ", mode, type);
		out_str(o, head);
		out_str(o, oid_to_hex_r(hex, &oid));
		out_write(o, "\t", 1);
		quote_name(o, sp + 1, (size_t)(nul - sp - 1), quote_high);
		out_write(o, "\n", 1);
		p = nul + 1 + algo->rawsz;
	}
	return 0;
}

/* ---- one object, whole or streamed ---------------------------------- */

static int stream_object(struct repo *repo, const struct oid *oid,
			 struct out *o)
{
	struct odb_stream *st;
	enum obj_type type;
	size_t size, got;
	char chunk[1 << 16];
	int ret;

	if ((ret = odb_stream_open(repo_odb(repo), oid, &st, &type, &size)))
		return ret;
	while (!(ret = odb_stream_read(st, chunk, sizeof(chunk), &got)) && got)
		if ((ret = out_write(o, chunk, got)))
			break;
	odb_stream_close(st);
	return ret;
}

/* A blob big enough to stream (STREAM_MIN), as the native path does. */
static int is_big_blob(struct repo *repo, const struct oid *oid)
{
	enum obj_type type;
	size_t size;

	return !odb_read_header(repo_odb(repo), oid, &type, &size) &&
	       type == OBJ_BLOB && size >= STREAM_MIN;
}

/* ---- names of either algorithm -------------------------------------- */

static int is_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (hex_value((unsigned char)s[i]) < 0)
			return 0;
	return 1;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !memcmp(s + n - m, suffix, m);
}

/*
 * Resolve a name for cat-file.  What the repository can name natively
 * comes first, so cat-file behaves as git's; a full name of the other
 * algorithm (SHA-1 in a SHA-256 repository, SHA-256 in a SHA-1 one),
 * NAME^{sha1} or NAME^{sha256}, or a hex abbreviation found nowhere else
 * goes through the cache (built on first need).  *sha1_form says the
 * answer should be given in the other algorithm's form (SHA-1 for the
 * usual direction, hence the name).
 */
static int cat_resolve(struct cli *cli, const char *name, struct oid *oid,
		       int *sha1_form)
{
	size_t len = strlen(name);
	const struct hash_algo *given;
	const struct hash_algo *other = hash_algo_other(repo_algo(cli->repo));
	int ret;

	*sha1_form = 0;
	if (!(len == other->hexsz && is_hex(name, len)) &&
	    !has_suffix(name, "^{sha1}") && !has_suffix(name, "^{sha256}")) {
		ret = repo_resolve_name(cli->repo, name, oid);
		if (ret != XL_ENOTFOUND || len < 4 || len >= other->hexsz ||
		    !is_hex(name, len))
			return ret;
	}
	if (!cli_cache(cli))
		return XL_EIO;
	ret = xlate_resolve(cli->repo, cli->cache, name, oid, &given);
	if (!ret)
		*sha1_form = given == other;
	return ret;
}

/*
 * The SHA-1 face of a stored object: its SHA-1 name, type and SHA-1
 * size from the cache.  XL_ENOTFOUND if it has none (untranslatable).
 */
static int sha1_face(struct cli *cli, const struct oid *oid, struct oid *sha1,
		     enum obj_type *type, size_t *size)
{
	struct cache_object co;
	char hex[OID_HEXSZ_MAX + 1];
	int ret = cache_get(cli->cache, oid, &co);

	if (ret)
		return ret;
	if (!co.sha1.algo)
		return err_set(XL_ENOTFOUND, "%s has no %s name: %s",
			       oid_to_hex_r(hex, oid),
			       hash_algo_other(oid->algo)->title, co.reason);
	*sha1 = co.sha1;
	*type = co.type;
	*size = (size_t)co.size1;
	return 0;
}

/* ---- single-object modes -------------------------------------------- */

static int cat_one(struct cli *cli, char opt, const char *type_arg,
		   const char *name)
{
	struct repo *repo = cli_repo(cli);
	struct buf obj = BUF_INIT;
	enum obj_type type;
	struct oid oid, sha1;
	struct out o;
	size_t size;
	int ret, in_sha1;

	if (!repo)
		return EXIT_NOTFOUND;
	if ((ret = cat_resolve(cli, name, &oid, &in_sha1))) {
		if (opt == 'e' || ret == XL_EIO)
			return EXIT_NOTFOUND;
		if (ret == XL_EAMBIGUOUS)
			return cli_error(EXIT_NOTFOUND, "%s", err_msg());
		return cli_error(EXIT_NOTFOUND, "not a valid object name %s", name);
	}
	if (in_sha1)
		ret = sha1_face(cli, &oid, &sha1, &type, &size);
	else
		ret = odb_read_header(repo_odb(repo), &oid, &type, &size);
	if (ret) {
		if (opt == 'e' && ret == XL_ENOTFOUND)
			return EXIT_NOTFOUND;
		return cli_fail(name);
	}
	if (opt == 'e')
		return EXIT_OK;
	if (out_init(&o, 1, OUT_CAP))
		return cli_fail(NULL);

	if (opt == 't') {
		out_str(&o, type_name(type));
		out_write(&o, "\n", 1);
	} else if (opt == 's') {
		char num[32];

		snprintf(num, sizeof(num), "%zu\n", size);
		out_str(&o, num);
	} else if (in_sha1 && opt == 'p' && type == OBJ_TREE) {
		if ((ret = xlate_sha1_form(repo, cli->cache, NULL, NULL,
					   cli->unknown_headers, &oid, &type,
					   &obj)) ||
		    (ret = print_tree(&o, hash_algo_other(repo_algo(repo)), &obj,
				      repo_quote_path(repo))))
			goto fail;
	} else if (opt == 'p' && type == OBJ_TREE) {
		if ((ret = odb_read(repo_odb(repo), &oid, &type, &obj)) ||
		    (ret = print_tree(&o, repo_algo(repo), &obj,
				      repo_quote_path(repo))))
			goto fail;
	} else if (opt == 'p' && type == OBJ_BLOB && size >= STREAM_MIN) {
		if ((ret = stream_object(repo, &oid, &o)))
			goto fail;
	} else {
		if (opt != 'p') {
			enum obj_type want = type_from_name(type_arg, strlen(type_arg));

			if (want == OBJ_NONE) {
				out_release(&o);
				return cli_error(EXIT_USAGE, "invalid object type \"%s\"",
						 type_arg);
			}
			if (repo_peel(repo, &oid, want, &oid)) {
				out_release(&o);
				return cli_error(EXIT_NOTFOUND, "%s: bad file", name);
			}
		}
		if (is_big_blob(repo, &oid)) {
			/* a blob's SHA-1 form is its stored form: stream it */
			if ((ret = stream_object(repo, &oid, &o)))
				goto fail;
		} else {
			if (in_sha1)
				ret = xlate_sha1_form(repo, cli->cache, NULL, NULL,
						      cli->unknown_headers, &oid,
						      &type, &obj);
			else
				ret = odb_read(repo_odb(repo), &oid, &type, &obj);
			if (ret)
				goto fail;
			out_write(&o, obj.buf, obj.len);
		}
	}
	buf_release(&obj);
	ret = out_flush(&o);
	out_release(&o);
	return ret ? cli_fail(NULL) : EXIT_OK;
fail:
	buf_release(&obj);
	out_flush(&o);
	out_release(&o);
	return cli_fail(name);
}

/* ---- batch modes ---------------------------------------------------- */

/*
 * Expand the batch format for one object.  Atoms: objectname, objecttype,
 * objectsize, rest; anything else is a usage error found up front by
 * batch_check_format().
 */
static void batch_header(struct batch *b, const struct oid *oid,
			 enum obj_type type, size_t size, const char *rest)
{
	char hex[OID_HEXSZ_MAX + 1], num[32];
	const char *f = b->format;

	oid_to_hex_r(hex, oid);
	if (!f) {
		size_t hl = oid->algo->hexsz;
		const char *t = type_name(type);
		size_t tl = strlen(t);
		int nl = snprintf(num, sizeof(num), " %zu\n", size);

		hex[hl] = ' ';
		out_write(&b->out, hex, hl + 1);
		out_write(&b->out, t, tl);
		out_write(&b->out, num, (size_t)nl);
		return;
	}
	while (*f) {
		const char *close;

		if (f[0] != '%' || f[1] != '(' || !(close = strchr(f, ')'))) {
			out_write(&b->out, f, 1);
			f++;
			continue;
		}
		if (!strncmp(f, "%(objectname)", 13)) {
			out_str(&b->out, hex);
		} else if (!strncmp(f, "%(objecttype)", 13)) {
			out_str(&b->out, type_name(type));
		} else if (!strncmp(f, "%(objectsize)", 13)) {
			snprintf(num, sizeof(num), "%zu", size);
			out_str(&b->out, num);
		} else if (!strncmp(f, "%(rest)", 7)) {
			out_str(&b->out, rest ? rest : "");
		}
		f = close + 1;
	}
	out_write(&b->out, "\n", 1);
}

static int batch_check_format(struct batch *b)
{
	static const char *const atoms[] = {
		"objectname", "objecttype", "objectsize", "rest",
	};
	const char *f = b->format;

	while (f && (f = strstr(f, "%("))) {
		const char *close = strchr(f, ')');
		size_t n, i;

		if (!close)
			return cli_error(EXIT_USAGE, "unterminated format atom");
		n = (size_t)(close - f - 2);
		for (i = 0; i < 4; i++)
			if (strlen(atoms[i]) == n && !memcmp(f + 2, atoms[i], n))
				break;
		if (i == 4)
			return cli_error(EXIT_USAGE, "unknown format element: %.*s",
					 (int)(n + 3), f);
		if (i == 3)
			b->need_rest = 1;
		f = close + 1;
	}
	return 0;
}

/* One object in its SHA-1 form. */
static int batch_object_sha1(struct batch *b, const struct oid *oid,
			     const char *rest)
{
	enum obj_type type;
	struct oid sha1;
	size_t size;
	int ret;

	if ((ret = sha1_face(b->cli, oid, &sha1, &type, &size)))
		return ret;
	if (b->mode == BATCH_CHECK) {
		batch_header(b, &sha1, type, size, rest);
		return 0;
	}
	if (type == OBJ_BLOB && size >= STREAM_MIN) {
		/* the same bytes in both forms: streamed, never held whole */
		batch_header(b, &sha1, type, size, rest);
		if ((ret = stream_object(b->repo, oid, &b->out)))
			return ret;
		return out_write(&b->out, "\n", 1);
	}
	if ((ret = xlate_sha1_form(b->repo, b->cli->cache, NULL, NULL,
				   b->cli->unknown_headers, oid, &type, &b->obj)))
		return ret;
	batch_header(b, &sha1, type, b->obj.len, rest);
	out_write(&b->out, b->obj.buf, b->obj.len);
	return out_write(&b->out, "\n", 1);
}

/* Print one object found; returns 0 or an odb error (already wrapped). */
static int batch_object(struct batch *b, const struct oid *oid,
			const char *rest)
{
	struct odb *odb = repo_odb(b->repo);
	enum obj_type type;
	size_t size;
	int ret;

	if (b->mode == BATCH_CHECK) {
		if ((ret = odb_read_header(odb, oid, &type, &size)))
			return ret;
		batch_header(b, oid, type, size, rest);
		return 0;
	}
	/* one lookup for the usual object; a huge one is streamed */
	ret = odb_read_small(odb, oid, &type, &size, &b->obj, STREAM_MIN);
	if (ret < 0)
		return ret;
	batch_header(b, oid, type, size, rest);
	if (ret == 1) {
		if ((ret = stream_object(b->repo, oid, &b->out)))
			return ret;
	} else {
		out_write(&b->out, b->obj.buf, b->obj.len);
	}
	return out_write(&b->out, "\n", 1);
}

static int batch_all_cb(const struct oid *oid, void *data)
{
	struct batch *b = data;
	int ret = batch_object(b, oid, NULL);

	return ret ? ret : (b->out.failed ? XL_EIO : 0);
}

/* Read stdin lines into b->line; 0 at EOF. */
static int read_line(FILE *in, struct buf *line)
{
	int c;

	buf_reset(line);
	while ((c = getc_unlocked(in)) != EOF && c != '\n')
		buf_addch(line, c);
	if (c == EOF && !line->len)
		return 0;
	return 1;
}

static int batch_stdin(struct batch *b)
{
	int ret = 0;

	while (read_line(stdin, &b->line)) {
		char *name = b->line.buf, *rest = NULL;
		struct oid oid;
		int in_sha1;

		if (b->need_rest) {
			/* the name ends at the first blank; rest follows the blanks */
			char *sp = strpbrk(name, " \t");

			if (sp) {
				*sp++ = '\0';
				while (*sp == ' ' || *sp == '\t')
					sp++;
				rest = sp;
			}
		}
		ret = cat_resolve(b->cli, name, &oid, &in_sha1);
		if (ret == XL_EAMBIGUOUS) {
			out_str(&b->out, name);
			out_str(&b->out, " ambiguous\n");
			ret = 0;
		} else if (ret == XL_ENOTFOUND || ret == XL_EINVALID) {
			out_str(&b->out, name);
			out_str(&b->out, " missing\n");
			ret = 0;
		} else if (!ret) {
			ret = in_sha1 ? batch_object_sha1(b, &oid, rest) :
				batch_object(b, &oid, rest);
			if (ret == XL_ENOTFOUND) {
				out_str(&b->out, name);
				out_str(&b->out, " missing\n");
				ret = 0;
			}
		}
		if (ret)
			break;
		if (!b->buffer && out_flush(&b->out))
			break;
		if (b->out.failed)
			break;
	}
	return ret;
}

static int cat_batch(struct cli *cli, struct batch *b)
{
	int ret;

	if (batch_check_format(b))
		return EXIT_USAGE;
	if (!(b->repo = cli_repo(cli)))
		return EXIT_NOTFOUND;
	b->cli = cli;
	if (out_init(&b->out, 1, OUT_CAP))
		return cli_fail(NULL);
	if (b->all)
		ret = odb_for_each_object(repo_odb(b->repo), batch_all_cb, b);
	else
		ret = batch_stdin(b);
	if (ret) {
		out_flush(&b->out);
		ret = cli_fail(NULL);
	} else if (out_flush(&b->out)) {
		ret = cli_fail(NULL);
	}
	out_release(&b->out);
	buf_release(&b->obj);
	buf_release(&b->line);
	return ret;
}

static int cat_usage(void)
{
	fputs("usage: git xlate cat-file (-t | -s | -e | -p | TYPE) NAME\n"
	      "   or: git xlate cat-file (--batch | --batch-check)[=FORMAT]"
	      " [--batch-all-objects] [--buffer] [--unordered]\n", stderr);
	return EXIT_USAGE;
}

int cmd_cat_file(struct cli *cli, int argc, char **argv)
{
	struct batch b = { .obj = BUF_INIT, .line = BUF_INIT, .buffer = -1 };
	char opt = 0;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-t") || !strcmp(a, "-s") || !strcmp(a, "-p") ||
		    !strcmp(a, "-e")) {
			if (opt)
				return cat_usage();
			opt = a[1];
		} else if (!strcmp(a, "--batch") || !strncmp(a, "--batch=", 8)) {
			b.mode = BATCH_CONTENTS;
			b.format = a[7] ? a + 8 : NULL;
		} else if (!strcmp(a, "--batch-check") ||
			   !strncmp(a, "--batch-check=", 14)) {
			b.mode = BATCH_CHECK;
			b.format = a[13] ? a + 14 : NULL;
		} else if (!strcmp(a, "--batch-all-objects")) {
			b.all = 1;
		} else if (!strcmp(a, "--buffer")) {
			b.buffer = 1;
		} else if (!strcmp(a, "--no-buffer")) {
			b.buffer = 0;
		} else if (!strcmp(a, "--unordered")) {
			/* name order is also a valid "any order" */
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else {
			return cat_usage();
		}
	}
	if (b.mode != BATCH_NONE) {
		if (opt || i != argc)
			return cat_usage();
		if (b.buffer < 0)
			b.buffer = b.all;
		return cat_batch(cli, &b);
	}
	if (b.all)
		return cat_usage();
	if (opt && argc - i == 1)
		return cat_one(cli, opt, NULL, argv[i]);
	if (!opt && argc - i == 2)
		return cat_one(cli, 0, argv[i], argv[i + 1]);
	return cat_usage();
}
