/*
 * xlate_i.h: the inside of xlate/ (the build's name table).
 */
#ifndef XLATEFS_XLATE_I_H
#define XLATEFS_XLATE_I_H

#include "xlate.h"

/*
 * What the build knows of one object, keyed by its SHA-256 name.  The
 * entries array grows by doubling, so entry pointers are only good until
 * the next xmap_add(): callers keep names, not pointers.
 */
enum xmap_state {
	XMAP_EMPTY = 0,
	XMAP_PENDING,		/* new in this build, not yet named */
	XMAP_DONE,		/* sha1 is its SHA-1 name */
	XMAP_BAD,		/* untranslatable; reason says why */
};

struct xmap_entry {
	unsigned char key[32];
	unsigned char sha1[20];
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
	struct xmap_entry *entries;	/* dense, in insertion order */
	size_t nr, alloc;
	struct xmap_slot *slots;	/* the hash table: indexes into entries */
	size_t cap;			/* slots, a power of two, >= 2 * nr */
};

int xmap_init(struct xmap *m, size_t hint);
void xmap_release(struct xmap *m);
struct xmap_entry *xmap_get(const struct xmap *m, const struct oid *oid);
/* What the table takes in memory now (slots and entries). */
size_t xmap_bytes(const struct xmap *m);
/* The entry for oid, added as XMAP_PENDING if absent; NULL if out of memory. */
struct xmap_entry *xmap_add(struct xmap *m, const struct oid *oid);
/* Set an entry untranslatable with a copy of reason (published last). */
void xmap_set_bad(struct xmap_entry *e, const char *reason);

/*
 * A delta that makes the SHA-1 form of tree `t` from that of tree `b`
 * (pack1.c): a function of the two forms alone, so that the build's walk
 * and every later read make the same bytes.
 */
int xlate_tree_delta(const struct buf *b, const struct buf *t, struct buf *out);
/*
 * The same delta worked out from the native forms b and t (names of
 * algo->rawsz bytes) and t1, t's SHA-1 form: byte for byte what
 * xlate_tree_delta() makes of the two SHA-1 forms, for trees that hold
 * no gitlink (see pack1.c).
 */
int xlate_tree_delta_native(const struct hash_algo *algo, const struct buf *b,
			    const struct buf *t, const struct buf *t1,
			    struct buf *out);

/* Keep what a build found missing in the cache (missing.c). */
struct cache;
int xlate_missing_store(struct cache *cache, const struct xlate_missing *m);

#endif
