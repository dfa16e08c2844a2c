/*
 * build.c: name every object of a repository, in dependency order, into
 * the cache.
 *
 *   xlate_build
 *     gather       packs the cache has not finished, and loose objects:
 *                  every object not already in the cache is new
 *     classify     the type and size of each new object (headers only)
 *     blobs        SHA-1 of "blob <size>\0" + content, on N threads;
 *                  a blob's SHA-1 form is its SHA-256 form
 *     the rest     an explicit-stack depth-first walk: an object is named
 *                  after everything it refers to (trees bottom-up,
 *                  commits after their trees and parents, tags after
 *                  their targets), by converting it with xlate_object()
 *                  and hashing the result
 *     store        in the order names are found, in batches, each batch
 *                  one transaction; then the packs are marked finished
 *     lay out      if asked (opts->pack1), the SHA-1 packs of finished
 *                  packs (pack1.c), from this build's table of names and
 *                  the SHA-1 forms the walk kept in a spill file, not
 *                  from sqlite lookups and conversions made again
 *
 * Memory: the name table holds every new object and every cached name
 * looked up (about 90 bytes each); the walk's stack holds one frame per
 * level, with the content of trees and tags on it (tree depth is small)
 * but not of commits, which are read again when their turn comes
 * (history can be millions deep).
 *
 * A repository whose objects refer to each other in a cycle cannot exist
 * unless it is corrupt (names are hashes); the walk notices a reference
 * to an object on its own stack and refuses both instead of looping.
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
 * object included) are stored with the retry mark.  Every build starts
 * by loading the cache's retry set (a partial index: its cost follows
 * the set, not the cache) as new objects, so they are walked again with
 * whatever has arrived since; one that still fails is stored again,
 * marked as before.  When a refused-for-now object's other references
 * include one refused for good, it is refused for good.
 *
 * Read errors that say nothing about the object (out of memory, I/O
 * errors) and cache errors stop the build: what was committed stays,
 * and nothing is refused because of them.
 */
#include "xlate_i.h"
#include "../cache/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * A transaction is committed a second after the last one (or after this
 * many objects): a killed build loses at most about a second's work.
 * Small batches cost dearly: names are random keys, so every batch
 * dirties pages all over the file's B-trees and rewrites them.
 */
#define BATCH_SECONDS 1.0
#define BATCH_OBJECTS 250000
#define STREAM_MIN ((size_t)32 << 20)	/* hash blobs this big piecewise */
#define XMAP_VISITING 0x80	/* state flag: on the walk's stack */

struct pack_mark {
	char checksum[OID_HEXSZ_MAX + 1];
	uint32_t objects;
};

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
	pthread_mutex_t lock;
	pthread_cond_t wake, idle;
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
		pthread_mutex_unlock(&w->lock);
		for (size_t i = 0; i < ntake; i++) {
			if (ret) {
				/* failed: drop the rest, the error is reported */
			} else if (!take[i].co.sha256.algo) {
				if (!(ret = cache_commit(w->cache)))
					ret = cache_begin(w->cache);
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

static int writer_push(struct writer *w, const struct cache_object *co)
{
	int ret = 0;

	pthread_mutex_lock(&w->lock);
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
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	return ret;
}

/* Wait until everything queued is in the cache; the writer's error, if any. */
static int writer_drain(struct writer *w)
{
	int ret;

	pthread_mutex_lock(&w->lock);
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
	w->cache = cache;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->idle, NULL);
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
	pthread_mutex_destroy(&w->lock);
}

/*
 * The SHA-1 forms the walk made, kept for the layout that follows it
 * (xlate_build_opts.pack1): laying a pack out needs the SHA-1 form of
 * every tree, commit and tag in it, and reading them back costs a
 * fraction of converting them again (on the bench repository the second
 * conversion was half the layout's time).  They go to an unlinked file
 * beside the cache, not to memory: the forms of a large history run to
 * hundreds of megabytes.  Any failure to write or read it only turns
 * the layout back to converting.
 */
#define SPILL_FLUSH ((size_t)1 << 20)
/*
 * The forms are uncompressed, so the file can be many times the size
 * of the pack (trees are stored whole): it may take at most this much,
 * and at most a quarter of the space free when the build starts, so
 * that it never starves the cache beside it.  Forms past the limit are
 * converted again by the layout.
 */
#define SPILL_MAX ((uint64_t)4 << 30)

struct spill {
	int fd;				/* -1: none (unwanted, or failed) */
	uint64_t len;			/* bytes written */
	uint64_t max;			/* bytes it may take */
	struct buf pending;		/* appended, not yet written */
};

struct build {
	struct repo *repo;
	struct odb *odb;
	struct cache *cache;
	const struct xlate_build_opts *opts;
	struct xlate_build_stats *stats;
	struct xmap map;		/* every name this build knows */
	struct xmap by_sha1;		/* new SHA-1 names -> index in map (collisions) */
	struct xmap submodules;		/* the submodule map: for gitlinks only */
	struct oid *todo;		/* new objects, in name order */
	size_t nr, alloc;
	struct pack_mark *packs;	/* packs to mark finished at the end */
	size_t nr_packs, alloc_packs;
	int cache_empty;		/* no lookups needed when nothing is stored */
	int collided;			/* a named object was refused afterwards */
	struct oid blocked;		/* see build_map() */
	int has_blocked;
	struct recent *recent;		/* see build_map() */
	int map_failed, map_retry;	/* see build_map() */
	struct oid map_bad;		/* the reference that failed */
	int fatal;			/* a cache error met inside a mapping */
	size_t nr_unreadable;		/* entries marked XMAP_F_UNREADABLE */
	size_t in_batch;
	double batch_start;		/* when the open transaction began */
	struct writer writer;		/* puts results into the cache */
	struct spill spill;		/* SHA-1 forms, for the layout */
	atomic_uint_fast64_t done;
	uint64_t total;
};

/* ---- progress and storing ------------------------------------------- */

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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

static int store(struct build *b, const struct oid *oid)
{
	struct xmap_entry *e = xmap_get(&b->map, oid);
	struct cache_object co = { 0 };
	int ret;

	if (e->state == XMAP_BAD && (e->flags & XMAP_F_UNREADABLE)) {
		skip_unreadable(b, oid, e);
		return 0;
	}
	co.sha256 = *oid;
	co.type = (enum obj_type)e->type;
	co.size256 = e->size256;
	if (e->state == XMAP_DONE) {
		oid_from_raw(&co.sha1, &hash_sha1, e->sha1);
		co.size1 = e->size1;
	} else {
		co.reason = e->reason;
		co.retry = !!(e->flags & XMAP_F_RETRY);
		b->stats->untranslatable++;
		if (co.retry)
			b->stats->retry++;
	}
	b->stats->new_objects++;
	if ((ret = writer_push(&b->writer, &co)))
		return ret;
	if (!(b->stats->new_objects & 1023)) {
		progress(b);	/* the callback limits how often it draws */
		if (b->opts->cancel && atomic_load(b->opts->cancel))
			return err_set(XL_EIO, "build stopped");
	}
	/* the clock is read every 256 objects, not every time */
	if (++b->in_batch >= BATCH_OBJECTS ||
	    (!(b->in_batch & 255) && seconds() - b->batch_start >= BATCH_SECONDS)) {
		struct cache_object commit_point = { 0 };

		if ((ret = writer_push(&b->writer, &commit_point)))
			return ret;
		b->in_batch = 0;
		b->batch_start = seconds();
		progress(b);
	}
	return 0;
}

/* ---- the spill file ------------------------------------------------- */

static void spill_close(struct spill *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	sp->fd = -1;
	buf_release(&sp->pending);
}

/* An unlinked file in the cache's directory (so on its file system). */
static void spill_open(struct spill *sp, const char *cache_path)
{
	char *dir = strdup(cache_path), *slash;

	sp->fd = -1;
	sp->len = 0;
	buf_init(&sp->pending);
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

static int spill_flush(struct spill *sp)
{
	const char *p = sp->pending.buf;
	size_t left = sp->pending.len;

	while (left) {
		ssize_t n = write(sp->fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			spill_close(sp);
			return -1;
		}
		p += n;
		left -= (size_t)n;
	}
	buf_reset(&sp->pending);
	return 0;
}

/* Keep e's SHA-1 form; e->spill says where. */
static void spill_put(struct spill *sp, struct xmap_entry *e,
		      const struct buf *form)
{
	if (sp->fd < 0 || form->len > sp->max - sp->len)
		return;
	if (buf_add(&sp->pending, form->buf, form->len)) {
		spill_close(sp);
		return;
	}
	e->spill = sp->len + 1;
	sp->len += form->len;
	if (sp->pending.len >= SPILL_FLUSH)
		spill_flush(sp);
}

/* ---- names already known -------------------------------------------- */

/* Copy what the cache says of an object into the table. */
static struct xmap_entry *remember(struct build *b,
				   const struct cache_object *co)
{
	struct xmap_entry *e = xmap_add(&b->map, &co->sha256);

	if (!e)
		return NULL;
	e->type = (uint8_t)co->type;
	e->size256 = co->size256;
	e->size1 = co->size1;
	e->is_new = 0;
	if (co->sha1.algo) {
		memcpy(e->sha1, co->sha1.hash, 20);
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
 * if unknown.  Returns 0 or an error: a cache that cannot answer must
 * not pass for "no such object" (that would refuse good objects).
 */
static int lookup(struct build *b, const struct oid *oid,
		  struct xmap_entry **out)
{
	struct cache_object co;
	int ret;

	*out = xmap_get(&b->map, oid);
	if (*out || b->cache_empty)
		return 0;
	ret = cache_get(b->cache, oid, &co);
	if (ret == XL_ENOTFOUND)
		return 0;
	if (ret)
		return ret;
	if (!(*out = remember(b, &co)))
		return XL_ENOMEM;
	return 0;
}

/*
 * Consecutive trees of a history mostly list the same entries, and the
 * walk converts them one after the other; a small direct-mapped cache of
 * names already found, sized to stay in the processor's cache, answers
 * most lookups without touching the big table (which misses memory every
 * time).  Only final answers (named objects) go in.
 */
#define RECENT_SLOTS 8192	/* power of two */

struct recent {
	unsigned char key[32];
	unsigned char sha1[20];
};

/*
 * The mapping the converter uses: names of what an object refers to.
 * A reference to an object of this build not yet named (a tree behind a
 * file mode, in an odd repository) is noted in b->blocked, so that the
 * walk can name it first and convert again.
 */
static int build_map(void *data, const struct oid *in, struct oid *out)
{
	struct build *b = data;
	struct recent *r = b->recent ?
		&b->recent[(in->hash[0] | in->hash[1] << 8) & (RECENT_SLOTS - 1)] : NULL;
	struct xmap_entry *e;

	char hex[OID_HEXSZ_MAX + 1];
	int ret;

	if (r && !memcmp(r->key, in->hash, 32)) {
		oid_from_raw(out, &hash_sha1, r->sha1);
		return 0;
	}
	if ((ret = lookup(b, in, &e))) {
		b->fatal = ret;
		return ret;
	}
	if (!e) {
		/* missing now; a fetch or an unshallow may bring it */
		b->map_failed = b->map_retry = 1;
		b->map_bad = *in;
		return err_set(XL_ENOTFOUND, "%s is not in the repository",
			       oid_to_hex_r(hex, in));
	}
	if (e->state == XMAP_DONE) {
		oid_from_raw(out, &hash_sha1, e->sha1);
		if (r) {
			memcpy(r->key, in->hash, 32);
			memcpy(r->sha1, e->sha1, 20);
		}
		return 0;
	}
	if (e->state == XMAP_PENDING && e->is_new && !b->has_blocked) {
		b->blocked = *in;
		b->has_blocked = 1;
	}
	if (e->state == XMAP_BAD) {
		b->map_failed = 1;
		b->map_retry = !!(e->flags & XMAP_F_RETRY);
		b->map_bad = *in;
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
	struct build *b = data;
	struct xmap_entry *e;
	char hex[OID_HEXSZ_MAX + 1];
	int ret;

	if ((ret = lookup(b, in, &e))) {
		b->fatal = ret;
		return ret;
	}
	if (e)
		return build_map(data, in, out);
	if ((e = xmap_get(&b->submodules, in))) {
		oid_from_raw(out, &hash_sha1, e->sha1);
		return 0;
	}
	b->map_failed = 1;
	b->map_retry = 0;
	b->map_bad = *in;
	return err_set(XL_ENOTFOUND, "gitlink %s is not in the submodule map",
		       oid_to_hex_r(hex, in));
}

/* Map pairs go to their own table: they must never hide a real name. */
static int add_submodule_pair(void *data, const struct oid *o256,
			      const struct oid *o1)
{
	struct build *b = data;
	struct xmap_entry *e = xmap_add(&b->submodules, o256);

	if (!e)
		return XL_ENOMEM;
	e->type = OBJ_COMMIT;
	memcpy(e->sha1, o1->hash, 20);
	e->state = XMAP_DONE;
	return 0;
}

/* ---- gather and classify -------------------------------------------- */

static int note_object(const struct oid *oid, void *data)
{
	struct build *b = data;
	struct xmap_entry *e;
	int ret;

	if ((ret = lookup(b, oid, &e)))
		return ret;
	if (e)
		return 0;	/* stored already, or seen in another pack */
	if (!(e = xmap_add(&b->map, oid)))
		return XL_ENOMEM;
	e->is_new = 1;
	if (ARRAY_GROW(b->todo, b->nr, b->alloc, 1024))
		return XL_ENOMEM;
	b->todo[b->nr++] = *oid;
	return 0;
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

/* One of the cache's refusals for now: walk it again as if new. */
static int note_retry(const struct cache_object *co, void *data)
{
	struct build *b = data;
	struct xmap_entry *e = xmap_add(&b->map, &co->sha256);

	if (!e)
		return XL_ENOMEM;
	e->is_new = 1;
	e->flags = XMAP_F_RETRIED;
	if (ARRAY_GROW(b->todo, b->nr, b->alloc, 1024))
		return XL_ENOMEM;
	b->todo[b->nr++] = co->sha256;
	return 0;
}

/*
 * A pack holding an object that could not be read is not finished: drop
 * it from the list to mark, so that the next build gathers it again.
 * Only runs when something was unreadable.
 */
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

static int cmp_oid(const void *a, const void *b)
{
	return oid_cmp(a, b);
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
	xmap_set_bad(e, reason);
	e->flags |= XMAP_F_UNREADABLE | XMAP_F_RETRY;
	/* a refusal for now whose object has left: leave its row alone */
	if (ret == XL_ENOTFOUND && (e->flags & XMAP_F_RETRIED))
		e->flags |= XMAP_F_GONE;
	b->nr_unreadable++;
}

/* Type and size of every new object; unreadable ones are marked. */
static int classify(struct build *b)
{
	for (size_t i = 0; i < b->nr; i++) {
		struct xmap_entry *e = xmap_get(&b->map, &b->todo[i]);
		enum obj_type type;
		size_t size;
		int ret;

		if ((ret = odb_read_header(b->odb, &b->todo[i], &type, &size))) {
			if (!is_unreadable(ret))
				return ret;
			set_unreadable(b, e, ret);
			continue;
		}
		e->type = (uint8_t)type;
		e->size256 = size;
	}
	return 0;
}

static int check_collision(struct build *b, const struct oid *oid,
			   const struct oid *sha1);

/* ---- blobs, in parallel --------------------------------------------- */

struct blob_job {
	struct build *b;
	size_t *idx;			/* positions in b->todo of the blobs */
	size_t nr;
	atomic_size_t next;		/* the next blob to take */
	pthread_mutex_t lock;
	int error;			/* guarded by lock: a read error that
					   stops the build, and its message */
	char errmsg[1024];
};

/* SHA-1 of "blob <size>\0" + content, streamed: no whole copy in memory. */
static int hash_blob(struct odb *odb, const struct oid *oid,
		     unsigned char *sha1, struct buf *scratch)
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
		struct oid out;

		if ((ret = hash_object(&hash_sha1, "blob", scratch->buf,
				       scratch->len, &out)))
			return ret;
		memcpy(sha1, out.hash, 20);
		return 0;
	}
	if ((ret = odb_stream_open(odb, oid, &st, &type, &size)))
		return ret;
	if (!(ctx = EVP_MD_CTX_new())) {
		odb_stream_close(st);
		return err_set(XL_ENOMEM, "out of memory");
	}
	n = snprintf(hdr, sizeof(hdr), "blob %zu", size);
	EVP_DigestInit_ex(ctx, EVP_sha1(), NULL);
	EVP_DigestUpdate(ctx, hdr, (size_t)n + 1);
	buf_reset(scratch);
	if (!(ret = buf_grow(scratch, 1 << 16))) {
		while (!(ret = odb_stream_read(st, scratch->buf, 1 << 16, &got)) && got)
			EVP_DigestUpdate(ctx, scratch->buf, got);
	}
	if (!ret)
		EVP_DigestFinal_ex(ctx, sha1, NULL);
	EVP_MD_CTX_free(ctx);
	odb_stream_close(st);
	return ret;
}

static void *blob_worker(void *arg)
{
	struct blob_job *job = arg;
	struct build *b = job->b;
	struct buf scratch = BUF_INIT;
	size_t i;

	while ((i = atomic_fetch_add(&job->next, 1)) < job->nr) {
		/* entries do not move: nothing is added to the table meanwhile */
		struct xmap_entry *e = xmap_get(&b->map, &b->todo[job->idx[i]]);

		int ret = hash_blob(b->odb, &b->todo[job->idx[i]], e->sha1,
				    &scratch);

		if (ret && is_unreadable(ret)) {
			char reason[1100];

			/* not set_unreadable(): it counts, and we are many */
			snprintf(reason, sizeof(reason), "cannot read: %s", err_msg());
			e->reason = strdup(reason);
			e->flags |= XMAP_F_UNREADABLE | XMAP_F_RETRY;
			if (ret == XL_ENOTFOUND && (e->flags & XMAP_F_RETRIED))
				e->flags |= XMAP_F_GONE;
			e->state = XMAP_BAD;
		} else if (ret) {
			pthread_mutex_lock(&job->lock);
			if (!job->error) {
				job->error = ret;
				snprintf(job->errmsg, sizeof(job->errmsg), "%s",
					 err_msg());
			}
			pthread_mutex_unlock(&job->lock);
			atomic_store(&job->next, job->nr);	/* stop all */
			break;
		} else {
			e->size1 = e->size256;
			e->state = XMAP_DONE;
		}
		atomic_fetch_add(&b->done, 1);
	}
	buf_release(&scratch);
	return NULL;
}

static int name_blobs(struct build *b)
{
	struct blob_job job = { .b = b };
	int threads = b->opts->threads > 0 ? b->opts->threads :
		(int)sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t tid[64];
	int started = 0, ret = 0;

	job.idx = malloc((b->nr ? b->nr : 1) * sizeof(*job.idx));
	if (!job.idx)
		return err_set(XL_ENOMEM, "out of memory");
	for (size_t i = 0; i < b->nr; i++) {
		struct xmap_entry *e = xmap_get(&b->map, &b->todo[i]);

		if (e->state == XMAP_PENDING && e->type == OBJ_BLOB)
			job.idx[job.nr++] = i;
	}
	atomic_init(&job.next, 0);
	pthread_mutex_init(&job.lock, NULL);
	if (threads < 1)
		threads = 1;
	if (threads > 64)
		threads = 64;
	for (int t = 1; t < threads && (size_t)t < job.nr; t++)
		if (!pthread_create(&tid[started], NULL, blob_worker, &job))
			started++;
	blob_worker(&job);	/* this thread works too */
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&job.lock);
	if (job.error) {
		free(job.idx);
		return err_set(job.error, "%s", job.errmsg);
	}

	/*
	 * Blobs claim their SHA-1 names like everything else.  All blobs
	 * come before any tree, so no object has used a blob's name yet
	 * when a collision refuses it.  The cost is one insert into the
	 * by_sha1 table per blob (and, when the cache is not empty, one
	 * lookup by SHA-1 name, as for every other new object).
	 */
	for (size_t i = 0; i < job.nr && !ret; i++) {
		const struct oid *oid = &b->todo[job.idx[i]];
		struct xmap_entry *e = xmap_get(&b->map, oid);
		struct oid sha1;

		if (e->state == XMAP_BAD) {
			b->nr_unreadable++;
			ret = store(b, oid);
			continue;
		}
		oid_from_raw(&sha1, &hash_sha1, e->sha1);
		ret = check_collision(b, oid, &sha1);
		if (ret)	/* 1: refused and stored by check_collision */
			ret = ret < 0 ? ret : 0;
		else
			ret = store(b, oid);
	}
	free(job.idx);
	return ret;
}

/* ---- the rest, depth first ------------------------------------------ */

struct frame {
	struct oid oid;
	enum obj_type type;
	struct buf content;		/* trees and tags; commits are re-read */
	struct oid *deps;		/* new objects it needs named first */
	size_t ndeps, next;
	int has_gitlink;		/* a tree with 160000 entries */
};

struct deps_ctx {
	struct build *b;
	struct frame *f;
	size_t alloc;
	int ret;
};

static int collect_dep(void *data, enum xlate_ref_kind kind,
		       const struct oid *oid, const char *name,
		       size_t name_len)
{
	struct deps_ctx *d = data;
	struct xmap_entry *e;

	if (kind == XLATE_REF_GITLINK)
		d->f->has_gitlink = 1;	/* and if it is ours and new, a dependency */
	/*
	 * Blobs are all named before this walk, so a file entry cannot hold
	 * it up; skipping their lookup halves the walk's table traffic.  (A
	 * file entry naming a tree, in an odd repository, is caught when the
	 * conversion meets it: see build_map.)
	 */
	if (kind == XLATE_REF_TREE_ENTRY)
		return 0;
	e = xmap_get(&d->b->map, oid);

	/* only objects of this build still to be named hold the walk up */
	if (!e || !e->is_new || (e->state != XMAP_PENDING &&
				 e->state != (XMAP_PENDING | XMAP_VISITING)))
		return 0;
	if (ARRAY_GROW(d->f->deps, d->f->ndeps, d->alloc, 8))
		return XL_ENOMEM;
	d->f->deps[d->f->ndeps++] = *oid;
	return 0;
}

static void frame_release(struct frame *f)
{
	buf_release(&f->content);
	free(f->deps);
	memset(f, 0, sizeof(*f));
}

static int refuse(struct build *b, const struct oid *oid, const char *why)
{
	xmap_set_bad(xmap_get(&b->map, oid), why);
	atomic_fetch_add(&b->done, 1);
	return store(b, oid);
}

/*
 * The object could not be read (ret from the read, err_msg() why): it is
 * left for the next build, unless the error stops this one.
 */
static int unreadable(struct build *b, const struct oid *oid, int ret)
{
	if (!is_unreadable(ret))
		return ret;
	set_unreadable(b, xmap_get(&b->map, oid), ret);
	atomic_fetch_add(&b->done, 1);
	return store(b, oid);	/* counts it; stores nothing */
}

/*
 * Is any reference of the object refused for good?  Then so is the
 * object, whatever the first failing reference said (the converter
 * stops at the first).
 */
static int find_permanent(void *data, enum xlate_ref_kind kind,
			  const struct oid *oid, const char *name, size_t len)
{
	struct build *b = data;
	struct xmap_entry *e;

	if (lookup(b, oid, &e))
		return 0;	/* no answer: stay with "for now" */
	if (!e) {
		/* missing; for a gitlink, the map decides, and for good */
		return kind == XLATE_REF_GITLINK &&
		       !xmap_get(&b->submodules, oid) &&
		       !xlate_builtin(oid, &hash_sha1, &(struct oid){ 0 });
	}
	return e->state == XMAP_BAD && !(e->flags & XMAP_F_RETRY);
}

/*
 * Start on oid: read it, list the new objects it refers to.  Returns 1
 * if a frame was made, 0 if the object was settled at once (refused),
 * or an error.
 */
static int frame_open(struct build *b, const struct oid *oid, struct frame *f)
{
	struct xmap_entry *e = xmap_get(&b->map, oid);
	struct deps_ctx d = { b, f, 0, 0 };
	enum obj_type type;
	int ret;

	memset(f, 0, sizeof(*f));
	f->oid = *oid;
	f->type = (enum obj_type)e->type;
	buf_init(&f->content);
	if ((ret = odb_read(b->odb, oid, &type, &f->content))) {
		frame_release(f);
		return unreadable(b, oid, ret);
	}
	ret = xlate_refs(repo_algo(b->repo), type, f->content.buf,
			 f->content.len, collect_dep, &d);
	if (ret) {
		char reason[1100];

		if (ret != XL_ECORRUPT) {
			frame_release(f);
			return ret;
		}
		snprintf(reason, sizeof(reason), "%s", err_msg());
		frame_release(f);
		return refuse(b, oid, reason);
	}
	if (type == OBJ_COMMIT)
		buf_release(&f->content);	/* history is deep: read it again later */
	xmap_get(&b->map, oid)->state |= XMAP_VISITING;
	return 1;
}

/*
 * Two objects must never share a SHA-1 name.  If `sha1` already belongs
 * to another object (of this build, or named earlier and in the cache),
 * refuse this one and the other, and return 1; else claim the name and
 * return 0.  Objects that already used the other one's name are
 * refused afterwards by refuse_dependents().
 */
static int check_collision(struct build *b, const struct oid *oid,
			   const struct oid *sha1)
{
	struct oid key = { .algo = &hash_sha256 }, owner;
	struct xmap_entry *k, *o;
	char why[300], hex[OID_HEXSZ_MAX + 1], hex1[OID_HEXSZ_MAX + 1];
	struct cache_object co;
	int ret;

	memcpy(key.hash, sha1->hash, 20);
	k = xmap_get(&b->by_sha1, &key);
	if (!k && !b->cache_empty) {
		ret = cache_get_by_sha1(b->cache, sha1, &co);
		if (ret && ret != XL_ENOTFOUND)
			return ret;	/* no answer is not "no owner" */
		if (!ret && oid_cmp(&co.sha256, oid)) {
			owner = co.sha256;
			if ((ret = lookup(b, &owner, &o)))
				return ret;
			if (!o)
				return err_set(XL_EIO, "cache lost an object");
			goto collision;
		}
	}
	if (k) {
		/* by_sha1 keeps the owner's index in map in size256 */
		oid_from_raw(&owner, repo_algo(b->repo),
			     b->map.entries[k->size256].key);
		if (!oid_cmp(&owner, oid))
			return 0;	/* claimed before (stored twice) */
	} else {
		struct xmap_entry *self = xmap_get(&b->map, oid);

		/* an index, not a pointer or a copy: no allocation per name */
		if (!(k = xmap_add(&b->by_sha1, &key)))
			return err_set(XL_ENOMEM, "out of memory");
		k->size256 = (uint64_t)(self - b->map.entries);
		k->state = XMAP_DONE;
		return 0;
	}
collision:
	oid_to_hex_r(hex1, sha1);
	snprintf(why, sizeof(why), "SHA-1 collision: %s is also the name of %s",
		 hex1, oid_to_hex_r(hex, &owner));
	b->stats->collisions++;
	if ((ret = refuse(b, oid, why)))
		return ret;
	o = xmap_get(&b->map, &owner);
	if (o->state == XMAP_DONE) {
		snprintf(why, sizeof(why), "SHA-1 collision: %s is also the name of %s",
			 hex1, oid_to_hex_r(hex, oid));
		xmap_set_bad(o, why);
		b->stats->collisions++;
		b->collided = 1;
		/* stored again, now refused (it may be an older object) */
		o->is_new = 1;
		if ((ret = store(b, &owner)))
			return ret;
	}
	return 1;
}

/* Record the gitlinks of a tree that converted (for report and reading). */
struct gitlink_ctx {
	struct build *b;
	const struct oid *tree;
};

static int record_gitlink(void *data, enum xlate_ref_kind kind,
			  const struct oid *oid, const char *name,
			  size_t name_len)
{
	struct gitlink_ctx *g = data;
	struct oid sha1;

	if (kind != XLATE_REF_GITLINK || build_map_gitlink(g->b, oid, &sha1))
		return 0;
	return cache_put_gitlink(g->b->cache, g->tree, name, name_len, oid,
				 &sha1);
}

/* Everything f refers to is named: convert, hash, record. */
static int frame_close(struct build *b, struct frame *f, struct buf *conv)
{
	struct xlate_opts o = {
		repo_algo(b->repo), &hash_sha1, build_map, b,
		b->opts->unknown_headers, build_map_gitlink,
	};
	struct xmap_entry *e;
	enum obj_type type;
	struct oid sha1;
	int ret;

	if (!f->content.len && f->type == OBJ_COMMIT &&
	    (ret = odb_read(b->odb, &f->oid, &type, &f->content))) {
		xmap_get(&b->map, &f->oid)->state &= ~XMAP_VISITING;
		return unreadable(b, &f->oid, ret);
	}
	b->has_blocked = 0;
	b->map_failed = b->map_retry = 0;
	b->fatal = 0;
	ret = xlate_object(&o, f->type, f->content.buf, f->content.len, conv);
	if (b->fatal)
		return b->fatal;	/* the cache failed us: not the object's fault */
	if (ret && b->has_blocked) {
		/* it needs an object of this build named first: walk there */
		struct oid *p = realloc(f->deps, (f->ndeps + 1) * sizeof(*p));

		if (!p)
			return err_set(XL_ENOMEM, "out of memory");
		f->deps = p;
		f->deps[f->ndeps++] = b->blocked;
		return 2;
	}
	e = xmap_get(&b->map, &f->oid);
	e->state &= ~XMAP_VISITING;
	if (ret == XL_ENOMEM || ret == XL_EIO)
		return ret;
	if (ret && b->map_failed) {
		/* a reference failed: say which and why, and whether for good */
		struct xmap_entry *d = xmap_get(&b->map, &b->map_bad);
		char why[1400];
		int retry = b->map_retry;

		if (d && (d->flags & XMAP_F_UNREADABLE))
			snprintf(why, sizeof(why), "%s (%s)", err_msg(), d->reason);
		else
			snprintf(why, sizeof(why), "%s", err_msg());
		if (retry && xlate_refs(repo_algo(b->repo), f->type, f->content.buf,
					f->content.len, find_permanent, b) == 1)
			retry = 0;
		e = xmap_get(&b->map, &f->oid);
		e->flags = (uint8_t)((e->flags & ~XMAP_F_RETRY) |
				     (retry ? XMAP_F_RETRY : 0));
		return refuse(b, &f->oid, why);
	}
	if (ret)
		return refuse(b, &f->oid, err_msg());
	hash_object(&hash_sha1, type_name(f->type), conv->buf, conv->len, &sha1);

	if ((ret = check_collision(b, &f->oid, &sha1)))
		return ret < 0 ? ret : 0;
	if (f->has_gitlink) {
		struct gitlink_ctx g = { b, &f->oid };

		if ((ret = xlate_refs(repo_algo(b->repo), OBJ_TREE, f->content.buf,
				      f->content.len, record_gitlink, &g)))
			return ret;
	}
	e = xmap_get(&b->map, &f->oid);
	memcpy(e->sha1, sha1.hash, 20);
	e->size1 = conv->len;
	e->state = XMAP_DONE;
	spill_put(&b->spill, e, conv);
	atomic_fetch_add(&b->done, 1);
	return store(b, &f->oid);
}

static int name_the_rest(struct build *b)
{
	struct frame *stack = NULL;
	size_t depth = 0, alloc = 0;
	struct buf conv = BUF_INIT;
	int ret = 0;

	for (size_t i = 0; i < b->nr && !ret; i++) {
		struct xmap_entry *e = xmap_get(&b->map, &b->todo[i]);

		if (e->state != XMAP_PENDING)
			continue;
		if (depth == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			stack = realloc(stack, alloc * sizeof(*stack));
			if (!stack) {
				ret = err_set(XL_ENOMEM, "out of memory");
				break;
			}
		}
		ret = frame_open(b, &b->todo[i], &stack[depth]);
		if (ret != 1)
			continue;
		ret = 0;
		depth++;
		while (depth && !ret) {
			struct frame *f = &stack[depth - 1];

			if (f->next < f->ndeps) {
				struct oid dep = f->deps[f->next++];
				struct xmap_entry *d = xmap_get(&b->map, &dep);

				if (d->state & XMAP_VISITING) {
					/* only a corrupt repository can loop */
					char why[200], hex[OID_HEXSZ_MAX + 1];

					snprintf(why, sizeof(why),
						 "reference cycle through %s (corrupt repository)",
						 oid_to_hex_r(hex, &dep));
					d->state &= ~XMAP_VISITING;
					xmap_set_bad(d, why);
					d->state |= XMAP_VISITING;
					continue;
				}
				if (d->state != XMAP_PENDING)
					continue;
				if (depth == alloc) {
					struct frame *p;

					alloc *= 2;
					p = realloc(stack, alloc * sizeof(*stack));
					if (!p) {
						ret = err_set(XL_ENOMEM, "out of memory");
						break;
					}
					stack = p;
					f = &stack[depth - 1];
				}
				ret = frame_open(b, &dep, &stack[depth]);
				if (ret == 1) {
					depth++;
					ret = 0;
				}
				continue;
			}
			if (xmap_get(&b->map, &f->oid)->state ==
			    (XMAP_BAD | XMAP_VISITING)) {
				/* marked by a cycle while on the stack */
				xmap_get(&b->map, &f->oid)->state = XMAP_BAD;
				atomic_fetch_add(&b->done, 1);
				ret = store(b, &f->oid);
			} else {
				ret = frame_close(b, f, &conv);
				if (ret == 2) {
					ret = 0;	/* a dependency to name first */
					continue;
				}
			}
			frame_release(f);
			depth--;
		}
	}
	while (depth)
		frame_release(&stack[--depth]);
	free(stack);
	buf_release(&conv);
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
			struct xmap_entry *e = xmap_get(&b->map, &b->todo[i]);
			struct bad_ref_ctx c = { b, { { 0 }, NULL }, 0 };
			enum obj_type type;

			if (e->state != XMAP_DONE || e->type == OBJ_BLOB)
				continue;
			if (odb_read(b->odb, &b->todo[i], &type, &content))
				continue;
			xlate_refs(repo_algo(b->repo), type, content.buf,
				   content.len, find_bad_ref, &c);
			if (c.found) {
				char why[200], hex[OID_HEXSZ_MAX + 1];

				snprintf(why, sizeof(why), "refers to untranslatable %s",
					 oid_to_hex_r(hex, &c.bad));
				xmap_set_bad(xmap_get(&b->map, &b->todo[i]), why);
				ret = store(b, &b->todo[i]);
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
		oid_from_raw(&co->sha1, &hash_sha1, e->sha1);
		co->size1 = e->size1;
	} else {
		co->reason = e->reason;
		co->retry = !!(e->flags & XMAP_F_RETRY);
	}
	return 0;
}

/* The same for converting: only the SHA-1 name, recent ones first. */
static int names_map(void *data, const struct oid *in, struct oid *out)
{
	struct build *b = data;
	unsigned slot = (in->hash[0] | in->hash[1] << 8) & (RECENT_SLOTS - 1);
	struct recent *r = b->recent ? &b->recent[slot] : NULL;
	struct xmap_entry *e;
	char hex[OID_HEXSZ_MAX + 1];

	if (r && !memcmp(r->key, in->hash, 32)) {
		oid_from_raw(out, &hash_sha1, r->sha1);
		return 0;
	}
	if (!(e = settled(b, in)))
		return XL_ENOTFOUND;
	if (e->state == XMAP_BAD)
		return err_set(XL_EUNSUPPORTED, "%s is untranslatable: %s",
			       oid_to_hex_r(hex, in), e->reason);
	oid_from_raw(out, &hash_sha1, e->sha1);
	if (r) {
		memcpy(r->key, in->hash, 32);
		memcpy(r->sha1, e->sha1, 20);
	}
	return 0;
}

/* And the SHA-1 form itself, from the spill file. */
static int names_form(void *data, const struct oid *oid, struct buf *out)
{
	struct build *b = data;
	struct xmap_entry *e = xmap_get(&b->map, oid);
	uint64_t at, left;
	char *p;
	int ret;

	buf_reset(out);
	if (b->spill.fd < 0 || !e || e->state != XMAP_DONE || !e->spill)
		return XL_ENOTFOUND;
	if (e->size1 > SIZE_MAX / 2)
		return XL_ENOTFOUND;
	if ((ret = buf_grow(out, (size_t)e->size1)))
		return ret;
	p = out->buf;
	at = e->spill - 1;
	left = e->size1;
	while (left) {
		ssize_t n = pread(b->spill.fd, p, left > (1u << 30) ? 1u << 30 :
				  (size_t)left, (off_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			buf_reset(out);
			return XL_ENOTFOUND;	/* convert it instead */
		}
		p += n;
		at += (uint64_t)n;
		left -= (uint64_t)n;
	}
	out->len = (size_t)e->size1;
	out->buf[out->len] = '\0';
	return 0;
}

/*
 * Lay out the SHA-1 packs while the table is still here: a layout
 * converts every tree, commit and tag of its pack again, and each of
 * their references would otherwise be a sqlite lookup (on the bench
 * repository that was most of the layout's time).
 */
static int lay_out(struct build *b)
{
	struct xlate_names names = { names_get, names_map, names_form, b };
	struct xlate_pack1_opts po = *b->opts->pack1;
	struct xlate_pack1_stats unused;

	/* names refused after the walk (collisions) may still be there */
	if (b->collided && b->recent)
		memset(b->recent, 0, RECENT_SLOTS * sizeof(*b->recent));
	if (b->spill.fd >= 0)
		spill_flush(&b->spill);

	po.names = &names;
	return xlate_pack1_update(b->repo, b->cache, &po,
				  b->opts->pack1_stats ? b->opts->pack1_stats :
				  &unused);
}

/* ---- the ref names --------------------------------------------------- */

/*
 * At most this many ref names are kept (cache_ref_names_set): they only
 * spare a fresh mount its first lookups, and a repository with more
 * refs than this pays for the rest as before.
 */
#define REF_NAMES_MAX 131072

struct ref_names {
	struct build *b;
	const struct xlate_names *names;	/* b's table */
	struct oid *pairs;		/* sha256, sha1, sha256, sha1, ... */
	size_t nr, alloc;		/* pairs */
	int ret;
};

static int add_ref_name(struct ref_names *rn, const struct oid *oid)
{
	struct cache_object co;
	int ret;

	if (rn->nr >= REF_NAMES_MAX || !oid->algo || oid_is_null(oid))
		return 0;
	ret = xlate_names_get(rn->names, rn->b->cache, oid, &co);
	if (ret == XL_ENOTFOUND || (!ret && !co.sha1.algo))
		return 0;	/* not ours, or untranslatable: nothing to spare */
	if (ret)
		return ret;
	if (ARRAY_GROW(rn->pairs, 2 * rn->nr + 1, rn->alloc, 128))
		return err_set(XL_ENOMEM, "out of memory");
	rn->pairs[2 * rn->nr] = *oid;
	rn->pairs[2 * rn->nr + 1] = co.sha1;
	rn->nr++;
	return 0;
}

static int note_ref_name(const struct ref *ref, void *data)
{
	struct ref_names *rn = data;

	if (ref->target)
		return 0;	/* its target is a ref of its own */
	if ((rn->ret = add_ref_name(rn, &ref->oid)) ||
	    (ref->has_peeled && (rn->ret = add_ref_name(rn, &ref->peeled))))
		return 1;
	return 0;
}

static int cmp_pair(const void *a, const void *b)
{
	return oid_cmp(a, b);
}

/*
 * Record what the refs name now, for the next fresh mount (see the
 * cache's ref_names).  Refs that cannot be read are the mount's
 * business, not the build's: then the old rows stay, which are still
 * true names, only perhaps of other refs.
 */
static int remember_ref_names(struct build *b)
{
	struct xlate_names names = { names_get, names_map, names_form, b };
	struct ref_names rn = { .b = b, .names = &names };
	size_t n = 0;
	int ret;

	if (refs_for_each(b->repo, note_ref_name, &rn) && !rn.ret) {
		free(rn.pairs);
		return 0;
	}
	if (rn.ret) {
		free(rn.pairs);
		return rn.ret;
	}
	/* in name order, each once (refs share commits) */
	if (rn.nr)
		qsort(rn.pairs, rn.nr, 2 * sizeof(*rn.pairs), cmp_pair);
	for (size_t i = 0; i < rn.nr; i++)
		if (!n || oid_cmp(&rn.pairs[2 * (n - 1)], &rn.pairs[2 * i])) {
			rn.pairs[2 * n] = rn.pairs[2 * i];
			rn.pairs[2 * n + 1] = rn.pairs[2 * i + 1];
			n++;
		}
	if ((ret = cache_begin(b->cache)) ||
	    (ret = cache_ref_names_set(b->cache, rn.pairs, n)) ||
	    (ret = cache_commit(b->cache)))
		cache_rollback(b->cache);
	free(rn.pairs);
	return ret;
}

/* ---- settings and the submodule map --------------------------------- */

int xlate_read_submodule_map(const char *path, xlate_pair_fn fn, void *data)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, ret = 0;

	if (!f)
		return err_errno("cannot open submodule map %s", path);
	while (!ret && getline(&line, &cap, f) >= 0) {
		char *p = line, *q;
		struct oid o256, o1;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
			continue;
		q = p + 64;
		if (strlen(p) < 64 + 1 + 40 || oid_from_hex(&o256, &hash_sha256, p) ||
		    (*q != ' ' && *q != '\t')) {
			ret = ERR_CORRUPT("%s: line %d: expected \"<sha256-hex> <sha1-hex>\"",
					  path, lineno);
			break;
		}
		while (*q == ' ' || *q == '\t')
			q++;
		if (oid_from_hex(&o1, &hash_sha1, q) ||
		    (q[40] && !strchr(" \t\r\n", q[40]))) {
			ret = ERR_CORRUPT("%s: line %d: expected \"<sha256-hex> <sha1-hex>\"",
					  path, lineno);
			break;
		}
		ret = fn(data, &o256, &o1);
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
	if (opts->submodule_map) {
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		unsigned char md[32];
		struct oid d;
		char hex[OID_HEXSZ_MAX + 1];
		int ret;

		if (!ctx)
			return err_set(XL_ENOMEM, "out of memory");
		EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
		ret = xlate_read_submodule_map(opts->submodule_map, digest_pair, ctx);
		EVP_DigestFinal_ex(ctx, md, NULL);
		EVP_MD_CTX_free(ctx);
		if (ret)
			return ret;
		oid_from_raw(&d, &hash_sha256, md);
		buf_addf(out, ";submodules=%s", oid_to_hex_r(hex, &d));
	}
	return 0;
}

/* ---- the whole ------------------------------------------------------ */

int xlate_build(struct repo *repo, struct cache *cache,
		const struct xlate_build_opts *opts,
		struct xlate_build_stats *stats)
{
	struct build b = { 0 };
	struct buf settings = BUF_INIT;
	uint64_t count, bad;
	int ret;

	memset(stats, 0, sizeof(*stats));
	b.repo = repo;
	b.odb = repo_odb(repo);
	b.cache = cache;
	b.opts = opts;
	b.stats = stats;
	b.spill.fd = -1;
	atomic_init(&b.done, 0);
	if (repo_algo(repo) != &hash_sha256)
		return err_set(XL_EUNSUPPORTED,
			       "%s: a %s repository has no SHA-1 form to translate to",
			       repo_gitdir(repo), repo_algo(repo)->name);
	if ((ret = xlate_build_settings(opts, &settings)) ||
	    (ret = cache_check_settings(cache, settings.buf)) < 0)
		goto out;
	stats->emptied = ret == 1;
	if (stats->emptied)
		xlate_memo_clear(opts->memo);
	if ((ret = cache_count(cache, &count, &bad)))
		goto out;
	b.cache_empty = count == 0;
	if ((ret = xmap_init(&b.map, 1024)) || (ret = xmap_init(&b.by_sha1, 1024)) ||
	    (ret = xmap_init(&b.submodules, 16)))
		goto out;
	if (opts->submodule_map &&
	    (ret = xlate_read_submodule_map(opts->submodule_map,
					    add_submodule_pair, &b)))
		goto out;

	/* the refusals for now first, so that gathering does not take them as settled */
	if ((!b.cache_empty &&
	     (ret = cache_for_each(cache, CACHE_EACH_RETRY, note_retry, &b))) ||
	    (ret = odb_for_each_pack(b.odb, note_pack, &b)) ||
	    (ret = odb_for_each_loose(b.odb, note_object, &b)))
		goto out;
	if (b.nr)
		qsort(b.todo, b.nr, sizeof(*b.todo), cmp_oid);
	b.total = b.nr;
	if ((ret = classify(&b)))
		goto out;
	progress(&b);

	if (opts->pack1)
		spill_open(&b.spill, cache_path(cache));
	if ((ret = cache_begin(cache)))
		goto out;
	if ((ret = writer_start(&b.writer, cache))) {
		cache_rollback(cache);
		goto out;
	}
	b.batch_start = seconds();
	/* the unreadable ones first: they are settled */
	for (size_t i = 0; i < b.nr && !ret; i++) {
		struct xmap_entry *e = xmap_get(&b.map, &b.todo[i]);

		if (e->state == XMAP_BAD) {
			atomic_fetch_add(&b.done, 1);
			ret = store(&b, &b.todo[i]);
		}
	}
	if (!ret)
		ret = name_blobs(&b);
	/* a miss on an all-zero slot key is harmless: no name is all zeros */
	b.recent = calloc(RECENT_SLOTS, sizeof(*b.recent));
	if (!ret)
		ret = name_the_rest(&b);
	if (!ret && b.collided)
		ret = refuse_dependents(&b);
	{
		int werr = writer_drain(&b.writer);

		writer_stop(&b.writer);
		if (!ret)
			ret = werr;
	}
	if (!ret && b.nr_unreadable)
		ret = odb_for_each_pack(b.odb, unmark_pack, &b);
	for (size_t i = 0; i < b.nr_packs && !ret; i++)
		ret = cache_pack_done(cache, b.packs[i].checksum, b.packs[i].objects);
	if (!ret)
		ret = cache_commit(cache);
	else
		cache_rollback(cache);
	/* earlier batches may have committed refusals even if this one failed */
	if (b.collided)
		xlate_memo_clear(opts->memo);
	/* counted from the cache: an object in two packs is one row */
	if (!ret && !cache_count(cache, &count, &bad))
		stats->objects = count + stats->unreadable;
	progress(&b);
	if (!ret && opts->pack1)
		ret = lay_out(&b);
	if (!ret)
		ret = remember_ref_names(&b);
out:
	buf_release(&settings);
	spill_close(&b.spill);
	free(b.recent);
	xmap_release(&b.map);
	xmap_release(&b.by_sha1);
	xmap_release(&b.submodules);
	free(b.todo);
	free(b.packs);
	return ret;
}
