/*
 * t-xlate-merge.c: a tree walked against a reference tree (tree_merge.c)
 * and what the build makes with it: the SHA-1 form copied from the
 * reference's where the two share entries (xlate_tree_against()), and
 * the SHA-1 pack's delta (xlate_tree_delta_merged()).  Both must be the
 * bytes the plain ways make (xlate_object(), xlate_tree_delta()), and
 * the walk must find what the trees share, or the shortcut is worth
 * nothing: so the steps are checked too.
 *
 * Names: entry k's object is 32 bytes whose first 20 are its SHA-1 name
 * (the map takes the prefix), from a seed, so that versions differ.
 */
#include "harness.h"
#include "../../odb/odb_i.h"
#include "../../xlate/xlate_i.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int map_prefix(void *data, const struct oid *in, struct oid *out)
{
	int *calls = data;

	if (calls)
		(*calls)++;
	oid_from_raw(out, &hash_sha1, in->hash);
	return 0;
}

/* Entry "mode name\0" + a name made from seed, in both forms. */
static void add(struct buf *t256, struct buf *t1, const char *mode,
		const char *name, unsigned seed)
{
	unsigned char raw[32];
	uint64_t x = seed;

	/* spread like a hash (splitmix64), as object names are */
	for (int i = 0; i < 32; i++) {
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		raw[i] = (unsigned char)(z ^ (z >> 31));
	}
	CHECK(!buf_addf(t256, "%s %s", mode, name));
	CHECK(!buf_addch(t256, '\0'));
	CHECK(!buf_add(t256, raw, 32));
	CHECK(!buf_addf(t1, "%s %s", mode, name));
	CHECK(!buf_addch(t1, '\0'));
	CHECK(!buf_add(t1, raw, 20));
}

/*
 * A directory of n files "f0000000".. in Git's order; version v changes
 * the object of every 97th file from v, drops file v * 13 % n and adds
 * "g<v>" (after every "f") and a subdirectory "d" when v is odd.
 */
static void version(struct buf *t256, struct buf *t1, unsigned n, unsigned v)
{
	char name[32];

	buf_reset(t256);
	buf_reset(t1);
	if (v & 1)
		add(t256, t1, "40000", "d", 7 + v);
	for (unsigned k = 0; k < n; k++) {
		if (v && k == v * 13 % n)
			continue;
		snprintf(name, sizeof(name), "f%07u", k);
		add(t256, t1, "100644", name, k % 97 == v % 97 ? k + 1000 * v : k);
	}
	snprintf(name, sizeof(name), "g%u", v);
	add(t256, t1, "100755", name, 5000 + v);
}

struct steps {
	size_t same, own, entries;
};

static int count(void *data, const struct xlate_merge_step *s)
{
	struct steps *st = data;

	if (s->kind == XLATE_MERGE_SAME) {
		st->same += s->end - s->first;
		st->entries += s->end - s->first;
	} else {
		st->own++;
		st->entries++;
	}
	return 0;
}

/* t against ref both ways: the bytes the plain ways make; 1 if merged. */
static int check_pair(const struct buf *r256, const struct buf *r1,
		      const struct buf *t256, const struct buf *t1)
{
	struct xlate_opts o = { &hash_sha256, &hash_sha1, map_prefix, NULL,
				XLATE_UNKNOWN_FAIL, NULL };
	struct xlate_tree_ix ix;
	struct buf plain = BUF_INIT, against = BUF_INIT;
	struct buf d1 = BUF_INIT, dm = BUF_INIT, ds = BUF_INIT, made = BUF_INIT;
	int merged;

	xlate_tree_ix_init(&ix);
	CHECK(!xlate_tree_ix_build(&ix, &hash_sha256, r256->buf, r256->len));
	CHECK(!xlate_object(&o, OBJ_TREE, t256->buf, t256->len, &plain));
	CHECK_INT(plain.len, t1->len);
	CHECK_MEM(plain.buf, t1->buf, t1->len);
	CHECK(!xlate_tree_against(&o, t256->buf, t256->len, &ix, r1->buf,
				  r1->len, &against, NULL));
	CHECK_INT(against.len, t1->len);
	CHECK_MEM(against.buf, t1->buf, t1->len);
	CHECK(!xlate_tree_delta(&hash_sha1, r1, t1, &d1));
	/* the fallback for names made to collide finds the same matches */
	CHECK(!xlate_tree_delta_sorted(&hash_sha1, r1, t1, &ds));
	CHECK_INT(ds.len, d1.len);
	CHECK_MEM(ds.buf, d1.buf, d1.len);
	merged = !xlate_tree_delta_merged(&ix, t256->buf, t256->len, t1, &hash_sha1, &dm);
	if (merged) {
		CHECK_INT(dm.len, d1.len);
		CHECK_MEM(dm.buf, d1.buf, d1.len);
		CHECK(!delta_apply((const unsigned char *)r1->buf, r1->len,
				   (const unsigned char *)dm.buf, dm.len, &made));
		CHECK_INT(made.len, t1->len);
		CHECK_MEM(made.buf, t1->buf, t1->len);
	}
	xlate_tree_ix_release(&ix);
	buf_release(&plain);
	buf_release(&against);
	buf_release(&d1);
	buf_release(&dm);
	buf_release(&ds);
	buf_release(&made);
	return merged;
}

TEST(versions_against_each_other)
{
	struct buf a256 = BUF_INIT, a1 = BUF_INIT, b256 = BUF_INIT, b1 = BUF_INIT;

	/* older against newer, newer against older, and two steps apart */
	for (unsigned v = 1; v < 12; v++) {
		version(&a256, &a1, 3000, v);
		version(&b256, &b1, 3000, v + 1);
		CHECK(check_pair(&a256, &a1, &b256, &b1));
		CHECK(check_pair(&b256, &b1, &a256, &a1));
		version(&b256, &b1, 3000, v + 2);
		CHECK(check_pair(&a256, &a1, &b256, &b1));
	}
	/* against itself, and against an empty tree, and the other way */
	CHECK(check_pair(&a256, &a1, &a256, &a1));
	buf_reset(&b256);
	buf_reset(&b1);
	CHECK(check_pair(&b256, &b1, &a256, &a1));
	CHECK(check_pair(&a256, &a1, &b256, &b1));
	buf_release(&a256);
	buf_release(&a1);
	buf_release(&b256);
	buf_release(&b1);
}

TEST(walk_finds_what_is_shared)
{
	struct xlate_opts o = { &hash_sha256, &hash_sha1, map_prefix, NULL,
				XLATE_UNKNOWN_FAIL, NULL };
	struct buf a256 = BUF_INIT, a1 = BUF_INIT, b256 = BUF_INIT, b1 = BUF_INIT;
	struct buf out = BUF_INIT;
	struct xlate_tree_ix ix, tix, parsed;
	struct steps st = { 0, 0, 0 };
	int sorted = 0, calls = 0;

	version(&a256, &a1, 3000, 2);
	version(&b256, &b1, 3000, 3);
	xlate_tree_ix_init(&ix);
	CHECK(!xlate_tree_ix_build(&ix, &hash_sha256, a256.buf, a256.len));
	CHECK(ix.sorted);
	xlate_tree_ix_init(&tix);
	xlate_tree_ix_init(&parsed);
	CHECK(!xlate_tree_merge(&ix, b256.buf, b256.len, count, &st, &sorted,
				&tix));
	CHECK(sorted);
	/* the tree's own index, made on the way, is the one parsing makes */
	CHECK(!xlate_tree_ix_build(&parsed, &hash_sha256, b256.buf, b256.len));
	CHECK_INT(tix.nr, parsed.nr);
	CHECK_MEM(tix.at, parsed.at, (parsed.nr + 1) * sizeof(*parsed.at));
	CHECK_INT(tix.sorted, 1);
	CHECK_INT(tix.has_gitlink, 0);
	CHECK_INT(tix.len, b256.len);
	xlate_tree_ix_release(&tix);
	xlate_tree_ix_release(&parsed);
	CHECK_INT(st.entries, 3000 - 1 + 1 + 1);
	/* own: "d", "g3", a file added back, and the 31 changed twice over */
	CHECK(st.own <= 2 + 1 + 2 * 31);
	CHECK(st.same >= 3000 - 2 - 2 * 31);
	/* and only the tree's own entries are looked up */
	o.map_data = &calls;
	CHECK(!xlate_tree_against(&o, b256.buf, b256.len, &ix, a1.buf, a1.len,
				  &out, NULL));
	CHECK_INT(calls, st.own);
	CHECK_INT(out.len, b1.len);
	CHECK_MEM(out.buf, b1.buf, b1.len);
	xlate_tree_ix_release(&ix);
	buf_release(&a256);
	buf_release(&a1);
	buf_release(&b256);
	buf_release(&b1);
	buf_release(&out);
}

TEST(out_of_order_and_duplicates)
{
	struct buf a256 = BUF_INIT, a1 = BUF_INIT, b256 = BUF_INIT, b1 = BUF_INIT;
	struct xlate_tree_ix ix;

	/* the target out of order: converted right, no merged delta */
	add(&a256, &a1, "100644", "a", 1);
	add(&a256, &a1, "100644", "b", 2);
	add(&a256, &a1, "100644", "c", 3);
	add(&b256, &b1, "100644", "c", 3);
	add(&b256, &b1, "100644", "a", 1);
	add(&b256, &b1, "100644", "b", 2);
	CHECK(!check_pair(&a256, &a1, &b256, &b1));
	/* the base with a duplicate entry: the index says so */
	xlate_tree_ix_init(&ix);
	add(&a256, &a1, "100644", "c", 3);
	CHECK(!xlate_tree_ix_build(&ix, &hash_sha256, a256.buf, a256.len));
	CHECK(!ix.sorted);
	CHECK(!check_pair(&a256, &a1, &b256, &b1));
	/* a file and a directory of one name are in order ("a" < "a/") */
	buf_reset(&a256);
	buf_reset(&a1);
	add(&a256, &a1, "100644", "a", 1);
	add(&a256, &a1, "100644", "a.c", 2);
	add(&a256, &a1, "40000", "a", 3);
	CHECK(!xlate_tree_ix_build(&ix, &hash_sha256, a256.buf, a256.len));
	CHECK(ix.sorted);
	CHECK(check_pair(&a256, &a1, &a256, &a1));
	xlate_tree_ix_release(&ix);
	buf_release(&a256);
	buf_release(&a1);
	buf_release(&b256);
	buf_release(&b1);
}

TEST(copies_past_one_instruction)
{
	struct buf a256 = BUF_INIT, a1 = BUF_INIT, b256 = BUF_INIT, b1 = BUF_INIT;

	/* 520,000 entries: the SHA-1 form passes COPY_MAX (16 MiB) */
	version(&a256, &a1, 520000, 4);
	version(&b256, &b1, 520000, 5);
	CHECK(a1.len > 0xffffff);
	CHECK(check_pair(&a256, &a1, &b256, &b1));
	buf_release(&a256);
	buf_release(&a1);
	buf_release(&b256);
	buf_release(&b1);
}

TEST(bad_target)
{
	struct xlate_opts o = { &hash_sha256, &hash_sha1, map_prefix, NULL,
				XLATE_UNKNOWN_FAIL, NULL };
	struct buf a256 = BUF_INIT, a1 = BUF_INIT, out = BUF_INIT;
	struct xlate_tree_ix ix;
	char bad[120];

	version(&a256, &a1, 50, 1);
	xlate_tree_ix_init(&ix);
	CHECK(!xlate_tree_ix_build(&ix, &hash_sha256, a256.buf, a256.len));
	/* the reference's first bytes, then a truncated entry */
	memcpy(bad, a256.buf, 80);
	CHECK_INT(xlate_tree_against(&o, bad, 80, &ix, a1.buf, a1.len, &out,
				     NULL), XL_ECORRUPT);
	CHECK_INT(out.len, 0);
	/* a mode that is not octal, past a shared stretch */
	memcpy(bad, a256.buf, ix.at[1]);
	memcpy(bad + ix.at[1], "9 x", 4);
	memset(bad + ix.at[1] + 4, 1, 32);
	CHECK_INT(xlate_tree_against(&o, bad, ix.at[1] + 36, &ix, a1.buf,
				     a1.len, &out, NULL), XL_ECORRUPT);
	CHECK_INT(out.len, 0);
	/* a reference whose SHA-1 form does not match it */
	CHECK_INT(xlate_tree_against(&o, a256.buf, a256.len, &ix, a1.buf,
				     a1.len - 1, &out, NULL), XL_EINVALID);
	xlate_tree_ix_release(&ix);
	buf_release(&a256);
	buf_release(&a1);
	buf_release(&out);
}

static void too_slow(int sig)
{
	static const char msg[] = "# the deltas took over 10 seconds: "
				  "entries compared with all the others?\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

/*
 * Entries that share their object (a directory of empty files, or of
 * copies of one file) and the length of their names: the SHA-1 pack's
 * delta must not compare each with all the others.  60,000 entries each
 * way take some milliseconds (a second under the sanitizers); compared
 * all with all, 3.6e9 comparisons, half a minute, and the alarm ends
 * the test.  Then the same entry many times over (a tree that does not
 * parse as Git's, which the walk leaves to the plain way): every copy in
 * t matches the first in the base, either way the matches are found.
 * And names that share the part the hash reads: found by the sort.
 */
#define LINEAR_SECS 10

TEST(shared_objects_stay_linear)
{
	struct buf a256 = BUF_INIT, a1 = BUF_INIT, b256 = BUF_INIT, b1 = BUF_INIT;
	struct buf d = BUF_INIT, ds = BUF_INIT, made = BUF_INIT;
	char name[32];
	unsigned n = 60000;

	signal(SIGALRM, too_slow);
	alarm(LINEAR_SECS);

	for (unsigned k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "f%07u", k);
		add(&a256, &a1, "100644", name, 1);
		/* every 1000th renamed (in Git's order still): they differ */
		if (k % 1000 == 5)
			snprintf(name, sizeof(name), "f%07ux", k);
		add(&b256, &b1, "100644", name, 1);
	}
	CHECK(check_pair(&a256, &a1, &b256, &b1));
	CHECK(check_pair(&b256, &b1, &a256, &a1));
	/* one entry, n times, in both */
	buf_reset(&a256);
	buf_reset(&a1);
	for (unsigned k = 0; k < n; k++)
		add(&a256, &a1, "100644", "same", 1);
	CHECK(!xlate_tree_delta(&hash_sha1, &a1, &a1, &d));
	CHECK(!xlate_tree_delta_sorted(&hash_sha1, &a1, &a1, &ds));
	CHECK_INT(ds.len, d.len);
	CHECK_MEM(ds.buf, d.buf, d.len);
	CHECK(!delta_apply((const unsigned char *)a1.buf, a1.len,
			   (const unsigned char *)d.buf, d.len, &made));
	CHECK_INT(made.len, a1.len);
	CHECK_MEM(made.buf, a1.buf, a1.len);
	/* copies of the base's first entry, 3 bytes each */
	CHECK(d.len < a1.len / 8);
	/* names that differ only before their last 16 bytes: one chain */
	buf_reset(&a256);
	buf_reset(&a1);
	buf_reset(&b256);
	buf_reset(&b1);
	for (unsigned k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "%07u, and the same end", k);
		add(&a256, &a1, "100644", name, 1);
		if (k % 1000 != 5)
			add(&b256, &b1, "100644", name, 1);
	}
	CHECK(check_pair(&a256, &a1, &b256, &b1));
	CHECK(check_pair(&b256, &b1, &a256, &a1));
	alarm(0);
	buf_release(&a256);
	buf_release(&a1);
	buf_release(&b256);
	buf_release(&b1);
	buf_release(&d);
	buf_release(&ds);
	buf_release(&made);
}

const struct test tests[] = {
	T(versions_against_each_other),
	T(walk_finds_what_is_shared),
	T(out_of_order_and_duplicates),
	T(copies_past_one_instruction),
	T(bad_target),
	T(shared_objects_stay_linear),
	{ NULL, NULL },
};
