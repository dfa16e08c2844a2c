/*
 * build.c: name every object of a repository, in dependency order, into
 * the cache.
 *
 *   xlate_build
 *     gather       packs the cache has not finished, and loose objects:
 *                  every object not already in the cache is new
 *     classify     the type and size of each new object (headers only),
 *                  on N threads (opts->threads: one per processor)
 *     blobs        SHA-1 of "blob <size>\0" + content, on N threads;
 *                  a blob's SHA-1 form is its SHA-256 form
 *     the rest     N walkers sharing one schedule, depth first: an
 *                  object is named after everything it refers to (trees
 *                  bottom-up, commits after their trees and parents,
 *                  tags after their targets), by converting it with
 *                  xlate_object() and hashing the result (see "the
 *                  rest, on every core" below)
 *     store        on a writer thread, in the order names are found, in
 *                  batches, each batch one transaction; or, for a big
 *                  first build, all at the end in name order ("a first
 *                  build's rows" below); then the packs are marked
 *                  finished
 *     lay out      if asked (opts->pack1), the SHA-1 packs of finished
 *                  packs (pack1.c), from this build's table of names and
 *                  the SHA-1 forms (or, for trees, the SHA-1 pack's tree
 *                  deltas) the walk kept in a spill file, not from
 *                  sqlite lookups and conversions made again
 *
 * Memory: the name table holds every new object and every cached name
 * looked up (about 100 bytes each), the schedule 24 bytes more for each
 * and its queues and edges; trees and tags are held from the moment
 * they are read until they are named (depth first, that is a few paths
 * of trees at a time), commits are not (history can be millions deep):
 * they are read again when their turn comes.  The forms of the trees
 * named last take FORMS_BYTES more (struct formcache).
 *
 * A repository whose objects refer to each other in a cycle cannot exist
 * unless it is corrupt (names are hashes); the walk ends with them still
 * waiting on each other, and refuses them instead of looping.
 *
 * Refusals that do not last.  A refusal is a fact about the object only
 * when its own bytes cause it (an unknown commit header, a malformed
 * tree, a collision, a gitlink the submodule map does not name: the map
 * is part of the settings, so that one lasts as long as they do).  Two
 * other kinds depend on the moment:
 *
 *   unreadable   the object's bytes cannot be read (a truncated loose
 *                file, a corrupt pack entry, an object gone while we
 *                build).  That is a read failure, not a translation
 *                result, and may be repaired: the object is not stored
 *                at all, and the packs holding it are not marked
 *                finished, so the next build gathers it again (loose
 *                objects are gathered by every build anyway).
 *   missing      a reference names an object the repository does not
 *                have (a shallow or partial clone, an object still to
 *                come), or one that is unreadable or itself refused for
 *                now.
 *
 * Objects refused for either reason (the dependents of an unreadable
 * object included) are stored with the retry mark.  A build loads the
 * cache's retry set (a partial index: its cost follows the set, not the
 * cache) as new objects when the repository has gained objects since
 * the last attempt, so they are walked again with whatever has arrived;
 * one that still fails is stored again, marked as before.  Never on a
 * timer: on a partial clone that set is nearly every tree and commit,
 * and the mount builds every second.  When a refused-for-now object's
 * other references include one refused for good, it is refused for good.
 *
 * What the repository lacks.  The objects that stored objects refer to
 * and the repository does not have (the blobs of a partial clone, the
 * parents of a shallow clone's boundary) are counted by kind each time
 * the whole retry set is walked, and kept in the cache's meta "missing"
 * (xlate_missing_read()), so that the mount and `report` can say why
 * objects have no name and what would bring them.
 *
 * Read errors that say nothing about the object (out of memory, I/O
 * errors) and cache errors stop the build: what was committed stays,
 * and nothing is refused because of them.
 */
#include "xlate_i.h"
#include "../cache/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * A transaction is committed a second after the last one (or after this
 * many objects): a killed build loses at most about a second's work.
 * Small batches cost dearly: names are random keys, so every batch
 * dirties pages all over the file's B-trees, and its commit writes them
 * all, which costs more the bigger the cache.  So a batch also lasts at
 * least BATCH_COMMIT_SHARE times the processor time the last commit took
 * (not its wall time, which a stopped or starved process inflates):
 * commits stay under about a tenth of the build however large it is,
 * and a killed build loses at most that much more.
 */
#define BATCH_SECONDS 1.0
#define BATCH_COMMIT_SHARE 10
#define BATCH_OBJECTS 250000
#define STREAM_MIN ((size_t)32 << 20)	/* hash blobs this big piecewise */

/*
 * A big build: one that has at least BIG_BUILD objects to name.  Only
 * a big build bounds what the odb keeps of delta bases while it reads
 * (BIG_BUILD_BASES, if the odb was given more), and lets go of sqlite's
 * pages and the odb's bases before its layout (see xlate_build()).  In
 * the daemon a build runs every second, mostly with nothing to name, on
 * an odb whose bases are the readers' too: a small one leaves them be.
 *
 * The walk is depth first, so bases are reused soon or not at all: at
 * a million objects, 64 MiB costs no time against 96 (paired runs; 32
 * MiB cost 7%), and the build's peak is the walk's.
 */
#define BIG_BUILD 65536
#define BIG_BUILD_BASES ((size_t)64 << 20)

/*
 * glibc gives each thread that allocates its own heap (arena), up to
 * eight per core, and a heap keeps what its thread freed for that
 * thread.  The walkers read trees into buffers that another walker
 * often frees, and with an arena each the build held 35-40 MiB more at
 * a million objects (peak RssAnon 478-486 MiB against 442-446, the same
 * time: paired runs on 2 cores).  So a big build shares half as many
 * arenas as it has threads, at least two; they are the process's from
 * then on (set before the build starts its threads; arenas made before
 * stay).  Only measured on 2 cores, where that is 2.
 */
static void limit_arenas(int threads)
{
#ifdef M_ARENA_MAX
	mallopt(M_ARENA_MAX, threads / 2 > 2 ? threads / 2 : 2);
#else
	(void)threads;
#endif
}

struct pack_mark {
	char checksum[OID_HEXSZ_MAX + 1];
	uint32_t objects;
};

/*
 * This thread's processor time: what a commit costs, which a process
 * stopped or starved meanwhile does not inflate.
 */
static double thread_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Results go to sqlite on a writer thread, so that the walk does not
 * wait for B-tree inserts: store() queues, the writer puts, in the same
 * order (a queued NULL name marks a commit point).  The walk may still
 * look old names up meanwhile: the cache serialises the two, and what
 * is queued but unwritten is new, so the walk has it in its own table.
 */
struct queued {
	struct cache_object co;		/* co.algo NULL in sha256: a commit point */
	char *reason;			/* owned copy */
};

struct writer {
	atomic_uint_fast64_t commit_ns;	/* the last commit's processor time */
	pthread_mutex_t lock;
	pthread_cond_t wake, idle, room;
	struct queued *q;		/* guarded by lock */
	size_t nr, alloc;		/* guarded by lock */
	int busy, stop;			/* guarded by lock */
	int error;			/* guarded by lock: first failure */
	char errmsg[1024];		/* guarded by lock: its message, since
					   err_msg() is per thread */
	struct cache *cache;
	pthread_t tid;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct queued *take = NULL;
	size_t ntake = 0, cap = 0;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		int ret = 0;

		while (!w->nr && !w->stop) {
			w->busy = 0;
			pthread_cond_broadcast(&w->idle);
			pthread_cond_wait(&w->wake, &w->lock);
		}
		if (!w->nr && w->stop)
			break;
		/* swap the queue for our (empty) array and work unlocked */
		{
			struct queued *t = w->q;
			size_t a = w->alloc;

			w->q = take;
			w->alloc = cap;
			take = t;
			cap = a;
			ntake = w->nr;
			w->nr = 0;
		}
		w->busy = 1;
		pthread_cond_broadcast(&w->room);
		pthread_mutex_unlock(&w->lock);
		for (size_t i = 0; i < ntake; i++) {
			if (ret) {
				/* failed: drop the rest, the error is reported */
			} else if (!take[i].co.sha256.algo) {
				double t0 = thread_seconds();

				if (!(ret = cache_commit(w->cache)))
					ret = cache_begin(w->cache);
				atomic_store(&w->commit_ns,
					     (uint_fast64_t)((thread_seconds() - t0) * 1e9));
			} else {
				ret = cache_put(w->cache, &take[i].co);
			}
			free(take[i].reason);
		}
		pthread_mutex_lock(&w->lock);
		if (ret && !w->error) {
			w->error = ret;
			snprintf(w->errmsg, sizeof(w->errmsg), "%s", err_msg());
		}
	}
	w->busy = 0;
	pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->lock);
	free(take);
	return NULL;
}

#define WRITER_WAKE 1024	/* rows queued before the writer is woken */
/*
 * Rows queued before the walk waits for the writer: the queue is bounded
 * like everything else.  At a million objects the walk names objects
 * faster than sqlite takes them on two cores, and an unbounded queue
 * reached hundreds of thousands of rows (100 bytes or so each) by the
 * end of the walk, the build's peak.  The writer takes the whole queue
 * at once, so at most twice this many rows are held.
 */
#define WRITER_MAX 32768

static int writer_push(struct writer *w, const struct cache_object *co)
{
	int ret = 0;

	pthread_mutex_lock(&w->lock);
	while (w->nr >= WRITER_MAX && !w->error) {
		pthread_cond_signal(&w->wake);
		pthread_cond_wait(&w->room, &w->lock);
	}
	if (ARRAY_GROW(w->q, w->nr, w->alloc, 4096)) {
		pthread_mutex_unlock(&w->lock);
		return XL_ENOMEM;
	}
	w->q[w->nr].co = *co;
	w->q[w->nr].reason = co->reason ? strdup(co->reason) : NULL;
	w->q[w->nr].co.reason = w->q[w->nr].reason;
	w->nr++;
	ret = w->error;
	if (ret)	/* the message was the writer thread's: make it ours */
		err_set(ret, "%s", w->errmsg);
	/*
	 * Woken for a batch of rows or a commit point, not for every row:
	 * a writer woken for each would sleep and wake again as often,
	 * which cost more than the inserts (rows are seen by nobody until
	 * committed anyway).  writer_drain() and writer_stop() wake it for
	 * the rest.
	 */
	if (!w->busy && (w->nr >= WRITER_WAKE || !co->sha256.algo))
		pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	return ret;
}

/* Wait until everything queued is in the cache; the writer's error, if any. */
static int writer_drain(struct writer *w)
{
	int ret;

	pthread_mutex_lock(&w->lock);
	pthread_cond_signal(&w->wake);	/* for what is queued below WRITER_WAKE */
	while (w->nr || w->busy)
		pthread_cond_wait(&w->idle, &w->lock);
	ret = w->error;
	if (ret)
		err_set(ret, "%s", w->errmsg);
	pthread_mutex_unlock(&w->lock);
	return ret;
}

static int writer_start(struct writer *w, struct cache *cache)
{
	memset(w, 0, sizeof(*w));
	atomic_init(&w->commit_ns, 0);
	w->cache = cache;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->idle, NULL);
	pthread_cond_init(&w->room, NULL);
	if (pthread_create(&w->tid, NULL, writer_main, w))
		return err_set(XL_ENOMEM, "cannot start the cache writer");
	return 0;
}

static void writer_stop(struct writer *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->tid, NULL);
	for (size_t i = 0; i < w->nr; i++)
		free(w->q[i].reason);
	free(w->q);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->idle);
	pthread_cond_destroy(&w->room);
	pthread_mutex_destroy(&w->lock);
}

/*
 * The SHA-1 forms the walk made, kept for the layout that follows it
 * (xlate_build_opts.pack1): laying a pack out needs the SHA-1 form of
 * every commit, tag and whole tree in it, and the SHA-1 pack's delta of
 * every tree stored as a delta, and reading them back costs a fraction
 * of converting them again (on the bench repository the second
 * conversion was half the layout's time).  The walk makes those deltas
 * itself (native_delta()), so the spill holds a hundred bytes or so for
 * most trees: 12.5 MB on the bench repository, where the whole forms
 * were 150 MB.  They go to an unlinked file beside the cache, not to
 * memory: the forms of a large history still run to hundreds of
 * megabytes.  Any failure to write or read it only turns the layout
 * back to converting.
 */
#define SPILL_FLUSH ((size_t)1 << 20)
/*
 * The forms are uncompressed, so the file can be many times the size
 * of the pack (commits, and trees the native pack stores whole, or
 * whose delta would not be smaller): it may take at most this much, and at most
 * a quarter of the space free when the build starts, so that it never
 * starves the cache beside it.  Forms past the limit are converted
 * again by the layout.
 */
#define SPILL_MAX ((uint64_t)4 << 30)

/*
 * Walkers on every thread put forms (under b->lock, which places them);
 * a full buffer is written out by the walker that filled it, after it
 * lets go of the lock, at the place kept for it (pwrite), so that no
 * walker waits on another's write.
 */
struct spill {
	int fd;				/* -1: none (unwanted) */
	atomic_int failed;		/* a write failed: read nothing back */
	uint64_t len;			/* bytes placed */
	uint64_t max;			/* bytes it may take */
	struct buf pending;		/* placed, not yet written ... */
	uint64_t pending_at;		/* ... from here on in the file */
	struct buf spare;		/* a written buffer, to fill again
					   (fresh memory costs page faults) */
	const char *map;		/* the file, mapped for the layout */
	size_t map_len;
};

/* A buffer of forms to write at `at`, taken out of the spill's hands. */
struct spill_out {
	struct buf data;
	uint64_t at;
};

/*
 * The two forms of the trees named last, by where they are stored, for
 * the trees named next: most trees are versions of a directory that a
 * commit or so changed, and converting such a tree against a version
 * named a moment ago (its reference) takes what the two share from the
 * reference's SHA-1 form, and looks up only the entries that changed
 * (tree_merge.c, ref_prepare()).  Which version is near is told by the
 * native pack's delta chains, the only link between versions the walk
 * knows: the tree's delta base, a tree deltified against it, or one
 * deltified against its base (pack-objects often makes a run of
 * versions all deltas of one), a step or two further either way (the
 * other walkers are naming the nearest versions at the same moment).
 * pack-objects deltifies older versions against newer ones and
 * fast-import the other way round; the walk names newer first, so one
 * way or the other finds a neighbour.
 *
 * When the reference is the tree's delta base, its forms also make the
 * SHA-1 pack's delta; otherwise the walk reads the base's native form
 * back (native_delta()), which gives the same bytes.
 *
 * At most FORMS_MAX trees and FORMS_BYTES of forms, oldest out first,
 * shared by the walkers under its own lock; a form is copied out, never
 * lent.  The lock guards the slots and chains, not the copies: a walker
 * pins the slot it copies into or out of, and the oldest form leaves
 * only when nobody has it pinned (else the form coming in is not kept).
 * With the copies under the lock, two walkers spent a third of their
 * futex waits on it.
 */
#define FORMS_MAX 16384			/* a power of two */
#define FORMS_BYTES ((size_t)32 << 20)

#define FORMS_ANC 3		/* steps along a delta chain, each way */

struct form_slot {
	const void *pack;		/* odb_place() */
	uint64_t offset;
	uint64_t anc[FORMS_ANC];	/* its delta base, the base's base...
					   (ODB_NO_PLACE: none) */
	size_t at, len, len1;		/* in the arena: SHA-1 form, then the
					   tree's own, then its index's entry
					   starts (nr + 1 of them), then the
					   SHA-1 form's hash marks */
	size_t nr;			/* its index (struct xlate_tree_ix) */
	size_t nmarks;			/* its hash marks (hash_sha1_marked()) */
	uint8_t sorted, has_gitlink;
	atomic_uchar ready;		/* its bytes are in the arena */
	atomic_uint pins;		/* walkers copying them in or out: taken
					   under fc->lock, let go without it */
	uint32_t next;			/* 1 + the next slot of its bucket */
	uint32_t next_by_anc[FORMS_ANC];	/* the same, in by_anc[] */
};

/*
 * Forms are copied into one arena, in the order they come, and leave it
 * oldest first: a ring of bytes beside the ring of slots, so that no
 * form costs an allocation (fresh memory costs page faults).
 */
struct formcache {
	pthread_mutex_t lock;
	struct form_slot *slot;		/* FORMS_MAX, a ring from `first` */
	uint32_t bucket[FORMS_MAX];	/* 1 + the first slot of each hash */
	uint32_t by_anc[FORMS_ANC][FORMS_MAX];	/* the same, by anc[d] */
	uint32_t first, nr;
	char *arena;			/* cap bytes (FORMS_BYTES) */
	size_t cap, head;		/* head: where the next form goes */
};

/*
 * The SHA-1 names this build has given out, for the collision check:
 * an open-addressing table of entries of b->map (1 + index; 0: empty),
 * keyed by the SHA-1 name each of them holds.  Four bytes a name, where
 * a table entry of its own would take a hundred.  Load stays at or
 * under one half.
 */
struct claims {
	uint32_t *slot;
	size_t cap, nr;
};

struct build {
	struct repo *repo;
	struct odb *odb;
	struct cache *cache;
	const struct xlate_build_opts *opts;
	struct xlate_build_stats *stats;
	const struct hash_algo *other;	/* the names this build gives out:
					   SHA-1, or SHA-256 for a SHA-1
					   repository */
	struct xmap map;		/* every name this build knows */
	struct claims claims;		/* guarded by names_lock: SHA-1 names
					   given out (collisions) */
	/*
	 * The map's pairs (--map): names of objects the repository lacks
	 * (gitlinks, the parents beyond a shallow boundary, a partial
	 * clone's blobs), never of one it has.  Read-only while walking,
	 * but for is_new, which marks a pair stored in the cache (under
	 * missing_lock).
	 */
	struct xmap known;
	/*
	 * New objects, as indexes into map.entries (which stay put when
	 * the table grows), in name order: 4 bytes each where a name took
	 * 40, and no probe of the table to find its entry again.
	 */
	uint32_t *todo;
	size_t nr, alloc;
	struct pack_mark *packs;	/* packs to mark finished at the end */
	size_t nr_packs, alloc_packs;
	int cache_empty;		/* no lookups needed when nothing is stored */
	int bulk;			/* a first build: rows at the end
					   (bulk_store()), no writer */
	int big;			/* BIG_BUILD objects or more to name */
	int native_deltas;		/* the walk makes tree deltas from the
					   native forms (native_delta()) */
	int collided;			/* guarded by names_lock: a named
					   object was refused afterwards */
	atomic_size_t nr_unreadable;	/* entries marked XMAP_F_UNREADABLE */
	atomic_size_t trees, trees_against;	/* stats: converted by the walk */
	/*
	 * While the walkers run (walking), b->map takes no new entries, so
	 * that they may read it without a lock; names the cache had that
	 * they look up go to `old` instead, and join b->map afterwards.
	 */
	int walking;
	struct xmap old;		/* guarded by old_lock */
	/*
	 * Read-mostly: every walker looks names up in `old` for each entry
	 * its own recent names lack, and only the first lookup of a name
	 * adds it.  A mutex here was the walk's main contention (most of
	 * its futex waits in an incremental build of wide trees).
	 */
	pthread_rwlock_t old_lock;
	pthread_mutex_t names_lock;	/* claims: giving out SHA-1 names */
	pthread_mutex_t lock;		/* the rows: the counts in stats, the
					   batch, the spill file, the order
					   in which rows reach the writer */
	size_t in_batch;		/* guarded by lock */
	double batch_start;		/* guarded by lock: when the open
					   transaction began */
	struct writer writer;		/* puts results into the cache */
	struct spill spill;		/* guarded by lock: SHA-1 forms, for
					   the layout */
	struct formcache forms;		/* trees just named: delta bases */
	atomic_uint_fast64_t done;
	uint64_t total;
	/*
	 * Names referred to that the repository does not have, by kind
	 * (xmap_entry.type: a blob, a tree, a commit, or OBJ_NONE when a
	 * tag does not say), to count them once each.
	 */
	struct xmap missing;		/* guarded by missing_lock */
	pthread_mutex_t missing_lock;
};

/* ---- progress and storing ------------------------------------------- */

static void progress(struct build *b)
{
	if (b->opts->progress)
		b->opts->progress(b->opts->progress_data,
				  atomic_load(&b->done), b->total);
}

/*
 * An object that could not be read is not a result: it is counted and
 * left out of the cache (see the top of the file).  A retried object no
 * longer in the repository is just left as the cache has it.
 */
static void skip_unreadable(struct build *b, const struct oid *oid,
			    struct xmap_entry *e)
{
	char hex[OID_HEXSZ_MAX + 1];

	if (e->flags & XMAP_F_GONE)
		return;
	if (!b->stats->unreadable++)
		snprintf(b->stats->first_unreadable,
			 sizeof(b->stats->first_unreadable), "%s: %s",
			 oid_to_hex_r(hex, oid), e->reason ? e->reason : "");
}

static void spill_put(struct spill *sp, struct xmap_entry *e,
		      const struct buf *form, struct spill_out *out);
static void spill_write(struct spill *sp, struct spill_out *out);
static void spill_return(struct spill *sp, struct buf *data);

/* How long a batch lasts now (see BATCH_SECONDS). */
static double batch_period(struct build *b)
{
	double commit = (double)atomic_load(&b->writer.commit_ns) / 1e9;

	return commit * BATCH_COMMIT_SHARE > BATCH_SECONDS ?
		commit * BATCH_COMMIT_SHARE : BATCH_SECONDS;
}

/*
 * The row of entry e (named oid) settled in `state`: its name and sizes,
 * or why it is refused.  co->reason points into e.
 */
static void row_of(const struct oid *oid, const struct xmap_entry *e,
		   uint8_t state, struct cache_object *co)
{
	memset(co, 0, sizeof(*co));
	co->sha256 = *oid;
	co->type = (enum obj_type)e->type;
	co->size256 = e->size256;
	if (state == XMAP_DONE) {
		oid_from_raw(&co->sha1, hash_algo_other(oid->algo),
			     e->names + oid->algo->rawsz);
		co->size1 = e->size1;
	} else {
		co->reason = e->reason;
		co->retry = !!(e->flags & XMAP_F_RETRY);
	}
}

/*
 * Queue the row of oid (its table entry e) for the cache: named if
 * state is XMAP_DONE, refused if XMAP_BAD.  A named object's SHA-1 form
 * (form, may be NULL) goes to the spill file; when that fills a buffer,
 * the buffer is handed over in *spilled (then not NULL), for the caller
 * to write with spill_handback() once it holds no lock.  The caller
 * publishes e's state only afterwards, so that no row reaches the cache
 * before the rows of what it refers to.  A bulk build queues nothing:
 * bulk_store() writes every row at the end.  Any thread may call it.
 */
static int store_row(struct build *b, const struct oid *oid,
		     struct xmap_entry *e, uint8_t state, const struct buf *form,
		     struct spill_out *spilled)
{
	struct cache_object co;
	int ret = 0;

	pthread_mutex_lock(&b->lock);
	if (state == XMAP_BAD && (e->flags & XMAP_F_UNREADABLE)) {
		skip_unreadable(b, oid, e);
		pthread_mutex_unlock(&b->lock);
		return 0;
	}
	row_of(oid, e, state, &co);
	if (state == XMAP_DONE) {
		if (form)
			spill_put(&b->spill, e, form, spilled);
	} else {
		b->stats->untranslatable++;
		if (co.retry)
			b->stats->retry++;
	}
	b->stats->new_objects++;
	if (!b->bulk && (ret = writer_push(&b->writer, &co)))
		goto out;
	if (!(b->stats->new_objects & 1023)) {
		progress(b);	/* the callback limits how often it draws */
		if (b->opts->cancel && atomic_load(b->opts->cancel)) {
			ret = err_set(XL_EIO, "build stopped");
			goto out;
		}
	}
	if (b->bulk)
		goto out;
	/* the clock is read every 256 objects, not every time */
	if (++b->in_batch >= BATCH_OBJECTS ||
	    (!(b->in_batch & 255) && seconds() - b->batch_start >= batch_period(b))) {
		struct cache_object commit_point = { 0 };

		if ((ret = writer_push(&b->writer, &commit_point)))
			goto out;
		b->in_batch = 0;
		b->batch_start = seconds();
		progress(b);
	}
out:
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/* Write out what store_row() handed over, and give the buffer back. */
static void spill_handback(struct build *b, struct spill_out *spilled)
{
	if (!spilled->data.len)
		return;
	spill_write(&b->spill, spilled);
	pthread_mutex_lock(&b->lock);
	spill_return(&b->spill, &spilled->data);
	pthread_mutex_unlock(&b->lock);
}

/* The row of an entry of b->map that is settled already. */
static int store(struct build *b, const struct oid *oid)
{
	struct xmap_entry *e = xmap_get(&b->map, oid);

	return store_row(b, oid, e, xmap_state(e), NULL, NULL);
}

/* ---- the spill file ------------------------------------------------- */

static void spill_close(struct spill *sp)
{
	if (sp->map)
		munmap((void *)sp->map, sp->map_len);
	sp->map = NULL;
	if (sp->fd >= 0)
		close(sp->fd);
	sp->fd = -1;
	buf_release(&sp->pending);
	buf_release(&sp->spare);
}

/* An unlinked file in the cache's directory (so on its file system). */
static void spill_open(struct spill *sp, const char *cache_path)
{
	char *dir = strdup(cache_path), *slash;

	sp->fd = -1;
	sp->len = sp->pending_at = 0;
	atomic_init(&sp->failed, 0);
	buf_init(&sp->pending);
	buf_init(&sp->spare);
	if (!dir)
		return;
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
#ifdef O_TMPFILE
	sp->fd = open(slash ? dir : ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
	if (sp->fd < 0) {
		struct buf name = BUF_INIT;

		if (!buf_addf(&name, "%s/.xlate-spill-XXXXXX",
			      slash ? dir : ".") &&
		    (sp->fd = mkstemp(name.buf)) >= 0)
			unlink(name.buf);
		buf_release(&name);
	}
	if (sp->fd >= 0) {
		struct statvfs vfs;

		sp->max = SPILL_MAX;
		if (!fstatvfs(sp->fd, &vfs) &&
		    (uint64_t)vfs.f_bavail * vfs.f_frsize / 4 < sp->max)
			sp->max = (uint64_t)vfs.f_bavail * vfs.f_frsize / 4;
	}
	free(dir);
}

/*
 * Write out a buffer that spill_put() handed over; any thread.  It is
 * left in out->data, emptied, to be given back with spill_return().
 */
static void spill_write(struct spill *sp, struct spill_out *out)
{
	const char *p = out->data.buf;
	size_t left = out->data.len;
	uint64_t at = out->at;

	while (left && !atomic_load(&sp->failed)) {
		ssize_t n = pwrite(sp->fd, p, left, (off_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			atomic_store(&sp->failed, 1);
			break;
		}
		p += n;
		at += (uint64_t)n;
		left -= (size_t)n;
	}
	buf_reset(&out->data);
}

/*
 * Place e's SHA-1 form (under b->lock); e->spill says where.  When the
 * buffer is full, it is handed over in *out, for spill_write() once the
 * lock is let go of.
 */
static void spill_put(struct spill *sp, struct xmap_entry *e,
		      const struct buf *form, struct spill_out *out)
{
	if (sp->fd < 0 || atomic_load(&sp->failed) ||
	    form->len > sp->max - sp->len)
		return;
	if (buf_add(&sp->pending, form->buf, form->len)) {
		atomic_store(&sp->failed, 1);
		return;
	}
	e->spill = sp->len + 1;
	sp->len += form->len;
	if (sp->pending.len >= SPILL_FLUSH) {
		out->data = sp->pending;
		out->at = sp->pending_at;
		sp->pending = sp->spare;
		buf_init(&sp->spare);
		sp->pending_at = sp->len;
	}
}

/* Take back a buffer spill_write() is done with (under b->lock). */
static void spill_return(struct spill *sp, struct buf *data)
{
	if (!sp->spare.alloc) {
		sp->spare = *data;
		buf_init(data);
	}
	buf_release(data);
}

/*
 * Write what is still buffered, once nobody puts forms any more, and
 * map the file for reading: the layout reads a form or two for every
 * tree, and a system call each costs more than the copy (the map may
 * fail; then pread() does).
 */
static void spill_finish(struct spill *sp)
{
	struct spill_out out = { sp->pending, sp->pending_at };
	void *map;

	if (sp->fd < 0)
		return;
	buf_init(&sp->pending);
	sp->pending_at = sp->len;
	spill_write(sp, &out);
	spill_return(sp, &out.data);
	if (atomic_load(&sp->failed) || !sp->len || sp->len > SIZE_MAX)
		return;
	map = mmap(NULL, (size_t)sp->len, PROT_READ, MAP_SHARED, sp->fd, 0);
	if (map == MAP_FAILED)
		return;
	sp->map = map;
	sp->map_len = (size_t)sp->len;
}

/* ---- recent tree forms ---------------------------------------------- */

static uint32_t forms_hash(uint64_t offset)
{
	return (uint32_t)((offset * 0x9e3779b97f4a7c15ull) >> 40) & (FORMS_MAX - 1);
}

static int forms_init(struct formcache *fc, size_t cap)
{
	memset(fc, 0, sizeof(*fc));
	fc->cap = cap;
	if (!(fc->slot = calloc(FORMS_MAX, sizeof(*fc->slot))) ||
	    !(fc->arena = malloc(cap))) {
		free(fc->slot);
		fc->slot = NULL;
		return err_set(XL_ENOMEM, "out of memory");
	}
	mutex_init_brief(&fc->lock);
	return 0;
}

static void forms_release(struct formcache *fc)
{
	if (!fc->slot)
		return;
	free(fc->slot);
	free(fc->arena);
	fc->slot = NULL;
	pthread_mutex_destroy(&fc->lock);
}

/* The slot holding (pack, offset), or NULL (under fc->lock). */
static struct form_slot *forms_find(struct formcache *fc, const void *pack,
				    uint64_t offset)
{
	for (uint32_t k = fc->bucket[forms_hash(offset)]; k; k = fc->slot[k - 1].next) {
		struct form_slot *f = &fc->slot[k - 1];

		if (f->offset == offset && f->pack == pack)
			return f;
	}
	return NULL;
}

/*
 * The newest slot of a tree d + 1 steps along a delta chain from the one
 * at (pack, offset), towards the newer end: a tree stored as a delta
 * against it (d 0), or against such a tree (d 1)...; or NULL.
 */
static struct form_slot *forms_find_by_anc(struct formcache *fc, int d,
					   const void *pack, uint64_t offset)
{
	for (uint32_t k = fc->by_anc[d][forms_hash(offset)]; k;
	     k = fc->slot[k - 1].next_by_anc[d]) {
		struct form_slot *f = &fc->slot[k - 1];

		if (f->anc[d] == offset && f->pack == pack)
			return f;
	}
	return NULL;
}

/*
 * Let the oldest form go (under fc->lock); 0 if a walker has it pinned.
 * The acquire pairs with the release of the last unpin: what that
 * walker copied is done before the bytes are written over.
 */
static int forms_evict(struct formcache *fc)
{
	struct form_slot *f = &fc->slot[fc->first];
	uint32_t *link = &fc->bucket[forms_hash(f->offset)];

	if (atomic_load_explicit(&f->pins, memory_order_acquire))
		return 0;
	while (*link != fc->first + 1)
		link = &fc->slot[*link - 1].next;
	*link = f->next;
	for (int d = 0; d < FORMS_ANC; d++) {
		if (f->anc[d] == ODB_NO_PLACE)
			continue;
		link = &fc->by_anc[d][forms_hash(f->anc[d])];
		while (*link != fc->first + 1)
			link = &fc->slot[*link - 1].next_by_anc[d];
		*link = f->next_by_anc[d];
	}
	fc->first = (fc->first + 1) & (FORMS_MAX - 1);
	fc->nr--;
	return 1;
}

/* The oldest form lies in [from, from + len) of the arena (under fc->lock). */
static int oldest_in(const struct formcache *fc, size_t from, size_t len)
{
	return fc->nr && fc->slot[fc->first].at >= from &&
	       fc->slot[fc->first].at < from + len;
}

/*
 * Keep copies of both forms of the tree stored at (pack, offset), with
 * where its delta chain goes (anc), its index (ix, of form256) and the
 * marks of its SHA-1 form's hash, so that a tree converted against it
 * need not parse it again, nor hash what the two share.
 */
static void forms_put(struct formcache *fc, const void *pack, uint64_t offset,
		      const uint64_t *anc, const struct buf *form256,
		      const struct buf *form1, const struct xlate_tree_ix *ix,
		      const struct hash_marks *marks)
{
	size_t ix_len = (ix->nr + 1) * sizeof(*ix->at);
	size_t marks_len = marks->nr * sizeof(*marks->state);
	size_t len = form256->len + form1->len + ix_len + marks_len;
	struct form_slot *f;
	uint32_t k;

	if (len > fc->cap / 16)
		return;		/* a huge tree would push out all the others */
	pthread_mutex_lock(&fc->lock);
	if (forms_find(fc, pack, offset))
		goto out;
	if (fc->nr == FORMS_MAX && !forms_evict(fc))
		goto out;
	/*
	 * The forms held lie from the oldest's place to the head, perhaps
	 * round the end of the arena: make room at the head (or, if the
	 * form does not fit before the end, at the start) by letting the
	 * oldest go until none lies there.  One that is pinned stops it:
	 * this form is not kept.
	 */
	if (fc->head + len > fc->cap) {
		while (oldest_in(fc, fc->head, fc->cap))
			if (!forms_evict(fc))
				goto out;
		fc->head = 0;
	}
	while (oldest_in(fc, fc->head, len))
		if (!forms_evict(fc))
			goto out;
	k = (fc->first + fc->nr) & (FORMS_MAX - 1);
	f = &fc->slot[k];
	f->at = fc->head;
	f->len = len;
	f->len1 = form1->len;
	f->nr = ix->nr;
	f->nmarks = marks->nr;
	f->sorted = (uint8_t)ix->sorted;
	f->has_gitlink = (uint8_t)ix->has_gitlink;
	atomic_store_explicit(&f->ready, 0, memory_order_relaxed);
	atomic_store_explicit(&f->pins, 1, memory_order_relaxed);
	f->pack = pack;
	f->offset = offset;
	f->next = fc->bucket[forms_hash(offset)];
	fc->bucket[forms_hash(offset)] = k + 1;
	for (int d = 0; d < FORMS_ANC; d++) {
		f->anc[d] = anc[d];
		if (anc[d] == ODB_NO_PLACE)
			continue;
		f->next_by_anc[d] = fc->by_anc[d][forms_hash(anc[d])];
		fc->by_anc[d][forms_hash(anc[d])] = k + 1;
	}
	fc->head += len;
	fc->nr++;
	pthread_mutex_unlock(&fc->lock);

	/* pinned, and not ready for readers: copy without the lock */
	{
		char *at = fc->arena + f->at;

		memcpy(at, form1->buf, form1->len);
		memcpy(at + form1->len, form256->buf, form256->len);
		memcpy(at + form1->len + form256->len, ix->at, ix_len);
		if (marks_len)
			memcpy(at + form1->len + form256->len + ix_len,
			       marks->state, marks_len);
	}
	atomic_store_explicit(&f->ready, 1, memory_order_release);
	atomic_fetch_sub_explicit(&f->pins, 1, memory_order_release);
	return;
out:
	pthread_mutex_unlock(&fc->lock);
}

/*
 * A reference for the tree stored at (pack, offset), whose delta chain
 * goes on through anc: copies of both forms of a tree named lately that
 * lists mostly the same entries, into out256 and out1, of its index
 * into ix (of out256), and of its SHA-1 form's marks.  The nearest
 * named tree along its delta chain, either way: pack-objects deltifies
 * older versions of a directory against newer ones and fast-import the
 * other way round, the walk names newer first, and walkers on other
 * threads are naming the nearest versions at the same moment.
 * *is_base: it is the tree's delta base.  0, or XL_ENOTFOUND.
 */
static int forms_get_ref(struct formcache *fc, const void *pack,
			 uint64_t offset, const uint64_t *anc,
			 struct buf *out256, struct buf *out1,
			 struct xlate_tree_ix *ix, struct hash_marks *marks,
			 int *is_base)
{
	struct form_slot *f = NULL;
	int ret = XL_ENOTFOUND;

	buf_reset(out256);
	buf_reset(out1);
	marks->nr = 0;
	*is_base = 0;
	pthread_mutex_lock(&fc->lock);
	for (int d = 0; d < FORMS_ANC && !f; d++) {
		if (anc[d] != ODB_NO_PLACE && (f = forms_find(fc, pack, anc[d])))
			*is_base = !d;
		else if (!(f = forms_find_by_anc(fc, d, pack, offset)) &&
			 anc[d] != ODB_NO_PLACE)
			f = forms_find_by_anc(fc, d, pack, anc[d]);
		/* still being copied in: as good as absent */
		if (f && !atomic_load_explicit(&f->ready, memory_order_acquire))
			f = NULL, *is_base = 0;
	}
	if (f)
		atomic_fetch_add_explicit(&f->pins, 1, memory_order_relaxed);
	pthread_mutex_unlock(&fc->lock);
	if (f) {
		const char *at = fc->arena + f->at;
		size_t ix_len = (f->nr + 1) * sizeof(*ix->at);
		size_t marks_len = f->nmarks * sizeof(*marks->state);
		size_t len256 = f->len - f->len1 - ix_len - marks_len;

		ret = buf_add(out1, at, f->len1) ?:
		      buf_add(out256, at + f->len1, len256) ?:
		      ARRAY_GROW(ix->at, f->nr, ix->alloc, 256) ?:
		      hash_marks_reserve(marks, f->nmarks);
		if (!ret) {
			memcpy(ix->at, at + f->len1 + len256, ix_len);
			if (marks_len)
				memcpy(marks->state, at + f->len1 + len256 + ix_len,
				       marks_len);
			marks->nr = f->nmarks;
			ix->buf = out256->buf;
			ix->len = out256->len;
			ix->nr = f->nr;
			ix->sorted = f->sorted;
			ix->has_gitlink = f->has_gitlink;
		}
		atomic_fetch_sub_explicit(&f->pins, 1, memory_order_release);
	}
	if (ret == XL_ENOMEM)
		err_clear();
	return ret ? XL_ENOTFOUND : 0;
}

/*
 * The recent forms' arena: FORMS_BYTES, taken as it fills.  Measured
 * on this project's benchmarks (2 cores, paired runs), against
 * converting every entry of every tree: a million objects, the walk
 * 36.9 s -> 26.0 s and the build 44.3 s -> 33.2 s (entries looked up
 * 163M -> 9.8M); the incremental build after a fetch of 6,307 objects
 * 1.28 s -> 0.95 s; 131k objects, no change either way (that walk waits
 * on reading objects and on the cache's writer).  Returns the arena's
 * size, or 0: not used.  XLATE_TEST_BASE_TABLES decides instead, for
 * the tests, which compare the ways: 0 (off), 1 (on), or "small" (on,
 * in 1 MiB, so that forms leave it all the time).
 */
static size_t forms_bytes(void)
{
	const char *force = getenv("XLATE_TEST_BASE_TABLES");

	if (force && !strcmp(force, "0"))
		return 0;
	if (force && !strcmp(force, "small"))
		return (size_t)1 << 20;
	return FORMS_BYTES;
}

/* ---- names already known -------------------------------------------- */

/*
 * Entry e's other name, of any of the build's tables (all are keyed
 * alike).  Not const: a const entry is only read through it.
 */
static unsigned char *other_of(const struct build *b,
			       const struct xmap_entry *e)
{
	return xmap_other((struct xmap_entry *)e, b->map.keysz);
}

/* Copy what the cache says of an object into the table. */
static struct xmap_entry *remember(struct xmap *m,
				   const struct cache_object *co)
{
	struct xmap_entry *e = xmap_add(m, &co->sha256);

	if (!e)
		return NULL;
	e->type = (uint8_t)co->type;
	e->size256 = co->size256;
	e->size1 = co->size1;
	e->is_new = 0;
	if (co->sha1.algo) {
		memcpy(xmap_other(e, m->keysz), co->sha1.hash,
		       co->sha1.algo->rawsz);
		e->state = XMAP_DONE;
	} else {
		xmap_set_bad(e, co->reason);
		if (co->retry)
			e->flags |= XMAP_F_RETRY;
	}
	return e;
}

/*
 * The table's entry for oid into *out, asking the cache on a miss; NULL
 * if unknown.  While the walkers run, a name the cache had is kept in
 * b->old, and *out then points to a copy of it in *copy (entries of
 * b->old move as it grows).  Returns 0 or an error: a cache that cannot
 * answer must not pass for "no such object" (that would refuse good
 * objects).
 */
static int lookup(struct build *b, const struct oid *oid,
		  struct xmap_entry *copy, struct xmap_entry **out)
{
	struct cache_object co;
	struct xmap_entry *e;
	int ret;

	*out = xmap_get(&b->map, oid);
	if (*out || b->cache_empty)
		return 0;
	if (b->walking) {
		pthread_rwlock_rdlock(&b->old_lock);
		if ((e = xmap_get(&b->old, oid))) {
			*copy = *e;
			*out = copy;
		}
		pthread_rwlock_unlock(&b->old_lock);
		if (e)
			return 0;
	}
	ret = cache_get(b->cache, oid, &co);
	if (ret == XL_ENOTFOUND)
		return 0;
	if (ret)
		return ret;
	if (!b->walking)
		return (*out = remember(&b->map, &co)) ? 0 : XL_ENOMEM;
	pthread_rwlock_wrlock(&b->old_lock);
	if ((e = remember(&b->old, &co))) {
		*copy = *e;
		*out = copy;
	}
	pthread_rwlock_unlock(&b->old_lock);
	return e ? 0 : XL_ENOMEM;
}

/*
 * Consecutive trees of a history mostly list the same entries, and the
 * walk converts them one after the other; a direct-mapped cache of names
 * already found, per walker, answers most lookups without touching the
 * big table (which misses memory every time).  Only final answers (named
 * objects) go in.  It must hold a few versions of the widest directory,
 * and stay in the processor's caches.  Measured: at a million objects
 * with directories of thousands of files, 8192 slots thrashed, and
 * 65536 or 131072 took the walk from 66 s to 38-47 s (the build's
 * processor time from 131 s to 79-94 s); at 131k objects, 131072 slots
 * (6.8 MB a walker, past the second-level cache) made the build 7%
 * slower than 8192.  So a slot for every 16 new objects, from 8192 to
 * 131072 (recent_slots()).
 */
#define RECENT_MIN 8192		/* powers of two */
#define RECENT_MAX 131072	/* at most 2^24: recent_slot() takes 3 bytes */

struct recent {
	unsigned char names[XMAP_NAMES];	/* as an xmap_entry's */
};

/* Does r hold `oid` (of b's own algorithm)?  Constant lengths, inlined. */
static inline int recent_holds(const struct build *b, const struct recent *r,
			       const struct oid *oid)
{
	return b->map.keysz == 32 ? !memcmp(r->names, oid->hash, 32) :
				    !memcmp(r->names, oid->hash, 20);
}

static size_t recent_slots(size_t new_objects)
{
	size_t n = RECENT_MIN;

	while (n < RECENT_MAX && n < new_objects / 16)
		n *= 2;
	return n;
}

/* A name is a hash already: its first bytes pick its slot. */
static inline size_t recent_slot(size_t mask, const struct oid *oid)
{
	return ((size_t)oid->hash[0] | (size_t)oid->hash[1] << 8 |
		(size_t)oid->hash[2] << 16) & mask;
}

/* A reference the repository lacks (see scan_refusal()). */
struct missing_ref {
	struct oid oid;
	uint8_t type;		/* what refers to it says: OBJ_NONE if nothing */
};

/*
 * One thread of the walk (see "the rest, on every core" below), with
 * what the converter's mapping met during its last conversion.
 */
struct sched;

struct walker {
	struct build *b;
	struct sched *s;
	struct recent *recent;		/* see build_map() */
	size_t recent_mask;		/* recent_slots() - 1 */
	struct buf content, conv;
	/*
	 * The tree being named: where it is stored, and a reference tree
	 * from b->forms (has_ref; ref_prepare()): its two forms, indexed
	 * for walking the tree against it (tree_merge.c), so that only the
	 * entries it does not share are looked at.  The reference is the
	 * tree's delta base (ref_is_base) or another tree near it on the
	 * pack's delta chains (forms_get_ref()).  base256 and base_ix: the
	 * delta base's native form, read back for the SHA-1 pack's delta
	 * when the reference is not the base.
	 */
	struct odb_place place;
	uint64_t anc[FORMS_ANC];	/* place.base, its base... */
	int has_ref, ref_is_base;
	uint32_t ref_for;		/* 1 + the entry they were made for */
	struct buf ref256, ref1, base256, delta, rec;
	struct xlate_tree_ix ref_ix, base_ix;
	struct xlate_tree_ix conv_ix;	/* the tree's own, when converted
					   against ref (conv_ix_for: 1 + i) */
	/* the SHA-1 forms' hash marks: the tree's, and ref's */
	struct hash_marks marks, ref_marks;
	uint32_t conv_ix_for;
	uint32_t *deps;			/* collect_dep(): entries to wait on */
	size_t ndeps, alloc_deps;
	int has_gitlink;		/* collect_dep(): a tree with 160000 entries */
	struct oid blocked;		/* see build_map() */
	int has_blocked;
	int map_failed, map_retry;	/* a reference failed, for now only */
	struct oid map_bad;		/* the reference that failed */
	int fatal;			/* a cache error met inside a mapping */
	/* scan_refusal(): what a refusal for now found */
	int permanent;			/* a reference refused for good */
	struct missing_ref *miss;	/* references the repository lacks */
	size_t nmiss, alloc_miss;
};

/*
 * The mapping the converter uses: names of what an object refers to.
 * A reference to an object of this build not yet named (a tree behind a
 * file mode, in an odd repository) is noted in w->blocked, so that the
 * walk can name it first and convert again.
 */
/*
 * A name from the map, for an object the repository lacks: kept in the
 * cache the first time a conversion uses it (before the row of what
 * refers to it can be committed), so that readers convert alike.
 */
static int use_known(struct walker *w, struct xmap_entry *k,
		     const struct oid *in, struct oid *out)
{
	struct build *b = w->b;
	int first, ret;

	oid_from_raw(out, b->other, other_of(b, k));
	pthread_mutex_lock(&b->missing_lock);
	first = !k->is_new;
	k->is_new = 1;
	pthread_mutex_unlock(&b->missing_lock);
	if (first && (ret = cache_put_known(b->cache, in, out))) {
		pthread_mutex_lock(&b->missing_lock);
		k->is_new = 0;
		pthread_mutex_unlock(&b->missing_lock);
		w->fatal = ret;
		return ret;
	}
	return 0;
}

static int build_map(void *data, const struct oid *in, struct oid *out)
{
	struct walker *w = data;
	struct recent *r = w->recent ?
		&w->recent[recent_slot(w->recent_mask, in)] : NULL;
	struct xmap_entry *e, copy;
	char hex[OID_HEXSZ_MAX + 1];
	uint8_t state;
	int ret;

	if (r && recent_holds(w->b, r, in)) {
		oid_from_raw(out, w->b->other, r->names + w->b->map.keysz);
		return 0;
	}
	if ((ret = lookup(w->b, in, &copy, &e))) {
		w->fatal = ret;
		return ret;
	}
	if (!e && (e = xmap_get(&w->b->known, in)))
		return use_known(w, e, in, out);
	if (!e) {
		/* missing now; a fetch or an unshallow may bring it */
		w->map_failed = w->map_retry = 1;
		w->map_bad = *in;
		return err_set(XL_ENOTFOUND, "%s is not in the repository",
			       oid_to_hex_r(hex, in));
	}
	state = xmap_state(e);
	if (state == XMAP_DONE) {
		oid_from_raw(out, w->b->other, other_of(w->b, e));
		if (r) {
			memcpy(r->names, in->hash, w->b->map.keysz);
			memcpy(r->names + w->b->map.keysz, out->hash,
			       w->b->other->rawsz);
		}
		return 0;
	}
	if (state == XMAP_PENDING && !w->has_blocked) {
		w->blocked = *in;
		w->has_blocked = 1;
	}
	if (state == XMAP_BAD) {
		w->map_failed = 1;
		w->map_retry = !!(e->flags & XMAP_F_RETRY);
		w->map_bad = *in;
	}
	return XL_EUNSUPPORTED;
}

/*
 * A gitlink: as upstream, the repository's own name for the commit if it
 * has one (or its refusal); only for a commit it does not have, the
 * submodule map.  A gitlink neither names is refused for as long as the
 * settings (which include the map) stay.
 */
static int build_map_gitlink(void *data, const struct oid *in, struct oid *out)
{
	struct walker *w = data;
	struct build *b = w->b;
	struct xmap_entry *e, copy;
	char hex[OID_HEXSZ_MAX + 1];
	int ret;

	if ((ret = lookup(b, in, &copy, &e))) {
		w->fatal = ret;
		return ret;
	}
	if (e)
		return build_map(data, in, out);
	if ((e = xmap_get(&b->known, in))) {
		oid_from_raw(out, b->other, other_of(b, e));
		return 0;
	}
	w->map_failed = 1;
	w->map_retry = 0;
	w->map_bad = *in;
	return err_set(XL_ENOTFOUND, "gitlink %s is not in the submodule map",
		       oid_to_hex_r(hex, in));
}

/* Map pairs go to their own table: they must never hide a real name. */
static int add_known_pair(void *data, const struct oid *o256,
			  const struct oid *o1)
{
	struct build *b = data;
	/* a map says "<sha256> <sha1>" whichever way the repository goes */
	int reverse = o1->algo == repo_algo(b->repo);
	struct xmap_entry *e = xmap_add(&b->known, reverse ? o1 : o256);

	if (!e)
		return XL_ENOMEM;
	e->type = OBJ_NONE;	/* a map does not say */
	memcpy(other_of(b, e), (reverse ? o256 : o1)->hash, b->other->rawsz);
	e->state = XMAP_DONE;
	return 0;
}

static uint32_t entry_index(const struct build *b, const struct xmap_entry *e)
{
	return (uint32_t)(e - b->map.entries);
}

static void entry_oid(const struct build *b, uint32_t i, struct oid *oid)
{
	oid_from_raw(oid, repo_algo(b->repo), b->map.entries[i].names);
}

/* New object i (of b->todo): its entry, its name. */
static struct xmap_entry *todo_entry(const struct build *b, size_t i)
{
	return &b->map.entries[b->todo[i]];
}

static void todo_oid(const struct build *b, size_t i, struct oid *oid)
{
	entry_oid(b, b->todo[i], oid);
}

static int todo_add(struct build *b, const struct xmap_entry *e)
{
	if (ARRAY_GROW(b->todo, b->nr, b->alloc, 1024))
		return XL_ENOMEM;
	b->todo[b->nr++] = entry_index(b, e);
	return 0;
}

static int cmp_todo(const void *x, const void *y, void *data)
{
	const struct xmap *m = data;

	return memcmp(m->entries[*(const uint32_t *)x].names,
		      m->entries[*(const uint32_t *)y].names, m->keysz);
}

/* ---- a first build's rows ------------------------------------------ */

/*
 * A first build.  Streamed rows go into the names' two B-trees (by
 * SHA-256 and by SHA-1 name) at random places: a descent each, and once
 * the trees outgrow sqlite's page cache, disk reads and writes of pages
 * all over the file.  At a million objects that writer took a core's
 * quarter of the walk's time (the walk 22.2 s, 16.1 s without it) and
 * 5 s more of the kernel's.  When the cache holds no object yet, every
 * row is new and b->map holds them all; so a big first build writes no
 * row while it walks, and at the end puts them all, in name order (the
 * order of b->todo) into the empty table in one statement
 * (cache_put_all()), with the index by SHA-1 name set aside and made
 * again by a sort (cache_bulk_begin()).  At a million objects on 2
 * cores: the walk 14.9 s, the rows 3.2 s (2.4 s in one statement; a
 * cache_put() each before), the build 24.0 s against 28.0 s streaming
 * (medians of 3), and its peak RssAnon 419 MiB, the writer's queue
 * gone.
 *
 * What that gives up: a first build killed or failed before its end
 * leaves nothing (the next starts over), a mount building in the
 * background shows no object until then, and a second build on the
 * same cache waits for the whole of it (the batch is open from start
 * to end; the busy timeout is 10 s).  Streaming keeps a killed
 * build's batches, which pays for builds that follow a fetch.  Below
 * BULK_MIN objects a build takes a fraction of a second, a batch or
 * two, and it makes no difference.  Above it the rows at the end win
 * now that they go in one statement, and the walk's locks no longer
 * sleep: on 2 cores, 33k objects 0.29 s against 0.30 s streaming, 131k
 * objects 1.11 s against 1.23 s (medians of 7; at 131k it was 1.54
 * against 1.50 before those changes, when BULK_MIN was 2^18).
 * XLATE_TEST_BULK=1 or 0 decides instead, for the tests.
 */
#define BULK_MIN ((size_t)1 << 14)

static int bulk_wanted(const struct build *b)
{
	const char *force = getenv("XLATE_TEST_BULK");

	if (!b->cache_empty || !b->nr)
		return 0;
	if (force && *force)
		return strcmp(force, "0") != 0;
	return b->nr >= BULK_MIN;
}

/* The row of b->todo[i] for cache_put_all(), or 0 for none. */
static int bulk_row(void *data, size_t i, struct cache_object *out)
{
	struct build *b = data;
	struct xmap_entry *e = todo_entry(b, i);
	uint8_t state = xmap_state(e);
	struct oid oid;

	/* unreadable: left for the next build, as store_row() does */
	if (state == XMAP_PENDING ||
	    (state == XMAP_BAD && (e->flags & XMAP_F_UNREADABLE)))
		return 0;
	todo_oid(b, i, &oid);
	row_of(&oid, e, state, out);
	return 1;
}

/* A bulk build's rows, in name order, inside the open batch. */
static int bulk_store(struct build *b)
{
	int ret = cache_bulk_begin(b->cache);

	if (!ret)
		ret = cache_put_all(b->cache, b->nr, bulk_row, b);
	return ret ?: cache_bulk_end(b->cache);
}

/* ---- gather and classify -------------------------------------------- */

static int note_object(const struct oid *oid, void *data)
{
	struct build *b = data;
	struct xmap_entry *e, copy;
	size_t had = b->map.nr;
	int ret;

	if (b->cache_empty) {
		/* nothing to ask the cache: one probe that adds if absent */
		if (!(e = xmap_add(&b->map, oid)))
			return XL_ENOMEM;
		if (b->map.nr == had)
			return 0;	/* seen in another pack */
	} else {
		if ((ret = lookup(b, oid, &copy, &e)))
			return ret;
		if (e)
			return 0;	/* stored already, or seen in another pack */
		if (!(e = xmap_add(&b->map, oid)))
			return XL_ENOMEM;
	}
	e->is_new = 1;
	return todo_add(b, e);
}

static int note_pack(const struct odb_pack_info *info, void *data)
{
	struct build *b = data;
	int ret;

	if (cache_pack_known(b->cache, info->checksum) == 1)
		return 0;
	for (uint32_t i = 0; i < info->objects; i++) {
		struct oid oid;

		odb_pack_object(info, i, &oid);
		if ((ret = note_object(&oid, b)))
			return ret;
	}
	if (ARRAY_GROW(b->packs, b->nr_packs, b->alloc_packs, 8))
		return XL_ENOMEM;
	memcpy(b->packs[b->nr_packs].checksum, info->checksum,
	       sizeof(info->checksum));
	b->packs[b->nr_packs++].objects = info->objects;
	return 0;
}

/*
 * Objects in the packs the cache has not finished: what the name table
 * will hold, mostly.  Sized for every pack, an incremental build at a
 * million objects had a 64 MB table for 6,307 names, and each of its
 * millions of lookups of an older name missed memory there before it
 * went on (walk: 8 s; sized so, 1.6-2.1 s).
 */
struct pack_counts {
	struct build *b;
	size_t todo;
};

static int count_packed(const struct odb_pack_info *info, void *data)
{
	struct pack_counts *pc = data;

	if (cache_pack_known(pc->b->cache, info->checksum) != 1)
		pc->todo += info->objects;
	return 0;
}

/*
 * One of the cache's refusals for now: walk it again as if new.  The
 * gathering may have looked it up already (it is in a pack not yet
 * finished): then its entry says what the cache said, and is made new.
 */
static int note_retry(const struct cache_object *co, void *data)
{
	struct build *b = data;
	struct xmap_entry *e = xmap_add(&b->map, &co->sha256);

	if (!e)
		return XL_ENOMEM;
	if (e->is_new)
		return 0;	/* gathered as new already */
	free(e->reason);
	e->reason = NULL;
	e->state = XMAP_PENDING;
	e->is_new = 1;
	e->flags = XMAP_F_RETRIED;
	return todo_add(b, e);
}

/*
 * A pack holding an object that could not be read is not finished: drop
 * it from the list to mark, so that the next build gathers it again.
 * Only runs when something was unreadable.
 */
/* A pack the odb could not open: counted, and the first one named. */
static int note_broken_pack(const char *path, const char *reason, void *data)
{
	struct xlate_build_stats *st = data;

	if (!st->broken_packs++)
		snprintf(st->first_broken_pack, sizeof(st->first_broken_pack),
			 "%s: %s", path, reason);
	for (const char *p = path; *p; p++)
		st->broken_packs_sum = st->broken_packs_sum * 31 + (unsigned char)*p;
	return 0;
}

static int unmark_pack(const struct odb_pack_info *info, void *data)
{
	struct build *b = data;

	for (size_t p = 0; p < b->nr_packs; p++) {
		if (strcmp(b->packs[p].checksum, info->checksum))
			continue;
		for (uint32_t i = 0; i < info->objects; i++) {
			struct xmap_entry *e;
			struct oid oid;

			odb_pack_object(info, i, &oid);
			e = xmap_get(&b->map, &oid);
			if (e && e->state == XMAP_BAD &&
			    (e->flags & XMAP_F_UNREADABLE)) {
				b->packs[p] = b->packs[--b->nr_packs];
				break;
			}
		}
		break;
	}
	return 0;
}

/*
 * A read error about the object itself (its bytes, or its absence) makes
 * it unreadable for this build; any other stops the build.
 */
static int is_unreadable(int ret)
{
	return ret == XL_ECORRUPT || ret == XL_ETOOBIG || ret == XL_ENOTFOUND;
}

/* Mark e unreadable after the read error `ret` (err_msg() says why). */
static void set_unreadable(struct build *b, struct xmap_entry *e, int ret)
{
	char reason[1100];

	snprintf(reason, sizeof(reason), "cannot read: %s", err_msg());
	e->flags |= XMAP_F_UNREADABLE | XMAP_F_RETRY;
	/* a refusal for now whose object has left: leave its row alone */
	if (ret == XL_ENOTFOUND && (e->flags & XMAP_F_RETRIED))
		e->flags |= XMAP_F_GONE;
	xmap_set_bad(e, reason);	/* published last: walkers read flags */
	b->nr_unreadable++;
}

/* ---- work on every thread ------------------------------------------ */

static int build_threads(const struct build *b)
{
	int threads = b->opts->threads > 0 ? b->opts->threads :
		(int)sysconf(_SC_NPROCESSORS_ONLN);

	return threads < 1 ? 1 : threads > 64 ? 64 : threads;
}

/*
 * fn(b, i, scratch) for every i below n, on the build's threads (this
 * one too), in blocks of PAR_BLOCK.  fn may only write what belongs to
 * i.  The first error stops them all and is returned with its message
 * (err_msg() is per thread).
 */
#define PAR_BLOCK 64

typedef int (*par_fn)(struct build *b, size_t i, struct buf *scratch);

struct par {
	struct build *b;
	size_t n;
	par_fn fn;
	atomic_size_t next;		/* the next block to take */
	pthread_mutex_t lock;
	int error;			/* guarded by lock: the first error */
	char errmsg[1024];		/* and its message */
};

static void *par_worker(void *arg)
{
	struct par *p = arg;
	struct buf scratch = BUF_INIT;
	size_t block;

	while ((block = atomic_fetch_add(&p->next, 1)) < (p->n + PAR_BLOCK - 1) / PAR_BLOCK) {
		size_t end = (block + 1) * PAR_BLOCK < p->n ? (block + 1) * PAR_BLOCK : p->n;

		for (size_t i = block * PAR_BLOCK; i < end; i++) {
			int ret = p->fn(p->b, i, &scratch);

			if (!ret)
				continue;
			pthread_mutex_lock(&p->lock);
			if (!p->error) {
				p->error = ret;
				snprintf(p->errmsg, sizeof(p->errmsg), "%s", err_msg());
			}
			pthread_mutex_unlock(&p->lock);
			atomic_store(&p->next, p->n);	/* stop all */
			break;
		}
	}
	buf_release(&scratch);
	return NULL;
}

static int par_for(struct build *b, size_t n, par_fn fn)
{
	struct par p = { .b = b, .n = n, .fn = fn };
	int threads = build_threads(b), started = 0;
	pthread_t tid[64];

	atomic_init(&p.next, 0);
	pthread_mutex_init(&p.lock, NULL);
	for (int t = 1; t < threads && (size_t)t * PAR_BLOCK < n; t++)
		if (!pthread_create(&tid[started], NULL, par_worker, &p))
			started++;
	par_worker(&p);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&p.lock);
	return p.error ? err_set(p.error, "%s", p.errmsg) : 0;
}

/* ---- classify -------------------------------------------------------- */

/* Type and size of new object i; an unreadable one is marked. */
static int classify_one(struct build *b, size_t i, struct buf *scratch)
{
	/* entries do not move: nothing is added to the table meanwhile */
	struct xmap_entry *e = todo_entry(b, i);
	enum obj_type type;
	struct oid oid;
	size_t size;
	int ret;

	todo_oid(b, i, &oid);
	if ((ret = odb_read_header(b->odb, &oid, &type, &size))) {
		if (!is_unreadable(ret))
			return ret;
		set_unreadable(b, e, ret);
		return 0;
	}
	e->type = (uint8_t)type;
	e->size256 = size;
	return 0;
}

static int classify(struct build *b)
{
	return par_for(b, b->nr, classify_one);
}

static int check_collision(struct build *b, const struct oid *oid,
			   const struct oid *sha1);

/* ---- blobs, in parallel --------------------------------------------- */

/*
 * The name in `algo` of "blob <size>\0" + content, streamed: no whole
 * copy in memory.  It goes to out (algo->rawsz bytes).
 */
static int hash_blob(struct odb *odb, const struct oid *oid,
		     const struct hash_algo *algo, unsigned char *out,
		     struct buf *scratch)
{
	struct odb_stream *st;
	enum obj_type type;
	size_t size, got;
	EVP_MD_CTX *ctx;
	char hdr[32];
	int ret, n;

	if ((ret = odb_read_small(odb, oid, &type, &size, scratch, STREAM_MIN)) < 0)
		return ret;
	if (ret == 0) {
		struct oid name;

		if ((ret = hash_object(algo, "blob", scratch->buf,
				       scratch->len, &name)))
			return ret;
		memcpy(out, name.hash, algo->rawsz);
		return 0;
	}
	if ((ret = odb_stream_open(odb, oid, &st, &type, &size)))
		return ret;
	if (!(ctx = EVP_MD_CTX_new())) {
		odb_stream_close(st);
		return err_set(XL_ENOMEM, "out of memory");
	}
	n = snprintf(hdr, sizeof(hdr), "blob %zu", size);
	EVP_DigestInit_ex(ctx, hash_md(algo), NULL);
	EVP_DigestUpdate(ctx, hdr, (size_t)n + 1);
	buf_reset(scratch);
	if (!(ret = buf_grow(scratch, 1 << 16))) {
		while (!(ret = odb_stream_read(st, scratch->buf, 1 << 16, &got)) && got)
			EVP_DigestUpdate(ctx, scratch->buf, got);
	}
	if (!ret)
		EVP_DigestFinal_ex(ctx, out, NULL);
	EVP_MD_CTX_free(ctx);
	odb_stream_close(st);
	return ret;
}

/* The SHA-1 name of new object i, if it is a blob still to name. */
static int blob_one(struct build *b, size_t i, struct buf *scratch)
{
	struct xmap_entry *e = todo_entry(b, i);
	struct oid oid;
	int ret;

	if (e->state != XMAP_PENDING || e->type != OBJ_BLOB)
		return 0;
	todo_oid(b, i, &oid);
	ret = hash_blob(b->odb, &oid, b->other, other_of(b, e), scratch);
	if (ret && !is_unreadable(ret))
		return ret;
	if (ret) {
		set_unreadable(b, e, ret);
	} else {
		e->size1 = e->size256;
		e->state = XMAP_DONE;
	}
	atomic_fetch_add(&b->done, 1);
	return 0;
}

static int name_blobs(struct build *b)
{
	int ret;

	if ((ret = par_for(b, b->nr, blob_one)))
		return ret;

	/*
	 * Blobs claim their SHA-1 names like everything else.  All blobs
	 * come before any tree, so no object has used a blob's name yet
	 * when a collision refuses it.  The cost is one insert into the
	 * claims table per blob (and, when the cache is not empty, one
	 * lookup by SHA-1 name, as for every other new object).
	 */
	for (size_t i = 0; i < b->nr && !ret; i++) {
		struct xmap_entry *e = todo_entry(b, i);
		struct oid name, sha1;
		const struct oid *oid = &name;

		/* every new blob was pending (the unreadable ones have no type) */
		if (e->type != OBJ_BLOB)
			continue;
		todo_oid(b, i, &name);
		if (e->state == XMAP_BAD) {
			ret = store(b, oid);	/* counts it; stores nothing */
			continue;
		}
		oid_from_raw(&sha1, b->other, other_of(b, e));
		pthread_mutex_lock(&b->names_lock);
		ret = check_collision(b, oid, &sha1);
		pthread_mutex_unlock(&b->names_lock);
		if (ret)	/* 1: refused and stored by check_collision */
			ret = ret < 0 ? ret : 0;
		else
			ret = store(b, oid);
	}
	return ret;
}

/* ---- the rest, on every core ---------------------------------------- */

/*
 * Trees, commits and tags are named by walkers, one per thread, that
 * share one schedule: Kahn's algorithm over a graph found as it is
 * walked, so that nobody holds the whole graph.
 *
 *   open    read the object and list what it refers to that is new in
 *           this build and not settled yet; it gets an edge from each of
 *           those, and each of them not yet taken is queued to be
 *           opened.  An object with nothing to wait for is ready.
 *   close   everything it refers to is settled: convert, hash, claim
 *           the SHA-1 name, queue the row, then publish the name and
 *           wake what waits on it; what has nothing left to wait for is
 *           ready.
 *
 * Both queues are stacks and ready work goes first, so the walk runs
 * depth first like the one-thread walk it replaced: what is held at a
 * time (trees read and waiting on their subtrees, edges) follows the
 * depth of the trees and the number of walkers, not the size of the
 * repository.  History is deep, so a commit waiting on its parent holds
 * no content; it is read again when it closes.  Nothing recurses.
 *
 * A row is queued for the cache before its object is published as
 * settled, so rows still reach the cache after the rows of everything
 * they refer to: a mount that finds an object in the cache while a build
 * runs finds its references named too.
 *
 * When nothing is queued and nobody works, objects still waiting can
 * only be waiting on each other: a reference cycle, which only a corrupt
 * repository has (names are hashes).  They are refused.
 *
 * Locks, always taken in this order: sched.lock (queues, nodes, edges),
 * b->names_lock (SHA-1 names being claimed), b->old_lock (names the
 * cache had), b->lock (rows), then the writer's and the cache's.  An
 * entry of b->map is written only by the walker that holds its node
 * (and, for a collision, under names_lock); its state is published last
 * (xmap_publish) and read with xmap_state().
 */
enum node_phase {
	NODE_NEW = 0,		/* not taken yet */
	NODE_TAKEN,		/* a walker is opening it */
	NODE_OPEN,		/* waiting, ready, or being closed */
	NODE_CLOSED,		/* settled */
};

struct node {
	uint32_t waiting;	/* references not settled yet */
	uint32_t waiters;	/* 1 + the first edge of those waiting on it */
	uint8_t phase;		/* enum node_phase */
	uint8_t has_gitlink;
	struct buf *content;	/* a tree's or tag's bytes, open to close */
};

struct edge {
	uint32_t node;		/* the object that waits */
	uint32_t next;		/* 1 + the next edge of the list; 0: none */
};

/* A stack of entry indexes. */
struct queue {
	uint32_t *v;
	size_t nr, alloc;
};

struct sched {
	pthread_mutex_t lock;
	pthread_cond_t more;		/* work queued, or the walk ended */
	struct node *nodes;		/* one per entry of b->map */
	struct edge *edges;
	size_t nr_edges, alloc_edges;
	uint32_t free_edges;		/* 1 + the first unused edge */
	struct queue ready, open;	/* to close, to open */
	int busy;			/* walkers at work */
	int ended;
	int error;			/* the first error that stops the walk */
	char errmsg[1024];		/* and its message (err_msg() is per thread) */
};

/* Queue entry i on q (under s->lock), and wake a walker for it. */
static int push(struct sched *s, struct queue *q, uint32_t i)
{
	if (ARRAY_GROW(q->v, q->nr, q->alloc, 1024))
		return err_set(XL_ENOMEM, "out of memory");
	q->v[q->nr++] = i;
	pthread_cond_signal(&s->more);
	return 0;
}

/*
 * Under s->lock: make i wait on j, unless j is settled, and see that j
 * is opened.  j publishes its state before it takes the lock to wake
 * its waiters, so either i sees it settled here or j wakes i.
 */
static int wait_on(struct build *b, struct sched *s, uint32_t i, uint32_t j)
{
	uint32_t k;

	if (xmap_state(&b->map.entries[j]) != XMAP_PENDING)
		return 0;
	if ((k = s->free_edges)) {
		s->free_edges = s->edges[k - 1].next;
	} else {
		if (s->nr_edges >= UINT32_MAX ||
		    ARRAY_GROW(s->edges, s->nr_edges, s->alloc_edges, 1024))
			return err_set(XL_ENOMEM, "out of memory");
		k = (uint32_t)++s->nr_edges;
	}
	s->edges[k - 1].node = i;
	s->edges[k - 1].next = s->nodes[j].waiters;
	s->nodes[j].waiters = k;
	s->nodes[i].waiting++;
	return s->nodes[j].phase == NODE_NEW ? push(s, &s->open, j) : 0;
}

/* Entry i is settled and published: wake what waits on it. */
static int walk_settled(struct walker *w, uint32_t i)
{
	struct sched *s = w->s;
	struct node *n = &s->nodes[i];
	struct buf *content;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	for (uint32_t k = n->waiters, next; k; k = next) {
		struct edge *ed = &s->edges[k - 1];
		struct node *m = &s->nodes[ed->node];

		next = ed->next;
		if (!--m->waiting && m->phase == NODE_OPEN && !ret)
			ret = push(s, &s->ready, ed->node);
		ed->next = s->free_edges;
		s->free_edges = k;
	}
	n->waiters = 0;
	n->phase = NODE_CLOSED;
	content = n->content;
	n->content = NULL;
	pthread_mutex_unlock(&s->lock);
	if (content) {
		buf_release(content);
		free(content);
	}
	return ret;
}

/* Refuse entry i (its flags set already) for `why`, and wake its waiters. */
static int walk_refuse(struct walker *w, uint32_t i, const char *why)
{
	struct build *b = w->b;
	struct xmap_entry *e = &b->map.entries[i];
	struct oid oid;
	int ret;

	entry_oid(b, i, &oid);
	xmap_set_bad(e, why);
	atomic_fetch_add(&b->done, 1);
	if ((ret = store_row(b, &oid, e, XMAP_BAD, NULL, NULL)))
		return ret;
	return walk_settled(w, i);
}

/*
 * Entry i could not be read (ret from the read, err_msg() why): it is
 * left for the next build, unless the error stops this one.
 */
static int walk_unreadable(struct walker *w, uint32_t i, int ret)
{
	struct build *b = w->b;
	struct xmap_entry *e = &b->map.entries[i];
	struct oid oid;

	if (!is_unreadable(ret))
		return ret;
	entry_oid(b, i, &oid);
	set_unreadable(b, e, ret);
	atomic_fetch_add(&b->done, 1);
	if ((ret = store_row(b, &oid, e, XMAP_BAD, NULL, NULL)))	/* counts it */
		return ret;
	return walk_settled(w, i);
}

static int collect_dep(void *data, enum xlate_ref_kind kind,
		       const struct oid *oid, const char *name,
		       size_t name_len)
{
	struct walker *w = data;
	struct xmap_entry *e;

	if (kind == XLATE_REF_GITLINK)
		w->has_gitlink = 1;	/* and if it is ours and new, a dependency */
	/*
	 * Blobs are all named before this walk, so a file entry cannot hold
	 * it up; skipping their lookup halves the walk's table traffic.  (A
	 * file entry naming a tree, in an odd repository, is caught when the
	 * conversion meets it: see build_map.)
	 */
	if (kind == XLATE_REF_TREE_ENTRY)
		return 0;
	/* named recently (a subtree the last commit had too): settled */
	if (recent_holds(w->b, &w->recent[recent_slot(w->recent_mask, oid)], oid))
		return 0;
	e = xmap_get(&w->b->map, oid);
	/* only objects of this build still to be named hold the walk up */
	if (!e || xmap_state(e) != XMAP_PENDING)
		return 0;
	if (ARRAY_GROW(w->deps, w->ndeps, w->alloc_deps, 8))
		return XL_ENOMEM;
	w->deps[w->ndeps++] = entry_index(w->b, e);
	return 0;
}

/* collect_dep() for a tree's own entries, walked against its reference. */
static int collect_own_dep(void *data, const struct xlate_merge_step *s)
{
	struct walker *w = data;
	struct oid oid;
	enum xlate_ref_kind kind;

	if (s->kind == XLATE_MERGE_SAME)
		return 0;	/* the reference's: named already */
	oid_from_raw(&oid, repo_algo(w->b->repo),
		     (const unsigned char *)s->name + s->name_len);
	kind = (s->mode & 0170000) == 0160000 ? XLATE_REF_GITLINK :
	       (s->mode & 0170000) == 0040000 ? XLATE_REF_SUBTREE :
	       XLATE_REF_TREE_ENTRY;
	return collect_dep(w, kind, &oid, s->name, s->name_len - 1);
}

static void ref_prepare(struct walker *w, uint32_t i, const struct oid *oid);
static int walk_close(struct walker *w, uint32_t i);

/* Open entry i, which this walker has taken. */
static int walk_open(struct walker *w, uint32_t i)
{
	struct build *b = w->b;
	struct sched *s = w->s;
	struct node *n = &s->nodes[i];
	struct oid oid;
	enum obj_type type;
	int ret;

	entry_oid(b, i, &oid);
	if ((ret = odb_read(b->odb, &oid, &type, &w->content)))
		return walk_unreadable(w, i, ret);
	w->ndeps = 0;
	w->has_gitlink = 0;
	/* a tree's reference answers for most of its entries, here and when named */
	w->has_ref = 0;
	w->ref_for = 0;
	if (type == OBJ_TREE && b->forms.slot)
		ref_prepare(w, i, &oid);
	/*
	 * What a tree shares with its reference is named; a reference with
	 * gitlinks is not used here, so that has_gitlink sees every entry.
	 */
	if (w->has_ref && !w->ref_ix.has_gitlink) {
		ret = xlate_tree_merge(&w->ref_ix, w->content.buf, w->content.len,
				       collect_own_dep, w, NULL, NULL);
		if (ret && ret != XL_ENOMEM) {
			err_clear();	/* xlate_refs() says why, as upstream */
			w->ndeps = 0;
			w->has_gitlink = 0;
		}
	}
	if (!w->has_ref || w->ref_ix.has_gitlink || (ret && ret != XL_ENOMEM))
		ret = xlate_refs(repo_algo(b->repo), type, w->content.buf,
				 w->content.len, collect_dep, w);
	if (ret == XL_ECORRUPT)
		return walk_refuse(w, i, err_msg());
	if (ret)
		return ret;
	n->has_gitlink = (uint8_t)w->has_gitlink;
	if (type != OBJ_COMMIT) {
		/* history is deep: a commit is read again when it closes */
		if (!(n->content = malloc(sizeof(*n->content))))
			return err_set(XL_ENOMEM, "out of memory");
		*n->content = w->content;
		buf_init(&w->content);
	}
	pthread_mutex_lock(&s->lock);
	n->phase = NODE_OPEN;
	/*
	 * Last pushed, first opened: a commit's tree before its parents,
	 * so that trees are named newest first, as pack-objects chose
	 * their delta bases (see struct formcache).
	 */
	for (size_t d = w->ndeps; d-- > 0 && !ret;)
		ret = wait_on(b, s, i, w->deps[d]);
	if (!ret && !n->waiting) {
		/*
		 * Ready now: a tree is named at once, by this walker, while
		 * its base's table is made (ready work is taken first anyway).
		 */
		if (type == OBJ_TREE) {
			pthread_mutex_unlock(&s->lock);
			return walk_close(w, i);
		}
		ret = push(s, &s->ready, i);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/*
 * Every reference of an object refused for now.  Is one refused for
 * good (w->permanent)?  Then so is the object, whatever the first
 * failing reference said (the converter stops at the first).  Which
 * does the repository lack (w->miss, by what refers to them)?  A name
 * found missing once is not looked up again: on a partial clone one
 * blob is missing from many trees.
 */
static int scan_refusal(void *data, enum xlate_ref_kind kind,
			const struct oid *oid, const char *name, size_t len)
{
	struct walker *w = data;
	struct build *b = w->b;
	struct xmap_entry *e, copy;
	uint8_t type;
	int known;

	pthread_mutex_lock(&b->missing_lock);
	known = xmap_get(&b->missing, oid) != NULL;
	pthread_mutex_unlock(&b->missing_lock);
	if (!known) {
		if (lookup(b, oid, &copy, &e))
			return 0;	/* no answer: stay with "for now" */
		if (e) {
			if (xmap_state(e) == XMAP_BAD && !(e->flags & XMAP_F_RETRY))
				w->permanent = 1;
			return 0;
		}
		if (xmap_get(&b->known, oid))
			return 0;	/* the map names it */
	}
	switch (kind) {
	case XLATE_REF_GITLINK:
		/* another repository's commit: the map decides, and for good */
		if (!xmap_get(&b->known, oid) &&
		    !xlate_builtin(oid, b->other, &(struct oid){ 0 }))
			w->permanent = 1;
		return 0;
	case XLATE_REF_TREE_ENTRY:
		type = OBJ_BLOB;
		break;
	case XLATE_REF_SUBTREE:
	case XLATE_REF_TREE:
		type = OBJ_TREE;
		break;
	case XLATE_REF_PARENT:
		type = OBJ_COMMIT;
		break;
	default:
		type = OBJ_NONE;	/* a tag's target: its type line may lie */
		break;
	}
	if (ARRAY_GROW(w->miss, w->nmiss, w->alloc_miss, 16))
		return XL_ENOMEM;
	w->miss[w->nmiss].oid = *oid;
	w->miss[w->nmiss++].type = type;
	return 0;
}

/*
 * Count what w->miss found (an object refused for now, and so walked
 * again with the whole retry set: the count is made anew each time).
 */
static int count_missing(struct walker *w)
{
	struct build *b = w->b;
	int ret = 0;

	pthread_mutex_lock(&b->missing_lock);
	for (size_t k = 0; k < w->nmiss && !ret; k++) {
		size_t had = b->missing.nr;
		struct xmap_entry *e = xmap_add(&b->missing, &w->miss[k].oid);

		if (!e)
			ret = XL_ENOMEM;
		else if (b->missing.nr != had)
			e->type = w->miss[k].type;
	}
	pthread_mutex_unlock(&b->missing_lock);
	return ret;
}

static int claims_init(struct claims *c, size_t hint)
{
	free(c->slot);
	c->nr = 0;
	c->cap = 1024;
	while (c->cap < 2 * hint)
		c->cap *= 2;
	c->slot = calloc(c->cap, sizeof(*c->slot));
	return c->slot ? 0 : err_set(XL_ENOMEM, "out of memory");
}

/* The slot of the entry that claimed sha1, or the empty one where it would go. */
static uint32_t *claims_find(const struct claims *c, const struct xmap *map,
			     const unsigned char *sha1)
{
	uint64_t h;
	size_t i;

	memcpy(&h, sha1, sizeof(h));
	for (i = (size_t)h & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		const unsigned char *o;

		if (!c->slot[i])
			return &c->slot[i];
		o = xmap_other(&map->entries[c->slot[i] - 1], map->keysz);
		/* constant lengths, inlined (the other name: 20 or 32 bytes) */
		if (map->keysz == 32 ? !memcmp(o, sha1, 20) : !memcmp(o, sha1, 32))
			return &c->slot[i];
	}
}

/* Entry `idx`, whose sha1 is set, claims its name (not claimed yet). */
static int claims_add(struct claims *c, const struct xmap *map, uint32_t idx)
{
	if (2 * (c->nr + 1) > c->cap) {
		struct claims bigger = { 0 };

		if (claims_init(&bigger, c->nr + 1))
			return XL_ENOMEM;
		for (size_t i = 0; i < c->cap; i++)
			if (c->slot[i])
				*claims_find(&bigger, map,
					     xmap_other(&map->entries[c->slot[i] - 1],
							map->keysz)) =
					c->slot[i];
		bigger.nr = c->nr;
		free(c->slot);
		*c = bigger;
	}
	*claims_find(c, map, xmap_other(&map->entries[idx], map->keysz)) = idx + 1;
	c->nr++;
	return 0;
}

/*
 * Two objects must never share a SHA-1 name.  If `sha1` already belongs
 * to another object (of this build, or named earlier and in the cache),
 * refuse this one and the other, and return 1; else claim the name and
 * return 0.  Objects that already used the other one's name are
 * refused afterwards by refuse_dependents().  The caller holds
 * names_lock, and publishes the name after storing it.
 */
static int check_collision(struct build *b, const struct oid *oid,
			   const struct oid *sha1)
{
	struct oid owner;
	struct xmap_entry *o, copy, *self = xmap_get(&b->map, oid);
	char why[300], hex[OID_HEXSZ_MAX + 1], hex1[OID_HEXSZ_MAX + 1];
	struct cache_object co;
	uint32_t k = *claims_find(&b->claims, &b->map, sha1->hash);
	int ret;

	if (!k && !b->cache_empty) {
		ret = cache_get_by_sha1(b->cache, sha1, &co);
		if (ret && ret != XL_ENOTFOUND)
			return ret;	/* no answer is not "no owner" */
		if (!ret && oid_cmp(&co.sha256, oid)) {
			owner = co.sha256;
			if ((ret = lookup(b, &owner, &copy, &o)))
				return ret;
			if (!o)
				return err_set(XL_EIO, "cache lost an object");
			goto collision;
		}
	}
	if (k) {
		oid_from_raw(&owner, repo_algo(b->repo), b->map.entries[k - 1].names);
		if (!oid_cmp(&owner, oid))
			return 0;	/* claimed before (stored twice) */
	} else {
		if (memcmp(other_of(b, self), sha1->hash, b->other->rawsz))
			return err_set(XL_EINVALID, "claiming a name not held");
		return claims_add(&b->claims, &b->map, entry_index(b, self)) ?
			err_set(XL_ENOMEM, "out of memory") : 0;
	}
collision:
	oid_to_hex_r(hex1, sha1);
	snprintf(why, sizeof(why), "%s collision: %s is also the name of %s",
		 b->other->title, hex1, oid_to_hex_r(hex, &owner));
	b->stats->collisions++;
	xmap_set_bad(self, why);
	atomic_fetch_add(&b->done, 1);
	if ((ret = store_row(b, oid, self, XMAP_BAD, NULL, NULL)))
		return ret;
	snprintf(why, sizeof(why), "%s collision: %s is also the name of %s",
		 b->other->title, hex1, oid_to_hex_r(hex, oid));
	if ((o = xmap_get(&b->map, &owner))) {
		if (xmap_state(o) != XMAP_DONE)
			return 1;
		xmap_set_bad(o, why);
		/* stored again, now refused (it may be an older object) */
		o->is_new = 1;
		ret = store_row(b, &owner, o, XMAP_BAD, NULL, NULL);
	} else {
		/* named by an earlier build, and looked up by this one */
		pthread_rwlock_wrlock(&b->old_lock);
		o = xmap_get(&b->old, &owner);
		if (o && o->state == XMAP_DONE) {
			xmap_set_bad(o, why);
			o->is_new = 1;
			ret = store_row(b, &owner, o, XMAP_BAD, NULL, NULL);
		}
		pthread_rwlock_unlock(&b->old_lock);
		if (!o)
			return 1;
	}
	b->stats->collisions++;
	b->collided = 1;
	return ret ? ret : 1;
}

/* Record the gitlinks of a tree that converted (for report and reading). */
struct gitlink_ctx {
	struct walker *w;
	const struct oid *tree;
};

static int record_gitlink(void *data, enum xlate_ref_kind kind,
			  const struct oid *oid, const char *name,
			  size_t name_len)
{
	struct gitlink_ctx *g = data;
	struct oid sha1;

	if (kind != XLATE_REF_GITLINK || build_map_gitlink(g->w, oid, &sha1))
		return 0;
	return cache_put_gitlink(g->w->b->cache, g->tree, name, name_len, oid,
				 &sha1);
}

/*
 * A tree's delta as the spill keeps it (XMAP_F_SPILL_DELTA): where the
 * tree and its base are stored, then the delta.  The layout uses it
 * only for that same pair of entries (an object may be in two packs).
 */
struct spill_delta {
	uint64_t pack;			/* odb_place().pack, as a number */
	uint64_t offset, base;
	uint64_t len;			/* of the delta that follows */
};

/*
 * The SHA-1 pack's delta for tree i, worked out from the native forms
 * (xlate_tree_delta_native()): its own (content) and its delta base's,
 * read back by where it is stored.  Reading the tree rebuilt the base a
 * moment ago, so that is mostly a copy out of the delta-base cache.  So
 * the walk makes every tree delta, whenever the base is named (pack-
 * objects deltifies older against newer, fast-import newer against
 * older: the walk meets the bases late in one and early in the other),
 * and the layout reads back a hundred bytes instead of the two forms.
 * 0: made, in w->delta; else there is none here, for any reason, and
 * the layout makes it if it pays.
 */
static int native_delta(struct walker *w, uint32_t i, const struct oid *oid,
			const struct buf *content)
{
	struct build *b = w->b;
	enum obj_type type;

	if (!b->native_deltas || w->s->nodes[i].has_gitlink)
		return -1;
	if (!w->place.pack && (odb_place(b->odb, oid, &w->place) || !w->place.pack)) {
		err_clear();	/* loose, or gone */
		w->place.pack = NULL;
		return -1;
	}
	if (w->place.base == ODB_NO_PLACE)
		return -1;
	if (odb_read_placed(b->odb, w->place.pack, w->place.base, &type,
			    &w->base256) || type != OBJ_TREE) {
		err_clear();
		return -1;
	}
	/* walked against the base where it can, else by hashing entries */
	if (!xlate_tree_ix_build(&w->base_ix, repo_algo(b->repo), w->base256.buf,
				 w->base256.len) &&
	    !xlate_tree_delta_merged(&w->base_ix, content->buf, content->len,
				     &w->conv, b->other, &w->delta))
		return 0;
	if (xlate_tree_delta_native(repo_algo(b->repo), b->other, &w->base256,
				    content, &w->conv, &w->delta)) {
		err_clear();
		return -1;
	}
	return 0;
}

/*
 * What the spill keeps of entry i, named with the SHA-1 form in w->conv
 * (`content` its own form): that form, or, for a tree stored as a delta,
 * the SHA-1 pack's delta when it is smaller (*is_delta then 1): against
 * the reference when it is the delta base, else from the native forms.
 * A tree's two forms go to b->forms, as a reference for others.
 */
static const struct buf *spill_payload(struct walker *w, uint32_t i,
				       const struct oid *oid,
				       const struct buf *content, int *is_delta)
{
	struct build *b = w->b;
	struct spill_delta sd;
	int ret;

	*is_delta = 0;
	if (b->map.entries[i].type != OBJ_TREE || b->spill.fd < 0)
		return &w->conv;
	/* its index came with its conversion, or is made here */
	if (b->forms.slot && w->place.pack &&
	    (w->conv_ix_for == i + 1 ||
	     !xlate_tree_ix_build(&w->conv_ix, repo_algo(b->repo), content->buf,
				  content->len)))
		forms_put(&b->forms, w->place.pack, w->place.offset, w->anc,
			  content, &w->conv, &w->conv_ix, &w->marks);
	err_clear();
	if (w->has_ref && w->ref_is_base && w->s->nodes[i].has_gitlink)
		ret = xlate_tree_delta(b->other, &w->ref1, &w->conv, &w->delta);
	else if (w->has_ref && w->ref_is_base)
		ret = xlate_tree_delta_merged(&w->ref_ix, content->buf,
					      content->len, &w->conv, b->other,
					      &w->delta) ?
		      xlate_tree_delta(b->other, &w->ref1, &w->conv, &w->delta) : 0;
	else
		ret = native_delta(w, i, oid, content);
	if (ret || w->delta.len >= w->conv.len) {
		err_clear();	/* no delta, or not a smaller one */
		return &w->conv;
	}
	sd.pack = (uint64_t)(uintptr_t)w->place.pack;
	sd.offset = w->place.offset;
	sd.base = w->place.base;
	sd.len = w->delta.len;
	buf_reset(&w->rec);
	if (buf_add(&w->rec, &sd, sizeof(sd)) ||
	    buf_add(&w->rec, w->delta.buf, w->delta.len)) {
		err_clear();
		return &w->conv;
	}
	*is_delta = 1;
	return &w->rec;
}

/*
 * Before converting tree `oid` (entry i): where it is stored, and a
 * reference from b->forms (forms_get_ref()), indexed.  Any failure only
 * means no reference.
 */
static void ref_prepare(struct walker *w, uint32_t i, const struct oid *oid)
{
	const struct hash_algo *algo = repo_algo(w->b->repo);

	w->has_ref = 0;
	w->ref_for = i + 1;
	if (odb_place(w->b->odb, oid, &w->place) || !w->place.pack) {
		err_clear();	/* loose, or gone: no place, no reference */
		w->place.pack = NULL;
		return;
	}
	w->anc[0] = w->place.base;
	for (int d = 1; d < FORMS_ANC; d++)
		if (w->anc[d - 1] == ODB_NO_PLACE ||
		    odb_placed_base(w->b->odb, w->place.pack, w->anc[d - 1], &w->anc[d]))
			w->anc[d] = ODB_NO_PLACE;
	err_clear();
	if (forms_get_ref(&w->b->forms, w->place.pack, w->place.offset, w->anc,
			  &w->ref256, &w->ref1, &w->ref_ix, &w->ref_marks,
			  &w->ref_is_base))
		return;
	w->ref_ix.rawsz = algo->rawsz;
	/* each entry of the translated form is as much longer (or shorter) */
	if ((int64_t)w->ref1.len != (int64_t)w->ref256.len +
	    (int64_t)w->ref_ix.nr * ((int64_t)w->b->other->rawsz -
				     (int64_t)algo->rawsz))
		return;		/* not what we made: no reference */
	w->has_ref = 1;
}

/* Name entry i, its hashed SHA-1 form in w->conv: claim, store, publish. */
static int walk_named(struct walker *w, uint32_t i, const struct buf *content)
{
	struct build *b = w->b;
	struct xmap_entry *e = &b->map.entries[i];
	struct spill_out spilled = { BUF_INIT, 0 };
	const struct buf *payload;
	struct oid oid, sha1;
	int ret, is_delta;

	entry_oid(b, i, &oid);
	/*
	 * A tree is hashed from where it parts from its reference (when
	 * the two are as long, as after a changed file), and leaves its
	 * own marks for the next one (spill_payload() keeps them).  Marks
	 * are SHA-1's: a SHA-256 form is hashed whole, and keeps none.
	 */
	if (e->type == OBJ_TREE && b->forms.slot && b->other == &hash_sha1) {
		if ((ret = hash_sha1_marked("tree", w->conv.buf, w->conv.len,
					    w->has_ref ? w->ref1.buf : NULL,
					    w->ref1.len, &w->ref_marks,
					    &w->marks, &sha1)))
			return ret;
	} else {
		w->marks.nr = 0;
		hash_object(b->other, type_name((enum obj_type)e->type),
			    w->conv.buf, w->conv.len, &sha1);
	}
	payload = spill_payload(w, i, &oid, content, &is_delta);
	pthread_mutex_lock(&b->names_lock);
	memcpy(other_of(b, e), sha1.hash, b->other->rawsz);	/* unpublished yet */
	e->size1 = w->conv.len;
	ret = check_collision(b, &oid, &sha1);
	if (!ret && w->s->nodes[i].has_gitlink) {
		struct gitlink_ctx g = { w, &oid };

		ret = xlate_refs(repo_algo(b->repo), OBJ_TREE, content->buf,
				 content->len, record_gitlink, &g);
	}
	if (!ret) {
		atomic_fetch_add(&b->done, 1);
		if (is_delta)
			e->flags |= XMAP_F_SPILL_DELTA;
		if (!(ret = store_row(b, &oid, e, XMAP_DONE, payload, &spilled)))
			xmap_publish(e, XMAP_DONE);
	}
	pthread_mutex_unlock(&b->names_lock);
	spill_handback(b, &spilled);	/* nobody waits on this write */
	if (ret < 0)
		return ret;
	return walk_settled(w, i);	/* named, or refused for a collision */
}

/* Close entry i: everything it refers to is settled (or it is blocked). */
static int walk_close(struct walker *w, uint32_t i)
{
	struct build *b = w->b;
	struct sched *s = w->s;
	struct xmap_entry *e = &b->map.entries[i];
	struct xlate_opts o = {
		repo_algo(b->repo), b->other, build_map, w,
		b->opts->unknown_headers, build_map_gitlink,
	};
	const struct buf *content = s->nodes[i].content;
	struct oid oid;
	enum obj_type type;
	int ret, against;

	entry_oid(b, i, &oid);
	if (!content) {
		if ((ret = odb_read(b->odb, &oid, &type, &w->content)))
			return walk_unreadable(w, i, ret);
		content = &w->content;
	}
	w->has_blocked = 0;
	w->map_failed = w->map_retry = 0;
	w->fatal = 0;
	if (e->type != OBJ_TREE || !b->forms.slot) {
		w->has_ref = 0;
		w->place.pack = NULL;
		w->ref_for = 0;
	} else if (w->ref_for != i + 1) {
		ref_prepare(w, i, &oid);	/* not made when it was opened */
	}
	ret = XL_EINVALID;	/* not converted yet */
	w->conv_ix_for = 0;
	if (w->has_ref)
		ret = xlate_tree_against(&o, content->buf, content->len, &w->ref_ix,
					 w->ref1.buf, w->ref1.len, &w->conv,
					 &w->conv_ix);
	against = !ret;
	if (against)
		w->conv_ix_for = i + 1;
	/* no reference, or the tree does not parse: upstream's message */
	if (ret == XL_ECORRUPT || ret == XL_EINVALID || ret == XL_ETOOBIG) {
		err_clear();
		ret = xlate_object(&o, (enum obj_type)e->type, content->buf,
				   content->len, &w->conv);
	}
	if (!ret && e->type == OBJ_TREE) {
		atomic_fetch_add(&b->trees, 1);
		if (against)
			atomic_fetch_add(&b->trees_against, 1);
	}
	if (w->fatal)
		return w->fatal;	/* the cache failed us: not the object's fault */
	if (ret && w->has_blocked) {
		/* it needs an object of this build named first: wait for it */
		uint32_t j = entry_index(b, xmap_get(&b->map, &w->blocked));

		pthread_mutex_lock(&s->lock);
		ret = wait_on(b, s, i, j);
		if (!ret && !s->nodes[i].waiting)
			ret = push(s, &s->ready, i);	/* settled meanwhile: again */
		pthread_mutex_unlock(&s->lock);
		return ret;
	}
	if (ret == XL_ENOMEM || ret == XL_EIO)
		return ret;
	if (ret && w->map_failed) {
		/* a reference failed: say which and why, and whether for good */
		/* only this build's entries can be unreadable */
		struct xmap_entry *d = xmap_get(&b->map, &w->map_bad);
		char why[1400];
		int retry = w->map_retry;

		if (d && xmap_state(d) == XMAP_BAD &&
		    (d->flags & XMAP_F_UNREADABLE))
			snprintf(why, sizeof(why), "%s (%s)", err_msg(), d->reason);
		else
			snprintf(why, sizeof(why), "%s", err_msg());
		if (retry) {
			w->permanent = 0;
			w->nmiss = 0;
			if (xlate_refs(repo_algo(b->repo), (enum obj_type)e->type,
				       content->buf, content->len,
				       scan_refusal, w) == XL_ENOMEM)
				return XL_ENOMEM;
			retry = !w->permanent;
			if (retry && (ret = count_missing(w)))
				return ret;
		}
		e->flags = (uint8_t)((e->flags & ~XMAP_F_RETRY) |
				     (retry ? XMAP_F_RETRY : 0));
		return walk_refuse(w, i, why);
	}
	if (ret)
		return walk_refuse(w, i, err_msg());
	return walk_named(w, i, content);
}

/*
 * The walk has stopped with objects still waiting: they wait on each
 * other, in a cycle or behind one.  Refuse them all.  Under s->lock,
 * with no other walker at work.
 */
static int refuse_cycles(struct walker *w)
{
	struct build *b = w->b;
	struct sched *s = w->s;
	int ret = 0;

	for (uint32_t i = 0; i < b->map.nr && !ret; i++) {
		struct node *n = &s->nodes[i];
		struct xmap_entry *e = &b->map.entries[i];
		struct oid oid;

		if (n->phase != NODE_OPEN)
			continue;
		entry_oid(b, i, &oid);
		xmap_set_bad(e, "in or behind a reference cycle (corrupt repository)");
		atomic_fetch_add(&b->done, 1);
		ret = store_row(b, &oid, e, XMAP_BAD, NULL, NULL);
		n->phase = NODE_CLOSED;
		n->waiters = 0;
		if (n->content) {
			buf_release(n->content);
			free(n->content);
			n->content = NULL;
		}
	}
	return ret;
}

static void *walker_main(void *arg)
{
	struct walker *w = arg;
	struct sched *s = w->s;
	struct build *b = w->b;

	pthread_mutex_lock(&s->lock);
	while (!s->error && !s->ended) {
		uint32_t i;
		int closing, ret;

		if (s->ready.nr) {
			i = s->ready.v[--s->ready.nr];
			closing = 1;
		} else if (s->open.nr) {
			i = s->open.v[--s->open.nr];
			/* queued more than once, or settled before the walk */
			if (s->nodes[i].phase != NODE_NEW ||
			    xmap_state(&b->map.entries[i]) != XMAP_PENDING)
				continue;
			s->nodes[i].phase = NODE_TAKEN;
			closing = 0;
		} else if (s->busy) {
			pthread_cond_wait(&s->more, &s->lock);
			continue;
		} else {
			if ((ret = refuse_cycles(w)) && !s->error) {
				s->error = ret;
				snprintf(s->errmsg, sizeof(s->errmsg), "%s", err_msg());
			}
			s->ended = 1;
			break;
		}
		s->busy++;
		pthread_mutex_unlock(&s->lock);
		ret = closing ? walk_close(w, i) : walk_open(w, i);
		pthread_mutex_lock(&s->lock);
		s->busy--;
		if (ret && !s->error) {
			s->error = ret;
			snprintf(s->errmsg, sizeof(s->errmsg), "%s", err_msg());
		}
	}
	pthread_cond_broadcast(&s->more);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static int walker_init(struct walker *w, struct build *b, struct sched *s)
{
	memset(w, 0, sizeof(*w));
	w->b = b;
	w->s = s;
	buf_init(&w->content);
	buf_init(&w->conv);
	buf_init(&w->ref256);
	buf_init(&w->ref1);
	buf_init(&w->base256);
	xlate_tree_ix_init(&w->ref_ix);
	xlate_tree_ix_init(&w->base_ix);
	xlate_tree_ix_init(&w->conv_ix);
	w->marks = w->ref_marks = (struct hash_marks)HASH_MARKS_INIT;
	buf_init(&w->delta);
	buf_init(&w->rec);
	/* a miss on an all-zero slot key is harmless: no name is all zeros */
	w->recent_mask = recent_slots(b->nr) - 1;
	if (!(w->recent = calloc(w->recent_mask + 1, sizeof(*w->recent))))
		return err_set(XL_ENOMEM, "out of memory");
	return 0;
}

static void walker_release(struct walker *w)
{
	buf_release(&w->content);
	buf_release(&w->conv);
	buf_release(&w->ref256);
	buf_release(&w->ref1);
	buf_release(&w->base256);
	xlate_tree_ix_release(&w->ref_ix);
	xlate_tree_ix_release(&w->base_ix);
	xlate_tree_ix_release(&w->conv_ix);
	hash_marks_release(&w->marks);
	hash_marks_release(&w->ref_marks);
	buf_release(&w->delta);
	buf_release(&w->rec);

	free(w->recent);
	free(w->deps);
	free(w->miss);
}

/* Names the cache had, looked up by the walkers: into b->map. */
static int join_old(struct build *b)
{
	for (size_t i = 0; i < b->old.nr; i++) {
		struct xmap_entry *o = &b->old.entries[i], *e;
		struct oid oid;

		oid_from_raw(&oid, repo_algo(b->repo), o->names);
		if (!(e = xmap_add(&b->map, &oid)))
			return XL_ENOMEM;
		free(e->reason);
		*e = *o;
		o->reason = NULL;	/* e owns it now */
	}
	xmap_release(&b->old);
	return xmap_init(&b->old, repo_algo(b->repo), 16);
}

static int name_the_rest(struct build *b)
{
	struct sched s = { 0 };
	struct walker *w = NULL;
	pthread_t tid[64];
	int threads = build_threads(b);
	size_t nr_nodes = b->map.nr;
	int started = 0, ret = 0;

	mutex_init_brief(&s.lock);
	pthread_cond_init(&s.more, NULL);
	if (!(s.nodes = calloc(nr_nodes ? nr_nodes : 1, sizeof(*s.nodes))) ||
	    !(w = calloc((size_t)threads, sizeof(*w)))) {
		ret = err_set(XL_ENOMEM, "out of memory");
		goto out;
	}
	/*
	 * Every object left to name.  Commits and tags are taken first (in
	 * name order, that is at random), each walking down its history,
	 * so that trees are named from the commits that hold them, newest
	 * first (struct formcache says why); the trees are pushed under
	 * them, for those no commit holds.
	 */
	for (int pass = 0; pass < 2 && !ret; pass++) {
		for (size_t i = b->nr; i-- && !ret;) {
			struct xmap_entry *e = todo_entry(b, i);

			if (e->state == XMAP_PENDING && e->type != OBJ_BLOB &&
			    (e->type == OBJ_TREE) == !pass)
				ret = push(&s, &s.open, b->todo[i]);
		}
	}
	if (!s.open.nr)
		goto out;	/* nothing to walk (a mount's idle build, say) */
	/* more walkers than objects would only wait */
	if ((size_t)threads > s.open.nr)
		threads = (int)s.open.nr;
	for (int t = 0; t < threads && !ret; t++)
		ret = walker_init(&w[t], b, &s);
	if (ret)
		goto out;
	b->walking = 1;
	for (int t = 1; t < threads; t++)
		if (!pthread_create(&tid[started], NULL, walker_main, &w[t]))
			started++;
	walker_main(&w[0]);	/* this thread walks too */
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	b->walking = 0;
	if (s.error)
		ret = err_set(s.error, "%s", s.errmsg);
	if (!ret)
		ret = join_old(b);
out:
	/* join_old() may have added entries: they have no nodes */
	for (size_t i = 0; s.nodes && i < nr_nodes; i++)
		if (s.nodes[i].content) {
			buf_release(s.nodes[i].content);
			free(s.nodes[i].content);
		}
	for (int t = 0; w && t < threads; t++)
		walker_release(&w[t]);
	free(w);
	free(s.nodes);
	free(s.edges);
	free(s.ready.v);
	free(s.open.v);
	pthread_cond_destroy(&s.more);
	pthread_mutex_destroy(&s.lock);
	return ret;
}

/*
 * After a collision refused an object that others had already been
 * named against, refuse those too, and their dependents, until nothing
 * changes.  Collisions are near impossible; this is simple, not fast.
 */
struct bad_ref_ctx {
	struct build *b;
	struct oid bad;
	int found;
};

static int find_bad_ref(void *data, enum xlate_ref_kind kind,
			const struct oid *oid, const char *name, size_t len)
{
	struct bad_ref_ctx *c = data;
	struct xmap_entry *e = xmap_get(&c->b->map, oid);

	if (e && e->state == XMAP_BAD) {
		c->bad = *oid;
		c->found = 1;
		return 1;
	}
	return 0;
}

static int refuse_dependents(struct build *b)
{
	struct buf content = BUF_INIT;
	int changed = 1, ret = 0;

	while (changed && !ret) {
		changed = 0;
		for (size_t i = 0; i < b->nr && !ret; i++) {
			struct xmap_entry *e = todo_entry(b, i);
			struct bad_ref_ctx c = { b, { { 0 }, NULL }, 0 };
			enum obj_type type;
			struct oid oid;

			if (e->state != XMAP_DONE || e->type == OBJ_BLOB)
				continue;
			todo_oid(b, i, &oid);
			if (odb_read(b->odb, &oid, &type, &content))
				continue;
			xlate_refs(repo_algo(b->repo), type, content.buf,
				   content.len, find_bad_ref, &c);
			if (c.found) {
				char why[200], hex[OID_HEXSZ_MAX + 1];

				snprintf(why, sizeof(why), "refers to untranslatable %s",
					 oid_to_hex_r(hex, &c.bad));
				xmap_set_bad(todo_entry(b, i), why);
				ret = store(b, &oid);
				changed = 1;
			}
		}
	}
	buf_release(&content);
	return ret;
}

/* ---- the SHA-1 packs ------------------------------------------------- */

/*
 * The table as the layout asks it: what this build named or looked up,
 * exactly as it stored it.  Objects it could not read were not stored,
 * so it does not know them either.
 */
/* The table's entry for oid if the build stored it, named or refused. */
static struct xmap_entry *settled(struct build *b, const struct oid *oid)
{
	struct xmap_entry *e = xmap_get(&b->map, oid);

	if (!e || (e->state != XMAP_DONE && e->state != XMAP_BAD) ||
	    (e->flags & XMAP_F_UNREADABLE))
		return NULL;
	return e;
}

static int names_get(void *data, const struct oid *oid, struct cache_object *co)
{
	struct build *b = data;
	struct xmap_entry *e = settled(b, oid);

	if (!e)
		return XL_ENOTFOUND;
	memset(co, 0, sizeof(*co));
	co->sha256 = *oid;
	co->type = (enum obj_type)e->type;
	co->size256 = e->size256;
	if (e->state == XMAP_DONE) {
		oid_from_raw(&co->sha1, b->other, other_of(b, e));
		co->size1 = e->size1;
	} else {
		co->reason = e->reason;
		co->retry = !!(e->flags & XMAP_F_RETRY);
	}
	return 0;
}

/* The same for converting: only the SHA-1 name (any thread may ask). */
static int names_map(void *data, const struct oid *in, struct oid *out)
{
	struct build *b = data;
	struct xmap_entry *e;
	char hex[OID_HEXSZ_MAX + 1];

	if (!(e = settled(b, in)))
		return XL_ENOTFOUND;
	if (e->state == XMAP_BAD)
		return err_set(XL_EUNSUPPORTED, "%s is untranslatable: %s",
			       oid_to_hex_r(hex, in), e->reason);
	oid_from_raw(out, b->other, other_of(b, e));
	return 0;
}

/* len bytes of the spill at `at` into p: 0, or -1 (then convert instead). */
static int spill_read(const struct spill *sp, uint64_t at, char *p, uint64_t left)
{
	if (sp->map && at <= sp->map_len && left <= sp->map_len - at) {
		memcpy(p, sp->map + at, (size_t)left);
		return 0;
	}
	while (left) {
		ssize_t n = pread(sp->fd, p, left > (1u << 30) ? 1u << 30 :
				  (size_t)left, (off_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		at += (uint64_t)n;
		left -= (uint64_t)n;
	}
	return 0;
}

/* And the SHA-1 form itself, from the spill file. */
static int names_form(void *data, const struct oid *oid, struct buf *out)
{
	struct build *b = data;
	struct xmap_entry *e = xmap_get(&b->map, oid);
	int ret;

	buf_reset(out);
	if (b->spill.fd < 0 || atomic_load(&b->spill.failed) || !e ||
	    e->state != XMAP_DONE || !e->spill || (e->flags & XMAP_F_SPILL_DELTA))
		return XL_ENOTFOUND;
	if (e->size1 > SIZE_MAX / 2)
		return XL_ENOTFOUND;
	if ((ret = buf_grow(out, (size_t)e->size1)))
		return ret;
	if (spill_read(&b->spill, e->spill - 1, out->buf, e->size1))
		return XL_ENOTFOUND;	/* convert it instead */
	out->len = (size_t)e->size1;
	out->buf[out->len] = '\0';
	return 0;
}

/* And a tree's delta, if the walk made the one the layout asks for. */
static int names_delta(void *data, const struct oid *oid, const void *pack,
		       uint64_t offset, uint64_t base, struct buf *out)
{
	struct build *b = data;
	struct xmap_entry *e = xmap_get(&b->map, oid);
	struct spill_delta sd;
	int ret;

	buf_reset(out);
	if (b->spill.fd < 0 || atomic_load(&b->spill.failed) || !e ||
	    e->state != XMAP_DONE || !e->spill || !(e->flags & XMAP_F_SPILL_DELTA))
		return XL_ENOTFOUND;
	if (spill_read(&b->spill, e->spill - 1, (char *)&sd, sizeof(sd)) ||
	    sd.pack != (uint64_t)(uintptr_t)pack || sd.offset != offset ||
	    sd.base != base || sd.len >= e->size1)
		return XL_ENOTFOUND;
	if ((ret = buf_grow(out, (size_t)sd.len)))
		return ret;
	if (spill_read(&b->spill, e->spill - 1 + sizeof(sd), out->buf, sd.len))
		return XL_ENOTFOUND;
	out->len = (size_t)sd.len;
	out->buf[out->len] = '\0';
	return 0;
}

/*
 * Lay out the SHA-1 packs while the table is still here: a layout
 * converts every tree, commit and tag of its pack again, and each of
 * their references would otherwise be a sqlite lookup (on the bench
 * repository that was most of the layout's time).
 */
static int lay_out(struct build *b, const struct xlate_pack1_gate *gate)
{
	struct xlate_names names = { names_get, names_map, names_form, b,
				       names_delta };
	struct xlate_pack1_opts po = *b->opts->pack1;
	struct xlate_pack1_stats unused;

	spill_finish(&b->spill);

	po.names = &names;
	po.gate = gate;
	return xlate_pack1_update(b->repo, b->cache, &po,
				  b->opts->pack1_stats ? b->opts->pack1_stats :
				  &unused);
}

/*
 * A first build puts its rows in at its end (bulk_store()): sqlite's
 * B-tree work and its sort for the index by SHA-1 name, on one core
 * while the others have nothing to do, and then the layout was mostly
 * one core again (summing the pack, placing entries, sorting the .idx).
 * So a first build starts its layout as its rows go in, on a thread of
 * its own, behind a gate (xlate_pack1_gate): the layout asks the
 * build's table and spill, not the cache, and writes nothing until the
 * build's batch is committed, holding its rows meanwhile (a bound; past
 * it the layout waits).  It must not wait on the cache's connection,
 * which the rows hold for seconds: tried before with the layout's rows
 * written as it went, the two took turns and gained 2% at a million
 * objects.  Not after a collision (refuse_dependents() changes the
 * table, and the memo is cleared at the end), nor in a build asked to
 * run on one thread.  The figures: README, "Measured".
 */
struct early_layout {
	struct build *b;
	struct xlate_pack1_gate gate;
	pthread_t tid;
	int started;
	atomic_int failed;		/* the gate's: stop making the layout */
	pthread_mutex_t lock;
	pthread_cond_t opened;
	int state;			/* guarded by lock: 1 open, 0 not yet,
					   else the build's error */
	int ret;			/* the layout's, once joined */
	char errmsg[1024];		/* and its message */
	int deferred;			/* the cache's checkpoints wait for it */
};

static int early_finishing(void *data, const char *checksum)
{
	const struct build *b = ((struct early_layout *)data)->b;

	for (size_t i = 0; i < b->nr_packs; i++)
		if (!strcmp(b->packs[i].checksum, checksum))
			return 1;
	return 0;
}

static int early_wait(void *data)
{
	struct early_layout *el = data;
	int state, waited;

	pthread_mutex_lock(&el->lock);
	waited = !el->state;
	while (!el->state)
		pthread_cond_wait(&el->opened, &el->lock);
	state = el->state;
	pthread_mutex_unlock(&el->lock);
	return state == 1 ? waited : err_set(state, "the build failed");
}

static void *early_main(void *arg)
{
	struct early_layout *el = arg;

	/*
	 * What the walk let go goes back to the system before the rows'
	 * sort and the layout's tables take room (at a million objects the
	 * peak was 520-547 MiB without this, 437-458 with it).  The layout
	 * reads little through the odb.  Here, not on the rows' thread: at
	 * 131k objects this takes 20 ms.
	 */
	if (el->b->big) {
		odb_release_memory(el->b->odb);
		malloc_trim(0);
	}
	if ((el->ret = lay_out(el->b, &el->gate)))
		snprintf(el->errmsg, sizeof(el->errmsg), "%s", err_msg());
	return NULL;
}

/* Start the layout beside the rows; if it cannot, it runs after them. */
static void early_start(struct early_layout *el, struct build *b)
{
	memset(el, 0, sizeof(*el));
	el->b = b;
	atomic_init(&el->failed, 0);
	el->gate = (struct xlate_pack1_gate){
		early_finishing, early_wait, &el->failed, el,
	};
	pthread_mutex_init(&el->lock, NULL);
	pthread_cond_init(&el->opened, NULL);
	el->started = !pthread_create(&el->tid, NULL, early_main, el);
	if (!el->started) {
		pthread_cond_destroy(&el->opened);
		pthread_mutex_destroy(&el->lock);
	}
}

/*
 * Open the gate, once: `ret` says the build's batch is committed (0) or
 * why not.
 */
static void early_open(struct early_layout *el, int ret)
{
	/* a failed build's layout stops at its next window, not its end */
	if (ret)
		atomic_store(&el->failed, 1);
	pthread_mutex_lock(&el->lock);
	if (!el->state)
		el->state = ret ? ret : 1;
	pthread_cond_broadcast(&el->opened);
	pthread_mutex_unlock(&el->lock);
}

/*
 * The rows went into the WAL with no checkpoint after them
 * (cache_defer_checkpoints()), so that the layout, waiting at the gate
 * when they are committed, could go on at once: here the rows are
 * copied into the file on a connection of our own while the layout
 * writes its runs into the WAL, where before the layout waited for that
 * copy and its two syncs.  The layout's own pages are copied once it is
 * done.  A checkpoint that fails costs only time: the next one copies
 * the same pages.
 */
static void early_checkpoint(struct early_layout *el)
{
	if (!el->deferred || el->state != 1)
		return;
	if (cache_checkpoint_aside(el->b->cache))
		err_clear();
}

/*
 * Open the gate if not yet (`ret`: the build's batch is committed, or
 * why not) and wait for the layout: `ret` if the build failed, else the
 * layout's.
 */
static int early_finish(struct early_layout *el, int ret)
{
	early_open(el, ret);
	pthread_join(el->tid, NULL);
	el->started = 0;
	pthread_cond_destroy(&el->opened);
	pthread_mutex_destroy(&el->lock);
	if (!ret && el->ret)
		return err_set(el->ret, "%s", el->errmsg);
	return ret;
}

/* ---- the ref names --------------------------------------------------- */

/*
 * At most this many ref names are kept (cache_ref_names_set): they only
 * spare a fresh mount its first lookups, and a repository with more
 * refs than this pays for the rest as before.
 */
#define REF_NAMES_MAX 131072

/* A list of (sha256, sha1) pairs, two oids each. */
struct name_pairs {
	struct oid *v;
	size_t nr, alloc;		/* pairs */
};

static int pairs_add(struct name_pairs *p, const struct oid *sha256,
		     const struct oid *sha1)
{
	if (ARRAY_GROW(p->v, 2 * p->nr + 1, p->alloc, 128))
		return err_set(XL_ENOMEM, "out of memory");
	p->v[2 * p->nr] = *sha256;
	p->v[2 * p->nr + 1] = *sha1;
	p->nr++;
	return 0;
}

struct ref_names {
	struct build *b;
	const struct xlate_names *names;	/* b's table */
	struct name_pairs now;
	/*
	 * The rows kept by the last build, sorted: most refs name what
	 * they named then, and a row is the objects table's own answer
	 * (rows leave when their object is refused), so a ref found here
	 * costs no lookup.  At a million objects and 20,000 refs, the
	 * lookups were most of the start-up of a mount.
	 */
	struct name_pairs kept;
	int ret;
};

static int cmp_pair(const void *a, const void *b)
{
	return oid_cmp(a, b);
}

static int keep_ref_name(const struct oid *sha256, const struct oid *sha1,
			 void *data)
{
	return pairs_add(data, sha256, sha1);
}

static int add_ref_name(struct ref_names *rn, const struct oid *oid)
{
	struct cache_object co;
	const struct oid *kept;
	int ret;

	if (rn->now.nr >= REF_NAMES_MAX || !oid->algo || oid_is_null(oid))
		return 0;
	kept = rn->kept.nr ? bsearch(oid, rn->kept.v, rn->kept.nr,
				     2 * sizeof(*rn->kept.v), cmp_pair) : NULL;
	if (kept)
		return pairs_add(&rn->now, oid, kept + 1);
	ret = xlate_names_get(rn->names, rn->b->cache, oid, &co);
	if (ret == XL_ENOTFOUND || (!ret && !co.sha1.algo))
		return 0;	/* not ours, or untranslatable: nothing to spare */
	if (ret)
		return ret;
	return pairs_add(&rn->now, oid, &co.sha1);
}

static int note_ref_name(const struct ref *ref, void *data)
{
	struct ref_names *rn = data;

	if (ref->target || ref->broken)
		return 0;	/* its target is a ref of its own; or not a ref */
	if ((rn->ret = add_ref_name(rn, &ref->oid)) ||
	    (ref->has_peeled && (rn->ret = add_ref_name(rn, &ref->peeled))))
		return 1;
	return 0;
}

static int same_pairs(const struct oid *a, const struct oid *b, size_t na,
		      size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < 2 * na; i++)
		if (oid_cmp(&a[i], &b[i]))
			return 0;
	return 1;
}

/*
 * Record what the refs name now, for the next fresh mount (see the
 * cache's ref_names), and write them only if that changed.  Refs that
 * cannot be read are the mount's business, not the build's: then the
 * old rows stay, which are still true names, only perhaps of other
 * refs.
 */
static int remember_ref_names(struct build *b)
{
	struct xlate_names names = { names_get, names_map, names_form, b, NULL };
	struct ref_names rn = { .b = b, .names = &names };
	struct name_pairs *now = &rn.now;
	size_t n = 0;
	int ret;

	if ((ret = cache_for_each_ref_name(b->cache, keep_ref_name, &rn.kept)))
		goto out;
	if (rn.kept.nr)
		qsort(rn.kept.v, rn.kept.nr, 2 * sizeof(*rn.kept.v), cmp_pair);
	if (refs_for_each(b->repo, note_ref_name, &rn) && !rn.ret)
		goto out;
	if ((ret = rn.ret))
		goto out;
	/* in name order, each once (refs share commits) */
	if (now->nr)
		qsort(now->v, now->nr, 2 * sizeof(*now->v), cmp_pair);
	for (size_t i = 0; i < now->nr; i++)
		if (!n || oid_cmp(&now->v[2 * (n - 1)], &now->v[2 * i])) {
			now->v[2 * n] = now->v[2 * i];
			now->v[2 * n + 1] = now->v[2 * i + 1];
			n++;
		}
	if (same_pairs(now->v, rn.kept.v, n, rn.kept.nr))
		goto out;	/* the same rows */
	if ((ret = cache_begin(b->cache)) ||
	    (ret = cache_ref_names_set(b->cache, now->v, n)) ||
	    (ret = cache_commit(b->cache)))
		cache_rollback(b->cache);
out:
	free(now->v);
	free(rn.kept.v);
	return ret;
}

/* ---- settings and the submodule map --------------------------------- */

int xlate_read_map(const char *path, xlate_pair_fn fn, void *data)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, ret = 0;

	if (!f)
		return err_errno("cannot open map %s", path);
	while (!ret && getline(&line, &cap, f) >= 0) {
		const struct hash_algo *first, *second;
		char *p = line, *q;
		struct oid names[2];
		size_t n = 0;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
			continue;
		/* either name first: its length says which */
		while (hex_value((unsigned char)p[n]) >= 0)
			n++;
		first = n == hash_sha256.hexsz ? &hash_sha256 :
			n == hash_sha1.hexsz ? &hash_sha1 : NULL;
		q = p + n;
		if (!first || oid_from_hex(&names[0], first, p) ||
		    (*q != ' ' && *q != '\t'))
			goto bad;
		second = hash_algo_other(first);
		while (*q == ' ' || *q == '\t')
			q++;
		/* export's tsv: "-" for an object without its other name */
		if (q[0] == '-' && (!q[1] || strchr(" \t\r\n", q[1])))
			continue;
		if (strlen(q) < second->hexsz || oid_from_hex(&names[1], second, q) ||
		    (q[second->hexsz] && !strchr(" \t\r\n", q[second->hexsz])))
			goto bad;
		ret = first == &hash_sha256 ? fn(data, &names[0], &names[1]) :
		      fn(data, &names[1], &names[0]);
		continue;
bad:
		ret = ERR_CORRUPT("%s: line %d: expected \"<sha256-hex> <sha1-hex>\" "
				  "(or the other way round)", path, lineno);
	}
	free(line);
	fclose(f);
	return ret;
}

static int digest_pair(void *data, const struct oid *o256, const struct oid *o1)
{
	EVP_MD_CTX *ctx = data;

	EVP_DigestUpdate(ctx, o256->hash, 32);
	EVP_DigestUpdate(ctx, o1->hash, 20);
	return 0;
}

int xlate_build_settings(const struct xlate_build_opts *opts, struct buf *out)
{
	buf_reset(out);
	buf_addf(out, "unknown-headers=%s",
		 opts->unknown_headers == XLATE_UNKNOWN_COPY ? "copy" : "fail");
	if (opts->map) {
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		unsigned char md[32];
		struct oid d;
		char hex[OID_HEXSZ_MAX + 1];
		int ret;

		if (!ctx)
			return err_set(XL_ENOMEM, "out of memory");
		EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
		ret = xlate_read_map(opts->map, digest_pair, ctx);
		EVP_DigestFinal_ex(ctx, md, NULL);
		EVP_MD_CTX_free(ctx);
		if (ret)
			return ret;
		oid_from_raw(&d, &hash_sha256, md);
		buf_addf(out, ";submodules=%s", oid_to_hex_r(hex, &d));
	}
	return 0;
}

/* ---- when to walk the refusals again -------------------------------- */

/*
 * A set of names, told from another by how many there are and the sum
 * of their first eight bytes (names are hashes: two sets that differ
 * differ here too, but by a chance no repository will meet).
 */
struct name_sum {
	uint64_t nr, sum;
};

static void name_sum_add(struct name_sum *s, const struct oid *oid)
{
	uint64_t v;

	memcpy(&v, oid->hash, sizeof(v));
	s->nr++;
	s->sum += v;
}

/*
 * The cache's meta "retry": "<nr> <sum> <due>".  The set is what the
 * last build could not read, which the next one gathers again; `due`
 * says that a build named objects without walking the refusals again,
 * or began to walk them and may not have finished.  Only a gathering
 * that finds just that set, with nothing due, may skip the refusals:
 * then nothing has arrived that they could be waiting for.
 */
#define RETRY_KEY "retry"

static int retry_due(struct build *b, const struct name_sum *gathered,
		     int *due)
{
	struct buf v = BUF_INIT;
	unsigned long long nr, sum;
	int last_due, ret;
	char extra;

	*due = 1;
	ret = cache_meta_get(b->cache, RETRY_KEY, &v);
	if (ret == XL_ENOTFOUND)
		ret = 0;
	else if (!ret && sscanf(v.buf, "%llu %llx %d%c", &nr, &sum, &last_due,
				&extra) == 3 &&
		 !last_due && nr == gathered->nr && sum == gathered->sum)
		*due = 0;
	buf_release(&v);
	return ret;
}

static int retry_note(struct cache *cache, const struct name_sum *unread,
		      int due)
{
	char v[80];

	snprintf(v, sizeof(v), "%llu %llx %d", (unsigned long long)unread->nr,
		 (unsigned long long)unread->sum, due);
	return cache_meta_put(cache, RETRY_KEY, v);
}

/* What this build could not read (and the next will gather again). */
static void unread_sum(const struct build *b, struct name_sum *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < b->map.nr; i++) {
		const struct xmap_entry *e = &b->map.entries[i];
		struct oid oid;

		if (!e->is_new || !(e->flags & XMAP_F_UNREADABLE) ||
		    (e->flags & XMAP_F_GONE))
			continue;
		oid_from_raw(&oid, repo_algo(b->repo), e->names);
		name_sum_add(out, &oid);
	}
}

/* ---- what the repository lacks --------------------------------------- */

static void missing_count(const struct build *b, struct xlate_missing *m)
{
	memset(m, 0, sizeof(*m));
	m->known = 1;
	for (size_t i = 0; i < b->missing.nr; i++) {
		switch (b->missing.entries[i].type) {
		case OBJ_BLOB:
			m->blobs++;
			break;
		case OBJ_TREE:
			m->trees++;
			break;
		case OBJ_COMMIT:
			m->commits++;
			break;
		default:
			m->other++;
			break;
		}
	}
}

/*
 * A map line for an object the repository has is not used (the object's
 * own conversion names it); one that says otherwise is counted, for the
 * caller to report.  Only what this build named is compared, so the cost
 * follows the new objects, not the map.
 */
static void check_map(const struct build *b, struct xlate_build_stats *st)
{
	for (size_t i = 0; b->known.nr && i < b->map.nr; i++) {
		const struct xmap_entry *e = &b->map.entries[i];
		const struct xmap_entry *k;
		char h256[OID_HEXSZ_MAX + 1], hm[OID_HEXSZ_MAX + 1],
		     h1[OID_HEXSZ_MAX + 1];
		struct oid o256, om, o1;

		if (!e->is_new || e->state != XMAP_DONE)
			continue;
		oid_from_raw(&o256, repo_algo(b->repo), e->names);
		if (!(k = xmap_get(&b->known, &o256)) ||
		    !memcmp(other_of(b, k), other_of(b, e), b->other->rawsz))
			continue;
		if (!st->map_disagree++) {
			oid_from_raw(&om, b->other, other_of(b, k));
			oid_from_raw(&o1, b->other, other_of(b, e));
			snprintf(st->first_map_disagree, sizeof(st->first_map_disagree),
				 "%s: the map says %s, its conversion %s",
				 oid_to_hex_r(h256, &o256), oid_to_hex_r(hm, &om),
				 oid_to_hex_r(h1, &o1));
		}
	}
}

/* ---- the whole ------------------------------------------------------ */

int xlate_build(struct repo *repo, struct cache *cache,
		const struct xlate_build_opts *opts,
		struct xlate_build_stats *stats)
{
	struct build b = { 0 };
	struct early_layout early = { 0 };
	const char *delay;
	struct name_sum gathered = { 0 }, unread;
	int due = 0;
	struct buf settings = BUF_INIT;
	uint64_t count, bad;
	struct pack_counts hint = { &b, 0 };
	double t = seconds(), t1;
	size_t bases;
	int ret;

	memset(stats, 0, sizeof(*stats));
	b.other = hash_algo_other(repo_algo(repo));
	b.repo = repo;
	b.odb = repo_odb(repo);
	bases = odb_delta_cache_limit(b.odb);
	b.cache = cache;
	b.opts = opts;
	b.stats = stats;
	b.spill.fd = -1;
	atomic_init(&b.done, 0);
	atomic_init(&b.nr_unreadable, 0);
	atomic_init(&b.trees, 0);
	atomic_init(&b.trees_against, 0);
	mutex_init_brief(&b.lock);
	mutex_init_brief(&b.names_lock);
	pthread_rwlock_init(&b.old_lock, NULL);
	pthread_mutex_init(&b.missing_lock, NULL);
	if ((ret = xlate_build_settings(opts, &settings)) ||
	    (ret = cache_check_settings(cache, settings.buf)) < 0)
		goto out;
	stats->emptied = ret == 1;
	if (stats->emptied)
		xlate_memo_clear(opts->memo);
	if ((ret = cache_count(cache, &count, &bad)))
		goto out;
	b.cache_empty = count == 0;
	/* sized for every packed object, so that it seldom grows */
	if ((ret = odb_for_each_pack(b.odb, count_packed, &hint)) ||
	    (ret = xmap_init(&b.map, repo_algo(repo), hint.todo)) ||
	    (ret = xmap_init(&b.known, repo_algo(repo), 16)) ||
	    (ret = xmap_init(&b.old, repo_algo(repo), 16)) ||
	    (ret = xmap_init(&b.missing, repo_algo(repo), 16)))
		goto out;
	if (opts->map &&
	    (ret = xlate_read_map(opts->map,
					    add_known_pair, &b)))
		goto out;

	if ((ret = odb_for_each_pack(b.odb, note_pack, &b)) ||
	    (ret = odb_for_each_broken_pack(b.odb, note_broken_pack, stats)) ||
	    (ret = odb_for_each_loose(b.odb, note_object, &b)))
		goto out;
	/* the refusals for now, if anything has arrived they may wait for */
	for (size_t i = 0; i < b.nr; i++) {
		struct oid oid;

		todo_oid(&b, i, &oid);
		name_sum_add(&gathered, &oid);
	}
	if (!b.cache_empty && (ret = retry_due(&b, &gathered, &due)))
		goto out;
	if (due && (ret = cache_for_each(cache, CACHE_EACH_RETRY, note_retry, &b)))
		goto out;
	stats->retried = due || b.cache_empty;
	/* one pack's objects come in name order already: no sort then */
	for (size_t i = 1; i < b.nr; i++)
		if (cmp_todo(&b.todo[i - 1], &b.todo[i], &b.map) > 0) {
			qsort_r(b.todo, b.nr, sizeof(*b.todo), cmp_todo,
				&b.map);
			break;
		}
	if ((ret = claims_init(&b.claims, b.nr)))
		goto out;
	b.total = b.nr;
	b.big = b.nr >= BIG_BUILD;
	if (b.big && bases > BIG_BUILD_BASES)
		odb_set_delta_cache_limit(b.odb, BIG_BUILD_BASES);
	if (b.big)
		limit_arenas(build_threads(&b));
	t1 = seconds();
	stats->secs_gather = t1 - t;
	if ((ret = classify(&b)))
		goto out;
	t = seconds();
	stats->secs_classify = t - t1;
	progress(&b);

	if (opts->pack1) {
		size_t arena = forms_bytes();
		const char *walk = getenv("XLATE_TEST_WALK_DELTAS");

		/* the tests compare it with the layout making every delta */
		b.native_deltas = !walk || strcmp(walk, "0");

		spill_open(&b.spill, cache_path(cache));
		if (b.spill.fd >= 0 && arena && (ret = forms_init(&b.forms, arena)))
			goto out;
	}
	if ((ret = cache_begin(cache)))
		goto out;
	/* if this build stops half way, the next must walk them again */
	if (due && (ret = retry_note(cache, &gathered, 1))) {
		cache_rollback(cache);
		goto out;
	}
	/*
	 * A bulk build keeps this batch from here to its end: what the
	 * walk writes itself (gitlinks, the map's pairs used) goes in it,
	 * and a second build on the same cache waits for it.
	 */
	b.bulk = bulk_wanted(&b);
	if (!b.bulk && (ret = writer_start(&b.writer, cache))) {
		cache_rollback(cache);
		goto out;
	}
	b.batch_start = seconds();
	/* the unreadable ones first: they are settled */
	for (size_t i = 0; i < b.nr && !ret; i++) {
		struct oid oid;

		if (todo_entry(&b, i)->state == XMAP_BAD) {
			atomic_fetch_add(&b.done, 1);
			todo_oid(&b, i, &oid);
			ret = store(&b, &oid);
		}
	}
	if (!ret)
		ret = name_blobs(&b);
	t1 = seconds();
	stats->secs_blobs = t1 - t;
	if (!ret)
		ret = name_the_rest(&b);
	t = seconds();
	stats->secs_walk = t - t1;

	if (!ret && b.collided)
		ret = refuse_dependents(&b);
	/* a pack with an object that could not be read is not finished */
	if (!ret && b.nr_unreadable)
		ret = odb_for_each_pack(b.odb, unmark_pack, &b);
	if (b.bulk) {
		/* what the walk held goes first: the sort of the index needs room */
		forms_release(&b.forms);
		/* (a build asked for one thread runs on one) */
		if (!ret && opts->pack1 && !b.collided && build_threads(&b) > 1)
			early_start(&early, &b);
		if (!ret && (ret = bulk_store(&b)))
			err_wrap("storing the names");
	} else {
		int werr = writer_drain(&b.writer);

		writer_stop(&b.writer);
		if (!ret)
			ret = werr;
	}
	for (size_t i = 0; i < b.nr_packs && !ret; i++)
		ret = cache_pack_done(cache, b.packs[i].checksum, b.packs[i].objects);
	/*
	 * Named something without walking the refusals (an object that
	 * could not be read before): the next build walks them.  The
	 * missing are counted anew when all the refusals were walked.
	 */
	unread_sum(&b, &unread);
	check_map(&b, stats);
	if (!ret)
		ret = retry_note(cache, &unread, !due && !b.cache_empty &&
				 stats->new_objects > 0);
	if (!ret && stats->retried) {
		missing_count(&b, &stats->missing);
		ret = xlate_missing_store(cache, &stats->missing);
	}
	/* the tests' way to have the layout ready before the rows are */
	if (early.started && (delay = getenv("XLATE_TEST_ROWS_DELAY_MS")))
		usleep(1000 * (useconds_t)atoi(delay));
	/* the rows' checkpoint goes on beside the layout: early_checkpoint() */
	if (!ret && early.started && !(ret = cache_defer_checkpoints(cache, 1)))
		early.deferred = 1;
	if (!ret)
		ret = cache_commit(cache);
	else
		cache_rollback(cache);
	if (early.started)
		early_open(&early, ret);
	/* earlier batches may have committed refusals even if this one failed */
	if (b.collided)
		xlate_memo_clear(opts->memo);
	/* counted from the cache: an object in two packs is one row */
	if (!ret && !cache_count(cache, &count, &bad))
		stats->objects = count + stats->unreadable;
	progress(&b);
	t1 = seconds();
	stats->secs_store = t1 - t;
	stats->spill_bytes = b.spill.len;
	stats->trees = b.trees;
	stats->trees_against = b.trees_against;
	stats->bulk = b.bulk;
	/*
	 * The walk's own tables are done with; the layout needs the names
	 * and the spill, and its tables of every pack entry take their
	 * room (at a million objects, 120 MB fewer at the peak).  After a
	 * big walk, so do sqlite's pages of the names' B-trees and the
	 * odb's delta bases: the layout reads trees and commits back from
	 * the spill, reuses blobs as they are stored, and appends its own
	 * rows.  The heap freed goes back to the system, or the peak would
	 * only move (at a million objects, the layout's peak was 642 MiB,
	 * and is 451 with this).
	 */
	forms_release(&b.forms);
	free(b.claims.slot);
	b.claims.slot = NULL;
	free(b.todo);
	b.todo = NULL;
	if (b.big) {
		cache_release_memory(cache);
		odb_release_memory(b.odb);
		malloc_trim(0);
	}
	if (early.started) {
		early_checkpoint(&early);
		ret = early_finish(&early, ret);
	} else if (!ret && opts->pack1) {
		ret = lay_out(&b, NULL);
	}
	stats->secs_layout = seconds() - t1;
	if (!ret)
		ret = remember_ref_names(&b);
	if (early.deferred) {
		int cret = cache_defer_checkpoints(cache, 0);

		early.deferred = 0;
		ret = ret ? ret : cret;
	}
	/*
	 * The recent rows grow only by what a build stores, so one that
	 * stored nothing need not count them (a count is a scan of them).
	 */
	t = seconds();
	if (!ret && (opts->fold || stats->new_objects > 0))
		ret = cache_fold(cache, opts->fold, &stats->folded);
	stats->secs_fold = seconds() - t;
	/* a file upstream keeps: said, but not ours to fail a build over */
	if (!ret && xlate_compat_update(repo, cache, stats->new_objects > 0 ||
					stats->emptied, &stats->compat)) {
		snprintf(stats->compat_error, sizeof(stats->compat_error), "%s",
			 err_msg());
		err_clear();
	}
out:
	if (early.started)
		early_finish(&early, ret ? ret : XL_EIO);
	if (early.deferred)
		cache_defer_checkpoints(cache, 0);	/* the daemon's goes on */
	if (b.big)
		odb_set_delta_cache_limit(b.odb, bases);
	buf_release(&settings);
	spill_close(&b.spill);
	forms_release(&b.forms);
	xmap_release(&b.map);
	free(b.claims.slot);
	xmap_release(&b.known);
	xmap_release(&b.old);
	xmap_release(&b.missing);
	free(b.todo);
	free(b.packs);
	pthread_mutex_destroy(&b.lock);
	pthread_mutex_destroy(&b.names_lock);
	pthread_rwlock_destroy(&b.old_lock);
	pthread_mutex_destroy(&b.missing_lock);
	return ret;
}
