/*
 * t-xlate-rules.c: the conversion rules one at a time, on objects made
 * by hand, against the exact bytes upstream's converter produces (as the
 * conversion spec states them from object-file-convert.c).
 *
 * Names: A/B/C/T are SHA-256 names with known SHA-1 twins; U has none.
 * Hex of a SHA-256 name is 64 digits of its letter's code, its twin 40.
 */
#include "harness.h"
#include "../../odb/odb_i.h"
#include "../../xlate/xlate.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static char hex256[4][65], hex1[4][41];	/* A, B, C, T */
static char hexU[65];

static void setup(void)
{
	static const char digits[4] = { 'a', 'b', 'c', 'd' };

	for (int i = 0; i < 4; i++) {
		memset(hex256[i], digits[i], 64);
		hex256[i][64] = '\0';
		memset(hex1[i], '1' + i, 40);
		hex1[i][40] = '\0';
	}
	memset(hexU, 'e', 64);
	hexU[64] = '\0';
}

/* The mapping: A..T both ways; U unknown. */
static int map(void *data, const struct oid *in, struct oid *out)
{
	char hex[65];

	oid_to_hex_r(hex, in);
	for (int i = 0; i < 4; i++) {
		if (in->algo == &hash_sha256 && !strcmp(hex, hex256[i]))
			return oid_from_hex(out, &hash_sha1, hex1[i]);
		if (in->algo == &hash_sha1 && !strcmp(hex, hex1[i]))
			return oid_from_hex(out, &hash_sha256, hex256[i]);
	}
	return XL_ENOTFOUND;
}

static const struct xlate_opts to1 = { &hash_sha256, &hash_sha1, map, NULL,
				       XLATE_UNKNOWN_FAIL, NULL };
static const struct xlate_opts to256 = { &hash_sha1, &hash_sha256, map, NULL,
					 XLATE_UNKNOWN_FAIL, NULL };

/* Expand "%A" (64-hex), "%a" (40-hex twin) and so on in a template. */
static void expand(struct buf *out, const char *t)
{
	buf_reset(out);
	for (; *t; t++) {
		int i;

		if (*t != '%' || !t[1]) {
			buf_addch(out, *t);
			continue;
		}
		t++;
		if (*t >= 'A' && *t <= 'D')
			buf_addstr(out, hex256[*t - 'A']);
		else if (*t >= 'a' && *t <= 'd')
			buf_addstr(out, hex1[*t - 'a']);
		else if (*t == 'U')
			buf_addstr(out, hexU);
		else if ((i = *t) == '%')
			buf_addch(out, '%');
	}
}

/* Convert `in` (a template) and require exactly `want` (a template). */
static void check_conv(const struct xlate_opts *o, enum obj_type type,
		       const char *in, const char *want, int line)
{
	struct buf a = BUF_INIT, b = BUF_INIT, out = BUF_INIT;
	int ret;

	expand(&a, in);
	expand(&b, want);
	ret = xlate_object(o, type, a.buf, a.len, &out);
	if (ret)
		harness_fail(__FILE__, line, "conversion failed: %s", err_msg());
	else if (out.len != b.len || memcmp(out.buf, b.buf, b.len))
		harness_fail(__FILE__, line, "got:\n%s\nwant:\n%s", out.buf, b.buf);
	buf_release(&a);
	buf_release(&b);
	buf_release(&out);
}

static void check_fail(const struct xlate_opts *o, enum obj_type type,
		       const char *in, size_t len, int want, const char *msg,
		       int line)
{
	struct buf a = BUF_INIT, out = BUF_INIT;
	int ret;

	if (len == (size_t)-1) {
		expand(&a, in);
	} else {
		buf_add(&a, in, len);
	}
	ret = xlate_object(o, type, a.buf, a.len, &out);
	if (ret != want)
		harness_fail(__FILE__, line, "code %d, want %d (%s)", ret, want,
			     err_msg());
	else if (msg && !strstr(err_msg(), msg))
		harness_fail(__FILE__, line, "message \"%s\" lacks \"%s\"",
			     err_msg(), msg);
	if (out.len)
		harness_fail(__FILE__, line, "output not empty after failure");
	buf_release(&a);
	buf_release(&out);
}

#define CONV(o, t, in, want) check_conv(o, t, in, want, __LINE__)
#define FAIL(o, t, in, want, msg) check_fail(o, t, in, (size_t)-1, want, msg, __LINE__)

/* ---- trees ---------------------------------------------------------- */

static void tree_add(struct buf *b, const char *mode, const char *name,
		     const char *hex, const struct hash_algo *algo)
{
	struct oid oid;

	oid_from_hex(&oid, algo, hex);
	buf_addstr(b, mode);
	buf_addch(b, ' ');
	buf_add(b, name, strlen(name) + 1);
	buf_add(b, oid.hash, algo->rawsz);
}

TEST(tree_modes_names_order_kept)
{
	struct buf in = BUF_INIT, want = BUF_INIT, out = BUF_INIT, back = BUF_INIT;

	setup();
	/* odd modes, unsorted names: kept byte for byte */
	tree_add(&in, "100644", "zeta", hex256[0], &hash_sha256);
	tree_add(&in, "0100644", "alpha", hex256[1], &hash_sha256);
	tree_add(&in, "100664", "mid dle", hex256[2], &hash_sha256);
	tree_add(&in, "040000", "dir", hex256[3], &hash_sha256);
	tree_add(&want, "100644", "zeta", hex1[0], &hash_sha1);
	tree_add(&want, "0100644", "alpha", hex1[1], &hash_sha1);
	tree_add(&want, "100664", "mid dle", hex1[2], &hash_sha1);
	tree_add(&want, "040000", "dir", hex1[3], &hash_sha1);
	CHECK_INT(xlate_object(&to1, OBJ_TREE, in.buf, in.len, &out), 0);
	CHECK_INT(out.len, in.len - 4 * 12);
	CHECK(out.len == want.len && !memcmp(out.buf, want.buf, want.len));
	CHECK_INT(xlate_object(&to256, OBJ_TREE, out.buf, out.len, &back), 0);
	CHECK(back.len == in.len && !memcmp(back.buf, in.buf, in.len));
	buf_release(&in);
	buf_release(&want);
	buf_release(&out);
	buf_release(&back);
}

TEST(tree_empty_and_builtin_names)
{
	struct buf in = BUF_INIT, out = BUF_INIT;
	static const char et256[] =
		"6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";
	static const char eb256[] =
		"473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813";
	char hex[41];

	setup();
	CHECK_INT(xlate_object(&to1, OBJ_TREE, "", 0, &out), 0);
	CHECK_INT(out.len, 0);
	/* the empty tree and blob map without asking the mapping */
	tree_add(&in, "40000", "e", et256, &hash_sha256);
	tree_add(&in, "100644", "f", eb256, &hash_sha256);
	CHECK_INT(xlate_object(&to1, OBJ_TREE, in.buf, in.len, &out), 0);
	{
		struct oid o;

		oid_from_raw(&o, &hash_sha1, (unsigned char *)out.buf + 8);
		CHECK_STR(oid_to_hex_r(hex, &o), "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
		oid_from_raw(&o, &hash_sha1, (unsigned char *)out.buf + out.len - 20);
		CHECK_STR(oid_to_hex_r(hex, &o), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
	}
	buf_release(&in);
	buf_release(&out);
}

TEST(tree_bad_entries)
{
	struct buf in = BUF_INIT;
	unsigned char raw[32] = { 0 };

	setup();
	raw[0] = 0xaa;
	/* empty name */
	buf_addstr(&in, "100644 ");
	buf_addch(&in, '\0');
	buf_add(&in, raw, 32);
	check_fail(&to1, OBJ_TREE, in.buf, in.len, XL_ECORRUPT, "failed to decode tree entry", __LINE__);
	/* a mode digit 8, an empty mode */
	buf_reset(&in);
	buf_addstr(&in, "100648 x");
	buf_addch(&in, '\0');
	buf_add(&in, raw, 32);
	check_fail(&to1, OBJ_TREE, in.buf, in.len, XL_ECORRUPT, "failed to decode", __LINE__);
	buf_reset(&in);
	buf_addstr(&in, " x");
	buf_addch(&in, '\0');
	buf_add(&in, raw, 32);
	check_fail(&to1, OBJ_TREE, in.buf, in.len, XL_ECORRUPT, "failed to decode", __LINE__);
	/* the last name's NUL not where a raw name would end the tree */
	buf_reset(&in);
	buf_addstr(&in, "100644 x");
	buf_addch(&in, '\0');
	buf_add(&in, raw, 31);
	check_fail(&to1, OBJ_TREE, in.buf, in.len, XL_ECORRUPT, "failed to decode", __LINE__);
	/* too short to hold an entry */
	check_fail(&to1, OBJ_TREE, "1 x", 3, XL_ECORRUPT, "failed to decode", __LINE__);
	/* an unknown name: refused, naming it */
	buf_reset(&in);
	tree_add(&in, "100644", "x", hexU, &hash_sha256);
	check_fail(&to1, OBJ_TREE, in.buf, in.len, XL_ENOTFOUND, "failed to map tree entry for eeee", __LINE__);
	buf_release(&in);
}

/* ---- commits -------------------------------------------------------- */

TEST(commit_names_and_headers)
{
	setup();
	CONV(&to1, OBJ_COMMIT,
	     "tree %A\nparent %B\nparent %C\nauthor A <a@b> 1 +0000\n"
	     "committer C <c@d> 2 +0100\nencoding ISO-8859-1\n\nmsg\n",
	     "tree %a\nparent %b\nparent %c\nauthor A <a@b> 1 +0000\n"
	     "committer C <c@d> 2 +0100\nencoding ISO-8859-1\n\nmsg\n");
	/* lines kept in their order, even odd ones; no message at all */
	CONV(&to1, OBJ_COMMIT, "parent %B\ntree %A\ntree %C\n",
	     "parent %b\ntree %a\ntree %c\n");
	/* gpgsig* headers by prefix, continuation lines verbatim */
	CONV(&to1, OBJ_COMMIT,
	     "tree %A\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n"
	     " -----END PGP SIGNATURE-----\ngpgsig-sha256 x\n y\ngpgsigfoo z\n\nm",
	     "tree %a\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n"
	     " -----END PGP SIGNATURE-----\ngpgsig-sha256 x\n y\ngpgsigfoo z\n\nm");
	/* the message is never looked at */
	CONV(&to1, OBJ_COMMIT, "tree %A\n\nchange-id: x\ntree %B\n",
	     "tree %a\n\nchange-id: x\ntree %B\n");
}

TEST(commit_hex_case)
{
	struct buf in = BUF_INIT, want = BUF_INIT, out = BUF_INIT;

	setup();
	/* upper-case hex is read, lower case written (no round trip) */
	expand(&in, "tree %A\n\n");
	for (size_t i = 5; i < 69; i++)
		in.buf[i] = (char)(in.buf[i] - 'a' + 'A');
	expand(&want, "tree %a\n\n");
	CHECK_INT(xlate_object(&to1, OBJ_COMMIT, in.buf, in.len, &out), 0);
	CHECK_STR(out.buf, want.buf);
	buf_release(&in);
	buf_release(&want);
	buf_release(&out);
}

TEST(commit_refusals)
{
	setup();
	FAIL(&to1, OBJ_COMMIT, "tree %A\nchange-id I123\n\nm\n", XL_EUNSUPPORTED,
	     "unknown commit header 'change-id'");
	/* "tree" without its space is not a tree line: an unknown header */
	FAIL(&to1, OBJ_COMMIT, "tree\n\n", XL_EUNSUPPORTED, "unknown commit header");
	FAIL(&to1, OBJ_COMMIT, "tree %A0\n\n", XL_ECORRUPT, "bad tree in commit");
	FAIL(&to1, OBJ_COMMIT, "parent 12\n\n", XL_ECORRUPT, "bad parent in commit");
	FAIL(&to1, OBJ_COMMIT, "tree %A", XL_ECORRUPT, "bad line in commit");
	FAIL(&to1, OBJ_COMMIT, "tree %A\ngpgsig x\n y", XL_ECORRUPT,
	     "bad continuation in commit");
	FAIL(&to1, OBJ_COMMIT, "tree %U\n\n", XL_ENOTFOUND, "unable to map tree eeee");
	FAIL(&to1, OBJ_COMMIT, "tree %A\nparent %U\n\n", XL_ENOTFOUND,
	     "unable to map parent eeee");
}

TEST(commit_unknown_header_copy)
{
	struct xlate_opts o = to1;

	setup();
	o.unknown_headers = XLATE_UNKNOWN_COPY;
	CONV(&o, OBJ_COMMIT, "tree %A\nchange-id I1\n cont\n\nm\n",
	     "tree %a\nchange-id I1\n cont\n\nm\n");
}

/* ---- tags ----------------------------------------------------------- */

#define TAGHEAD "type commit\ntag v1\ntagger T <t@t> 1 +0000\n"
#define SIG256 "-----BEGIN PGP SIGNATURE-----\n\nS256\n-----END PGP SIGNATURE-----\n"
#define SIG1H "gpgsig -----BEGIN PGP SIGNATURE-----\n \n S1\n -----END PGP SIGNATURE-----\n"
#define SIG1 "-----BEGIN PGP SIGNATURE-----\n\nS1\n-----END PGP SIGNATURE-----\n"
#define SIG256H "gpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n \n S256\n -----END PGP SIGNATURE-----\n"

TEST(tag_plain)
{
	setup();
	CONV(&to1, OBJ_TAG, "object %A\n" TAGHEAD "\nmessage\n",
	     "object %a\n" TAGHEAD "\nmessage\n");
	/* other headers, even unknown ones, are copied */
	CONV(&to1, OBJ_TAG, "object %A\ntype tree\nx-odd 1\n\nm\n",
	     "object %a\ntype tree\nx-odd 1\n\nm\n");
}

TEST(tag_signatures_swap)
{
	setup();
	/* dual-signed: the in-body SHA-256 signature and the SHA-1 header swap */
	CONV(&to1, OBJ_TAG, "object %A\n" TAGHEAD SIG1H "\nmessage\n" SIG256,
	     "object %a\n" TAGHEAD SIG256H "\nmessage\n" SIG1);
	/* and back */
	CONV(&to256, OBJ_TAG, "object %a\n" TAGHEAD SIG256H "\nmessage\n" SIG1,
	     "object %A\n" TAGHEAD SIG1H "\nmessage\n" SIG256);
	/* in-body only (SHA-256): a header in the SHA-1 form, nothing in-body */
	CONV(&to1, OBJ_TAG, "object %A\n" TAGHEAD "\nmessage\n" SIG256,
	     "object %a\n" TAGHEAD SIG256H "\nmessage\n");
	/* a legacy SHA-1 signed tag, to SHA-256: a gpgsig header only */
	CONV(&to256, OBJ_TAG, "object %a\n" TAGHEAD "\nmessage\n" SIG1,
	     "object %A\n" TAGHEAD SIG1H "\nmessage\n");
	/* an own-algorithm header in a SHA-256 form is dropped */
	CONV(&to1, OBJ_TAG, "object %A\n" TAGHEAD SIG256H "\nm\n",
	     "object %a\n" TAGHEAD "\nm\n");
}

TEST(tag_signature_styles)
{
	setup();
	CONV(&to1, OBJ_TAG,
	     "object %A\ntype commit\n\nm\n-----BEGIN SSH SIGNATURE-----\nQQ\n-----END SSH SIGNATURE-----\n",
	     "object %a\ntype commit\ngpgsig-sha256 -----BEGIN SSH SIGNATURE-----\n QQ\n -----END SSH SIGNATURE-----\n\nm\n");
	CONV(&to1, OBJ_TAG,
	     "object %A\ntype commit\n\nm\n-----BEGIN SIGNED MESSAGE-----\nX\n",
	     "object %a\ntype commit\ngpgsig-sha256 -----BEGIN SIGNED MESSAGE-----\n X\n\nm\n");
	/* the last armor line starts the signature */
	CONV(&to1, OBJ_TAG,
	     "object %A\ntype commit\n\n-----BEGIN PGP MESSAGE-----\nq\n-----BEGIN PGP SIGNATURE-----\nz\n",
	     "object %a\ntype commit\ngpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n z\n\n-----BEGIN PGP MESSAGE-----\nq\n");
	/* no blank line: the header goes at the end */
	CONV(&to1, OBJ_TAG, "object %A\ntype commit\n-----BEGIN PGP SIGNATURE-----\nz\n",
	     "object %a\ntype commit\ngpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n z\n");
}

TEST(tag_refusals)
{
	setup();
	FAIL(&to1, OBJ_TAG, "object %a\n\n", XL_ECORRUPT, "bogus tag object");
	FAIL(&to1, OBJ_TAG, "objects %A\n", XL_ECORRUPT, "bogus tag object");
	FAIL(&to1, OBJ_TAG, "object %A", XL_ECORRUPT, "bogus tag object");
	FAIL(&to1, OBJ_TAG, "object %U\ntype commit\n", XL_ENOTFOUND,
	     "unable to map tree eeee");
}

/* ---- mergetags ------------------------------------------------------ */

TEST(commit_mergetag)
{
	setup();
	/*
	 * The embedded tag is unfolded (one SP off each continuation line;
	 * SP alone is an empty line), converted as a tag, folded back.
	 */
	CONV(&to1, OBJ_COMMIT,
	     "tree %A\nparent %B\nparent %C\n"
	     "mergetag object %C\n type commit\n tag v2\n tagger T <t@t> 1 +0000\n"
	     " gpgsig -----BEGIN PGP SIGNATURE-----\n  \n  S1\n  -----END PGP SIGNATURE-----\n"
	     " \n msg\n -----BEGIN PGP SIGNATURE-----\n \n S256\n -----END PGP SIGNATURE-----\n"
	     "gpgsig x\n\nmerge\n",
	     "tree %a\nparent %b\nparent %c\n"
	     "mergetag object %c\n type commit\n tag v2\n tagger T <t@t> 1 +0000\n"
	     " gpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n  \n  S256\n  -----END PGP SIGNATURE-----\n"
	     " \n msg\n -----BEGIN PGP SIGNATURE-----\n \n S1\n -----END PGP SIGNATURE-----\n"
	     "gpgsig x\n\nmerge\n");
	FAIL(&to1, OBJ_COMMIT, "tree %A\nmergetag object %U\n type commit\n\n",
	     XL_ENOTFOUND, "in tag object");
	FAIL(&to1, OBJ_COMMIT, "tree %A\nmergetag object %C\n type commit", XL_ECORRUPT,
	     "bad mergetag continuation in commit");
}

TEST(blob_unchanged)
{
	struct buf out = BUF_INIT;

	CHECK_INT(xlate_object(&to1, OBJ_BLOB, "a\0b", 3, &out), 0);
	CHECK_INT(out.len, 3);
	CHECK_MEM(out.buf, "a\0b", 3);
	buf_release(&out);
}

/*
 * The converters append piece by piece and check once (xlate_object()):
 * a failed append must be remembered past later ones that succeed.
 */
TEST(a_failed_append_is_remembered)
{
	struct buf b = BUF_INIT;

	CHECK(!buf_addstr(&b, "abc"));
	CHECK(buf_grow(&b, SIZE_MAX) != 0);	/* len + SIZE_MAX overflows */
	CHECK(b.failed);
	CHECK(!buf_addstr(&b, "def"));
	CHECK(b.failed);
	buf_reset(&b);
	CHECK(!b.failed);
	buf_release(&b);
}

const struct test tests[] = {
	T(a_failed_append_is_remembered),
	T(tree_modes_names_order_kept),
	T(tree_empty_and_builtin_names),
	T(tree_bad_entries),
	T(commit_names_and_headers),
	T(commit_hex_case),
	T(commit_refusals),
	T(commit_unknown_header_copy),
	T(tag_plain),
	T(tag_signatures_swap),
	T(tag_signature_styles),
	T(tag_refusals),
	T(commit_mergetag),
	T(blob_unchanged),
	{ NULL, NULL },
};
