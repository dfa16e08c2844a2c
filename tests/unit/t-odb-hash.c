/*
 * t-odb-hash.c: hash_object() against known names, and hash_sha1_marked()
 * against hash_object(): whatever stretch two objects share, and
 * wherever it ends relative to the marks and the header, the name is
 * the same, and so are the marks left for the next object.
 */
#include "harness.h"
#include "../../odb/odb_i.h"

#include <stdlib.h>

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

/* `git hash-object` of "hello\n" and of an empty tree, both algorithms */
TEST(known_names)
{
	struct oid o;
	char hex[OID_HEXSZ_MAX + 1];

	CHECK_INT(hash_object(&hash_sha1, "blob", "hello\n", 6, &o), 0);
	CHECK_STR(oid_to_hex_r(hex, &o), "ce013625030ba8dba906f756967f9e9ca394464a");
	CHECK_INT(hash_object(&hash_sha1, "tree", "", 0, &o), 0);
	CHECK_STR(oid_to_hex_r(hex, &o), "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
	CHECK_INT(hash_object(&hash_sha256, "tree", "", 0, &o), 0);
	CHECK_STR(oid_to_hex_r(hex, &o),
		  "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321");
	CHECK_INT(hash_sha1_marked("blob", "hello\n", 6, NULL, 0, NULL,
				   &(struct hash_marks)HASH_MARKS_INIT, &o), 0);
	CHECK_STR(oid_to_hex_r(hex, &o), "ce013625030ba8dba906f756967f9e9ca394464a");
}

/* One object's marks: one per whole stride of the stream, as a fresh hash. */
static void check_alone(size_t len)
{
	struct hash_marks m = HASH_MARKS_INIT;
	unsigned char *p = malloc(len + 1);
	struct oid want, got;
	char hdr[32];
	size_t hlen = (size_t)snprintf(hdr, sizeof(hdr), "tree %zu", len) + 1;

	fill(p, len, (unsigned)len);
	CHECK_INT(hash_object(&hash_sha1, "tree", p, len, &want), 0);
	CHECK_INT(hash_sha1_marked("tree", p, len, NULL, 0, NULL, &m, &got), 0);
	CHECK(!oid_cmp(&want, &got));
	CHECK_INT(m.nr, (hlen + len) / HASH_MARK_STRIDE);
	hash_marks_release(&m);
	free(p);
}

TEST(marks_alone)
{
	static const size_t lens[] = {
		0, 1, 63, 64, HASH_MARK_STRIDE - 9, HASH_MARK_STRIDE - 10,
		HASH_MARK_STRIDE, 3 * HASH_MARK_STRIDE + 17, 100000,
	};

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		check_alone(lens[i]);
}

/*
 * A second object of the same length that differs from the first at
 * `at` (len: not at all): hashed from the first's marks, the same name
 * and marks as hashed alone.
 */
static void check_like(size_t len, size_t at)
{
	struct hash_marks m1 = HASH_MARKS_INIT, m2 = HASH_MARKS_INIT,
			  m3 = HASH_MARKS_INIT;
	unsigned char *a = malloc(len + 1), *b = malloc(len + 1);
	struct oid want, got, first;

	fill(a, len, 7);
	memcpy(b, a, len);
	if (at < len)
		b[at] ^= 0x5a;
	CHECK_INT(hash_sha1_marked("tree", a, len, NULL, 0, NULL, &m1, &first), 0);
	CHECK_INT(hash_object(&hash_sha1, "tree", b, len, &want), 0);
	CHECK_INT(hash_sha1_marked("tree", b, len, a, len, &m1, &m2, &got), 0);
	if (oid_cmp(&want, &got))
		harness_fail(__FILE__, __LINE__, "len %zu, differing at %zu: "
			     "another name", len, at);
	/* the marks it left are those of a hash from the start */
	CHECK_INT(hash_sha1_marked("tree", b, len, NULL, 0, NULL, &m3, &want), 0);
	CHECK_INT(m2.nr, m3.nr);
	CHECK(m2.nr == m3.nr &&
	      (!m2.nr || !memcmp(m2.state, m3.state, m2.nr * sizeof(*m2.state))));
	hash_marks_release(&m1);
	hash_marks_release(&m2);
	hash_marks_release(&m3);
	free(a);
	free(b);
}

TEST(marks_resume)
{
	size_t len = 5 * HASH_MARK_STRIDE + 100, len2;
	size_t hlen = (size_t)snprintf(NULL, 0, "tree %zu", len) + 1;

	/* at the start, around every stride's end (as the stream counts,
	   after the header), in the tail, and nowhere */
	check_like(len, 0);
	for (size_t k = 1; k <= 5; k++)
		for (size_t d = 0; d < 3; d++)
			check_like(len, k * HASH_MARK_STRIDE - hlen - 1 + d);
	check_like(len, len - 1);
	check_like(len, len);
	/* shorter than a stride: no marks, a whole hash */
	check_like(100, 50);
	/* a stream that ends on a stride */
	len2 = 2 * HASH_MARK_STRIDE;
	len2 -= (size_t)snprintf(NULL, 0, "tree %zu", len2) + 1;
	CHECK_INT((int)((snprintf(NULL, 0, "tree %zu", len2) + 1 + len2) %
			HASH_MARK_STRIDE), 0);
	check_like(len2, len2 / 2);
	check_like(len2, len2 - 1);
}

/* Marks of another length, or none: ignored, the name still right. */
TEST(marks_unlike)
{
	struct hash_marks m1 = HASH_MARKS_INIT, m2 = HASH_MARKS_INIT;
	size_t len = 3 * HASH_MARK_STRIDE;
	unsigned char *a = malloc(len + 10), *b = malloc(len + 10);
	struct oid want, got;

	fill(a, len + 10, 3);
	memcpy(b, a, len + 10);
	CHECK_INT(hash_sha1_marked("tree", a, len + 10, NULL, 0, NULL, &m1, &got), 0);
	CHECK_INT(hash_object(&hash_sha1, "tree", b, len, &want), 0);
	CHECK_INT(hash_sha1_marked("tree", b, len, a, len + 10, &m1, &m2, &got), 0);
	CHECK(!oid_cmp(&want, &got));
	hash_marks_release(&m1);
	CHECK_INT(hash_sha1_marked("tree", b, len, a, len, &m1, &m2, &got), 0);
	CHECK(!oid_cmp(&want, &got));
	hash_marks_release(&m2);
	free(a);
	free(b);
}

const struct test tests[] = {
	T(known_names),
	T(marks_alone),
	T(marks_resume),
	T(marks_unlike),
	{ NULL, NULL },
};
