/*
 * t-odb-fixtures.c: read every repository in tests/fixtures (made by
 * upstream Git) and check what we read against what Git recorded.
 *
 * For each fixture: enumeration yields exactly the objects listed in
 * NAME.objects.tsv, in that (name) order; every object re-hashes to its
 * own name (which proves inflation and delta application byte for byte);
 * header reads agree with full reads; streaming in odd-sized pieces
 * gives the same bytes; and every ref and HEAD resolve to the values in
 * NAME.refs.tsv.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct walk {
	struct repo *repo;
	FILE *tsv;		/* the expected list, read in step */
	size_t nr;
	int bad;
};

static int check_one(const struct oid *oid, void *data)
{
	struct walk *w = data;
	struct buf content = BUF_INIT, streamed = BUF_INIT;
	char hex[65], line[256], want_type[16];
	struct odb *odb = repo_odb(w->repo);
	struct odb_stream *st;
	enum obj_type type, htype, stype;
	size_t size, ssize, got;
	struct oid again;

	oid_to_hex_r(hex, oid);
	w->nr++;
	if (!fgets(line, sizeof(line), w->tsv) || strncmp(line, hex, 64)) {
		harness_fail(__FILE__, __LINE__, "enumeration gave %s, list has %.64s",
			     hex, line);
		return -1;
	}
	if (sscanf(line, "%*s %*s %15s", want_type) != 1)
		abort();
	if (odb_read(odb, oid, &type, &content)) {
		harness_fail(__FILE__, __LINE__, "read %s: %s", hex, err_msg());
		return -1;
	}
	hash_object(&hash_sha256, type_name(type), content.buf, content.len,
		    &again);
	if (oid_cmp(oid, &again) || strcmp(type_name(type), want_type)) {
		harness_fail(__FILE__, __LINE__, "%s does not re-hash (%s)", hex,
			     type_name(type));
		w->bad++;
	}
	if (odb_read_header(odb, oid, &htype, &size) || htype != type ||
	    size != content.len) {
		harness_fail(__FILE__, __LINE__, "header of %s disagrees", hex);
		w->bad++;
	}
	/* stream in pieces of an awkward size */
	if (odb_stream_open(odb, oid, &st, &stype, &ssize)) {
		harness_fail(__FILE__, __LINE__, "stream %s: %s", hex, err_msg());
		w->bad++;
	} else {
		char piece[4099];

		while (!odb_stream_read(st, piece, sizeof(piece), &got) && got)
			buf_add(&streamed, piece, got);
		odb_stream_close(st);
		if (stype != type || ssize != content.len ||
		    streamed.len != content.len ||
		    memcmp(streamed.buf, content.buf, content.len)) {
			harness_fail(__FILE__, __LINE__, "stream of %s differs", hex);
			w->bad++;
		}
	}
	buf_release(&content);
	buf_release(&streamed);
	return w->bad > 5 ? -1 : 0;
}

static void check_objects(const char *fixture, const char *tsv_name)
{
	char repo_path[512], tsv[512], extra[16];
	struct walk w = { 0 };
	int ret;

	fixture_repo(fixture, repo_path, sizeof(repo_path));
	snprintf(tsv, sizeof(tsv), "%s/fixtures/%s.objects.tsv",
		 test_data_dir(), tsv_name);
	w.tsv = fopen(tsv, "r");
	CHECK(w.tsv != NULL);
	if (!w.tsv)
		return;
	ret = repo_open(&w.repo, repo_path);
	CHECK_INT(ret, 0);
	if (ret) {
		printf("# %s\n", err_msg());
		fclose(w.tsv);
		return;
	}
	CHECK(repo_algo(w.repo) == &hash_sha256);
	CHECK_INT(odb_for_each_object(repo_odb(w.repo), check_one, &w), 0);
	CHECK(fgets(extra, sizeof(extra), w.tsv) == NULL);	/* none left over */
	CHECK_INT(w.bad, 0);
	repo_close(w.repo);
	fclose(w.tsv);
}

static void check_refs(const char *fixture, const char *tsv_name)
{
	char repo_path[512], tsv[512], line[1024];
	struct repo *repo;
	FILE *f;
	size_t n = 0;

	fixture_repo(fixture, repo_path, sizeof(repo_path));
	snprintf(tsv, sizeof(tsv), "%s/fixtures/%s.refs.tsv", test_data_dir(),
		 tsv_name);
	f = fopen(tsv, "r");
	CHECK(f != NULL);
	if (!f || repo_open(&repo, repo_path)) {
		CHECK(!"cannot open the fixture");
		if (f)
			fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[512], hex[65], got[65];
		struct ref ref;

		if (sscanf(line, "%511s %64s", name, hex) != 2)
			continue;
		n++;
		if (strlen(name) > 3 && !strcmp(name + strlen(name) - 3, "^{}")) {
			struct oid peeled;

			/* what the tag peels to, by walking the objects */
			if (repo_resolve_name(repo, name, &peeled))
				harness_fail(__FILE__, __LINE__, "peel %s: %s", name,
					     err_msg());
			else
				CHECK_STR(oid_to_hex_r(got, &peeled), hex);
			/*
			 * and where the list says packed-refs recorded it,
			 * the parser must report that same value, and
			 * must report none where the list says none was
			 * recorded: not only check it when it is there
			 */
			name[strlen(name) - 3] = '\0';
			if (refs_read(repo, name, &ref)) {
				harness_fail(__FILE__, __LINE__, "ref %s: %s", name,
					     err_msg());
				continue;
			}
			CHECK_INT(ref.has_peeled,
				  strstr(line, "peeled (packed-refs)") != NULL);
			if (ref.has_peeled)
				CHECK_STR(oid_to_hex_r(got, &ref.peeled), hex);
			ref_release(&ref);
			continue;
		}
		if (refs_read(repo, name, &ref)) {
			harness_fail(__FILE__, __LINE__, "ref %s: %s", name, err_msg());
			continue;
		}
		CHECK_STR(oid_to_hex_r(got, &ref.oid), hex);
		if (strstr(line, "symref=")) {
			CHECK(ref.target != NULL);
			if (ref.target)
				CHECK(strstr(line, ref.target) != NULL);
		}
		ref_release(&ref);
	}
	CHECK(n > 0);
	fclose(f);
	repo_close(repo);
}

/*
 * refs_for_each lists exactly the refs/ lines of the list, in order (none
 * left over), with the peeled value of each line the list marks "peeled
 * (packed-refs)".
 */
struct each {
	FILE *f;
	int bad;
	size_t n;
};

/* the next refs/ line of the list, peeled lines included; 0 at the end */
static int next_ref_line(FILE *f, char *line, size_t size)
{
	while (fgets(line, size, f))
		if (!strncmp(line, "refs/", 5))
			return 1;
	return 0;
}

static int each_cb(const struct ref *ref, void *data)
{
	struct each *e = data;
	char line[1024], hex[65];
	size_t len = strlen(ref->name);
	long pos;

	e->n++;
	do {
		if (!next_ref_line(e->f, line, sizeof(line))) {
			harness_fail(__FILE__, __LINE__, "extra ref %s", ref->name);
			e->bad++;
			return 0;
		}
	} while (strstr(line, "^{}"));
	if (strncmp(line, ref->name, len) || line[len] != '\t' ||
	    strncmp(line + len + 1, oid_to_hex_r(hex, &ref->oid), 64)) {
		harness_fail(__FILE__, __LINE__, "ref %s listed where %s was expected",
			     ref->name, line);
		e->bad++;
		return 0;
	}
	/* its peeled line, if the list has one, comes next */
	pos = ftell(e->f);
	if (next_ref_line(e->f, line, sizeof(line)) &&
	    !strncmp(line, ref->name, len) && !strncmp(line + len, "^{}\t", 4)) {
		if (!ref->has_peeled != !strstr(line, "peeled (packed-refs)")) {
			harness_fail(__FILE__, __LINE__, "ref %s: %s peeled value",
				     ref->name, ref->has_peeled ? "a" : "no");
			e->bad++;
		} else if (ref->has_peeled &&
			   strncmp(line + len + 4, oid_to_hex_r(hex, &ref->peeled), 64)) {
			harness_fail(__FILE__, __LINE__, "ref %s peels to %s, not as in %s",
				     ref->name, hex, line);
			e->bad++;
		}
	} else {
		if (ref->has_peeled) {
			harness_fail(__FILE__, __LINE__,
				     "ref %s: a peeled value the list has not",
				     ref->name);
			e->bad++;
		}
		fseek(e->f, pos, SEEK_SET);
	}
	return 0;
}

static void check_each(const char *fixture, const char *tsv_name)
{
	char repo_path[512], tsv[512], line[1024];
	struct each e = { 0 };
	struct repo *repo;

	fixture_repo(fixture, repo_path, sizeof(repo_path));
	snprintf(tsv, sizeof(tsv), "%s/fixtures/%s.refs.tsv", test_data_dir(),
		 tsv_name);
	e.f = fopen(tsv, "r");
	if (!e.f || repo_open(&repo, repo_path))
		abort();
	CHECK_INT(refs_for_each(repo, each_cb, &e), 0);
	/* an empty or short listing leaves refs/ lines over */
	while (next_ref_line(e.f, line, sizeof(line))) {
		line[strcspn(line, "\n")] = '\0';
		harness_fail(__FILE__, __LINE__, "ref not listed: %s", line);
		e.bad++;
	}
	CHECK(e.n > 0);
	CHECK_INT(e.bad, 0);
	fclose(e.f);
	repo_close(repo);
}

TEST(history_packed) { check_objects("history", "history"); }
TEST(history_loose) { check_objects("history-loose", "history-loose"); }
TEST(history_multipack) { check_objects("history-multipack", "history-multipack"); }
TEST(history_reftable_objects) { check_objects("history-reftable", "history-reftable"); }
TEST(odd_objects) { check_objects("odd-objects", "odd-objects"); }
TEST(signed_objects) { check_objects("signed", "signed"); }
TEST(submodule_objects) { check_objects("submodule", "submodule"); }
TEST(unknown_header_objects) { check_objects("unknown-header", "unknown-header"); }
TEST(large_objects) { check_objects("large", "large"); }

TEST(refs_packed) { check_refs("history", "history"); }
TEST(refs_loose) { check_refs("history-loose", "history-loose"); }
TEST(refs_multipack) { check_refs("history-multipack", "history-multipack"); }
TEST(refs_reftable) { check_refs("history-reftable", "history-reftable"); }
TEST(refs_signed) { check_refs("signed", "signed"); }
TEST(for_each_packed) { check_each("history", "history"); }
TEST(for_each_loose) { check_each("history-loose", "history-loose"); }
TEST(for_each_multipack) { check_each("history-multipack", "history-multipack"); }
TEST(for_each_reftable) { check_each("history-reftable", "history-reftable"); }

const struct test tests[] = {
	T(history_packed),
	T(history_loose),
	T(history_multipack),
	T(history_reftable_objects),
	T(odd_objects),
	T(signed_objects),
	T(submodule_objects),
	T(unknown_header_objects),
	T(large_objects),
	T(refs_packed),
	T(refs_loose),
	T(refs_multipack),
	T(refs_reftable),
	T(refs_signed),
	T(for_each_packed),
	T(for_each_loose),
	T(for_each_multipack),
	T(for_each_reftable),
	{ NULL, NULL },
};
