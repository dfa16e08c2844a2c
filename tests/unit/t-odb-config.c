/*
 * t-odb-config.c: Git's config syntax (config_parse, config_bool,
 * config_int) and the repository format rules built on it
 * (repo_format_parse, repo_format_verify; spec §8).
 *
 * Config text is handed over from a guarded copy with no NUL after it,
 * so the parser must stop at `len`.  Where a case says "as Git", the
 * expected result was checked against git 2.39 (`git config -f FILE
 * --list`).
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- collecting what the parser reports ----------------------------- */

/* Each key/value becomes "key=value\n", or "key\n" for a bare key. */
static int collect(const char *key, const char *value, void *data)
{
	struct buf *b = data;

	if (value)
		buf_addf(b, "%s=%s\n", key, value);
	else
		buf_addf(b, "%s\n", key);
	return 0;
}

static int parse_n(const char *text, size_t len, struct buf *got)
{
	char *g = guarded_copy(text, len);
	int ret;

	buf_reset(got);
	ret = config_parse(g, len, "test-config", collect, got);
	guarded_free(g);
	return ret;
}

static int parse(const char *text, struct buf *got)
{
	return parse_n(text, strlen(text), got);
}

/* Parse text and compare the collected pairs with want. */
static void expect(const char *text, const char *want, int line)
{
	struct buf got = BUF_INIT;
	int ret = parse(text, &got);

	if (ret)
		harness_fail(__FILE__, line, "parse failed (%d): %s", ret,
			     err_msg());
	else if (strcmp(got.buf, want))
		harness_fail(__FILE__, line, "got \"%s\", want \"%s\"",
			     got.buf, want);
	buf_release(&got);
}

/* Parse text, expecting a syntax error naming line `errline` (0: any). */
static void expect_error(const char *text, int errline, int line)
{
	struct buf got = BUF_INIT;
	char want[64];
	int ret = parse(text, &got);

	if (errline)
		snprintf(want, sizeof(want), "line %d:", errline);
	else
		snprintf(want, sizeof(want), "line ");
	if (ret != XL_ECORRUPT)
		harness_fail(__FILE__, line, "got %d, want XL_ECORRUPT (%s)",
			     ret, got.buf);
	else if (!strstr(err_msg(), want) || !strstr(err_msg(), "test-config"))
		harness_fail(__FILE__, line,
			     "message \"%s\" does not name test-config %s",
			     err_msg(), want);
	buf_release(&got);
}

#define EXPECT(text, want) expect(text, want, __LINE__)
#define EXPECT_ERROR(text, l) expect_error(text, l, __LINE__)

/* ---- config_parse --------------------------------------------------- */

TEST(sections_and_keys)
{
	EXPECT("[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
	       "core.repositoryformatversion=0\ncore.bare=false\n");
	EXPECT("[a]\nx=1\n[b]\ny=2\n[a]\nz=3", "a.x=1\nb.y=2\na.z=3\n");
	EXPECT("[core] bare = true\n", "core.bare=true\n");
	EXPECT("[with-dash]\nkey-1 = v\n", "with-dash.key-1=v\n");
	EXPECT("", "");
	EXPECT("\n\n   \n\t\n", "");
	/* the last line may lack its newline */
	EXPECT("[a]\nk = v", "a.k=v\n");
	/* a UTF-8 byte order mark at the start */
	EXPECT("\xef\xbb\xbf[a]\nk = v\n", "a.k=v\n");
}

TEST(subsections)
{
	EXPECT("[remote \"origin\"]\n\turl = x\n", "remote.origin.url=x\n");
	EXPECT("[remote \"with space\"]\nk=v\n", "remote.with space.k=v\n");
	EXPECT("[a \"x.y\"]\nk=v\n", "a.x.y.k=v\n");
	EXPECT("[a \"\"]\nk=v\n", "a..k=v\n");
	/* \" and \\ escapes; any other escaped character stands for itself */
	EXPECT("[a \"q\\\"uo\\\\te\"]\nk=v\n", "a.q\"uo\\te.k=v\n");
	EXPECT("[a \"x\\yz\"]\nk=v\n", "a.xyz.k=v\n");
	EXPECT("[a \"]\"]\nk=v\n", "a.].k=v\n");
	/* several blanks before the quote */
	EXPECT("[a \t \"s\"]\nk=v\n", "a.s.k=v\n");
}

TEST(old_style_subsections)
{
	EXPECT("[a.b]\nk=v\n", "a.b.k=v\n");
	/* the old form is case-insensitive throughout */
	EXPECT("[Section.SubSection]\nKey=v\n", "section.subsection.key=v\n");
	EXPECT("[a.b.c]\nk=v\n", "a.b.c.k=v\n");
}

TEST(case_folding)
{
	EXPECT("[CoRe]\n\tBaRe = TRUE\n", "core.bare=TRUE\n");
	EXPECT("[Remote \"OrIgIn\"]\n\tURL = Some/Path\n",
	       "remote.OrIgIn.url=Some/Path\n");
	EXPECT("[EXTENSIONS]\nObjectFormat = sha256\n",
	       "extensions.objectformat=sha256\n");
}

TEST(bare_keys)
{
	EXPECT("[core]\n\tbare\n", "core.bare\n");
	EXPECT("[core]\n\tbare", "core.bare\n");
	EXPECT("[core]\n\tbare   \n\tx = 1\n", "core.bare\ncore.x=1\n");
	EXPECT("[core]\n\tbare\r\n", "core.bare\n");
	/* "key =" is an empty value, not a bare key */
	EXPECT("[core]\n\tbare =\n", "core.bare=\n");
	EXPECT("[core]\n\tbare = \n", "core.bare=\n");
}

TEST(value_blanks)
{
	EXPECT("[a]\nk =   v  \n", "a.k=v\n");
	/* as Git: a blank inside the value becomes a space (tab included) */
	EXPECT("[a]\nk = one  two\t three \n", "a.k=one  two  three\n");
	EXPECT("[a]\nk=v\t\t\n", "a.k=v\n");
}

TEST(quotes)
{
	EXPECT("[a]\nk = \" padded \"\n", "a.k= padded \n");
	EXPECT("[a]\nk = a\" b \"c\n", "a.k=a b c\n");
	EXPECT("[a]\nk = \"\"\n", "a.k=\n");
	EXPECT("[a]\nk = \"x;y#z\" ; comment\n", "a.k=x;y#z\n");
	/* blanks kept inside quotes even at the end */
	EXPECT("[a]\nk = x\"  \"\n", "a.k=x  \n");
}

TEST(quotes_leading_blank_after_empty_quotes)
{
	/* as Git: blanks are dropped while the value is still empty */
	EXPECT("[a]\nk = \"\" x\n", "a.k=x\n");
}

TEST(escapes)
{
	EXPECT("[a]\nk = a\\nb\\tc\\bd\n", "a.k=a\nb\tc\bd\n");
	EXPECT("[a]\nk = back\\\\slash \\\"q\\\"\n", "a.k=back\\slash \"q\"\n");
	EXPECT("[a]\nk = \"in \\\"quotes\\\"\"\n", "a.k=in \"quotes\"\n");
	/* an escaped blank at the end survives the trim */
	EXPECT("[a]\nk = x\\t\n", "a.k=x\t\n");
}

TEST(continuation_lines)
{
	EXPECT("[a]\nk = one \\\n two\n", "a.k=one  two\n");
	EXPECT("[a]\nk = x\\\ny\\\nz\nj = 2\n", "a.k=xyz\na.j=2\n");
	EXPECT("[a]\nk = \"quoted \\\n continued\"\n",
	       "a.k=quoted  continued\n");
	/* a continuation does not throw the line count off */
	EXPECT_ERROR("[a]\nk = x\\\ny\n!\n", 4);
}

TEST(continuation_with_crlf)
{
	/* as Git: CRLF counts as a newline, also after a backslash */
	EXPECT("[a]\r\n\tk = x \\\r\n y\r\n", "a.k=x  y\n");
}

TEST(crlf_lines)
{
	EXPECT("[a]\r\nk = v\r\nj = \"w\"\r\n", "a.k=v\na.j=w\n");
}

TEST(comments)
{
	EXPECT("# comment\n; another\n[a] # after a header\nk = v # after\n"
	       "j = w;after\n\t# indented\n",
	       "a.k=v\na.j=w\n");
	EXPECT("[a]\nk = v#x\n", "a.k=v\n");
	/* a comment line ending the file without a newline */
	EXPECT("[a]\nk = v\n# end", "a.k=v\n");
	/* [ inside a comment is nothing */
	EXPECT("[a]\n# [b]\nk = v\n", "a.k=v\n");
}

static int stop_cb(const char *key, const char *value, void *data)
{
	int *count = data;

	(void)key;
	(void)value;
	(*count)++;
	return 7;
}

TEST(callback_return_value)
{
	static const char text[] = "[a]\nx=1\ny=2\n";
	char *g = guarded_copy(text, sizeof(text) - 1);
	int count = 0;

	CHECK_INT(config_parse(g, sizeof(text) - 1, "t", stop_cb, &count), 7);
	CHECK_INT(count, 1);
	guarded_free(g);
}

TEST(syntax_errors)
{
	EXPECT_ERROR("[a b]\nk = v\n", 1);
	EXPECT_ERROR("[a \"b\" ]\nk = v\n", 1);
	EXPECT_ERROR("[a \"b\"x]\n", 1);
	EXPECT_ERROR("[]\n", 1);
	EXPECT_ERROR("[a_b]\n", 1);
	EXPECT_ERROR("[a]\nk v\n", 2);
	EXPECT_ERROR("[a]\nk = v\n1k = v\n", 3);
	EXPECT_ERROR("[a]\nk_x = v\n", 2);
	EXPECT_ERROR("[a]\n\n\nk = \\q\n", 4);
	EXPECT_ERROR("[a]\n=v\n", 2);
	EXPECT_ERROR("[a]\n# c\n\t! = v\n", 3);
	/* the text ends inside a header or a quote (line not checked) */
	EXPECT_ERROR("[a", 0);
	EXPECT_ERROR("[a \"b", 0);
	EXPECT_ERROR("[a]\nk = \"open", 0);
}

TEST(syntax_error_line_at_newline)
{
	/*
	 * Errors found on reading the newline that ends the bad line must
	 * name that line, as Git does ("bad config line 2" for the first
	 * two, "line 1" for the rest).
	 */
	EXPECT_ERROR("[a]\nk = \"abc\n", 2);
	EXPECT_ERROR("[a]\nk = \"abc\nj = 1\n", 2);
	EXPECT_ERROR("[a \"x\n", 1);
	EXPECT_ERROR("[a \"x\\\n\"]\n", 1);
	EXPECT_ERROR("[a\n]\n", 1);
	EXPECT_ERROR("[a\nk = v\n", 1);
}

TEST(bare_key_with_comment)
{
	/* as Git: "bad config line 2" (a bare key must end its line) */
	EXPECT_ERROR("[a]\n\tk # c\n", 2);
	EXPECT_ERROR("[a]\n\tk;c\n", 2);
}

/* ---- config_bool / config_int --------------------------------------- */

TEST(bools)
{
	static const char *const yes[] = {
		"true", "TRUE", "True", "yes", "YES", "on", "On", "1", "2",
		"-1", "1k",
	};
	static const char *const no[] = {
		"", "false", "FALSE", "no", "No", "off", "OFF", "0", "0k",
	};
	static const char *const neither[] = {
		"maybe", "tru", "yess", "t", "y", "1x", "true ",
	};

	CHECK_INT(config_bool(NULL), 1);
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		if (config_bool(yes[i]) != 1)
			harness_fail(__FILE__, __LINE__, "'%s' is not true",
				     yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		if (config_bool(no[i]) != 0)
			harness_fail(__FILE__, __LINE__, "'%s' is not false",
				     no[i]);
	for (size_t i = 0; i < sizeof(neither) / sizeof(*neither); i++)
		if (config_bool(neither[i]) != -1)
			harness_fail(__FILE__, __LINE__,
				     "'%s' should be no boolean", neither[i]);
}

TEST(ints)
{
	static const struct {
		const char *text;
		long long value;
	} good[] = {
		{ "0", 0 }, { "1", 1 }, { "42", 42 }, { "-3", -3 },
		{ "1k", 1024 }, { "1K", 1024 }, { "2m", 2 << 20 },
		{ "2M", 2 << 20 }, { "1g", 1 << 30 }, { "3G", 3ll << 30 },
		{ "0x10", 16 }, { "010", 8 },
		{ "9223372036854775807", 9223372036854775807ll },
	};
	static const char *const bad[] = {
		"", "abc", "1x", "1kk", "1 k", "1.5", "8589934592g", "true",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		long long v = -12345;

		CHECK_INT(config_int(good[i].text, &v), 0);
		CHECK_INT(v, good[i].value);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		long long v;

		if (config_int(bad[i], &v) != XL_EINVALID)
			harness_fail(__FILE__, __LINE__,
				     "'%s' accepted as integer", bad[i]);
	}
	{
		long long v;

		CHECK_INT(config_int(NULL, &v), XL_EINVALID);
	}
}

TEST(int_suffix_without_digits)
{
	/* as Git: "bad numeric config value 'k' ...: invalid unit" */
	static const char *const bad[] = { "k", "M", "g", "-k", "0xg" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		long long v = -12345;

		if (config_int(bad[i], &v) != XL_EINVALID)
			harness_fail(__FILE__, __LINE__,
				     "'%s' accepted as integer %lld", bad[i],
				     v);
	}
	/* and so no boolean either (Git: bad boolean config value 'k') */
	CHECK_INT(config_bool("k"), -1);
}

TEST(int_out_of_range)
{
	/* as Git: "bad numeric config value ... out of range" */
	long long v = 0;
	int ret = config_int("99999999999999999999", &v);

	CHECK_INT(ret, XL_EINVALID);
	if (!ret)
		harness_fail(__FILE__, __LINE__,
			     "99999999999999999999 accepted as %lld", v);
	CHECK_INT(config_int("-99999999999999999999", &v), XL_EINVALID);
	CHECK_INT(config_int("9223372036854775808", &v), XL_EINVALID);
}

/* ---- repository format ---------------------------------------------- */

/* Parse and verify a config's format keys; returns verify's result. */
static int format(const char *text, struct repo_format *fmt)
{
	size_t len = strlen(text);
	char *g = guarded_copy(text, len);
	int ret;

	repo_format_init(fmt);
	ret = repo_format_parse(fmt, g, len, "config");
	guarded_free(g);
	if (ret)
		return ret;
	return repo_format_verify(fmt);
}

#define V0 "[core]\n\trepositoryformatversion = 0\n"
#define V1 "[core]\n\trepositoryformatversion = 1\n"

static void expect_format(const char *text, int code, const char *msg,
			  int line)
{
	struct repo_format fmt;
	int ret = format(text, &fmt);

	if (ret != code)
		harness_fail(__FILE__, line, "got %d, want %d (%s)", ret, code,
			     err_msg());
	else if (msg && !strstr(err_msg(), msg))
		harness_fail(__FILE__, line, "message \"%s\" lacks \"%s\"",
			     err_msg(), msg);
	repo_format_release(&fmt);
}

#define EXPECT_FORMAT(text, code, msg) \
	expect_format(text, code, msg, __LINE__)

TEST(format_defaults)
{
	struct repo_format fmt;

	CHECK_INT(format("", &fmt), 0);
	CHECK_INT(fmt.version, 0);
	CHECK(fmt.algo == &hash_sha1);
	CHECK(fmt.compat_algo == NULL);
	CHECK_INT(fmt.ref_storage, REF_STORAGE_FILES);
	CHECK_INT(fmt.bare, -1);
	repo_format_release(&fmt);

	CHECK_INT(format(V1 "\tbare = true\n", &fmt), 0);
	CHECK_INT(fmt.version, 1);
	CHECK_INT(fmt.bare, 1);
	repo_format_release(&fmt);
	CHECK_INT(format(V0 "\tbare = false\n", &fmt), 0);
	CHECK_INT(fmt.bare, 0);
	repo_format_release(&fmt);
}

TEST(format_version_2_refused)
{
	EXPECT_FORMAT("[core]\n\trepositoryformatversion = 2\n",
		      XL_EUNSUPPORTED,
		      "Expected git repo version <= 1, found 2");
	EXPECT_FORMAT("[core]\n\trepositoryformatversion = 100\n",
		      XL_EUNSUPPORTED, "found 100");
	EXPECT_FORMAT("[core]\n\trepositoryformatversion = -1\n",
		      XL_EUNSUPPORTED, NULL);
}

TEST(format_bad_version)
{
	struct repo_format fmt;

	CHECK(format("[core]\n\trepositoryformatversion = one\n", &fmt) != 0);
	repo_format_release(&fmt);
	CHECK(format("[core]\n\trepositoryformatversion\n", &fmt) != 0);
	repo_format_release(&fmt);
}

TEST(format_v1_unknown_extension)
{
	struct repo_format fmt;

	EXPECT_FORMAT(V1 "[extensions]\n\tfooBar = x\n", XL_EUNSUPPORTED,
		      "unknown repository extension(s) found:\n\tfoobar");
	/* every unknown one is listed, one per line */
	CHECK_INT(format(V1 "[extensions]\n\tone = 1\n\tnoop\n\ttwo\n", &fmt),
		  XL_EUNSUPPORTED);
	CHECK(strstr(err_msg(), "found:\n\tone\n\ttwo") != NULL);
	CHECK(strstr(err_msg(), "noop") == NULL);
	repo_format_release(&fmt);
	/* a subsection is part of the name: unknown, too */
	EXPECT_FORMAT(V1 "[extensions \"x\"]\n\ty = 1\n", XL_EUNSUPPORTED,
		      "x.y");
}

TEST(format_v1_known_extensions)
{
	struct repo_format fmt;

	CHECK_INT(format(V1 "[extensions]\n\tnoop = 1\n\tnoop-v1 = 1\n"
			 "\tpreciousObjects = true\n\tpartialClone = origin\n"
			 "\tworktreeConfig = true\n\trelativeWorktrees = true\n"
			 "\tsubmodulePathConfig = true\n", &fmt), 0);
	repo_format_release(&fmt);
}

TEST(format_v0_v1_only_extension)
{
	EXPECT_FORMAT(V0 "[extensions]\n\tobjectFormat = sha256\n",
		      XL_EUNSUPPORTED,
		      "repo version is 0, but v1-only extension(s) found:\n"
		      "\tobjectformat");
	EXPECT_FORMAT("[extensions]\n\tobjectformat = sha1\n",
		      XL_EUNSUPPORTED, "v1-only");
	EXPECT_FORMAT(V0 "[extensions]\n\trefStorage = files\n",
		      XL_EUNSUPPORTED, "refstorage");
	EXPECT_FORMAT(V0 "[extensions]\n\tnoop-v1\n", XL_EUNSUPPORTED,
		      "noop-v1");
}

TEST(format_v0_unknown_extension_ignored)
{
	struct repo_format fmt;

	CHECK_INT(format(V0 "[extensions]\n\tfooBar = x\n\tnoop\n"
			 "\tworktreeconfig = true\n", &fmt), 0);
	CHECK(fmt.algo == &hash_sha1);
	repo_format_release(&fmt);
	CHECK_INT(format("[extensions]\n\tsomethingNew = 1\n", &fmt), 0);
	repo_format_release(&fmt);
}

TEST(format_object_format)
{
	struct repo_format fmt;

	CHECK_INT(format(V1 "[extensions]\n\tobjectformat = sha256\n", &fmt), 0);
	CHECK(fmt.algo == &hash_sha256);
	repo_format_release(&fmt);
	CHECK_INT(format(V1 "[extensions]\n\tobjectFormat = sha1\n", &fmt), 0);
	CHECK(fmt.algo == &hash_sha1);
	repo_format_release(&fmt);
	/* values are compared case-sensitively, as Git */
	EXPECT_FORMAT(V1 "[extensions]\n\tobjectformat = SHA256\n",
		      XL_ECORRUPT, "invalid value for 'extensions.objectformat'");
	EXPECT_FORMAT(V1 "[extensions]\n\tobjectformat = md5\n", XL_ECORRUPT,
		      "md5");
	EXPECT_FORMAT(V1 "[extensions]\n\tobjectformat\n", XL_ECORRUPT, NULL);
	EXPECT_FORMAT(V1 "[extensions]\n\tobjectformat =\n", XL_ECORRUPT, NULL);
}

TEST(format_compat_object_format)
{
	struct repo_format fmt;

	CHECK_INT(format(V1 "[extensions]\n\tobjectformat = sha256\n"
			 "\tcompatObjectFormat = sha1\n", &fmt), 0);
	CHECK(fmt.algo == &hash_sha256);
	CHECK(fmt.compat_algo == &hash_sha1);
	repo_format_release(&fmt);
	CHECK_INT(format(V1 "[extensions]\n\tcompatobjectformat = sha256\n",
			 &fmt), 0);
	CHECK(fmt.algo == &hash_sha1);
	CHECK(fmt.compat_algo == &hash_sha256);
	repo_format_release(&fmt);
	EXPECT_FORMAT(V1 "[extensions]\n\tcompatobjectformat = sha3\n",
		      XL_ECORRUPT, "compatobjectformat");
	/* equal to the storage algorithm (Git: BUG()) */
	EXPECT_FORMAT(V1 "[extensions]\n\tobjectformat = sha256\n"
		      "\tcompatobjectformat = sha256\n", XL_ECORRUPT, NULL);
}

TEST(format_compat_twice)
{
	EXPECT_FORMAT(V1 "[extensions]\n\tobjectformat = sha256\n"
		      "\tcompatobjectformat = sha1\n"
		      "\tcompatobjectformat = sha1\n",
		      XL_ECORRUPT,
		      "'extensions.compatobjectformat' already specified as 'sha1'");
	/* in two sections, too */
	EXPECT_FORMAT(V1 "[extensions]\n\tcompatobjectformat = sha256\n"
		      "[extensions]\n\tcompatObjectFormat = sha1\n",
		      XL_ECORRUPT, "already specified as 'sha256'");
}

TEST(format_ref_storage)
{
	struct repo_format fmt;

	CHECK_INT(format(V1 "[extensions]\n\trefstorage = files\n", &fmt), 0);
	CHECK_INT(fmt.ref_storage, REF_STORAGE_FILES);
	repo_format_release(&fmt);
	CHECK_INT(format(V1 "[extensions]\n\trefStorage = reftable\n", &fmt),
		  0);
	CHECK_INT(fmt.ref_storage, REF_STORAGE_REFTABLE);
	repo_format_release(&fmt);
	EXPECT_FORMAT(V1 "[extensions]\n\trefstorage = bogus\n", XL_ECORRUPT,
		      "invalid value for 'extensions.refstorage': 'bogus'");
	EXPECT_FORMAT(V1 "[extensions]\n\trefstorage = Files\n", XL_ECORRUPT,
		      NULL);
	EXPECT_FORMAT(V1 "[extensions]\n\trefstorage\n", XL_ECORRUPT, NULL);
	EXPECT_FORMAT(V1 "[extensions]\n\trefstorage = reftable://../x\n",
		      XL_EUNSUPPORTED, NULL);
}

TEST(format_syntax_error)
{
	struct repo_format fmt;

	CHECK_INT(format(V1 "[extensions]\n\tobjectformat sha256\n", &fmt),
		  XL_ECORRUPT);
	CHECK(strstr(err_msg(), "config: line 4") != NULL);
	repo_format_release(&fmt);
}

const struct test tests[] = {
	T(sections_and_keys),
	T(subsections),
	T(old_style_subsections),
	T(case_folding),
	T(bare_keys),
	T(value_blanks),
	T(quotes),
	T(quotes_leading_blank_after_empty_quotes),
	T(escapes),
	T(continuation_lines),
	T(continuation_with_crlf),
	T(crlf_lines),
	T(comments),
	T(callback_return_value),
	T(syntax_errors),
	T(syntax_error_line_at_newline),
	T(bare_key_with_comment),
	T(bools),
	T(ints),
	T(int_suffix_without_digits),
	T(int_out_of_range),
	T(format_defaults),
	T(format_version_2_refused),
	T(format_bad_version),
	T(format_v1_unknown_extension),
	T(format_v1_known_extensions),
	T(format_v0_v1_only_extension),
	T(format_v0_unknown_extension_ignored),
	T(format_object_format),
	T(format_compat_object_format),
	T(format_compat_twice),
	T(format_ref_storage),
	T(format_syntax_error),
	{ NULL, NULL },
};
