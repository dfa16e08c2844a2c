/*
 * xmap.c: the build's table of names, open-addressed on the SHA-256 name.
 *
 * Keys are hashes already, so their first eight bytes index the table
 * directly.  Load stays at or under one half, so probes are short.
 */
#include "xlate_i.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct xmap *m, const unsigned char *key)
{
	uint64_t h;

	memcpy(&h, key, sizeof(h));
	return (size_t)h & (m->cap - 1);
}

int xmap_init(struct xmap *m, size_t hint)
{
	m->cap = 1024;
	while (m->cap < 2 * hint)
		m->cap *= 2;
	m->nr = 0;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	return m->slots ? 0 : err_set(XL_ENOMEM, "out of memory (name table)");
}

void xmap_release(struct xmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].reason);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static struct xmap_entry *find_slot(const struct xmap *m,
				    const unsigned char *key)
{
	size_t i = slot_of(m, key);

	while (m->slots[i].state != XMAP_EMPTY && memcmp(m->slots[i].key, key, 32))
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

struct xmap_entry *xmap_get(const struct xmap *m, const struct oid *oid)
{
	struct xmap_entry *e = find_slot(m, oid->hash);

	return e->state == XMAP_EMPTY ? NULL : e;
}

static int grow(struct xmap *m)
{
	struct xmap_entry *old = m->slots;
	size_t old_cap = m->cap;

	m->slots = calloc(old_cap * 2, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return err_set(XL_ENOMEM, "out of memory (name table)");
	}
	m->cap = old_cap * 2;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].state != XMAP_EMPTY)
			*find_slot(m, old[i].key) = old[i];
	free(old);
	return 0;
}

struct xmap_entry *xmap_add(struct xmap *m, const struct oid *oid)
{
	struct xmap_entry *e;

	if (2 * (m->nr + 1) > m->cap && grow(m))
		return NULL;
	e = find_slot(m, oid->hash);
	if (e->state == XMAP_EMPTY) {
		memset(e, 0, sizeof(*e));
		memcpy(e->key, oid->hash, 32);
		e->state = XMAP_PENDING;
		m->nr++;
	}
	return e;
}

void xmap_set_bad(struct xmap_entry *e, const char *reason)
{
	free(e->reason);
	e->reason = strdup(reason && *reason ? reason : "untranslatable");
	e->state = XMAP_BAD;
}
