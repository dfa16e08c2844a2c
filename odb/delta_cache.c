/*
 * delta_cache.c: the delta-base cache.
 *
 * Workload: objects read in name order land at random offsets in a pack,
 * and most of them are deltas whose chains share bases (the newest
 * version of a file is usually whole; older ones are deltas against it).
 * Rebuilding a shared base for every reader is the dominant cost of
 * reading a packed repository, so the bases we rebuild are kept here,
 * keyed by (pack, entry offset), until a byte budget is reached; then the
 * least recently used go.
 *
 * Concurrency: one mutex guards the table, the LRU list and the byte
 * count.  Entries are reference-counted: a reader holding an entry keeps
 * its bytes alive after eviction has unlinked it, so no data is copied
 * out under the lock and no lock is held while a delta is applied.
 *
 * Keys hold pack pointers: a pack stays open as long as its odb (odb.c
 * never closes one early), so a key can never name a recycled address.
 */
#include "odb_i.h"

#include <stdlib.h>

#define DC_BUCKETS 4096		/* power of two */

struct delta_cache_entry {
	const struct pack *pack;
	uint64_t offset;
	enum obj_type type;
	char *data;
	size_t len;
	unsigned refs;			/* guarded by cache->lock */
	int linked;			/* in the table and the LRU */
	struct delta_cache_entry *hnext;	/* bucket chain */
	struct delta_cache_entry *prev, *next;	/* LRU, most recent first */
};

struct delta_cache {
	pthread_mutex_t lock;
	size_t budget;			/* bytes; 0: cache nothing */
	size_t used;			/* bytes in linked entries */
	struct delta_cache_entry *buckets[DC_BUCKETS];
	struct delta_cache_entry *head, *tail;
};

static size_t dc_hash(const struct pack *pack, uint64_t offset)
{
	uint64_t h = (uint64_t)(uintptr_t)pack * 0x9e3779b97f4a7c15ull;

	h ^= offset * 0xc2b2ae3d27d4eb4full;
	return (size_t)(h ^ (h >> 29)) & (DC_BUCKETS - 1);
}

struct delta_cache *delta_cache_new(size_t budget)
{
	struct delta_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->budget = budget;
	return c;
}

static void dc_entry_free(struct delta_cache_entry *e)
{
	free(e->data);
	free(e);
}

/* Unlink from table and LRU; caller holds the lock. */
static void dc_unlink(struct delta_cache *c, struct delta_cache_entry *e)
{
	struct delta_cache_entry **pp = &c->buckets[dc_hash(e->pack, e->offset)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->linked = 0;
	c->used -= e->len;
}

/* Evict from the cold end until under budget; caller holds the lock. */
static void dc_shrink(struct delta_cache *c)
{
	struct delta_cache_entry *e = c->tail;

	while (e && c->used > c->budget) {
		struct delta_cache_entry *prev = e->prev;

		dc_unlink(c, e);
		if (!e->refs)
			dc_entry_free(e);
		e = prev;
	}
}

void delta_cache_free(struct delta_cache *c)
{
	if (!c)
		return;
	while (c->head) {
		struct delta_cache_entry *e = c->head;

		dc_unlink(c, e);
		dc_entry_free(e);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void delta_cache_set_budget(struct delta_cache *c, size_t budget)
{
	pthread_mutex_lock(&c->lock);
	c->budget = budget;
	dc_shrink(c);
	pthread_mutex_unlock(&c->lock);
}

static void dc_touch(struct delta_cache *c, struct delta_cache_entry *e)
{
	if (c->head == e)
		return;
	e->prev->next = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = NULL;
	e->next = c->head;
	c->head->prev = e;
	c->head = e;
}

struct delta_cache_entry *delta_cache_get(struct delta_cache *c,
					  const struct pack *pack,
					  uint64_t offset)
{
	struct delta_cache_entry *e;

	pthread_mutex_lock(&c->lock);
	for (e = c->buckets[dc_hash(pack, offset)]; e; e = e->hnext)
		if (e->pack == pack && e->offset == offset)
			break;
	if (e) {
		e->refs++;
		dc_touch(c, e);
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

struct delta_cache_entry *delta_cache_put(struct delta_cache *c,
					  const struct pack *pack,
					  uint64_t offset, enum obj_type type,
					  char *data, size_t len)
{
	struct delta_cache_entry *e = malloc(sizeof(*e)), *old;
	size_t h = dc_hash(pack, offset);

	if (!e) {
		free(data);
		return NULL;
	}
	e->pack = pack;
	e->offset = offset;
	e->type = type;
	e->data = data;
	e->len = len;
	e->refs = 1;
	e->linked = 0;
	e->prev = e->next = e->hnext = NULL;

	pthread_mutex_lock(&c->lock);
	/* larger than the whole budget: hand it back uncached */
	if (len > c->budget)
		goto out;
	for (old = c->buckets[h]; old; old = old->hnext)
		if (old->pack == pack && old->offset == offset)
			break;
	if (old) {
		/* another thread rebuilt it meanwhile: the bytes are equal, keep ours */
		dc_unlink(c, old);
		if (!old->refs)
			dc_entry_free(old);
	}
	e->hnext = c->buckets[h];
	c->buckets[h] = e;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
	e->linked = 1;
	c->used += len;
	dc_shrink(c);
out:
	pthread_mutex_unlock(&c->lock);
	return e;
}

void delta_cache_unref(struct delta_cache *c, struct delta_cache_entry *e)
{
	int gone;

	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	gone = --e->refs == 0 && !e->linked;
	pthread_mutex_unlock(&c->lock);
	if (gone)
		dc_entry_free(e);
}

const unsigned char *delta_cache_data(const struct delta_cache_entry *e,
				      size_t *len, enum obj_type *type)
{
	*len = e->len;
	if (type)
		*type = e->type;
	return (const unsigned char *)e->data;
}
