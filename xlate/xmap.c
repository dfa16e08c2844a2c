/*
 * xmap.c: the build's table of names, keyed by the repository's own
 * (SHA-256, or SHA-1 for a SHA-1 repository).
 *
 * Entries live in one dense array; the hash table proper is an array of
 * small slots (an entry index and eight bytes of the key), so that a
 * probe touches one cache line of a table that stays mostly in cache,
 * and only a likely match reads the entry itself.  Keys are hashes
 * already, so their first bytes pick the slot, read as a big-endian
 * number: keys in name order (a pack's .idx, which a first build adds
 * whole) then go to slots in order too, one cache line after another,
 * as does the table made again when it grows.  Load stays at or under
 * one half.
 */
#include "xlate_i.h"

#include <stdlib.h>
#include <string.h>

struct xmap_slot {
	uint64_t tag;		/* the key's first eight bytes */
	uint32_t idx;		/* entry index + 1; 0: empty */
};

static uint64_t key_tag(const unsigned char *key)
{
	uint64_t t;

	memcpy(&t, key, sizeof(t));
	return t;
}

int xmap_init(struct xmap *m, const struct hash_algo *algo, size_t hint)
{
	memset(m, 0, sizeof(*m));
	m->keysz = algo->rawsz;
	m->cap = 1024;
	while (m->cap < 2 * hint)
		m->cap *= 2;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	return m->slots ? 0 : err_set(XL_ENOMEM, "out of memory (name table)");
}

void xmap_release(struct xmap *m)
{
	for (size_t i = 0; i < m->nr; i++)
		free(m->entries[i].reason);
	free(m->entries);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* Where key's probe starts: its first bytes, the top ones first. */
static size_t home_slot(const struct xmap *m, const unsigned char *key)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | key[i];
	/* cap is a power of two, at least 1024 */
	return (size_t)(v >> (64 - __builtin_ctzll((unsigned long long)m->cap)));
}

/*
 * Is a, of the table's entries, the key?  Two constant lengths: the
 * compiler inlines each compare (a call to memcmp per probe, with a
 * length it cannot see, slowed the build's hottest loop).
 */
static inline int same_key(const struct xmap *m, const unsigned char *a,
			   const unsigned char *key)
{
	return m->keysz == 32 ? !memcmp(a, key, 32) : !memcmp(a, key, 20);
}

/* The slot holding key, or the empty slot where it would go. */
static struct xmap_slot *find_slot(const struct xmap *m,
				   const unsigned char *key)
{
	uint64_t tag = key_tag(key);
	size_t i = home_slot(m, key);

	for (;; i = (i + 1) & (m->cap - 1)) {
		struct xmap_slot *s = &m->slots[i];

		if (!s->idx)
			return s;
		if (s->tag == tag && same_key(m, m->entries[s->idx - 1].names, key))
			return s;
	}
}

size_t xmap_bytes(const struct xmap *m)
{
	return m->cap * sizeof(*m->slots) + m->nr * sizeof(*m->entries);
}

struct xmap_entry *xmap_get(const struct xmap *m, const struct oid *oid)
{
	struct xmap_slot *s = find_slot(m, oid->hash);

	return s->idx ? &m->entries[s->idx - 1] : NULL;
}

static int grow(struct xmap *m)
{
	struct xmap_slot *old = m->slots;
	size_t old_cap = m->cap;

	m->slots = calloc(old_cap * 2, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return err_set(XL_ENOMEM, "out of memory (name table)");
	}
	m->cap = old_cap * 2;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].idx)
			*find_slot(m, m->entries[old[i].idx - 1].names) = old[i];
	free(old);
	return 0;
}

struct xmap_entry *xmap_add(struct xmap *m, const struct oid *oid)
{
	struct xmap_slot *s;
	struct xmap_entry *e;

	if (2 * (m->nr + 1) > m->cap && grow(m))
		return NULL;
	s = find_slot(m, oid->hash);
	if (s->idx)
		return &m->entries[s->idx - 1];
	if (m->nr == m->alloc) {
		size_t alloc = m->alloc ? 2 * m->alloc : 1024;
		struct xmap_entry *p = realloc(m->entries, alloc * sizeof(*p));

		if (!p) {
			err_set(XL_ENOMEM, "out of memory (name table)");
			return NULL;
		}
		m->entries = p;
		m->alloc = alloc;
	}
	e = &m->entries[m->nr++];
	memset(e, 0, sizeof(*e));
	memcpy(e->names, oid->hash, m->keysz);
	e->state = XMAP_PENDING;
	s->tag = key_tag(oid->hash);
	s->idx = (uint32_t)m->nr;
	return e;
}

void xmap_set_bad(struct xmap_entry *e, const char *reason)
{
	free(e->reason);
	e->reason = strdup(reason && *reason ? reason : "untranslatable");
	xmap_publish(e, XMAP_BAD);
}
