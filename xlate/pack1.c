/*
 * pack1.c: SHA-1 packs made from native packs (DESIGN.md §6).
 *
 * For every native pack the build has finished, one SHA-1 pack (version
 * 2) and its .idx (version 2) hold the SHA-1 form of every translatable
 * object of that pack, in the native pack's order.  A SHA-1 repository
 * seen the other way round gets SHA-256 packs the same way: all that
 * follows holds with "SHA-1" read as the translated algorithm (c->to),
 * whose names, trailer and .idx checksum the pack takes.  The build
 * lays each one out once (xlate_pack1_update) and records in the cache
 * what a reader needs to answer stat() and any read without making the
 * rest: every entry's offset, length and where its bytes come from, the
 * .idx whole (names, CRC32s, offsets), and the pack's trailer.  Reading
 * a range then makes only the entries it touches (xlate_pack1_read).
 *
 * An entry is its header (`hdr` in the cache) followed by one of:
 *
 *   native bytes    a blob stored whole: its SHA-1 form is its content,
 *                   so the native entry is reused byte for byte, header
 *                   and zlib stream.  A blob stored as a delta against
 *                   another blob of the pack keeps its zlib stream (the
 *                   delta applies to the same bytes in either form) under
 *                   a new header: OFS_DELTA with the distance between the
 *                   two entries here, or REF_DELTA with the base's SHA-1
 *                   name when the base comes later.
 *   a SHA-1 form    everything else (trees, commits, tags, their deltas,
 *                   and a blob delta whose base is not a blob here):
 *                   converted when read, as a zlib stream of stored
 *                   blocks (zstored.c).
 *
 * Why stored blocks and not compressed forms kept in the cache.  The
 * layout must never change while the pack is listed, and bytes made
 * again must be the bytes the trailer and the CRC32s were computed over.
 * A stored-block stream is fixed by its payload alone, and its length
 * follows from the size the cache already holds; compressed bytes are
 * fixed only by the zlib version and level that made them, so they
 * would have to be kept, which doubles the cache (measured on the bench
 * repository: see the README, "synthesized packs").  What stored blocks
 * cost is size: commits and trees are not compressed and trees are not
 * deltified, so the SHA-1 pack is bigger than the native one.  Blobs,
 * which are most of the bytes of most repositories, are reused as they
 * are.
 *
 * The pack's bytes are laid out in the native pack's order, so an
 * OFS_DELTA's base still comes first, and a reader that walks commits
 * (git log) finds them as close together as in the native pack.
 * Entries whose header cannot be parsed, objects without a SHA-1 name
 * (untranslatable, or not yet named), and a second entry of one name
 * are left out: the pack holds only what its name table can answer.
 *
 * Correct to the byte: the layout pass makes every byte once with the
 * same function that serves reads (entry_copy), feeding the pack's SHA-1
 * and each entry's CRC32 as it goes, so what a reader is served is what
 * was summed.  A reused native entry is exactly the bytes between its
 * offset and the next entry's, as the native pack is laid out.
 *
 * Where the layout gets names and SHA-1 forms.  Run by the build that
 * finished the pack (xlate_build_opts.pack1), it asks the build's own
 * table (xlate_names) and reads back the forms the walk just hashed,
 * or the tree deltas it made (xlate_names.delta: the same function of
 * the same two forms as here, so the same bytes); only objects named
 * by earlier builds (a repack, a layout that was stopped) are looked up
 * in the cache and converted again.  Readers always convert through the
 * cache and the memo.
 */
#include "xlate_i.h"
#include "../cache/cache.h"

#include <openssl/evp.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define PACK_HDR_LEN 12
#define IDX_HDR_LEN (8 + 256 * 4)
/* an offset this big goes to the .idx's 64-bit table */
#define IDX_LARGE 0x80000000ull
/* layout: the bytes of an entry are made and summed this many at a time */
#define LAYOUT_CHUNK (1u << 20)

/* ---- entry headers -------------------------------------------------- */

/* Git's type-and-size header; returns its length (at most 10 bytes). */
static size_t put_type_size(unsigned char *p, enum obj_type type,
			    uint64_t size)
{
	unsigned char c = (unsigned char)(type << 4 | (size & 15));
	size_t n = 0;

	size >>= 4;
	while (size) {
		p[n++] = c | 0x80;
		c = size & 0x7f;
		size >>= 7;
	}
	p[n++] = c;
	return n;
}

/*
 * An OFS_DELTA's distance back to its base: big-endian groups of seven
 * bits, where every group but the last is stored minus one (so that no
 * distance has two spellings).  Returns its length (at most 10 bytes).
 */
static size_t put_ofs(unsigned char *p, uint64_t dist)
{
	unsigned char tmp[10];
	size_t pos = sizeof(tmp) - 1;

	tmp[pos] = dist & 0x7f;
	while (dist >>= 7)
		tmp[--pos] = 0x80 | (--dist & 0x7f);
	memcpy(p, tmp + pos, sizeof(tmp) - pos);
	return sizeof(tmp) - pos;
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* ---- making an entry's bytes ------------------------------------------- */

/* What the bytes of a pack come from. */
struct pack1_ctx {
	struct repo *repo;
	const struct hash_algo *to;	/* the pack's names and trailer */
	struct cache *cache;
	const struct xlate_names *names;	/* asked before the cache */
	struct xlate_memo *memo;
	enum xlate_unknown unknown_headers;
	const unsigned char *native;	/* the native pack's bytes */
	size_t native_len;
	int check;			/* readers: check_native() */
};

/*
 * Payloads recently made: SHA-1 forms (base NULL) and tree deltas
 * between two of them, so that an entry read in several pieces, or
 * summed in several chunks, is made once, and a delta's base, usually
 * the entry just before it, is not converted again.  Least recently
 * used goes first; a delta needs three slots at once (its base, its
 * target, itself), which is why there are more than three.
 */
#define FORM_SLOTS 8

struct form {
	struct oid sha256;	/* algo NULL: an empty slot */
	struct oid base;	/* algo NULL: the SHA-1 form; else a delta */
	struct buf data;
	uint32_t adler;		/* of data, once has_adler */
	int has_adler;		/* a base of a tree delta never needs it */
	uint64_t used;		/* forms->tick when last asked for */
};

struct forms {
	struct form slot[FORM_SLOTS];
	uint64_t tick;
};

static void forms_release(struct forms *fs)
{
	for (int i = 0; i < FORM_SLOTS; i++)
		buf_release(&fs->slot[i].data);
	memset(fs, 0, sizeof(*fs));
}

static uint32_t adler_of(const struct buf *b)
{
	uLong a = adler32(0, NULL, 0);

	for (size_t done = 0; done < b->len;) {
		uInt n = b->len - done > (1u << 30) ? 1u << 30 : (uInt)(b->len - done);

		a = adler32(a, (const Bytef *)b->buf + done, n);
		done += n;
	}
	return (uint32_t)a;
}

static uint32_t form_adler(struct form *f)
{
	if (!f->has_adler) {
		f->adler = adler_of(&f->data);
		f->has_adler = 1;
	}
	return f->adler;
}

static struct form *forms_find(struct forms *fs, const struct oid *sha256,
			       const struct oid *base)
{
	for (int i = 0; i < FORM_SLOTS; i++) {
		struct form *f = &fs->slot[i];

		if (f->sha256.algo && !oid_cmp(&f->sha256, sha256) &&
		    (base ? f->base.algo && !oid_cmp(&f->base, base) :
		     !f->base.algo)) {
			f->used = ++fs->tick;
			return f;
		}
	}
	return NULL;
}

static struct form *forms_victim(struct forms *fs)
{
	struct form *v = &fs->slot[0];

	for (int i = 1; i < FORM_SLOTS; i++)
		if (fs->slot[i].used < v->used)
			v = &fs->slot[i];
	buf_reset(&v->data);
	v->has_adler = 0;
	memset(&v->sha256, 0, sizeof(v->sha256));
	memset(&v->base, 0, sizeof(v->base));
	v->used = ++fs->tick;
	return v;
}

/* The SHA-1 form of `sha256`. */
static int form_get(const struct pack1_ctx *c, struct forms *fs,
		    const struct oid *sha256, struct form **out)
{
	char hex[OID_HEXSZ_MAX + 1];
	enum obj_type type;
	struct form *f;
	int ret;

	if ((*out = forms_find(fs, sha256, NULL)))
		return 0;
	f = forms_victim(fs);
	ret = XL_ENOTFOUND;
	if (c->names && c->names->form)
		ret = c->names->form(c->names->data, sha256, &f->data);
	if (ret == XL_ENOTFOUND)
		ret = xlate_sha1_form(c->repo, c->cache, c->names, c->memo,
				      c->unknown_headers, sha256, &type,
				      &f->data);
	if (ret)
		return err_wrap("%s", oid_to_hex_r(hex, sha256));
	f->sha256 = *sha256;
	*out = f;
	return 0;
}

/* ---- tree deltas ---------------------------------------------------------- */

/*
 * A delta that makes the translated form of tree `t` from that of tree
 * `b`, into out: every entry of t that b holds byte for byte (mode, name and
 * name of the object) is copied from b, runs of them in one copy; the
 * rest is inserted.  It is a function of the two trees alone, so the
 * same bytes come out at layout and at every read.  The native pack
 * chose the base; the delta is ours, since the native one copies bytes
 * of SHA-256 names.
 *
 * The same delta can be worked out from the two trees' native forms
 * (xlate_tree_delta_native), which the build's walk has at hand when it
 * names t, long before b is named: two entries are equal in SHA-1 form
 * exactly when they are equal in native form, since each native name
 * has one SHA-1 name and no two have the same (a collision is refused,
 * and so is everything that refers to it), and a SHA-1 entry is its
 * native entry 12 bytes shorter (12 longer the other way round, from
 * SHA-1 to SHA-256: `grow` below is the difference, either sign).
 * Gitlinks are the exception: the submodule map may give two commits
 * one name, so a tree that holds one is not deltified that way.  So the
 * entries are described by where they lie in the translated form
 * (start, len), which the delta speaks of, and by the bytes they are
 * compared by (at, cmp_len), in whichever form was parsed.
 */
struct tree_ent {
	uint32_t start, len;	/* in the translated form */
	uint32_t at, cmp_len;	/* the entry in the form parsed */
	uint32_t hash;
};

/*
 * A hash of an entry for match_hashed(): four bytes of its object's name
 * (a hash already), its length, and the last sixteen bytes of its mode
 * and name.  The name counts because a directory of empty files, or of
 * copies of one file, holds one object under many names of one length;
 * its end, because names in one directory differ there most often
 * (numbers, extensions).  Names that differ only further in share a
 * slot's chain, and match_hashed() turns to a sort when chains grow
 * long.  Which hash it is plays no part in the delta made.
 */
static uint32_t entry_hash(const unsigned char *p, const unsigned char *nul,
			   uint32_t len)
{
	size_t n = (size_t)(nul - p);
	uint64_t a = 0, b = 0, h;

	if (n >= 16) {
		memcpy(&a, nul - 16, 8);
		memcpy(&b, nul - 8, 8);
	} else {
		unsigned char tmp[16] = { 0 };

		memcpy(tmp, p, n);
		memcpy(&a, tmp, 8);
		memcpy(&b, tmp + 8, 8);
	}
	h = a * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full ^
	    ((uint64_t)nul[1] << 24 | (uint64_t)nul[2] << 16 |
	     (uint64_t)nul[3] << 8 | nul[4] | (uint64_t)len << 32) *
	    0xff51afd7ed558ccdull;
	return (uint32_t)(h >> 32 ^ h);
}

/*
 * The biggest tree whose translated form's offsets fit the 32 bits of
 * struct tree_ent: 4 GiB when entries shrink; when they grow (by 12 in
 * at least 22 bytes), half that.
 */
static uint64_t tree_max(int64_t grow)
{
	return grow > 0 ? UINT32_MAX / 2 : UINT32_MAX;
}

/*
 * The entries of a tree whose object names are rawsz bytes long
 * (trusted: we converted it, or the walk parsed it already), into *out;
 * each is `grow` bytes longer in the translated form (names of rawsz +
 * grow bytes).
 */
static int tree_entries(const struct buf *t, size_t rawsz, int64_t grow,
			struct tree_ent **out, size_t *nr)
{
	const unsigned char *p = (const unsigned char *)t->buf, *end = p + t->len;
	size_t n = 0, alloc = 0;
	struct tree_ent *e = NULL;

	while (p < end) {
		const unsigned char *nul = memchr(p, '\0', (size_t)(end - p));

		if (!nul || (size_t)(end - nul) < rawsz + 1) {
			free(e);
			return err_set(XL_ECORRUPT, "a tree that does not parse");
		}
		if (ARRAY_GROW(e, n, alloc, 64)) {
			free(e);
			return err_set(XL_ENOMEM, "out of memory");
		}
		e[n].at = (uint32_t)(p - (const unsigned char *)t->buf);
		e[n].cmp_len = (uint32_t)(nul + 1 + rawsz - p);
		e[n].start = (uint32_t)((int64_t)e[n].at + (int64_t)n * grow);
		e[n].len = (uint32_t)((int64_t)e[n].cmp_len + grow);
		e[n].hash = entry_hash(p, nul, e[n].cmp_len);
		n++;
		p = nul + 1 + rawsz;
	}
	*out = e;
	*nr = n;
	return 0;
}

/* Copy base[off, off + len) (len <= 0xffffff, off < 2^32). */
static int put_copy(struct buf *out, uint64_t off, uint64_t len)
{
	unsigned char b[8];
	size_t n = 1;

	b[0] = 0x80;
	for (int i = 0; i < 4; i++)
		if (off >> (8 * i) & 0xff) {
			b[0] |= (unsigned char)(1 << i);
			b[n++] = off >> (8 * i) & 0xff;
		}
	for (int i = 0; i < 3; i++)
		if (len >> (8 * i) & 0xff) {
			b[0] |= (unsigned char)(0x10 << i);
			b[n++] = len >> (8 * i) & 0xff;
		}
	return buf_add(out, b, n);
}

static int put_insert(struct buf *out, const char *p, size_t len)
{
	int ret = 0;

	while (len && !ret) {
		size_t n = len > 127 ? 127 : len;

		ret = buf_addch(out, (int)n) ?: buf_add(out, p, n);
		p += n;
		len -= n;
	}
	return ret;
}

#define COPY_MAX 0xffffffu	/* what one copy instruction can say */

/*
 * The delta's instructions as the tree's entries come, in its order:
 * each either matched in the base (its bytes there, in the SHA-1 form)
 * or not (its bytes in t's SHA-1 form).  Matched entries that follow
 * each other in the base make one copy, up to COPY_MAX; unmatched ones
 * that follow each other make one insert.  Both ways of finding the
 * matches (tree_delta() and the walk of xlate_tree_delta_merged()) emit
 * through this, so that they make the same bytes from the same matches.
 */
struct delta_out {
	struct buf *out;
	const char *t1;			/* t's SHA-1 form, for inserts */
	uint64_t run_off, run_len;	/* base bytes copied so far */
	size_t ins_start, ins_len;	/* t1 bytes to insert */
};

static int emit_match(struct delta_out *d, uint64_t start, uint64_t len)
{
	int ret;

	if (d->run_len && start == d->run_off + d->run_len &&
	    d->run_len + len <= COPY_MAX) {
		d->run_len += len;
		return 0;
	}
	if (d->run_len && (ret = put_copy(d->out, d->run_off, d->run_len)))
		return ret;
	if (d->ins_len && (ret = put_insert(d->out, d->t1 + d->ins_start, d->ins_len)))
		return ret;
	d->ins_len = 0;
	d->run_off = start;
	d->run_len = len;
	return 0;
}

static int emit_own(struct delta_out *d, size_t start, size_t len)
{
	int ret;

	if (d->run_len && (ret = put_copy(d->out, d->run_off, d->run_len)))
		return ret;
	d->run_len = 0;
	if (!d->ins_len)
		d->ins_start = start;
	d->ins_len += len;
	return 0;
}

static int emit_end(struct delta_out *d)
{
	int ret = 0;

	if (d->run_len)
		ret = put_copy(d->out, d->run_off, d->run_len);
	if (!ret && d->ins_len)
		ret = put_insert(d->out, d->t1 + d->ins_start, d->ins_len);
	return ret;
}

/* Entries a and b have the same bytes. */
static int same_entry(const struct buf *b, const struct tree_ent *a,
		      const struct buf *t, const struct tree_ent *c)
{
	return a->hash == c->hash && a->cmp_len == c->cmp_len &&
	       !memcmp(b->buf + a->at, t->buf + c->at, a->cmp_len);
}

/*
 * Where each entry of t is in the base: the first entry of the base,
 * in its order, with the same bytes, or UINT32_MAX.  Equal entries have
 * equal hashes, so with linear probing the first of them put in the
 * table is the first one a probe meets; a later copy is not put in.
 * Probes stay short unless the hashes were made to collide (names are
 * anyone's to choose): past PROBE_BUDGET steps an entry on average,
 * match_sorted() answers instead, in n log n whatever the names.
 */
#define PROBE_BUDGET 8

/*
 * The slot of the base entry with e's bytes (e in x), or the empty
 * slot where it would go; SIZE_MAX once *steps passes the budget.
 */
static size_t probe(const uint32_t *slots, size_t cap, const struct buf *b,
		    const struct tree_ent *be, const struct buf *x,
		    const struct tree_ent *e, size_t *steps, size_t budget)
{
	size_t k = e->hash & (cap - 1);

	while (slots[k] != UINT32_MAX && !same_entry(b, &be[slots[k]], x, e)) {
		k = (k + 1) & (cap - 1);
		if (++*steps > budget)
			return SIZE_MAX;
	}
	return k;
}

static int match_hashed(const struct buf *b, const struct tree_ent *be,
			size_t nb, const struct buf *t, const struct tree_ent *te,
			size_t nt, uint32_t *found)
{
	size_t cap = 16, steps = 0, budget = PROBE_BUDGET * (nb + nt) + 64;
	uint32_t *slots;

	while (cap < 2 * nb)
		cap *= 2;
	if (!(slots = malloc(cap * sizeof(*slots))))
		return err_set(XL_ENOMEM, "out of memory");
	memset(slots, 0xff, cap * sizeof(*slots));
	for (size_t i = 0; i < nb; i++) {
		size_t k = probe(slots, cap, b, be, b, &be[i], &steps, budget);

		if (k == SIZE_MAX)
			goto crowded;
		if (slots[k] == UINT32_MAX)
			slots[k] = (uint32_t)i;
	}
	for (size_t i = 0; i < nt; i++) {
		size_t k = probe(slots, cap, b, be, t, &te[i], &steps, budget);

		if (k == SIZE_MAX)
			goto crowded;
		found[i] = slots[k];
	}
	free(slots);
	return 0;
crowded:
	free(slots);
	return 1;
}

/* Entries x of xb and y of yb by their bytes (memcmp's order). */
static int cmp_entries(const char *xb, const struct tree_ent *x,
		       const char *yb, const struct tree_ent *y)
{
	size_t n = x->cmp_len < y->cmp_len ? x->cmp_len : y->cmp_len;
	int c = memcmp(xb + x->at, yb + y->at, n);

	if (c)
		return c;
	return (x->cmp_len > y->cmp_len) - (x->cmp_len < y->cmp_len);
}

struct sort_ctx {
	const char *buf;
	const struct tree_ent *e;
};

/* The base's entries by their bytes, and equal ones in the base's order. */
static int by_bytes(const void *x, const void *y, void *data)
{
	const struct sort_ctx *c = data;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	int r = cmp_entries(c->buf, &c->e[i], c->buf, &c->e[j]);

	return r ? r : (i > j) - (i < j);
}

/* match_hashed()'s answers, by a sort of the base and binary searches. */
static int match_sorted(const struct buf *b, const struct tree_ent *be,
			size_t nb, const struct buf *t, const struct tree_ent *te,
			size_t nt, uint32_t *found)
{
	struct sort_ctx ctx = { b->buf, be };
	uint32_t *order = malloc((nb ? nb : 1) * sizeof(*order));

	if (!order)
		return err_set(XL_ENOMEM, "out of memory");
	for (size_t i = 0; i < nb; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, nb, sizeof(*order), by_bytes, &ctx);
	for (size_t i = 0; i < nt; i++) {
		size_t lo = 0, hi = nb;

		/* the first of the base's entries not below te[i] */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (cmp_entries(b->buf, &be[order[mid]], t->buf, &te[i]) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		found[i] = lo < nb && !cmp_entries(b->buf, &be[order[lo]],
						   t->buf, &te[i]) ?
			   order[lo] : UINT32_MAX;
	}
	free(order);
	return 0;
}

/*
 * The delta from base b to tree t, both parsed with names rawsz bytes
 * long, whose inserts are taken from t1, t's translated form (names of
 * rawsz1 bytes; t itself when the two are one).
 */
static int tree_delta(const struct buf *b, const struct buf *t,
		      const struct buf *t1, size_t rawsz, size_t rawsz1,
		      int sorted, struct buf *out)
{
	struct tree_ent *be = NULL, *te = NULL;
	size_t nb = 0, nt = 0;
	uint32_t *found = NULL;
	struct delta_out d = { out, t1->buf, 0, 0, 0, 0 };
	int64_t grow = (int64_t)rawsz1 - (int64_t)rawsz;
	int ret;

	buf_reset(out);
	if (b->len > tree_max(grow) || t->len > tree_max(grow))
		return err_set(XL_ETOOBIG, "a tree too big for a delta");
	if ((ret = tree_entries(b, rawsz, grow, &be, &nb)) ||
	    (ret = tree_entries(t, rawsz, grow, &te, &nt)))
		goto out;
	if ((int64_t)t1->len != (int64_t)t->len + (int64_t)nt * grow) {
		ret = err_set(XL_ECORRUPT, "a translated tree that is not its "
			      "native tree's form");
		goto out;
	}
	if (!(found = malloc((nt ? nt : 1) * sizeof(*found)))) {
		ret = err_set(XL_ENOMEM, "out of memory");
		goto out;
	}
	ret = sorted ? 1 : match_hashed(b, be, nb, t, te, nt, found);
	if (ret == 1)
		ret = match_sorted(b, be, nb, t, te, nt, found);
	if (ret ||
	    (ret = buf_add_varint(out, (uint64_t)((int64_t)b->len +
						  (int64_t)nb * grow))) ||
	    (ret = buf_add_varint(out, t1->len)))
		goto out;
	for (size_t i = 0; i < nt && !ret; i++)
		ret = found[i] != UINT32_MAX ?
		      emit_match(&d, be[found[i]].start, be[found[i]].len) :
		      emit_own(&d, te[i].start, te[i].len);
	if (!ret)
		ret = emit_end(&d);
out:
	if (ret)
		buf_reset(out);
	free(found);
	free(be);
	free(te);
	return ret;
}

/*
 * The same matches found by walking t against the base: in two trees in
 * Git's order (names unique), an entry of t that the base holds byte for
 * byte comes in a shared stretch (tree_merge.c), and is the base's only
 * such entry, so it is the match tree_delta() finds.
 */
struct merged {
	const struct xlate_tree_ix *base;
	const char *t;
	size_t t1_len;
	int64_t grow;			/* an entry's, translated */
	size_t nt;			/* t's entries so far */
	struct delta_out d;
};

static int merged_step(void *data, const struct xlate_merge_step *s)
{
	struct merged *m = data;
	const uint32_t *at = m->base->at;
	int ret = 0;

	if (s->kind == XLATE_MERGE_OWN) {
		/* t's entry moves by grow bytes in t1 for each before it */
		int64_t start1 = (int64_t)(s->p - m->t) + (int64_t)s->own * m->grow;
		int64_t len1 = (int64_t)s->len + m->grow;

		m->nt++;
		if (start1 < 0 || len1 <= 0 || (uint64_t)(start1 + len1) > m->t1_len)
			return err_set(XL_ECORRUPT, "a translated tree that is "
				       "not its native tree's form");
		return emit_own(&m->d, (size_t)start1, (size_t)len1);
	}
	m->nt += s->end - s->first;
	for (size_t j = s->first; j < s->end && !ret; j++) {
		uint64_t start = (uint64_t)((int64_t)at[j] + (int64_t)j * m->grow);
		/* the rest of the stretch, if one copy can take it all */
		uint64_t rest = (uint64_t)((int64_t)at[s->end] +
					   (int64_t)s->end * m->grow) - start;

		if (m->d.run_len && start == m->d.run_off + m->d.run_len &&
		    m->d.run_len + rest <= COPY_MAX) {
			m->d.run_len += rest;
			break;
		}
		ret = emit_match(&m->d, start,
				 (uint64_t)((int64_t)(at[j + 1] - at[j]) + m->grow));
	}
	return ret;
}

int xlate_tree_delta_merged(const struct xlate_tree_ix *base, const char *t,
			    size_t tlen, const struct buf *t1,
			    const struct hash_algo *algo1, struct buf *out)
{
	struct merged m = { base, t, t1->len,
			    (int64_t)algo1->rawsz - (int64_t)base->rawsz, 0,
			    { out, t1->buf, 0, 0, 0, 0 } };
	int sorted = 0, ret;

	buf_reset(out);
	if (!base->sorted || base->has_gitlink)
		return XL_EUNSUPPORTED;
	if (base->len > tree_max(m.grow) || tlen > tree_max(m.grow))
		return err_set(XL_ETOOBIG, "a tree too big for a delta");
	if ((ret = buf_add_varint(out, (uint64_t)((int64_t)base->len +
						  (int64_t)base->nr * m.grow))) ||
	    (ret = buf_add_varint(out, t1->len)) ||
	    (ret = xlate_tree_merge(base, t, tlen, merged_step, &m, &sorted,
				    NULL)) ||
	    (ret = emit_end(&m.d)))
		goto out;
	if ((int64_t)t1->len != (int64_t)tlen + (int64_t)m.nt * m.grow)
		ret = err_set(XL_ECORRUPT, "a translated tree that is not its "
			      "native tree's form");
	else if (!sorted)
		ret = XL_EUNSUPPORTED;
out:
	if (ret)
		buf_reset(out);
	return ret;
}

int xlate_tree_delta(const struct hash_algo *algo, const struct buf *b,
		     const struct buf *t, struct buf *out)
{
	return tree_delta(b, t, t, algo->rawsz, algo->rawsz, 0, out);
}

int xlate_tree_delta_sorted(const struct hash_algo *algo, const struct buf *b,
			    const struct buf *t, struct buf *out)
{
	return tree_delta(b, t, t, algo->rawsz, algo->rawsz, 1, out);
}

int xlate_tree_delta_native(const struct hash_algo *algo,
			    const struct hash_algo *algo1, const struct buf *b,
			    const struct buf *t, const struct buf *t1,
			    struct buf *out)
{
	return tree_delta(b, t, t1, algo->rawsz, algo1->rawsz, 0, out);
}

/*
 * The payload of entry `e`: the SHA-1 form of e->sha256, or the tree
 * delta from e->base's to it; `size` is what the layout found
 * (UINT64_MAX while laying out: not known yet).
 */
static int payload_get(const struct pack1_ctx *c, struct forms *fs,
		       const struct cache_pack1_entry *e, uint64_t size,
		       struct form **out)
{
	struct form *bf, *tf, *f;
	char hex[OID_HEXSZ_MAX + 1];
	int ret;

	if (!e->base.algo) {
		ret = form_get(c, fs, &e->sha256, out);
	} else if ((*out = forms_find(fs, &e->sha256, &e->base))) {
		ret = 0;
	} else if (!(ret = form_get(c, fs, &e->base, &bf)) &&
		   !(ret = form_get(c, fs, &e->sha256, &tf))) {
		/* the two most recently used slots are not the victim */
		f = forms_victim(fs);
		if ((ret = xlate_tree_delta(c->to, &bf->data, &tf->data,
					    &f->data)))
			return err_wrap("delta for %s", oid_to_hex_r(hex, &e->sha256));
		f->sha256 = e->sha256;
		f->base = e->base;
		*out = f;
	}
	if (!ret && size != UINT64_MAX && (*out)->data.len != size)
		ret = err_set(XL_ECORRUPT, "%s: made %zu bytes, the pack was laid "
			      "out for %llu", oid_to_hex_r(hex, &e->sha256),
			      (*out)->data.len, (unsigned long long)size);
	return ret;
}

/* The payload size of a SHA-1-form entry, read back from its header. */
static uint64_t hdr_size(const struct cache_pack1_entry *e)
{
	uint64_t size = e->hdr[0] & 15;
	unsigned shift = 4;

	for (size_t i = 0; i < e->hdr_len && (e->hdr[i] & 0x80) && i + 1 < e->hdr_len;
	     i++, shift += 7)
		size |= (uint64_t)(e->hdr[i + 1] & 0x7f) << shift;
	return size;
}

/*
 * Native bytes are the one part of a SHA-1 pack the cache does not
 * vouch for: a native pack that rots under the mount would pass its
 * damage on, under a trailer that no longer matches.  So an entry of up
 * to NATIVE_CHECK_MAX bytes is checked against the CRC32 the layout
 * recorded whenever a read needs its native bytes, and a mismatch is
 * XL_ECORRUPT (EIO to the reader).  A bigger one is read unchecked:
 * checking a 4 GiB blob for every 128 KiB read would cost more than the
 * reads.
 */
#define NATIVE_CHECK_MAX (1u << 20)

static int check_native(const struct pack1_ctx *c,
			const struct cache_pack1_entry *e)
{
	uLong z;

	if (!c->check || e->len > NATIVE_CHECK_MAX)
		return 0;
	if (e->src > c->native_len ||
	    e->len - e->hdr_len > c->native_len - e->src)
		return err_set(XL_ECORRUPT, "pack entry at %llu: native bytes "
			       "outside the pack", (unsigned long long)e->offset);
	z = crc32(crc32(0, NULL, 0), e->hdr, (uInt)e->hdr_len);
	z = crc32(z, c->native + e->src, (uInt)(e->len - e->hdr_len));
	if ((uint32_t)z != e->crc)
		return err_set(XL_ECORRUPT, "pack entry at %llu: the native "
			       "pack's bytes at %llu have changed since the "
			       "layout (CRC32 %08x, was %08x)",
			       (unsigned long long)e->offset,
			       (unsigned long long)e->src, (unsigned)z,
			       (unsigned)e->crc);
	return 0;
}

/*
 * Bytes [off, off + len) of entry `e` (offsets within the entry) into
 * dst.  Returns 0 or an error (the native bytes are out of range, or
 * the SHA-1 form cannot be made).
 */
static int entry_copy(const struct pack1_ctx *c, struct forms *fs,
		      const struct cache_pack1_entry *e, uint64_t off,
		      unsigned char *dst, size_t len)
{
	struct form *f;
	int ret;

	if (off < e->hdr_len) {
		size_t n = e->hdr_len - off < len ? e->hdr_len - off : len;

		memcpy(dst, e->hdr + off, n);
		off += n;
		dst += n;
		len -= n;
	}
	if (!len)
		return 0;
	off -= e->hdr_len;
	if (!e->sha256.algo) {
		if (e->src > c->native_len || off > c->native_len - e->src ||
		    len > c->native_len - e->src - off)
			return err_set(XL_ECORRUPT, "pack entry at %llu: native "
				       "bytes outside the pack",
				       (unsigned long long)e->offset);
		if ((ret = check_native(c, e)))
			return ret;
		memcpy(dst, c->native + e->src + off, len);
		return 0;
	}
	uint64_t size = hdr_size(e);

	if (e->data) {
		struct buf kept = { (char *)e->data, e->data_len, 0, 0 };

		if (e->data_len != size)
			return err_set(XL_ECORRUPT, "pack entry at %llu: %zu bytes "
				       "kept for a payload of %llu",
				       (unsigned long long)e->offset, e->data_len,
				       (unsigned long long)size);
		zstored_copy(e->data, size, adler_of(&kept), off, dst, len);
		return 0;
	}
	if ((ret = payload_get(c, fs, e, size, &f)))
		return ret;
	zstored_copy(f->data.buf, size, form_adler(f), off, dst, len);
	return 0;
}

/* ---- laying a pack out -------------------------------------------------- */

/*
 * What the layout decides for one native entry.  Its name in the pack
 * is apart, in an array of the pack's names (struct layout's names): a
 * million entries, so no struct oid, and 20 or 32 bytes each as the
 * pack's algorithm says.
 */
struct plan {
	uint8_t kept;		/* in the translated pack */
	uint8_t type;		/* the object's type (after deltas) */
	uint64_t offset;	/* in the translated pack */
	uint64_t size1;
};

/*
 * An .idx row to be: the entry's name is names[at], and `key` its
 * first eight bytes (big-endian), which the sort compares first (the
 * rest only when two keys are equal, for names made to share them).
 */
struct idx_rec {
	uint64_t key;
	uint32_t at;		/* the entry's index in the native pack */
	uint32_t crc;
	uint64_t offset;
};

struct idx_names {
	const unsigned char *names;	/* rawsz bytes an entry */
	size_t rawsz;
};

static uint64_t name_key(const unsigned char *name)
{
	uint64_t k = 0;

	for (int i = 0; i < 8; i++)
		k = k << 8 | name[i];
	return k;
}

static int cmp_idx_rec(const void *a, const void *b, void *data)
{
	const struct idx_rec *x = a, *y = b;
	const struct idx_names *n = data;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return memcmp(n->names + (size_t)x->at * n->rawsz,
		      n->names + (size_t)y->at * n->rawsz, n->rawsz);
}

static unsigned key_byte(const struct idx_rec *r, unsigned at)
{
	return (unsigned)(r->key >> (56 - 8 * at)) & 0xff;
}

/*
 * Put r[0..nr) in order of the name's byte `at` (the bytes before it
 * equal), in place (an American flag sort); bound[d] to bound[d + 1] is
 * then the run of byte d.
 */
static void flag_sort(struct idx_rec *r, uint32_t nr, unsigned at,
		      uint32_t bound[257])
{
	uint32_t next[256];

	memset(bound, 0, 257 * sizeof(*bound));
	for (uint32_t i = 0; i < nr; i++)
		bound[key_byte(&r[i], at) + 1]++;
	for (unsigned d = 0; d < 256; d++) {
		bound[d + 1] += bound[d];
		next[d] = bound[d];
	}
	for (unsigned d = 0; d < 256; d++) {
		while (next[d] < bound[d + 1]) {
			struct idx_rec x = r[next[d]], t;
			unsigned b = key_byte(&x, at);

			/* carry x round its cycle until one belongs here */
			while (b != d) {
				t = r[next[b]];
				r[next[b]++] = x;
				x = t;
				b = key_byte(&x, at);
			}
			r[next[d]++] = x;
		}
	}
}

/*
 * Sort by name: by the first byte, then the second, in place, then each
 * run of names that share both by insertion (qsort() for a long run:
 * names are hashes, but anyone can make many that share two bytes).  A
 * qsort() of the whole was two thirds of building the idx.
 */
static void sort_by_name(struct idx_rec *r, uint32_t nr,
			 const struct idx_names *names)
{
	uint32_t b0[257], b1[257];

	flag_sort(r, nr, 0, b0);
	for (unsigned d0 = 0; d0 < 256; d0++) {
		struct idx_rec *s = r + b0[d0];

		flag_sort(s, b0[d0 + 1] - b0[d0], 1, b1);
		for (unsigned d1 = 0; d1 < 256; d1++) {
			struct idx_rec *u = s + b1[d1];
			uint32_t n = b1[d1 + 1] - b1[d1];

			if (n > 32) {
				qsort_r(u, n, sizeof(*u), cmp_idx_rec,
					(void *)names);
				continue;
			}
			for (uint32_t i = 1; i < n; i++) {
				struct idx_rec x = u[i];
				uint32_t j = i;

				for (; j && cmp_idx_rec(&u[j - 1], &x,
							(void *)names) > 0; j--)
					u[j] = u[j - 1];
				u[j] = x;
			}
		}
	}
}

/*
 * The .idx of the pack, whole, into out: header, fan-out, names, CRC32s,
 * 32-bit offsets, 64-bit ones, the pack's trailer, and its own checksum,
 * all of algorithm `to`.  `recs` is sorted by name here.
 */
static int build_idx(const struct hash_algo *to, struct idx_rec *recs,
		     uint32_t nr, const unsigned char *names,
		     const unsigned char *pack_sum, struct buf *out)
{
	const struct idx_names n = { names, to->rawsz };
	unsigned char b[8];
	uint32_t fan[256] = { 0 }, large = 0;
	int ret = 0;

	sort_by_name(recs, nr, &n);
	for (uint32_t i = 0; i < nr; i++)
		fan[key_byte(&recs[i], 0)]++;
	for (unsigned i = 1; i < 256; i++)
		fan[i] += fan[i - 1];
	ret = buf_add(out, "\377tOc", 4);
	put_be32(b, 2);
	ret = ret ?: buf_add(out, b, 4);
	for (unsigned i = 0; i < 256 && !ret; i++) {
		put_be32(b, fan[i]);
		ret = buf_add(out, b, 4);
	}
	for (uint32_t i = 0; i < nr && !ret; i++)
		ret = buf_add(out, names + (size_t)recs[i].at * to->rawsz,
			      to->rawsz);
	for (uint32_t i = 0; i < nr && !ret; i++) {
		put_be32(b, recs[i].crc);
		ret = buf_add(out, b, 4);
	}
	for (uint32_t i = 0; i < nr && !ret; i++) {
		put_be32(b, recs[i].offset < IDX_LARGE ? (uint32_t)recs[i].offset :
			 0x80000000u | large++);
		ret = buf_add(out, b, 4);
	}
	for (uint32_t i = 0; i < nr && !ret; i++) {
		if (recs[i].offset < IDX_LARGE)
			continue;
		put_be32(b, (uint32_t)(recs[i].offset >> 32));
		put_be32(b + 4, (uint32_t)recs[i].offset);
		ret = buf_add(out, b, 8);
	}
	ret = ret ?: buf_add(out, pack_sum, to->rawsz);
	if (!ret) {
		unsigned char sum[OID_RAWSZ_MAX];

		if (!EVP_Digest(out->buf, out->len, sum, NULL, hash_md(to), NULL))
			return err_set(XL_ENOMEM, "%s of an idx failed", to->title);
		ret = buf_add(out, sum, to->rawsz);
	}
	return ret;
}

/* Feeds bytes to the pack's checksum. */
static int sum_update(EVP_MD_CTX *md, const void *p, size_t len)
{
	return EVP_DigestUpdate(md, p, len) ? 0 :
		err_set(XL_ENOMEM, "the checksum of a pack failed");
}

/*
 * Decide what each native entry becomes: which are kept (with their
 * translated names, into names), from the names the build holds or
 * else the cache.
 */
static int plan_entries(const struct pack1_ctx *c,
			const struct odb_pack_info *info,
			const struct odb_pack_entry *e, struct plan *plan,
			unsigned char *names, uint32_t *kept)
{
	uint32_t nr = info->objects;
	int ret;

	*kept = 0;
	for (uint32_t i = 0; i < nr; i++) {
		struct cache_object co;
		struct oid name, prev;

		memset(&plan[i], 0, sizeof(plan[i]));
		if (e[i].type == OBJ_NONE)
			continue;
		odb_pack_object(info, e[i].pos, &name);
		/* the same name twice in one .idx: keep one entry of it */
		if (e[i].pos) {
			odb_pack_object(info, e[i].pos - 1, &prev);
			if (!oid_cmp(&prev, &name))
				continue;
		}
		ret = xlate_names_get(c->names, c->cache, &name, &co);
		if (ret == XL_ENOTFOUND || (!ret && !co.sha1.algo))
			continue;
		if (ret)
			return ret;
		if (co.sha1.algo != c->to)
			return err_set(XL_ECORRUPT, "%s names an object in %s",
				       c->to->title, co.sha1.algo->title);
		memcpy(names + (size_t)i * c->to->rawsz, co.sha1.hash,
		       c->to->rawsz);
		plan[i].size1 = co.size1;
		plan[i].type = (uint8_t)co.type;
		plan[i].kept = 1;
		(*kept)++;
	}
	return 0;
}

/*
 * Payloads up to this size are kept in the cache, so that a read copies
 * them instead of converting: on the bench repository, every commit and
 * tree delta and most trees, 11.7 MB beside a 31.6 MB name table, and a
 * cold read of the whole SHA-1 pack 3.9 s -> see the README.  Bigger
 * ones (huge trees, the odd blob made whole) are made when read.
 */
#define PAYLOAD_KEEP_MAX 65536

/*
 * A delta header against entry b: OFS_DELTA if b comes first, else
 * REF_DELTA (with b's name of `rawsz` bytes).
 */
static void delta_header(const struct plan *plan, const unsigned char *names,
			 size_t rawsz, uint32_t i, uint32_t b, uint64_t offset,
			 uint64_t size, struct cache_pack1_entry *out)
{
	if (b < i) {
		out->hdr_len = put_type_size(out->hdr, OBJ_OFS_DELTA, size);
		out->hdr_len += put_ofs(out->hdr + out->hdr_len,
					offset - plan[b].offset);
	} else {
		out->hdr_len = put_type_size(out->hdr, OBJ_REF_DELTA, size);
		memcpy(out->hdr + out->hdr_len, names + (size_t)b * rawsz, rawsz);
		out->hdr_len += rawsz;
	}
}

/*
 * What a kept entry carries.  Blobs carry native bytes; everything else
 * a payload made from the conversion: its SHA-1 form, or, for a tree
 * the native pack deltifies against another tree of the pack, a delta
 * of the two SHA-1 forms when that is smaller than the form.
 */
enum carry {
	CARRY_NATIVE,		/* the native entry as it is */
	CARRY_NATIVE_DELTA,	/* a native blob delta, under a new header */
	CARRY_TREE_DELTA,	/* a tree delta, if it pays; else the form */
	CARRY_FORM,		/* the SHA-1 form */
};

static enum carry entry_carry(const struct odb_pack_entry *e,
			      const struct plan *plan, uint32_t i)
{
	const struct odb_pack_entry *n = &e[i];
	uint32_t b = n->base;
	int is_delta = n->type == OBJ_OFS_DELTA || n->type == OBJ_REF_DELTA;
	int base_kept = is_delta && b != ODB_NO_BASE && plan[b].kept;

	if (plan[i].type == OBJ_BLOB && n->type == OBJ_BLOB &&
	    n->data - n->offset <= sizeof(((struct cache_pack1_entry *)0)->hdr))
		return CARRY_NATIVE;
	if (plan[i].type == OBJ_BLOB && base_kept && plan[b].type == OBJ_BLOB)
		return CARRY_NATIVE_DELTA;
	if (plan[i].type == OBJ_TREE && base_kept && plan[b].type == OBJ_TREE)
		return CARRY_TREE_DELTA;
	return CARRY_FORM;
}

/*
 * The layout runs in windows of entries, in pack order.  What costs is
 * an entry's payload (a SHA-1 form read back or converted, a tree delta
 * worked out), and that does not depend on where the entry lands; what
 * must go in order (offsets, headers, the pack's SHA-1 and each entry's
 * CRC32, the rows) is cheap but for the rows.  So there are two windows:
 * while one thread places the entries of one window and writes their
 * rows, the other threads make the payloads of the next, each taking
 * runs of neighbouring entries (a delta's base is mostly the entry just
 * before it, which its forms still hold); the placing thread joins them
 * when it is done.  A window holds at most WINDOW_BYTES of payloads
 * (and at least one entry), so memory follows that bound, not the size
 * of the pack.
 */
#define WINDOW_ENTRIES 8192
#define WINDOW_BYTES ((uint64_t)32 << 20)
#define WINDOW_RUN 32		/* entries a thread takes at a time */
#define WINDOW_STOP (UINT_MAX / WINDOW_RUN)

struct made {
	struct buf payload;
	uint32_t adler;		/* of payload */
	uint8_t delta;		/* payload is a tree delta against the base */
	uint8_t walked;		/* ... that the build's walk made */
};

struct window {
	const struct pack1_ctx *c;
	const struct odb_pack_info *info;
	const struct odb_pack_entry *e;
	const struct plan *plan;
	const uint32_t *kept;		/* indexes into e of the window's entries */
	struct made *made;		/* one per kept[] */
	uint32_t nr;
	atomic_uint next;		/* the next run to take */
	pthread_mutex_t lock;
	int error;			/* guarded by lock: the first failure */
	char errmsg[1024];		/* and its message */
	pthread_t tid[63];		/* helpers */
	int helpers;
};

/* Make the payload of kept entry i (offsets play no part). */
static int make_payload(const struct pack1_ctx *c, struct forms *fs,
			const struct odb_pack_info *info,
			const struct odb_pack_entry *e, const struct plan *plan,
			uint32_t i, struct made *m)
{
	enum carry carry = entry_carry(e, plan, i);
	struct cache_pack1_entry ce = { 0 };
	struct form *f;
	int ret;

	if (carry == CARRY_NATIVE || carry == CARRY_NATIVE_DELTA)
		return 0;
	odb_pack_object(info, e[i].pos, &ce.sha256);
	/* the build's walk made it while it had both forms (smaller, then) */
	if (carry == CARRY_TREE_DELTA && c->names && c->names->delta &&
	    !c->names->delta(c->names->data, &ce.sha256, info->pack,
			     e[i].offset, e[e[i].base].offset, &m->payload)) {
		m->delta = 1;
		m->walked = 1;
		m->adler = adler_of(&m->payload);
		return 0;
	}
	if (carry == CARRY_TREE_DELTA) {
		odb_pack_object(info, e[e[i].base].pos, &ce.base);
		if ((ret = payload_get(c, fs, &ce, UINT64_MAX, &f)))
			return ret;
		if (f->data.len < plan[i].size1) {
			m->delta = 1;
			goto keep;
		}
		memset(&ce.base, 0, sizeof(ce.base));
	}
	if ((ret = payload_get(c, fs, &ce, plan[i].size1, &f)))
		return ret;
keep:
	m->adler = form_adler(f);
	return buf_add(&m->payload, f->data.buf, f->data.len);
}

static void *window_worker(void *arg)
{
	struct window *w = arg;
	struct forms fs = { 0 };
	unsigned run;

	while ((run = atomic_fetch_add(&w->next, 1)) < WINDOW_STOP &&
	       run * WINDOW_RUN < w->nr) {
		uint32_t from = run * WINDOW_RUN, to = from + WINDOW_RUN;

		if (to > w->nr)
			to = w->nr;
		for (uint32_t k = from; k < to; k++) {
			int ret = make_payload(w->c, &fs, w->info, w->e, w->plan,
					       w->kept[k], &w->made[k]);

			if (!ret)
				continue;
			pthread_mutex_lock(&w->lock);
			if (!w->error) {
				w->error = ret;
				snprintf(w->errmsg, sizeof(w->errmsg), "%s",
					 err_msg());
			}
			pthread_mutex_unlock(&w->lock);
			atomic_store(&w->next, WINDOW_STOP);	/* stop all */
			break;
		}
	}
	forms_release(&fs);
	return NULL;
}

/*
 * Take the next window: kept entries from *k on, as many as
 * WINDOW_BYTES of payloads allow; start `helpers` threads making them.
 */
static void window_start(struct window *w, const uint32_t *kept,
			 uint32_t nr_kept, uint32_t *k, int helpers)
{
	uint64_t bytes = 0;

	w->kept = kept + *k;
	for (w->nr = 0; *k + w->nr < nr_kept && w->nr < WINDOW_ENTRIES; w->nr++) {
		uint32_t i = w->kept[w->nr];
		enum carry carry = entry_carry(w->e, w->plan, i);
		/* native bytes are not held: only made payloads count */
		uint64_t size = carry == CARRY_NATIVE || carry == CARRY_NATIVE_DELTA ?
			0 : w->plan[i].size1;

		if (w->nr && bytes + size > WINDOW_BYTES)
			break;
		bytes += size;
	}
	*k += w->nr;
	for (uint32_t j = 0; j < w->nr; j++) {
		buf_reset(&w->made[j].payload);
		w->made[j].delta = 0;
		w->made[j].walked = 0;
	}
	atomic_store(&w->next, 0);
	w->error = 0;
	w->helpers = 0;
	if (helpers > (int)(sizeof(w->tid) / sizeof(*w->tid)))
		helpers = sizeof(w->tid) / sizeof(*w->tid);
	for (int t = 0; t < helpers && (uint32_t)t * WINDOW_RUN < w->nr; t++)
		if (!pthread_create(&w->tid[w->helpers], NULL, window_worker, w))
			w->helpers++;
}

/*
 * Finish the window's payloads, this thread helping (or, if `stop`,
 * telling the helpers to stop), and wait for the helpers.
 */
static int window_finish(struct window *w, int stop)
{
	if (stop)
		atomic_store(&w->next, WINDOW_STOP);
	else
		window_worker(w);
	for (int t = 0; t < w->helpers; t++)
		pthread_join(w->tid[t], NULL);
	w->helpers = 0;
	if (!stop && w->error)
		return err_set(w->error, "%s", w->errmsg);
	return 0;
}

/*
 * The header of kept entry i, placed at `offset`, and where its bytes
 * come from (entries before i have their offsets; m is what
 * its window made of it).
 */
static void entry_place(const struct pack1_ctx *c,
			const struct odb_pack_info *info,
			const struct odb_pack_entry *e, const struct plan *plan,
			const unsigned char *names, uint32_t i, uint64_t offset,
			const struct made *m, struct cache_pack1_entry *out)
{
	const struct odb_pack_entry *n = &e[i];

	memset(out, 0, sizeof(*out));
	out->offset = offset;
	switch (entry_carry(e, plan, i)) {
	case CARRY_NATIVE:
		out->hdr_len = n->data - n->offset;
		memcpy(out->hdr, c->native + n->offset, out->hdr_len);
		out->src = n->data;
		out->len = n->end - n->offset;
		return;
	case CARRY_NATIVE_DELTA:
		/* the native delta, against the base's place here */
		delta_header(plan, names, c->to->rawsz, i, n->base, offset,
			     n->size, out);
		out->src = n->data;
		out->len = out->hdr_len + (n->end - n->data);
		return;
	default:
		break;
	}
	odb_pack_object(info, n->pos, &out->sha256);
	if (m->delta) {
		odb_pack_object(info, e[n->base].pos, &out->base);
		delta_header(plan, names, c->to->rawsz, i, n->base, offset,
			     m->payload.len, out);
	} else {
		out->hdr_len = put_type_size(out->hdr, (enum obj_type)plan[i].type,
					     m->payload.len);
	}
	out->len = out->hdr_len + zstored_size(m->payload.len);
	/* payloads up to PAYLOAD_KEEP_MAX are kept; bigger ones made when read */
	if (m->payload.len <= PAYLOAD_KEEP_MAX) {
		out->data = (const unsigned char *)m->payload.buf;
		out->data_len = m->payload.len;
	}
}

/* A clean end for a layout that failed: nothing of it stays. */
struct layout {
	struct odb_pack_entry *e;
	struct plan *plan;
	unsigned char *names;		/* the pack's, by native entry */
	struct idx_rec *recs;
	uint32_t *kept;
	struct made *made;		/* the two windows' */
	unsigned char *chunk;
	struct forms forms;
	struct buf idx;
	EVP_MD_CTX *md;
};

static void layout_release(struct layout *l)
{
	free(l->e);
	free(l->plan);
	free(l->names);
	free(l->recs);
	free(l->kept);
	if (l->made)
		for (uint32_t k = 0; k < 2 * WINDOW_ENTRIES; k++)
			buf_release(&l->made[k].payload);
	free(l->made);
	free(l->chunk);
	forms_release(&l->forms);
	buf_release(&l->idx);
	EVP_MD_CTX_free(l->md);
}

/*
 * Sum entry `ce` into the pack's SHA-1; *crc gets its CRC32.  Its
 * payload, if it has one, is m's.
 */
static int sum_entry(const struct pack1_ctx *c, struct layout *l,
		     const struct cache_pack1_entry *ce, const struct made *m,
		     uint32_t *crc)
{
	uLong z = crc32(0, NULL, 0);
	int ret;

	for (uint64_t pos = 0; pos < ce->len;) {
		size_t n = ce->len - pos > LAYOUT_CHUNK ? LAYOUT_CHUNK :
			(size_t)(ce->len - pos);

		if (!ce->sha256.algo) {
			if ((ret = entry_copy(c, &l->forms, ce, pos, l->chunk, n)))
				return ret;
		} else {
			size_t h = 0;

			if (pos < ce->hdr_len) {
				h = ce->hdr_len - pos < n ? ce->hdr_len - pos : n;
				memcpy(l->chunk, ce->hdr + pos, h);
			}
			if (h < n)
				zstored_copy(m->payload.buf, m->payload.len,
					     m->adler, pos + h - ce->hdr_len,
					     l->chunk + h, n - h);
		}
		if ((ret = sum_update(l->md, l->chunk, n)))
			return ret;
		z = crc32(z, l->chunk, (uInt)n);
		pos += n;
	}
	*crc = (uint32_t)z;
	return 0;
}

/*
 * Where a layout's rows go: the pack's record, its entries in runs and
 * its .idx, in one batch of its own.  Behind a gate (xlate_pack1_gate)
 * that batch may not open yet: the runs are held, up to LAYOUT_HOLD
 * bytes (past that the layout waits at the gate), and put once it
 * opens.  Runs take 140-160 bytes an object (18 MB on the bench
 * repository, which this holds whole, and 168 MB at a million objects).
 * The bound is for memory: at a million objects a build's peak RssAnon
 * is 412-418 MiB laid out after its rows and 437-458 MiB beside them
 * holding this much; holding 16 MiB, the bench repository's layout
 * ended 35 ms later.
 */
#define LAYOUT_HOLD ((size_t)32 << 20)

struct sink {
	const struct pack1_ctx *c;
	const struct odb_pack_info *info;
	const struct xlate_pack1_gate *gate;	/* NULL: open at the first row */
	size_t hold;			/* LAYOUT_HOLD, or the tests' */
	struct cache_pack1_runs runs;
	struct cache_pack1 p;
	int open;			/* its batch is open, p has its id */
	int full;			/* it held all it may before it opened */
	int waited;			/* it was ready before the gate opened */
};

/* LAYOUT_HOLD; XLATE_TEST_LAYOUT_HOLD=N holds N bytes instead. */
static size_t layout_hold(void)
{
	const char *v = getenv("XLATE_TEST_LAYOUT_HOLD");

	return v && *v ? (size_t)strtoull(v, NULL, 10) : LAYOUT_HOLD;
}

/* Whether `list` holds the layout of native pack `checksum`. */
static int laid_out(const struct cache_pack1 *list, size_t nr,
		    const char *checksum)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(list[i].native, checksum))
			return 1;
	return 0;
}

/* Whether native pack `checksum` is finished and has no layout yet. */
static int pack_wanted(struct cache *cache, const char *checksum)
{
	struct cache_pack1 *list = NULL;
	size_t nr = 0;
	int ret;

	if (cache_pack_known(cache, checksum) != 1)
		return 0;
	if ((ret = cache_pack1_list(cache, &list, &nr)))
		return ret;
	ret = !laid_out(list, nr, checksum);
	free(list);
	return ret;
}

/*
 * Open the sink's batch (after the gate, if any) and put what it holds.
 * 1 if the pack is no longer to be laid out (done by another process
 * since it was chosen): then nothing is written.
 */
static int sink_open(struct sink *s)
{
	struct cache *cache = s->c->cache;
	int ret = s->gate ? s->gate->wait(s->gate->data) : 0;

	if (ret < 0)
		return ret;
	s->waited = ret == 1;
	if ((ret = cache_begin(cache)))
		return ret;
	/* asked in the batch, which holds the file's write lock */
	if ((ret = pack_wanted(cache, s->info->checksum)) != 1) {
		cache_rollback(cache);
		return ret ? ret : 1;
	}
	memcpy(s->p.native, s->info->checksum, sizeof(s->p.native));
	if ((ret = cache_pack1_add(cache, &s->p)) ||
	    (ret = cache_pack1_runs_put(cache, s->p.id, &s->runs, 0))) {
		cache_rollback(cache);
		return ret;
	}
	s->open = 1;
	return 0;
}

/* Entry ce, to the cache or held. */
static int sink_entry(struct sink *s, const struct cache_pack1_entry *ce)
{
	int ret;

	if ((ret = cache_pack1_runs_add(&s->runs, ce)))
		return ret;
	if (!s->open && s->gate && cache_pack1_runs_bytes(&s->runs) > s->hold)
		s->full = 1;
	if (!s->open && (!s->gate || s->full))
		return sink_open(s);
	if (s->open && s->runs.done.len)
		return cache_pack1_runs_put(s->c->cache, s->p.id, &s->runs, 0);
	return 0;
}

/* Place and sum the entries of a window whose payloads are made, in order. */
static int window_place(const struct pack1_ctx *c, struct layout *l,
			const struct window *w, struct sink *sink, uint32_t *k,
			uint64_t *offset, struct xlate_pack1_stats *stats)
{
	int ret;

	for (uint32_t j = 0; j < w->nr; j++, (*k)++) {
		uint32_t i = w->kept[j];
		struct cache_pack1_entry ce;

		l->plan[i].offset = *offset;
		entry_place(c, w->info, l->e, l->plan, l->names, i, *offset,
			    &w->made[j], &ce);
		if ((ret = sum_entry(c, l, &ce, &w->made[j], &ce.crc)) ||
		    (ret = sink_entry(sink, &ce)))
			return ret;
		stats->tree_deltas += w->made[j].delta;
		stats->tree_deltas_walked += w->made[j].walked;
		l->recs[*k].key = name_key(l->names + (size_t)i * c->to->rawsz);
		l->recs[*k].at = i;
		l->recs[*k].crc = ce.crc;
		l->recs[*k].offset = *offset;
		*offset += ce.len;
	}
	return 0;
}

/*
 * Lay out the SHA-1 pack of native pack `info` (behind `gate` if not
 * NULL).  1 if it turned out laid out already, by another process.
 */
static int layout_pack(const struct pack1_ctx *c,
		       const struct odb_pack_info *info,
		       const struct xlate_pack1_opts *opts,
		       const struct xlate_pack1_gate *gate, uint32_t *objects,
		       struct xlate_pack1_stats *stats)
{
	struct layout l = { 0 };
	struct sink sink = { .c = c, .info = info, .gate = gate,
			     .hold = layout_hold() };
	struct window w[2] = { { .c = c, .info = info }, { .c = c, .info = info } };
	unsigned char hdr[PACK_HDR_LEN], sum[OID_RAWSZ_MAX];
	uint32_t nr = info->objects, kept, k = 0, taken = 0;
	uint64_t offset = PACK_HDR_LEN;
	int threads = opts->threads > 0 ? opts->threads :
		(int)sysconf(_SC_NPROCESSORS_ONLN);
	int cur = 0, ret;

	if (threads < 1)
		threads = 1;
	cache_pack1_runs_init(&sink.runs);
	if ((ret = odb_pack_entries(info, &l.e)))
		goto out;
	if (!(l.plan = calloc(nr ? nr : 1, sizeof(*l.plan))) ||
	    !(l.names = malloc((nr ? nr : 1) * c->to->rawsz)) ||
	    !(l.made = calloc(2 * WINDOW_ENTRIES, sizeof(*l.made))) ||
	    !(l.chunk = malloc(LAYOUT_CHUNK)) || !(l.md = EVP_MD_CTX_new()) ||
	    !EVP_DigestInit_ex(l.md, hash_md(c->to), NULL)) {
		ret = err_set(XL_ENOMEM, "out of memory");
		goto out;
	}
	if ((ret = plan_entries(c, info, l.e, l.plan, l.names, &kept)))
		goto out;
	if (!(l.recs = malloc((kept ? kept : 1) * sizeof(*l.recs))) ||
	    !(l.kept = malloc((kept ? kept : 1) * sizeof(*l.kept)))) {
		ret = err_set(XL_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0, n = 0; i < nr; i++)
		if (l.plan[i].kept)
			l.kept[n++] = i;
	memcpy(hdr, "PACK", 4);
	put_be32(hdr + 4, 2);
	put_be32(hdr + 8, kept);
	if ((ret = sum_update(l.md, hdr, sizeof(hdr))))
		goto out;
	for (int i = 0; i < 2; i++) {
		w[i].e = l.e;
		w[i].plan = l.plan;
		w[i].made = l.made + i * WINDOW_ENTRIES;
		pthread_mutex_init(&w[i].lock, NULL);
	}

	window_start(&w[cur], l.kept, kept, &taken, threads - 1);
	if ((ret = window_finish(&w[cur], 0)))
		goto fail;
	while (w[cur].nr) {
		/* the next window's payloads are made while this one is placed */
		window_start(&w[!cur], l.kept, kept, &taken, threads - 1);
		if (opts->cancel && atomic_load(opts->cancel))
			ret = err_set(XL_EIO, "build stopped");
		else if (!sink.open && gate && atomic_load(gate->failed))
			ret = err_set(XL_EIO, "the build failed");
		if (ret || (ret = window_place(c, &l, &w[cur], &sink, &k, &offset,
					       stats))) {
			window_finish(&w[!cur], 1);
			goto fail;
		}
		if ((ret = window_finish(&w[!cur], 0)))
			goto fail;
		cur = !cur;
	}
	if (!EVP_DigestFinal_ex(l.md, sum, NULL)) {
		ret = err_set(XL_ENOMEM, "the checksum of a pack failed");
		goto fail;
	}
	if ((ret = build_idx(c->to, l.recs, kept, l.names, sum, &l.idx)) ||
	    (!sink.open && (ret = sink_open(&sink))) ||
	    (ret = cache_pack1_runs_put(c->cache, sink.p.id, &sink.runs, 1)))
		goto fail;
	for (size_t at = 0; at < l.idx.len; at += CACHE_PACK1_IDX_CHUNK) {
		size_t n = l.idx.len - at > CACHE_PACK1_IDX_CHUNK ?
			CACHE_PACK1_IDX_CHUNK : l.idx.len - at;

		if ((ret = cache_pack1_put_idx(c->cache, sink.p.id,
					       (uint32_t)(at / CACHE_PACK1_IDX_CHUNK),
					       l.idx.buf + at, n)))
			goto fail;
	}
	memcpy(sink.p.checksum, sum, c->to->rawsz);
	sink.p.objects = kept;
	sink.p.pack_size = offset + c->to->rawsz;
	sink.p.idx_size = l.idx.len;
	if ((ret = cache_pack1_finish(c->cache, &sink.p)) ||
	    (ret = cache_commit(c->cache)))
		goto fail;
	*objects = kept;
	stats->gated += !!gate;
	stats->gate_waits += sink.waited;
	stats->gate_full += sink.full;
	goto out_lock;
fail:
	if (sink.open)
		cache_rollback(c->cache);
	if (ret < 0)
		err_wrap("laying out the %s pack of pack-%s", c->to->title,
			 info->checksum);
out_lock:
	pthread_mutex_destroy(&w[0].lock);
	pthread_mutex_destroy(&w[1].lock);
out:
	cache_pack1_runs_release(&sink.runs);
	layout_release(&l);
	return ret;
}

struct native_list {
	struct odb_pack_info *packs;
	size_t nr, alloc;
};

static int note_native(const struct odb_pack_info *info, void *data)
{
	struct native_list *n = data;

	if (ARRAY_GROW(n->packs, n->nr, n->alloc, 8))
		return err_set(XL_ENOMEM, "out of memory");
	n->packs[n->nr++] = *info;
	return 0;
}

/* Lay out native pack `info` (behind `gate` if not NULL), counted in stats. */
static int lay_out_one(struct pack1_ctx *c, struct xlate_memo **own_memo,
		       const struct odb_pack_info *info,
		       const struct xlate_pack1_opts *opts,
		       const struct xlate_pack1_gate *gate,
		       struct xlate_pack1_stats *stats)
{
	uint32_t objects = 0;
	int ret;

	if (!c->memo) {
		if (!*own_memo && (ret = xlate_memo_new(own_memo, 32u << 20)))
			return ret;
		c->memo = *own_memo;
	}
	c->native = odb_pack_map(info, &c->native_len);
	if ((ret = layout_pack(c, info, opts, gate, &objects, stats)) < 0)
		return ret;
	if (!ret) {
		stats->made++;
		stats->objects += objects;
	}
	return 0;
}

int xlate_pack1_update(struct repo *repo, struct cache *cache,
		       const struct xlate_pack1_opts *opts,
		       struct xlate_pack1_stats *stats)
{
	struct pack1_ctx c = {
		.repo = repo, .to = cache_other(cache), .cache = cache,
		.names = opts->names,
		.memo = opts->memo, .unknown_headers = opts->unknown_headers,
	};
	const struct xlate_pack1_gate *gate = opts->gate;
	struct xlate_memo *own_memo = NULL;
	struct native_list natives = { 0 };
	struct cache_pack1 *list = NULL;
	size_t nr = 0;
	int ret;

	memset(stats, 0, sizeof(*stats));
	if ((ret = odb_for_each_pack(repo_odb(repo), note_native, &natives)))
		goto out;
	/*
	 * Behind a gate, first the packs the caller is finishing (it knows
	 * them: the cache does not yet), and nothing asked of the cache
	 * until the gate opens.
	 */
	for (size_t j = 0; gate && j < natives.nr; j++)
		if (gate->finishing(gate->data, natives.packs[j].checksum) &&
		    (ret = lay_out_one(&c, &own_memo, &natives.packs[j], opts,
				       gate, stats)))
			goto out;
	if ((gate && (ret = gate->wait(gate->data)) < 0) ||
	    (ret = cache_pack1_list(cache, &list, &nr)))
		goto out;
	/* the layouts of packs that are gone */
	for (size_t i = 0; i < nr; i++) {
		size_t j;

		for (j = 0; j < natives.nr; j++)
			if (!strcmp(natives.packs[j].checksum, list[i].native))
				break;
		if (j < natives.nr ||
		    (opts->keep && opts->keep(opts->keep_data, &list[i])))
			continue;
		if ((ret = cache_begin(cache)) ||
		    (ret = cache_pack1_drop(cache, list[i].id)) ||
		    (ret = cache_commit(cache))) {
			cache_rollback(cache);
			goto out;
		}
		stats->dropped++;
	}
	for (size_t j = 0; j < natives.nr; j++) {
		const struct odb_pack_info *info = &natives.packs[j];

		/* laid out already (just now, maybe), or not finished yet */
		if (laid_out(list, nr, info->checksum) ||
		    cache_pack_known(cache, info->checksum) != 1)
			continue;
		if ((ret = lay_out_one(&c, &own_memo, info, opts, NULL, stats)))
			goto out;
	}
out:
	xlate_memo_free(own_memo);
	free(natives.packs);
	free(list);
	return ret;
}

/* ---- reading ------------------------------------------------------------- */

struct xlate_pack1_reader {
	struct pack1_ctx c;
	struct cache_pack1 pack;
	struct forms forms;
	struct buf payloads;	/* what the cache kept for the entries of a read */
};

int xlate_pack1_reader_new(struct xlate_pack1_reader **out, struct repo *repo,
			   const struct cache_pack1 *pack)
{
	struct xlate_pack1_reader *r;
	struct odb_pack_info info;
	int ret;

	*out = NULL;
	if ((ret = odb_find_pack(repo_odb(repo), pack->native, &info)))
		return ret;
	if (!(r = calloc(1, sizeof(*r))))
		return err_set(XL_ENOMEM, "out of memory");
	buf_init(&r->payloads);
	r->c.repo = repo;
	r->c.to = hash_algo_other(repo_algo(repo));
	r->c.check = 1;
	r->c.native = odb_pack_map(&info, &r->c.native_len);
	r->pack = *pack;
	*out = r;
	return 0;
}

void xlate_pack1_reader_free(struct xlate_pack1_reader *r)
{
	if (!r)
		return;
	forms_release(&r->forms);
	buf_release(&r->payloads);
	free(r);
}

int xlate_pack1_read(struct xlate_pack1_reader *r, struct cache *cache,
		     struct xlate_memo *memo, enum xlate_unknown unknown_headers,
		     uint64_t off, void *dst, size_t len)
{
	const struct cache_pack1 *p = &r->pack;
	unsigned char *d = dst;
	uint64_t end, data_end = p->pack_size - r->c.to->rawsz;
	struct cache_pack1_entry *e = NULL;
	size_t nr = 0;
	int ret = 0;

	if (p->pack_size < PACK_HDR_LEN + r->c.to->rawsz)
		return err_set(XL_ECORRUPT, "pack %s: %llu bytes", p->native,
			       (unsigned long long)p->pack_size);
	if (off > p->pack_size || len > p->pack_size - off)
		return err_set(XL_EINVALID, "read past the end of a pack");
	end = off + len;
	r->c.cache = cache;
	r->c.memo = memo;
	r->c.unknown_headers = unknown_headers;
	if (off < PACK_HDR_LEN) {
		unsigned char hdr[PACK_HDR_LEN];
		size_t n = PACK_HDR_LEN - off < len ? PACK_HDR_LEN - off : len;

		memcpy(hdr, "PACK", 4);
		put_be32(hdr + 4, 2);
		put_be32(hdr + 8, p->objects);
		memcpy(d, hdr + off, n);
		d += n;
		off += n;
	}
	if (off < data_end && off < end) {
		uint64_t to = end < data_end ? end : data_end;

		if ((ret = cache_pack1_entries(cache, p->id, off, to, &e, &nr,
					       &r->payloads)))
			return ret;
		for (size_t i = 0; i < nr && off < to; i++) {
			uint64_t e_end = e[i].offset + e[i].len, n;

			if (e[i].offset > off || e_end <= off) {
				ret = err_set(XL_ECORRUPT, "pack %s: no entry "
					      "holds byte %llu", p->native,
					      (unsigned long long)off);
				break;
			}
			n = (e_end < to ? e_end : to) - off;
			if ((ret = entry_copy(&r->c, &r->forms, &e[i],
					      off - e[i].offset, d, (size_t)n)))
				break;
			d += n;
			off += n;
		}
		free(e);
		if (!ret && off < to)
			ret = err_set(XL_ECORRUPT, "pack %s: no entry holds byte "
				      "%llu", p->native, (unsigned long long)off);
		if (ret)
			return ret;
	}
	if (off < end) {
		/* the trailer */
		memcpy(d, p->checksum + (off - data_end), end - off);
	}
	return 0;
}

int xlate_pack1_read_idx(struct cache *cache, const struct cache_pack1 *p,
			 uint64_t off, void *dst, size_t len)
{
	struct buf chunk = BUF_INIT;
	unsigned char *d = dst;
	int ret = 0;

	if (off > p->idx_size || len > p->idx_size - off)
		return err_set(XL_EINVALID, "read past the end of an idx");
	while (len && !ret) {
		uint32_t k = (uint32_t)(off / CACHE_PACK1_IDX_CHUNK);
		size_t at = off % CACHE_PACK1_IDX_CHUNK, n;

		if ((ret = cache_pack1_idx(cache, p->id, k, &chunk)))
			break;
		if (at >= chunk.len) {
			ret = err_set(XL_ECORRUPT, "idx of pack %s: chunk %u is "
				      "short", p->native, k);
			break;
		}
		n = chunk.len - at < len ? chunk.len - at : len;
		memcpy(d, chunk.buf + at, n);
		d += n;
		off += n;
		len -= n;
	}
	buf_release(&chunk);
	return ret;
}
