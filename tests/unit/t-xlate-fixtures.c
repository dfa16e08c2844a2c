/*
 * t-xlate-fixtures.c: the conversion rules against upstream Git's own
 * answers.
 *
 * Every fixture in tests/fixtures lists, for each object, the SHA-1 name
 * upstream's compat mode gave it (or UNTRANSLATABLE).  Here each object
 * is converted with those names as the mapping, hashed, and required to
 * land on exactly upstream's name; an UNTRANSLATABLE one must be
 * refused; and every SHA-1 form must convert back to the original
 * SHA-256 bytes (the round trip verify relies on).
 */
#include "harness.h"
#include "../../odb/odb_i.h"
#include "../../xlate/xlate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OBJECTS 6000

struct pair {
	struct oid o256, o1;
	int untranslatable;
	char type[8];
};

struct table {
	struct pair p[MAX_OBJECTS];
	size_t nr;
	size_t nr_objects;	/* p[0..nr_objects): NAME.objects.tsv; then the submodule map */
	size_t nr_untranslatable;	/* of those objects */
};

static struct table tab;

static int find(void *data, const struct oid *in, struct oid *out)
{
	struct table *t = data;

	for (size_t i = 0; i < t->nr; i++) {
		const struct oid *from = in->algo == &hash_sha256 ? &t->p[i].o256 : &t->p[i].o1;

		if (oid_cmp(from, in))
			continue;
		if (t->p[i].untranslatable)
			return err_set(XL_EUNSUPPORTED, "untranslatable");
		*out = in->algo == &hash_sha256 ? t->p[i].o1 : t->p[i].o256;
		return 0;
	}
	return XL_ENOTFOUND;
}

static void load(const char *name, const char *submap)
{
	char path[512], line[256];
	FILE *f;

	tab.nr = tab.nr_untranslatable = 0;
	snprintf(path, sizeof(path), "%s/fixtures/%s.objects.tsv", test_data_dir(), name);
	f = fopen(path, "r");
	if (!f)
		abort();
	while (fgets(line, sizeof(line), f)) {
		struct pair *p = &tab.p[tab.nr++];
		char h256[65], h1[65];

		if (sscanf(line, "%64s %64s %7s", h256, h1, p->type) != 3)
			abort();
		oid_from_hex(&p->o256, &hash_sha256, h256);
		p->untranslatable = !strcmp(h1, "UNTRANSLATABLE");
		if (!p->untranslatable)
			oid_from_hex(&p->o1, &hash_sha1, h1);
		tab.nr_untranslatable += p->untranslatable;
		if (tab.nr == MAX_OBJECTS)
			abort();
	}
	fclose(f);
	tab.nr_objects = tab.nr;
	if (!submap)
		return;
	snprintf(path, sizeof(path), "%s/fixtures/%s", test_data_dir(), submap);
	f = fopen(path, "r");
	if (!f)
		abort();
	while (fgets(line, sizeof(line), f)) {
		struct pair *p = &tab.p[tab.nr++];
		char h256[65], h1[65];

		if (line[0] == '#' || sscanf(line, "%64s %64s", h256, h1) != 2) {
			tab.nr--;
			continue;
		}
		if (tab.nr == MAX_OBJECTS)
			abort();
		oid_from_hex(&p->o256, &hash_sha256, h256);
		oid_from_hex(&p->o1, &hash_sha1, h1);
		strcpy(p->type, "commit");
	}
	fclose(f);
}

/*
 * NAME.md's count line, "Objects: N (...); UNTRANSLATABLE: M.", into
 * *objects and *untranslatable; -1 when the line is not there.
 */
static int md_counts(const char *name, size_t *objects, size_t *untranslatable)
{
	char path[512], line[512];
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/fixtures/%s.md", test_data_dir(), name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *u = strstr(line, "UNTRANSLATABLE: ");

		if (!strncmp(line, "Objects: ", 9) && u &&
		    sscanf(line, "Objects: %zu", objects) == 1 &&
		    sscanf(u, "UNTRANSLATABLE: %zu", untranslatable) == 1) {
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static void check_fixture(const char *name, const char *submap)
{
	char repo_path[512], hex[65], want[65];
	struct xlate_opts to1 = { &hash_sha256, &hash_sha1, find, &tab,
				  XLATE_UNKNOWN_FAIL, NULL };
	struct xlate_opts to256 = { &hash_sha1, &hash_sha256, find, &tab,
				    XLATE_UNKNOWN_FAIL, NULL };
	struct buf obj = BUF_INIT, sha1_form = BUF_INIT, back = BUF_INIT;
	struct repo *repo;
	size_t n_ok = 0, n_refused = 0, n_objects, md_objects, md_untranslatable;

	fixture_repo(name, repo_path, sizeof(repo_path));
	load(name, submap);
	/* the lists as the fixture's description counts them */
	n_objects = tab.nr_objects;
	if (md_counts(name, &md_objects, &md_untranslatable)) {
		harness_fail(__FILE__, __LINE__, "%s.md: no \"Objects: ...; UNTRANSLATABLE: ...\" line",
			     name);
	} else {
		CHECK_INT(n_objects, md_objects);
		CHECK_INT(tab.nr_untranslatable, md_untranslatable);
	}
	if (repo_open(&repo, repo_path)) {
		CHECK(!"open fixture");
		return;
	}
	for (size_t i = 0; i < n_objects; i++) {
		struct pair *p = &tab.p[i];
		enum obj_type type;
		struct oid got;
		int ret;

		/* every row of NAME.objects.tsv is an object of the fixture
		 * (the submodule pairs, after them, are not looked at here) */
		if (odb_read(repo_odb(repo), &p->o256, &type, &obj)) {
			harness_fail(__FILE__, __LINE__, "read %s: %s",
				     oid_to_hex_r(hex, &p->o256), err_msg());
			continue;
		}
		oid_to_hex_r(hex, &p->o256);
		ret = xlate_object(&to1, type, obj.buf, obj.len, &sha1_form);
		if (p->untranslatable) {
			if (ret == 0)
				harness_fail(__FILE__, __LINE__,
					     "%s converted, upstream refuses it", hex);
			else
				n_refused++;
			continue;
		}
		if (ret) {
			harness_fail(__FILE__, __LINE__, "%s %s: %s", p->type, hex,
				     err_msg());
			continue;
		}
		hash_object(&hash_sha1, type_name(type), sha1_form.buf,
			    sha1_form.len, &got);
		if (oid_cmp(&got, &p->o1)) {
			harness_fail(__FILE__, __LINE__, "%s %s: got %s, upstream %s",
				     p->type, hex, oid_to_hex_r(want, &got),
				     oid_to_hex_r(hex, &p->o1));
			continue;
		}
		/* and back, to the very bytes we started from */
		if (xlate_object(&to256, type, sha1_form.buf, sha1_form.len, &back) ||
		    back.len != obj.len || memcmp(back.buf, obj.buf, obj.len)) {
			harness_fail(__FILE__, __LINE__, "%s %s does not round-trip",
				     p->type, hex);
			continue;
		}
		n_ok++;
	}
	printf("# %s: %zu converted to upstream's names, %zu refused as upstream does\n",
	       name, n_ok, n_refused);
	CHECK(n_ok > 0);
	/* each object is either converted or refused, as upstream did */
	CHECK_INT(n_refused, tab.nr_untranslatable);
	CHECK_INT(n_ok + n_refused, n_objects);
	buf_release(&obj);
	buf_release(&sha1_form);
	buf_release(&back);
	repo_close(repo);
}

TEST(history) { check_fixture("history", NULL); }
TEST(odd_objects) { check_fixture("odd-objects", NULL); }
TEST(signed_objects) { check_fixture("signed", NULL); }
TEST(submodule) { check_fixture("submodule", "submodule.submodule-map.tsv"); }
TEST(unknown_header) { check_fixture("unknown-header", NULL); }
TEST(large) { check_fixture("large", NULL); }

TEST(unknown_header_copy_policy)
{
	/* with --unknown-headers=copy the change-id commit converts */
	static const char commit[] =
		"tree 6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321\n"
		"author A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n"
		"change-id zzzz\n\nmsg\n";
	struct xlate_opts o = { &hash_sha256, &hash_sha1, find, &tab,
				XLATE_UNKNOWN_FAIL, NULL };
	struct buf out = BUF_INIT;

	CHECK_INT(xlate_object(&o, OBJ_COMMIT, commit, strlen(commit), &out),
		  XL_EUNSUPPORTED);
	CHECK(strstr(err_msg(), "change-id") != NULL);
	o.unknown_headers = XLATE_UNKNOWN_COPY;
	CHECK_INT(xlate_object(&o, OBJ_COMMIT, commit, strlen(commit), &out), 0);
	CHECK(strstr(out.buf, "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n") == out.buf);
	CHECK(strstr(out.buf, "change-id zzzz\n") != NULL);
	buf_release(&out);
}

const struct test tests[] = {
	T(history),
	T(odd_objects),
	T(signed_objects),
	T(submodule),
	T(unknown_header),
	T(large),
	T(unknown_header_copy_policy),
	{ NULL, NULL },
};
