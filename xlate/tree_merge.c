/*
 * tree_merge.c: a tree walked against another that lists mostly the
 * same entries.
 *
 * Consecutive versions of a directory differ in a few entries, and the
 * build meets them one after the other: the tree's delta base, or the
 * tree just named that was deltified against it.  Converting every entry
 * of a wide directory again (parse it, look its name up, copy it) costs
 * the walk most of its time on such trees, and then the SHA-1 pack's
 * delta parses and hashes both trees once more.  Walked against a tree
 * whose two forms are known (the reference), the long stretches the two
 * trees share are found by comparing bytes, and only the entries between
 * them are parsed: those are the tree's own (new, or changed).
 *
 * A stretch is taken whole entries at a time, at the reference's entry
 * boundaries: the bytes from an entry start that equal a reference
 * entry's bytes are that same entry (the parse of an entry depends on its
 * bytes alone, and the check on the tree's last bytes is made once for
 * the whole tree).  So the shared entries are right whatever the order
 * of either tree; order only decides which shared entries are found,
 * and the walk says whether both trees were in Git's order, for callers
 * that need every shared entry found (a delta that must equal the one
 * xlate_tree_delta() makes).
 *
 * Every step takes an entry of the tree or drops one of the reference,
 * so a walk is linear in the two trees, and nothing recurses.
 */
#include "xlate_i.h"

#include <stdlib.h>
#include <string.h>

void xlate_tree_ix_init(struct xlate_tree_ix *ix)
{
	memset(ix, 0, sizeof(*ix));
}

void xlate_tree_ix_release(struct xlate_tree_ix *ix)
{
	free(ix->at);
	xlate_tree_ix_init(ix);
}

/* One entry's name and whether it is a directory, for ordering. */
struct ent_key {
	const char *name;
	size_t len;			/* without the NUL */
	int is_dir;
};

/*
 * Git's tree order (upstream's base_name_compare): names compared as
 * bytes, a directory's as if it ended in '/'.  Entries must strictly
 * increase; two with the same key are duplicates.
 */
static int key_cmp(const struct ent_key *a, const struct ent_key *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->name, b->name, n);
	unsigned ca, cb;

	if (c)
		return c;
	ca = a->len > n ? (unsigned char)a->name[n] : a->is_dir ? '/' : 0;
	cb = b->len > n ? (unsigned char)b->name[n] : b->is_dir ? '/' : 0;
	return (int)ca - (int)cb;
}

/*
 * The key of the reference's entry k, which xlate_tree_entry() accepted
 * when the index was made: octal digits to a space, a name to a NUL.
 */
static void key_of(const struct xlate_tree_ix *ix, size_t k, struct ent_key *key)
{
	const char *p = ix->buf + ix->at[k];
	unsigned mode = 0;

	while (*p != ' ')
		mode = (mode << 3) + (unsigned)(*p++ - '0');
	key->name = p + 1;
	key->len = strlen(p + 1);
	key->is_dir = (mode & 0170000) == 0040000;
}

int xlate_tree_ix_build(struct xlate_tree_ix *ix, const struct hash_algo *algo,
			const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	struct ent_key prev = { NULL, 0, 0 };
	size_t n = 0;
	int ret;

	ix->buf = buf;
	ix->len = len;
	ix->rawsz = algo->rawsz;
	ix->sorted = 1;
	ix->has_gitlink = 0;
	ix->nr = 0;
	if (len > UINT32_MAX)
		return err_set(XL_ETOOBIG, "a tree over 4 GiB");
	while (p < end) {
		struct ent_key k;
		const char *name;
		size_t name_len;
		unsigned mode;

		if ((ret = xlate_tree_entry(p, end, algo->rawsz, &mode, &name,
					    &name_len)))
			return ret;
		if (ARRAY_GROW(ix->at, n + 1, ix->alloc, 256))
			return err_set(XL_ENOMEM, "out of memory");
		ix->at[n++] = (uint32_t)(p - buf);
		k.name = name;
		k.len = name_len - 1;
		k.is_dir = (mode & 0170000) == 0040000;
		if ((mode & 0170000) == 0160000)
			ix->has_gitlink = 1;
		if (prev.name && ix->sorted && key_cmp(&prev, &k) >= 0)
			ix->sorted = 0;
		prev = k;
		p = name + name_len + algo->rawsz;
	}
	if (ARRAY_GROW(ix->at, n + 1, ix->alloc, 256))
		return err_set(XL_ENOMEM, "out of memory");
	ix->at[n] = (uint32_t)len;
	ix->nr = n;
	return 0;
}

/* How many bytes a and b have in common from the start (at most n). */
static size_t common_prefix(const char *a, const char *b, size_t n)
{
	size_t i = 0;

	while (i + 8 <= n) {
		uint64_t x, y;

		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return i + (size_t)(__builtin_ctzll(x ^ y) / 8);
		i += 8;
	}
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/* The number of entries from k that lie wholly in `bytes` bytes from at[k]. */
static size_t whole_entries(const struct xlate_tree_ix *ix, size_t k, size_t bytes)
{
	/* the last j in [k, nr] with at[j] - at[k] <= bytes */
	size_t lo = k, hi = ix->nr;
	uint64_t limit = (uint64_t)ix->at[k] + bytes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;

		if (ix->at[mid] <= limit)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo - k;
}

/* Entry starts at..at + n (each shifted by `shift`) onto ix->at. */
static int ix_add(struct xlate_tree_ix *ix, const uint32_t *at, size_t n,
		  int64_t shift)
{
	if (ARRAY_GROW(ix->at, ix->nr + n, ix->alloc, 256))
		return err_set(XL_ENOMEM, "out of memory");
	for (size_t j = 0; j < n; j++)
		ix->at[ix->nr + j] = (uint32_t)((int64_t)at[j] + shift);
	ix->nr += n;
	return 0;
}

int xlate_tree_merge(const struct xlate_tree_ix *ref, const char *t,
		     size_t tlen, xlate_merge_fn fn, void *data, int *sorted,
		     struct xlate_tree_ix *t_ix)
{
	const char *p = t, *end = t + tlen;
	size_t rawsz = ref->rawsz, k = 0, own = 0;
	struct ent_key prev = { NULL, 0, 0 };
	int in_order = ref->sorted, shared = 0, ret;

	if (tlen > UINT32_MAX)
		return err_set(XL_ETOOBIG, "a tree over 4 GiB");
	if (t_ix) {
		t_ix->buf = t;
		t_ix->len = tlen;
		t_ix->rawsz = rawsz;
		t_ix->nr = 0;
		t_ix->has_gitlink = 0;
	}
	/*
	 * The one check of an entry that looks past it (at the tree's last
	 * bytes): made here for the stretches taken whole.
	 */
	if (tlen && (tlen < rawsz + 3 || end[-(long)(rawsz + 1)] != '\0'))
		return err_set(XL_ECORRUPT, "failed to decode tree entry");
	while (p < end) {
		struct xlate_merge_step s;
		struct ent_key key;
		const char *name;
		size_t name_len;
		unsigned mode;

		if (k < ref->nr) {
			size_t left = ref->len - ref->at[k];
			size_t n = whole_entries(ref, k,
				common_prefix(p, ref->buf + ref->at[k],
					      (size_t)(end - p) < left ?
					      (size_t)(end - p) : left));

			if (n) {
				if (in_order && prev.name) {
					key_of(ref, k, &key);
					in_order = key_cmp(&prev, &key) < 0;
				}
				s.kind = XLATE_MERGE_SAME;
				s.first = k;
				s.end = k + n;
				s.p = p;
				s.len = ref->at[k + n] - ref->at[k];
				s.own = own;
				if ((ret = fn(data, &s)))
					return ret;
				if (t_ix && (ret = ix_add(t_ix, ref->at + k, n,
							  (int64_t)(p - t) - ref->at[k])))
					return ret;
				p += ref->at[k + n] - ref->at[k];
				own += n;
				shared = 1;
				k += n;
				key_of(ref, k - 1, &prev);
				continue;
			}
		}
		/* the entry at p is not the reference's entry k */
		if ((ret = xlate_tree_entry(p, end, rawsz, &mode, &name, &name_len)))
			return ret;
		key.name = name;
		key.len = name_len - 1;
		key.is_dir = (mode & 0170000) == 0040000;
		if (in_order && prev.name && key_cmp(&prev, &key) >= 0)
			in_order = 0;
		if (k < ref->nr) {
			struct ent_key rkey;
			int c;

			key_of(ref, k, &rkey);
			c = key_cmp(&key, &rkey);
			if (c > 0) {
				k++;	/* gone from t: look again from the next */
				continue;
			}
			if (!c)
				k++;	/* the same name, changed */
		}
		s.kind = XLATE_MERGE_OWN;
		s.p = p;
		s.len = (size_t)(name + name_len + rawsz - p);
		s.mode = mode;
		s.name = name;
		s.name_len = name_len;
		s.own = own;
		if ((ret = fn(data, &s)))
			return ret;
		if (t_ix) {
			uint32_t at = (uint32_t)(p - t);

			if ((ret = ix_add(t_ix, &at, 1, 0)))
				return ret;
			if ((mode & 0170000) == 0160000)
				t_ix->has_gitlink = 1;
		}
		prev = key;
		p += s.len;
		own++;
	}
	if (sorted)
		*sorted = in_order;
	if (t_ix) {
		uint32_t at = (uint32_t)tlen;

		/*
		 * Shared entries may bring the reference's gitlinks: say so
		 * if it has any (more than the truth only costs a shortcut).
		 */
		if (ref->has_gitlink && shared)
			t_ix->has_gitlink = 1;
		if ((ret = ix_add(t_ix, &at, 1, 0)))
			return ret;
		t_ix->nr--;	/* at[nr] == len, past the last entry */
		t_ix->sorted = in_order;
	}
	return 0;
}
