/*
 * memo.c: a bounded memory of SHA-256 -> SHA-1 names, in front of the
 * cache (SHA-1 -> SHA-256 for a SHA-1 repository: whichever way the
 * names it is given go).
 *
 * Converting a tree asks for the SHA-1 name of every entry, and the same
 * names come up again and again (a blob stays in thousands of trees); a
 * sqlite lookup costs microseconds, a memo hit a few dozen nanoseconds.
 * The table is direct-mapped on the name's first bytes (names are
 * uniformly random): a new name simply replaces whatever shared its
 * slot, so there is no bookkeeping and the size never grows.
 *
 * A name in the cache changes only when the cache is emptied (built
 * again under other settings) or an object is refused after the fact
 * (a collision found later); then the build clears the memo.  A reader
 * that looked a name up before the clear must not write it back after:
 * it notes the generation when it starts, and a put from an older
 * generation is dropped (the check is made under the slot's lock, and a
 * clear takes every lock).  Slots are guarded by striped locks (a copy
 * of 52 bytes under the lock: readers almost never wait).
 */
#include "xlate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MEMO_STRIPES 64

struct memo_slot {
	unsigned char names[32 + 20];	/* the key, then its other name */
	unsigned char used;		/* the key's length; 0: empty */
};

/* Does slot s hold key (its algorithm's rawsz bytes)? */
static int slot_holds(const struct memo_slot *s, const struct oid *key)
{
	/* two constant lengths: the compiler inlines each compare */
	if (key->algo->rawsz == 32)
		return s->used == 32 && !memcmp(s->names, key->hash, 32);
	return s->used == 20 && !memcmp(s->names, key->hash, 20);
}

struct xlate_memo {
	struct memo_slot *slots;
	size_t mask;
	atomic_uint_fast64_t generation;	/* written with every stripe held */
	pthread_mutex_t stripe[MEMO_STRIPES];	/* slot i under stripe[i % MEMO_STRIPES] */
};

int xlate_memo_new(struct xlate_memo **out, size_t bytes)
{
	struct xlate_memo *m = calloc(1, sizeof(*m));
	size_t n = 1024;

	while (n * 2 * sizeof(struct memo_slot) <= bytes)
		n *= 2;
	if (!m || !(m->slots = calloc(n, sizeof(*m->slots)))) {
		free(m);
		return err_set(XL_ENOMEM, "out of memory");
	}
	m->mask = n - 1;
	for (int i = 0; i < MEMO_STRIPES; i++)
		pthread_mutex_init(&m->stripe[i], NULL);
	*out = m;
	return 0;
}

void xlate_memo_free(struct xlate_memo *m)
{
	if (!m)
		return;
	for (int i = 0; i < MEMO_STRIPES; i++)
		pthread_mutex_destroy(&m->stripe[i]);
	free(m->slots);
	free(m);
}

static size_t slot_of(const struct xlate_memo *m, const struct oid *sha256)
{
	uint64_t h;

	memcpy(&h, sha256->hash, sizeof(h));
	return (size_t)h & m->mask;
}

int xlate_memo_get(struct xlate_memo *m, const struct oid *sha256,
		   struct oid *sha1)
{
	size_t i;
	int found = 0;

	if (!m)
		return 0;
	i = slot_of(m, sha256);
	pthread_mutex_lock(&m->stripe[i % MEMO_STRIPES]);
	if (slot_holds(&m->slots[i], sha256)) {
		oid_from_raw(sha1, hash_algo_other(sha256->algo),
			     m->slots[i].names + sha256->algo->rawsz);
		found = 1;
	}
	pthread_mutex_unlock(&m->stripe[i % MEMO_STRIPES]);
	return found;
}

uint64_t xlate_memo_generation(struct xlate_memo *m)
{
	return m ? atomic_load(&m->generation) : 0;
}

void xlate_memo_put(struct xlate_memo *m, uint64_t generation,
		    const struct oid *sha256, const struct oid *sha1)
{
	size_t i;

	if (!m || sha1->algo != hash_algo_other(sha256->algo))
		return;
	i = slot_of(m, sha256);
	pthread_mutex_lock(&m->stripe[i % MEMO_STRIPES]);
	if (atomic_load(&m->generation) == generation) {
		memcpy(m->slots[i].names, sha256->hash, sha256->algo->rawsz);
		memcpy(m->slots[i].names + sha256->algo->rawsz, sha1->hash,
		       sha1->algo->rawsz);
		m->slots[i].used = (unsigned char)sha256->algo->rawsz;
	}
	pthread_mutex_unlock(&m->stripe[i % MEMO_STRIPES]);
}

void xlate_memo_clear(struct xlate_memo *m)
{
	if (!m)
		return;
	for (int i = 0; i < MEMO_STRIPES; i++)
		pthread_mutex_lock(&m->stripe[i]);
	for (size_t i = 0; i <= m->mask; i++)
		m->slots[i].used = 0;
	atomic_fetch_add(&m->generation, 1);
	for (int i = MEMO_STRIPES - 1; i >= 0; i--)
		pthread_mutex_unlock(&m->stripe[i]);
}
