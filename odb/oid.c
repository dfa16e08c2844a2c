/*
 * oid.c: object names of either algorithm, hex, and hashing.
 *
 * Git prints hex in lowercase and parses either case.  Hashing goes
 * through OpenSSL's EVP digests, fetched once (hash_md()); Git's SHA-1
 * is SHA-1DC, which agrees with plain SHA-1 on every input that is not a
 * crafted collision.
 */
/* SHA1_Init() and company, for the marks (see hash_sha1_marked()) */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "odb.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct hash_algo hash_sha1 = { "sha1", HASH_SHA1, 20, 40, "SHA-1" };
const struct hash_algo hash_sha256 = { "sha256", HASH_SHA256, 32, 64, "SHA-256" };

const struct hash_algo *hash_algo_by_name(const char *name)
{
	if (!strcmp(name, "sha1"))
		return &hash_sha1;
	if (!strcmp(name, "sha256"))
		return &hash_sha256;
	return NULL;
}

const struct hash_algo *hash_algo_other(const struct hash_algo *algo)
{
	return algo == &hash_sha1 ? &hash_sha256 : &hash_sha1;
}

void oid_from_raw(struct oid *oid, const struct hash_algo *algo,
		  const unsigned char *raw)
{
	memcpy(oid->hash, raw, algo->rawsz);
	memset(oid->hash + algo->rawsz, 0, OID_RAWSZ_MAX - algo->rawsz);
	oid->algo = algo;
}

int oid_cmp(const struct oid *a, const struct oid *b)
{
	return memcmp(a->hash, b->hash, OID_RAWSZ_MAX);
}

int oid_is_null(const struct oid *oid)
{
	static const unsigned char zero[OID_RAWSZ_MAX];

	return !memcmp(oid->hash, zero, OID_RAWSZ_MAX);
}

char *oid_to_hex_r(char *hex, const struct oid *oid)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < oid->algo->rawsz; i++) {
		hex[2 * i] = digits[oid->hash[i] >> 4];
		hex[2 * i + 1] = digits[oid->hash[i] & 15];
	}
	hex[2 * i] = '\0';
	return hex;
}

int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int oid_from_hex(struct oid *oid, const struct hash_algo *algo,
		 const char *hex)
{
	memset(oid->hash, 0, sizeof(oid->hash));
	oid->algo = algo;
	for (size_t i = 0; i < algo->rawsz; i++) {
		int hi = hex_value((unsigned char)hex[2 * i]);
		int lo = hi < 0 ? -1 : hex_value((unsigned char)hex[2 * i + 1]);

		if (lo < 0)
			return err_set(XL_EINVALID, "not a %s name: %.*s",
				       algo->name, (int)algo->hexsz, hex);
		oid->hash[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/*
 * Given EVP_sha1() or EVP_sha256(), OpenSSL 3 looks the digest up by
 * name at every EVP_DigestInit_ex(), in a store all threads share: a
 * third of a microsecond a hash alone, more when two threads meet there,
 * for a build that hashes every object (3.6% of the walkers' time on the
 * 131k-object bench).  So each is fetched once, and kept for the life of
 * the process; md[] is written once, under md_once, and only read after.
 */
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static EVP_MD *md[2];

static void md_fetch(void)
{
	md[0] = EVP_MD_fetch(NULL, "SHA1", NULL);
	md[1] = EVP_MD_fetch(NULL, "SHA2-256", NULL);
}

const struct evp_md_st *hash_md(const struct hash_algo *algo)
{
	int i = algo->id == HASH_SHA1 ? 0 : 1;

	pthread_once(&md_once, md_fetch);
	if (md[i])
		return md[i];
	return i ? EVP_sha256() : EVP_sha1();	/* fetched when used, then */
}

int hash_object(const struct hash_algo *algo, const char *type,
		 const void *content, size_t len, struct oid *out)
{
	char hdr[64];
	int n = snprintf(hdr, sizeof(hdr), "%s %zu", type, len);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int mdlen;

	if (!ctx)
		return err_set(XL_ENOMEM, "out of memory (hash context)");
	EVP_DigestInit_ex(ctx, hash_md(algo), NULL);
	EVP_DigestUpdate(ctx, hdr, (size_t)n + 1);	/* with its NUL */
	EVP_DigestUpdate(ctx, content, len);
	memset(out->hash, 0, sizeof(out->hash));
	EVP_DigestFinal_ex(ctx, out->hash, &mdlen);
	EVP_MD_CTX_free(ctx);
	out->algo = algo;
	return 0;
}

/*
 * The marks.  OpenSSL's EVP interface keeps the digest's state to
 * itself, so these use its low-level SHA-1 (deprecated in OpenSSL 3
 * for the EVP one, not removed, and the same code underneath): at a
 * multiple of 64 bytes its context is the five words h0..h4 and the
 * count, which is the position.  Measured at a million objects: the
 * SHA-1 of trees and commits was 14% of the build's processor time,
 * and most trees are converted a moment after a version of the same
 * size that they share a long start with.
 */
_Static_assert(HASH_MARK_STRIDE % 64 == 0, "marks fall on SHA-1 blocks");

int hash_marks_reserve(struct hash_marks *m, size_t n)
{
	void *grown;

	if (m->alloc >= n)
		return 0;
	if (!(grown = realloc(m->state, n * sizeof(*m->state))))
		return err_set(XL_ENOMEM, "out of memory (hash marks)");
	m->state = grown;
	m->alloc = n;
	return 0;
}

void hash_marks_release(struct hash_marks *m)
{
	free(m->state);
	m->state = NULL;
	m->nr = m->alloc = 0;
}

static void mark_take(const SHA_CTX *c, unsigned char *out)
{
	SHA_LONG h[5] = { c->h0, c->h1, c->h2, c->h3, c->h4 };

	memcpy(out, h, sizeof(h));
}

/* The context after `pos` bytes (a multiple of 64), from its mark. */
static void mark_resume(SHA_CTX *c, const unsigned char *mark, uint64_t pos)
{
	SHA_LONG h[5];

	memcpy(h, mark, sizeof(h));
	SHA1_Init(c);
	c->h0 = h[0], c->h1 = h[1], c->h2 = h[2], c->h3 = h[3], c->h4 = h[4];
	c->Nl = (SHA_LONG)(pos << 3);
	c->Nh = (SHA_LONG)(pos >> 29);
	c->num = 0;
}

int hash_sha1_marked(const char *type, const void *content, size_t len,
		     const void *like, size_t like_len,
		     const struct hash_marks *like_marks,
		     struct hash_marks *marks, struct oid *out)
{
	const unsigned char *p = content, *q = like;
	char hdr[64];
	size_t hlen = (size_t)snprintf(hdr, sizeof(hdr), "%s %zu", type, len) + 1;
	size_t total = hlen + len, want = total / HASH_MARK_STRIDE, pos = 0;
	SHA_CTX c;
	int ret;

	marks->nr = 0;
	if ((ret = hash_marks_reserve(marks, want)))
		return ret;
	SHA1_Init(&c);
	/*
	 * The same type and length make the same header: the streams
	 * agree up to the first stride whose content differs.
	 */
	if (q && like_len == len && like_marks && like_marks->nr == want) {
		size_t j = 0;

		for (; j < want; j++) {
			size_t from = j ? j * HASH_MARK_STRIDE - hlen : 0;
			size_t to = (j + 1) * HASH_MARK_STRIDE - hlen;

			if (to > len)
				to = len;
			if (memcmp(p + from, q + from, to - from))
				break;
		}
		if (j) {
			memcpy(marks->state, like_marks->state, j * sizeof(*marks->state));
			marks->nr = j;
			pos = j * HASH_MARK_STRIDE;
			mark_resume(&c, like_marks->state[j - 1], pos);
		}
	}
	/* the rest, a stride at a time, marking each one's end */
	while (pos < total) {
		size_t end = (pos / HASH_MARK_STRIDE + 1) * HASH_MARK_STRIDE;

		if (end > total)
			end = total;
		if (pos < hlen) {
			size_t n = (end < hlen ? end : hlen) - pos;

			SHA1_Update(&c, hdr + pos, n);
			pos += n;
		}
		if (pos < end) {
			SHA1_Update(&c, p + (pos - hlen), end - pos);
			pos = end;
		}
		if (pos % HASH_MARK_STRIDE == 0)
			mark_take(&c, marks->state[marks->nr++]);
	}
	memset(out->hash, 0, sizeof(out->hash));
	SHA1_Final(out->hash, &c);
	out->algo = &hash_sha1;
	return 0;
}

static const char *const type_names[] = {
	[OBJ_COMMIT] = "commit",
	[OBJ_TREE] = "tree",
	[OBJ_BLOB] = "blob",
	[OBJ_TAG] = "tag",
};

const char *type_name(enum obj_type type)
{
	if ((unsigned)type >= sizeof(type_names) / sizeof(type_names[0]))
		return NULL;
	return type_names[type];
}

enum obj_type type_from_name(const char *name, size_t len)
{
	for (int t = OBJ_COMMIT; t <= OBJ_TAG; t++)
		if (strlen(type_names[t]) == len &&
		    !memcmp(type_names[t], name, len))
			return (enum obj_type)t;
	return OBJ_NONE;
}
