/*
 * xlate_i.h: the inside of xlate/ (the build's name table).
 */
#ifndef XLATEFS_XLATE_I_H
#define XLATEFS_XLATE_I_H

#include "xlate.h"

/*
 * What the build knows of one object, keyed by its primary name (the
 * repository's: SHA-256, or SHA-1 for a SHA-1 repository).  The
 * entries array grows by doubling, so entry pointers are only good until
 * the next xmap_add(): callers keep names, not pointers.
 */
enum xmap_state {
	XMAP_EMPTY = 0,
	XMAP_PENDING,		/* new in this build, not yet named */
	XMAP_DONE,		/* `other` is its translated name */
	XMAP_BAD,		/* untranslatable; reason says why */
};

/* A SHA-256 name and a SHA-1 one, in either order: an entry's names. */
#define XMAP_NAMES (32 + 20)

struct xmap_entry {
	/*
	 * The key, its name in the repository's own algorithm (the
	 * table's keysz bytes), then its name in the other algorithm
	 * (xmap_other()).  Packed so, an entry of a million-object build
	 * is as small in either direction.
	 */
	unsigned char names[XMAP_NAMES];
	uint8_t state;		/* enum xmap_state */
	uint8_t type;		/* enum obj_type; 0 if not yet known */
	uint8_t is_new;		/* found in this build (to be stored) */
	uint8_t flags;		/* XMAP_F_* (fills what was padding) */
	uint64_t size256, size1;
	uint64_t spill;		/* 1 + where the build's spill file has its
				   SHA-1 form (size1 bytes); 0: not there */
	char *reason;		/* owned; XMAP_BAD only */
};

/*
 * Flags of an entry, about refusals (see build.c, "refusals that do not
 * last").
 */
enum xmap_flags {
	XMAP_F_RETRY = 1,	/* XMAP_BAD, but only for now: stored with retry */
	XMAP_F_UNREADABLE = 2,	/* XMAP_BAD: could not be read; never stored */
	XMAP_F_RETRIED = 4,	/* came from the cache's retry set */
	XMAP_F_GONE = 8,	/* ... and is no longer in the repository */
	XMAP_F_SPILL_DELTA = 16,	/* the spill file has a tree delta for it,
					   not its form (build.c, "the spill") */
};

/*
 * The build's walkers (build.c) read the state of entries other threads
 * are naming: an entry's state is published last, with release order,
 * after its name, sizes and reason, and read with acquire order, so that
 * a reader that sees XMAP_DONE also sees the name.
 */
static inline uint8_t xmap_state(const struct xmap_entry *e)
{
	return __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
}

static inline void xmap_publish(struct xmap_entry *e, uint8_t state)
{
	__atomic_store_n(&e->state, state, __ATOMIC_RELEASE);
}

struct xmap_slot;

struct xmap {
	size_t keysz;			/* bytes of a key: 32, or 20 */
	struct xmap_entry *entries;	/* dense, in insertion order */
	size_t nr, alloc;
	struct xmap_slot *slots;	/* the hash table: indexes into entries */
	size_t cap;			/* slots, a power of two, >= 2 * nr */
};

/* Entry e's other name, of a table whose keys are keysz bytes. */
static inline unsigned char *xmap_other(struct xmap_entry *e, size_t keysz)
{
	return e->names + keysz;
}

/* A table keyed by names of `algo`, sized for `hint` entries. */
int xmap_init(struct xmap *m, const struct hash_algo *algo, size_t hint);
void xmap_release(struct xmap *m);
struct xmap_entry *xmap_get(const struct xmap *m, const struct oid *oid);
/* What the table takes in memory now (slots and entries). */
size_t xmap_bytes(const struct xmap *m);
/* The entry for oid, added as XMAP_PENDING if absent; NULL if out of memory. */
struct xmap_entry *xmap_add(struct xmap *m, const struct oid *oid);
/* Set an entry untranslatable with a copy of reason (published last). */
void xmap_set_bad(struct xmap_entry *e, const char *reason);

/*
 * A delta that makes the translated form of tree `t` from that of tree
 * `b`, both with names of `algo` (pack1.c): a function of the two forms
 * alone, so that the build's walk and every later read make the same
 * bytes.
 */
int xlate_tree_delta(const struct hash_algo *algo, const struct buf *b,
		     const struct buf *t, struct buf *out);
/*
 * The same bytes, with the matches found by a sort instead of a hash
 * table: what xlate_tree_delta() falls back to when names were made to
 * collide in its table.  For the tests, which need both ways to agree.
 */
int xlate_tree_delta_sorted(const struct hash_algo *algo, const struct buf *b,
			    const struct buf *t, struct buf *out);
/*
 * The same delta worked out from the native forms b and t (names of
 * `algo`) and t1, t's translated form (names of `algo1`): byte for byte
 * what xlate_tree_delta() makes of the two translated forms, for trees
 * that hold no gitlink (see pack1.c).
 */
int xlate_tree_delta_native(const struct hash_algo *algo,
			    const struct hash_algo *algo1, const struct buf *b,
			    const struct buf *t, const struct buf *t1,
			    struct buf *out);

/*
 * One tree entry at p (end - p bytes left), parsed as upstream's
 * decode_tree_entry_raw parses it (convert.c): *name points after the
 * mode's space, *name_len counts the name and its NUL.  0, or
 * XL_ECORRUPT.
 */
int xlate_tree_entry(const char *p, const char *end, size_t rawsz,
		     unsigned *mode, const char **name, size_t *name_len);

/*
 * A tree walked against a reference tree that lists mostly the same
 * entries (tree_merge.c): the stretches they share are found by
 * comparing bytes, and only the entries between them are parsed.
 *
 * The reference's entries by where they start (its native form, names
 * of rawsz bytes): entry k is [at[k], at[k + 1]) of buf, and starts at
 * at[k] + k * (rawsz1 - rawsz) of its translated form (names of rawsz1
 * bytes).  buf is not owned.
 */
struct xlate_tree_ix {
	const char *buf;
	size_t len, rawsz;
	uint32_t *at;			/* nr + 1 starts (at[nr] == len) */
	size_t nr, alloc;
	int sorted;			/* strictly in Git's tree order */
	int has_gitlink;		/* an entry of mode 160000 */
};
void xlate_tree_ix_init(struct xlate_tree_ix *ix);
void xlate_tree_ix_release(struct xlate_tree_ix *ix);
/* Index the tree buf (which must outlive the index): 0 or an error. */
int xlate_tree_ix_build(struct xlate_tree_ix *ix, const struct hash_algo *algo,
			const char *buf, size_t len);

/*
 * A step of the walk: entries [first, end) of the reference, which the
 * tree lists next, byte for byte (XLATE_MERGE_SAME); or one entry of the
 * tree's own (XLATE_MERGE_OWN).  Either way at p in the tree, len bytes.
 * `own` counts the tree's entries before the step.
 */
enum xlate_merge_kind { XLATE_MERGE_SAME, XLATE_MERGE_OWN };
struct xlate_merge_step {
	enum xlate_merge_kind kind;
	size_t first, end;		/* SAME */
	const char *p;
	size_t len;
	unsigned mode;			/* OWN: the entry's */
	const char *name;		/* after the mode's space */
	size_t name_len;		/* with its NUL */
	size_t own;
};
typedef int (*xlate_merge_fn)(void *data, const struct xlate_merge_step *s);
/*
 * Walk tree t (tlen bytes, names of ref->rawsz bytes) against ref,
 * calling fn for each step, in t's order; a non-zero return stops the
 * walk and is returned.  *sorted (if not NULL): whether both trees were
 * strictly in Git's order, so that every entry t shares with ref came
 * in a SAME step.  t_ix (if not NULL): t's own index, as
 * xlate_tree_ix_build() makes it, without parsing what t shares, except
 * that `sorted` is *sorted's answer and has_gitlink may say 1 for a tree
 * that shares entries with a reference holding gitlinks (both only
 * ever cost a shortcut).  XL_ECORRUPT where t does not parse (say so
 * with xlate_object(), whose messages are upstream's).
 */
int xlate_tree_merge(const struct xlate_tree_ix *ref, const char *t,
		     size_t tlen, xlate_merge_fn fn, void *data, int *sorted,
		     struct xlate_tree_ix *t_ix);

/*
 * The translated form (o->to) of tree t (native form, tlen bytes) into
 * out (reset first), converted as xlate_object() converts it, where ref
 * indexes a tree whose translated form is ref1: what the two share is
 * copied from ref1 (convert.c); t_ix (if not NULL) gets t's index (xlate_tree_merge()).
 * Returns what xlate_object() would, except that XL_ECORRUPT comes
 * without upstream's message: convert with xlate_object() then.
 */
int xlate_tree_against(const struct xlate_opts *o, const char *t, size_t tlen,
		       const struct xlate_tree_ix *ref, const char *ref1,
		       size_t ref1_len, struct buf *out, struct xlate_tree_ix *t_ix);

/*
 * xlate_tree_delta_native()'s delta, worked out by walking t against
 * its base's index (pack1.c): the same bytes, where the walk can say so
 * (both trees in Git's order, no gitlink); XL_EUNSUPPORTED where it
 * cannot.
 */
int xlate_tree_delta_merged(const struct xlate_tree_ix *base, const char *t,
			    size_t tlen, const struct buf *t1,
			    const struct hash_algo *algo1, struct buf *out);

/* Keep what a build found missing in the cache (missing.c). */
struct cache;
int xlate_missing_store(struct cache *cache, const struct xlate_missing *m);

#endif
