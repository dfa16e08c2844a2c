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
 * Concurrency: the table is split into DC_SHARDS shards by a hash of the
 * key, each with its own mutex, table and LRU list.  Every step down a
 * delta chain asks the cache (a miss, usually), so with one mutex the
 * walkers of a build spent more time waiting for it than reading: on 2
 * cores the walk of 131k objects took as long on two threads as on one.
 * The byte count is shared (atomic), and the budget is the whole cache's:
 * a shard that takes an entry evicts until the whole cache is under it,
 * its own least recently used while it holds more than its share (a
 * sixteenth), else another shard's that does (dc_shrink()), so that
 * shares follow the load and one big base can still be cached.  Entries are
 * reference-counted: a reader holding an entry keeps its bytes alive
 * after eviction has unlinked it, so no data is copied out under a lock
 * and no lock is held while a delta is applied.
 *
 * Memory: an entry's bytes are malloc'd by the thread that rebuilt them
 * and let go by whichever thread evicts them, mostly another.  glibc's
 * free() of a chunk from another thread's arena takes that arena's lock,
 * which its owner holds for every malloc: on 2 cores the walk of the
 * 131k-object bench blocked there 2,056 times in 0.6 s, each time with
 * a shard's lock held (so others queued behind it), most of the walk's
 * context switches.  So nothing is freed under a shard's lock (an
 * eviction collects what it lets go, and dc_bury() deals with it
 * after), and a buffer let go is kept as a spare (a few, under a share
 * of the budget) for the next rebuild that needs that much room
 * (delta_cache_spare()): the bytes go round between the threads without
 * passing through free() and malloc().  The same walk then blocked in
 * free() 65 times.
 *
 * Keys hold pack pointers: a pack stays open as long as its odb (odb.c
 * never closes one early), so a key can never name a recycled address.
 */
#include "odb_i.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define DC_SHARDS 16		/* power of two */
#define DC_MIN_SLOTS 128	/* a shard's; power of two; doubles to keep
				   load <= 1/2 */
#define DC_SPARES 32		/* buffers kept for reuse, at most ... */
#define DC_SPARE_SHARE 16	/* ... holding a sixteenth of the budget */

struct delta_cache_entry {
	const struct pack *pack;
	uint64_t offset;
	enum obj_type type;
	char *data;
	size_t len, alloc;		/* alloc: data's room (buf_attach()) */
	unsigned refs;			/* guarded by its shard's lock */
	uint8_t shard;			/* which */
	uint8_t linked;			/* in the table and the LRU */
	struct delta_cache_entry *prev, *next;	/* LRU, most recent first */
};

/*
 * The table is open-addressed with the key stored in the slot, so a
 * lookup (a hit or, more often, a miss on the way down a chain) touches
 * one cache line instead of chasing list nodes.
 */
struct dc_slot {
	uint64_t offset;
	const struct pack *pack;
	struct delta_cache_entry *e;	/* NULL: empty */
};

/* A part of the cache; its fields are guarded by its lock. */
struct dc_shard {
	pthread_mutex_t lock;
	size_t nr;			/* linked entries */
	size_t used;			/* their bytes */
	size_t nr_slots;		/* power of two, >= 2 * nr */
	struct dc_slot *slots;
	struct delta_cache_entry *head, *tail;
} __attribute__((aligned(64)));	/* a cache line each: no false sharing */

/* Buffers of entries let go, for rebuilds to reuse; behind its lock. */
struct dc_spares {
	pthread_mutex_t lock;
	size_t nr, bytes;
	struct dc_spare {
		char *data;
		size_t alloc;
	} buf[DC_SPARES];
} __attribute__((aligned(64)));

struct delta_cache {
	struct dc_shard shard[DC_SHARDS];
	struct dc_spares spares;
	atomic_size_t budget;		/* bytes; 0: cache nothing */
	atomic_size_t used;		/* bytes in linked entries, all shards */
};

static uint64_t dc_hash(const struct pack *pack, uint64_t offset)
{
	uint64_t h = (uint64_t)(uintptr_t)pack * 0x9e3779b97f4a7c15ull;

	h ^= offset * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

/* The shard of (pack, offset): the hash's top bits, its slot the low ones. */
static struct dc_shard *dc_shard_of(struct delta_cache *c,
				    const struct pack *pack, uint64_t offset)
{
	return &c->shard[dc_hash(pack, offset) >> 60 & (DC_SHARDS - 1)];
}

/* The slot holding (pack, offset), or the empty slot where it would go. */
static size_t dc_find(const struct dc_shard *c, const struct pack *pack,
		      uint64_t offset)
{
	size_t mask = c->nr_slots - 1, i = (size_t)dc_hash(pack, offset) & mask;

	while (c->slots[i].e &&
	       (c->slots[i].offset != offset || c->slots[i].pack != pack))
		i = (i + 1) & mask;
	return i;
}

/* Double the table when it is half full. */
static void dc_maybe_grow(struct dc_shard *c)
{
	struct dc_slot *old = c->slots;
	size_t old_n = c->nr_slots;

	if (2 * c->nr < old_n)
		return;
	c->slots = calloc(old_n * 2, sizeof(*c->slots));
	if (!c->slots) {
		/* keep the old table; dc_put refuses new entries when full */
		c->slots = old;
		return;
	}
	c->nr_slots = old_n * 2;
	for (size_t i = 0; i < old_n; i++)
		if (old[i].e)
			c->slots[dc_find(c, old[i].pack, old[i].offset)] = old[i];
	free(old);
}

struct delta_cache *delta_cache_new(size_t budget)
{
	struct delta_cache *c = aligned_alloc(64, sizeof(*c));

	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	for (int k = 0; k < DC_SHARDS; k++) {
		struct dc_shard *sh = &c->shard[k];

		sh->nr_slots = DC_MIN_SLOTS;
		if (!(sh->slots = calloc(sh->nr_slots, sizeof(*sh->slots)))) {
			while (k--)
				free(c->shard[k].slots);
			free(c);
			return NULL;
		}
	}
	for (int k = 0; k < DC_SHARDS; k++)
		mutex_init_brief(&c->shard[k].lock);
	mutex_init_brief(&c->spares.lock);
	atomic_init(&c->budget, budget);
	atomic_init(&c->used, 0);
	return c;
}

static void dc_entry_free(struct delta_cache_entry *e)
{
	free(e->data);
	free(e);
}

/*
 * Entries let go, to be dealt with once no shard's lock is held: linked
 * through ->next, which an entry out of the LRU no longer needs.
 */
struct dc_dead {
	struct delta_cache_entry *first;
};

/* Free the entries in dead, spares or not. */
static void dc_free_dead(struct dc_dead *dead)
{
	for (struct delta_cache_entry *e = dead->first, *next; e; e = next) {
		next = e->next;
		dc_entry_free(e);
	}
	dead->first = NULL;
}

/*
 * Keep the buffers of the entries in dead as spares while there is room,
 * and free the rest (no lock of a shard held).
 */
static void dc_bury(struct delta_cache *dc, struct dc_dead *dead)
{
	struct dc_spares *sp = &dc->spares;
	struct delta_cache_entry *e = dead->first;
	size_t cap;

	if (!e)
		return;
	cap = atomic_load(&dc->budget) / DC_SPARE_SHARE;
	pthread_mutex_lock(&sp->lock);
	for (; e && sp->nr < DC_SPARES; e = e->next) {
		if (!e->alloc || e->alloc > cap || sp->bytes > cap - e->alloc)
			continue;
		sp->buf[sp->nr].data = e->data;
		sp->buf[sp->nr++].alloc = e->alloc;
		sp->bytes += e->alloc;
		e->data = NULL;
	}
	pthread_mutex_unlock(&sp->lock);
	dc_free_dead(dead);
}

void delta_cache_spare(struct delta_cache *dc, size_t len, struct buf *out)
{
	struct dc_spares *sp = &dc->spares;
	size_t best = SIZE_MAX;

	if (out->alloc || len >= SIZE_MAX / 2)
		return;
	len++;				/* and the NUL */
	pthread_mutex_lock(&sp->lock);
	/* the smallest that fits, if not more than twice the room asked */
	for (size_t i = 0; i < sp->nr; i++)
		if (sp->buf[i].alloc >= len && sp->buf[i].alloc <= 2 * len &&
		    (best == SIZE_MAX || sp->buf[i].alloc < sp->buf[best].alloc))
			best = i;
	if (best != SIZE_MAX) {
		buf_attach(out, sp->buf[best].data, sp->buf[best].alloc);
		sp->bytes -= sp->buf[best].alloc;
		sp->buf[best] = sp->buf[--sp->nr];
	}
	pthread_mutex_unlock(&sp->lock);
}

/*
 * Unlink from table and LRU; caller holds the lock.  Removal from a
 * linear-probing table shifts later members of the probe run back, so
 * no tombstones accumulate.
 */
static void dc_unlink(struct delta_cache *dc, struct dc_shard *c,
		      struct delta_cache_entry *e)
{
	size_t mask = c->nr_slots - 1, i = dc_find(c, e->pack, e->offset), j;

	c->slots[i].e = NULL;
	for (j = (i + 1) & mask; c->slots[j].e; j = (j + 1) & mask) {
		size_t k = (size_t)dc_hash(c->slots[j].pack, c->slots[j].offset) & mask;

		/* move j back to i unless its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		c->slots[i] = c->slots[j];
		c->slots[j].e = NULL;
		i = j;
	}
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->linked = 0;
	atomic_fetch_sub(&dc->used, e->len);
	c->used -= e->len;
	c->nr--;
}

/*
 * Take e out of the cache; it goes to dead now, or, if a reader holds
 * it, when its last user lets go (delta_cache_unref()).  Caller holds
 * the lock.
 */
static void dc_evict(struct delta_cache *dc, struct dc_shard *c,
		     struct delta_cache_entry *e, struct dc_dead *dead)
{
	dc_unlink(dc, c, e);
	if (!e->refs) {
		e->next = dead->first;
		dead->first = e;
	}
}

/*
 * Evict the least recently used entry of another shard that holds more
 * than `over` bytes; 0 if none could be (busy shards are passed by: we
 * hold our own lock, and waiting for another could deadlock).
 */
static int dc_steal(struct delta_cache *dc, struct dc_shard *self, size_t over,
		    struct dc_dead *dead)
{
	size_t k0 = (size_t)(self - dc->shard);

	for (size_t k = 1; k < DC_SHARDS; k++) {
		struct dc_shard *y = &dc->shard[(k0 + k) & (DC_SHARDS - 1)];
		int took = 0;

		if (pthread_mutex_trylock(&y->lock))
			continue;
		if (y->tail && y->used > over) {
			dc_evict(dc, y, y->tail, dead);
			took = 1;
		}
		pthread_mutex_unlock(&y->lock);
		if (took)
			return 1;
	}
	return 0;
}

/*
 * Evict until the whole cache is under budget (caller holds c's lock):
 * c's oldest while c holds more than its share, else another shard's
 * that does, else c's, else any other's; `keep` (the entry just put)
 * last of all, when nothing else could go.
 */
static void dc_shrink(struct delta_cache *dc, struct dc_shard *c,
		      struct delta_cache_entry *keep, struct dc_dead *dead)
{
	size_t budget;

	while (atomic_load(&dc->used) > (budget = atomic_load(&dc->budget))) {
		int own = c->tail && c->tail != keep;

		if (own && c->used > budget / DC_SHARDS)
			dc_evict(dc, c, c->tail, dead);
		else if (dc_steal(dc, c, budget / DC_SHARDS, dead))
			continue;
		else if (own)
			dc_evict(dc, c, c->tail, dead);
		else if (dc_steal(dc, c, 0, dead))
			continue;
		else if (c->tail)	/* keep, alone here */
			dc_evict(dc, c, c->tail, dead);
		else
			break;
	}
}

/* Let every spare go (no lock held but the caller's ownership). */
static void dc_spares_drop(struct delta_cache *dc)
{
	struct dc_spares *sp = &dc->spares;

	pthread_mutex_lock(&sp->lock);
	while (sp->nr)
		free(sp->buf[--sp->nr].data);
	sp->bytes = 0;
	pthread_mutex_unlock(&sp->lock);
}

void delta_cache_free(struct delta_cache *c)
{
	if (!c)
		return;
	for (int k = 0; k < DC_SHARDS; k++) {
		struct dc_shard *sh = &c->shard[k];

		while (sh->head) {
			struct delta_cache_entry *e = sh->head;

			dc_unlink(c, sh, e);
			dc_entry_free(e);
		}
		pthread_mutex_destroy(&sh->lock);
		free(sh->slots);
	}
	dc_spares_drop(c);
	pthread_mutex_destroy(&c->spares.lock);
	free(c);
}

void delta_cache_set_budget(struct delta_cache *c, size_t budget)
{
	struct dc_dead dead = { NULL };

	atomic_store(&c->budget, budget);
	dc_spares_drop(c);	/* a share of the old budget */
	for (int k = 0; k < DC_SHARDS; k++) {
		pthread_mutex_lock(&c->shard[k].lock);
		dc_shrink(c, &c->shard[k], NULL, &dead);
		pthread_mutex_unlock(&c->shard[k].lock);
		dc_free_dead(&dead);
	}
}

size_t delta_cache_budget(struct delta_cache *c)
{
	return atomic_load(&c->budget);
}

void delta_cache_empty(struct delta_cache *c)
{
	for (int k = 0; k < DC_SHARDS; k++) {
		struct dc_shard *sh = &c->shard[k];
		struct dc_dead dead = { NULL };

		pthread_mutex_lock(&sh->lock);
		while (sh->tail)
			dc_evict(c, sh, sh->tail, &dead);
		pthread_mutex_unlock(&sh->lock);
		dc_free_dead(&dead);	/* the memory is wanted back */
	}
	dc_spares_drop(c);
}

static void dc_touch(struct dc_shard *c, struct delta_cache_entry *e)
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
	struct dc_shard *sh = dc_shard_of(c, pack, offset);
	struct delta_cache_entry *e;

	pthread_mutex_lock(&sh->lock);
	e = sh->slots[dc_find(sh, pack, offset)].e;
	if (e) {
		e->refs++;
		dc_touch(sh, e);
	}
	pthread_mutex_unlock(&sh->lock);
	return e;
}

struct delta_cache_entry *delta_cache_put(struct delta_cache *dc,
					  const struct pack *pack,
					  uint64_t offset, enum obj_type type,
					  struct buf *data)
{
	struct dc_shard *c = dc_shard_of(dc, pack, offset);
	struct delta_cache_entry *e = malloc(sizeof(*e)), *old;
	struct dc_dead dead = { NULL };
	size_t i;

	if (!e) {
		buf_release(data);
		return NULL;
	}
	e->pack = pack;
	e->offset = offset;
	e->type = type;
	e->alloc = data->alloc;
	e->data = buf_detach(data, &e->len);
	if (!e->data) {
		free(e);
		return NULL;
	}
	e->refs = 1;
	e->shard = (uint8_t)(c - dc->shard);
	e->linked = 0;
	e->prev = e->next = NULL;

	pthread_mutex_lock(&c->lock);
	/* larger than the whole budget: hand it back uncached */
	if (e->len > atomic_load(&dc->budget) || 2 * c->nr >= c->nr_slots)
		goto out;
	old = c->slots[dc_find(c, pack, offset)].e;
	if (old) {
		/* another thread rebuilt it meanwhile: the bytes are equal, keep ours */
		dc_evict(dc, c, old, &dead);
	}
	i = dc_find(c, pack, offset);
	c->slots[i].pack = pack;
	c->slots[i].offset = offset;
	c->slots[i].e = e;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
	e->linked = 1;
	atomic_fetch_add(&dc->used, e->len);
	c->used += e->len;
	c->nr++;
	dc_shrink(dc, c, e, &dead);
	dc_maybe_grow(c);
out:
	pthread_mutex_unlock(&c->lock);
	dc_bury(dc, &dead);
	return e;
}

void delta_cache_unref(struct delta_cache *c, struct delta_cache_entry *e)
{
	struct dc_shard *sh;
	int gone;

	if (!e)
		return;
	sh = &c->shard[e->shard];
	pthread_mutex_lock(&sh->lock);
	gone = --e->refs == 0 && !e->linked;
	pthread_mutex_unlock(&sh->lock);
	if (gone) {
		struct dc_dead dead = { e };

		e->next = NULL;
		dc_bury(c, &dead);
	}
}

const unsigned char *delta_cache_data(const struct delta_cache_entry *e,
				      size_t *len, enum obj_type *type)
{
	*len = e->len;
	if (type)
		*type = e->type;
	return (const unsigned char *)e->data;
}
