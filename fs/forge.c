/*
 * forge.c: a forge mount, every repository under one directory.
 *
 *   xlatefs --root DIR MNT
 *
 * MNT mirrors DIR's directories; each repository found there (bare, or
 * a work tree with its .git) is MNT/<its path under DIR>/ with a single
 * mount's layout: README, status, sha1/, sha256/, objects-sha1/,
 * objects-sha256/.  A SHA-256 repository shows its SHA-1 self in sha1/,
 * and a SHA-1 one, mounted the other way round, its SHA-256 self in
 * sha256/, as a single mount of each would.  Repositories added later
 * appear at the next lookup or listing; names beginning with '.',
 * symbolic links and files are not shown.  MNT/.status says how
 * many repositories the forge has seen and which are awake.
 *
 * Each repository is a context of its own (context.c), made when it is
 * first used: a listing of MNT or of a parent directory, or a lookup of
 * the repository's own directory, opens nothing; a request inside it
 * does, and waits until its cache is up to date (its own cache beside
 * it, built then if needed).  At most max_open repositories are awake at
 * once: waking one more puts the least recently used idle one to sleep
 * (xfs_sleep: it lets go of its packs, sqlite connections, memo and
 * updater thread).  A repository with a request running or a file open
 * is never put to sleep, so the bound can be passed while all of them
 * are busy; it holds again as they finish.
 *
 * Inode numbers.  Every context numbers its own nodes (node.c), and the
 * numbers of two repositories overlap, so the kernel is given numbers of
 * the forge's own: a table maps (slot, local number) to a number handed
 * out once, counted as the kernel counts it (lookups minus forgets) and
 * dropped at zero, so it holds what the kernel holds.  Forgets are
 * passed on to the context, which counts its nodes the same way.  The
 * forge's own nodes are slot 0: the root (FUSE_ROOT_ID), .status, and
 * the directories between the root and the repositories.
 *
 * Locks: `lock` guards the slots, the directories and every slot's
 * state; `nodes_lock` the number table.  Neither is held while a
 * context wakes, sleeps or serves a request, nor are both ever held.
 */
#include "fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* A repository used this recently is not idle yet (see idle_victim). */
#define FORGE_IDLE_S 2.0
/*
 * Requests that may wait for repositories to wake (half of the 64
 * worker threads main.c allows); more get EAGAIN.
 */
#define FORGE_MAX_WAITING 32

/* Local numbers of the forge's own nodes (slot 0). */
#define LOCAL_STATUS 2
#define LOCAL_DIR_BASE 16	/* + the directory's index; the root is 0 */

enum slot_state { SLOT_ASLEEP, SLOT_WAKING, SLOT_AWAKE, SLOT_SLEEPING };

struct slot {
	char *rel;		/* path under the root: "group/project.git" */
	char *path;		/* absolute */
	struct xfs *xfs;	/* made at the first wake, kept to the end */
	enum slot_state state;
	unsigned busy;		/* requests running on it */
	double used;		/* when the last one began (monotonic) */
	double stuck;		/* a build would not stop: not before then */
	int restart;		/* ...and its updater must be started again */
};

/* A string-keyed index into an array, open addressing. */
struct names {
	uint32_t *at;		/* index + 1; 0 is empty */
	size_t mask;
};

/* One number the kernel holds. */
struct fnode {
	fuse_ino_t id;
	unsigned slot;
	fuse_ino_t local;
	uint64_t nlookup;
	struct fnode *next_id, *next_key;
};

struct forge {
	char *root;		/* absolute, no trailing slash */
	enum xlate_unknown unknown_headers;
	unsigned max_open;
	size_t memo_bytes;
	unsigned page_cache_kib;
	time_t mounted;
	uid_t uid;
	gid_t gid;

	pthread_mutex_t lock;	/* guards everything down to `sleeps` */
	pthread_cond_t changed;	/* a slot left WAKING or SLEEPING */
	struct slot **slots;	/* [0] unused: slot 0 is the forge's own */
	char **slot_rels;	/* slots[i]->rel, [0] NULL: slot_names' keys */
	size_t nr_slots, alloc_slots, alloc_rels;
	struct names slot_names;
	char **dirs;		/* rel paths; [0] is "" (the root) */
	size_t nr_dirs, alloc_dirs;
	struct names dir_names;
	unsigned awake;		/* slots AWAKE, WAKING or SLEEPING */
	unsigned waiting;	/* requests waiting for a slot to wake or sleep */
	uint64_t wakes, sleeps;
	int stop;		/* the janitor ends */
	pthread_cond_t janitor_wake;
	pthread_t janitor;
	int janitor_started;

	pthread_mutex_t nodes_lock;	/* guards the number table */
	struct fnode **by_id, **by_key;
	size_t nr_buckets, nr_nodes;
	fuse_ino_t next_id;
};

/* ---- names -> indexes ------------------------------------------------- */

/* The index of `key` among keys[0..nr), or -1. */
static long names_find(const struct names *n, char *const *keys, const char *key)
{
	if (!n->at)
		return -1;
	for (size_t i = str_hash(key) & n->mask;; i = (i + 1) & n->mask) {
		if (!n->at[i])
			return -1;
		if (!strcmp(keys[n->at[i] - 1], key))
			return (long)n->at[i] - 1;
	}
}

/* Index keys[nr - 1], the newest; 0 or ENOMEM. */
static int names_add(struct names *n, char *const *keys, size_t nr)
{
	if (!n->at || 2 * nr > n->mask) {
		size_t size = n->at ? 2 * (n->mask + 1) : 64;
		uint32_t *at = calloc(size, sizeof(*at));

		if (!at)
			return ENOMEM;
		free(n->at);
		n->at = at;
		n->mask = size - 1;
		for (size_t k = 0; k + 1 < nr; k++) {
			size_t i;

			if (!keys[k])
				continue;	/* slot 0 has no name */
			i = str_hash(keys[k]) & n->mask;

			while (n->at[i])
				i = (i + 1) & n->mask;
			n->at[i] = (uint32_t)k + 1;
		}
	}
	size_t i = str_hash(keys[nr - 1]) & n->mask;

	while (n->at[i])
		i = (i + 1) & n->mask;
	n->at[i] = (uint32_t)nr;
	return 0;
}

static char *rel_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *s = malloc(a + b + 2);

	if (!s)
		return NULL;
	memcpy(s, dir, a);
	if (a)
		s[a++] = '/';
	memcpy(s + a, name, b + 1);
	return s;
}

/* The slot of repository `rel`, made if new; 0 when out of memory. */
static unsigned slot_intern(struct forge *f, const char *rel)
{
	struct slot *sl;
	long i;

	pthread_mutex_lock(&f->lock);
	if ((i = names_find(&f->slot_names, f->slot_rels, rel)) >= 0)
		goto out;
	i = 0;
	if (f->nr_slots > UINT32_MAX - 2 ||
	    ARRAY_GROW(f->slots, f->nr_slots, f->alloc_slots, 64) ||
	    ARRAY_GROW(f->slot_rels, f->nr_slots, f->alloc_rels, 64) ||
	    !(sl = calloc(1, sizeof(*sl))))
		goto out;
	if (!(sl->rel = strdup(rel)) ||
	    !(sl->path = rel_join(f->root, rel))) {
		free(sl->rel);
		free(sl);
		goto out;
	}
	f->slot_rels[f->nr_slots] = sl->rel;
	f->slots[f->nr_slots++] = sl;
	if (names_add(&f->slot_names, f->slot_rels, f->nr_slots)) {
		f->nr_slots--;
		free(sl->rel);
		free(sl->path);
		free(sl);
		goto out;
	}
	i = (long)f->nr_slots - 1;
out:
	pthread_mutex_unlock(&f->lock);
	return (unsigned)i;
}

/* The index of directory `rel`, made if new; -1 when out of memory. */
static long dir_intern(struct forge *f, const char *rel)
{
	long i;
	char *copy;

	pthread_mutex_lock(&f->lock);
	if ((i = names_find(&f->dir_names, f->dirs, rel)) >= 0)
		goto out;
	i = -1;
	if (!(copy = strdup(rel)) ||
	    ARRAY_GROW(f->dirs, f->nr_dirs, f->alloc_dirs, 16)) {
		free(copy);
		goto out;
	}
	f->dirs[f->nr_dirs++] = copy;
	if (names_add(&f->dir_names, f->dirs, f->nr_dirs)) {
		free(f->dirs[--f->nr_dirs]);
		goto out;
	}
	i = (long)f->nr_dirs - 1;
out:
	pthread_mutex_unlock(&f->lock);
	return i;
}

/* ---- the number table ---------------------------------------------------- */

static size_t id_bucket(const struct forge *f, fuse_ino_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (f->nr_buckets - 1);
}

static size_t key_bucket(const struct forge *f, unsigned slot, fuse_ino_t local)
{
	uint64_t h = (local ^ ((uint64_t)slot << 40)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 29) & (f->nr_buckets - 1);
}

static struct fnode *find_key(struct forge *f, unsigned slot, fuse_ino_t local)
{
	struct fnode *n = f->by_key[key_bucket(f, slot, local)];

	while (n && (n->slot != slot || n->local != local))
		n = n->next_key;
	return n;
}

static struct fnode *find_id(struct forge *f, fuse_ino_t id)
{
	struct fnode *n = f->by_id[id_bucket(f, id)];

	while (n && n->id != id)
		n = n->next_id;
	return n;
}

/* Twice the buckets once there are twice as many nodes; best effort. */
static void nodes_grow(struct forge *f)
{
	size_t old = f->nr_buckets;
	struct fnode **bi, **bk;

	if (f->nr_nodes < 2 * old)
		return;
	bi = calloc(2 * old, sizeof(*bi));
	bk = calloc(2 * old, sizeof(*bk));
	if (!bi || !bk) {
		free(bi);
		free(bk);
		return;
	}
	for (size_t i = 0; i < old; i++) {
		for (struct fnode *n = f->by_id[i], *next; n; n = next) {
			next = n->next_id;
			f->nr_buckets = 2 * old;
			n->next_id = bi[id_bucket(f, n->id)];
			bi[id_bucket(f, n->id)] = n;
			f->nr_buckets = old;
		}
	}
	for (size_t i = 0; i < old; i++) {
		for (struct fnode *n = f->by_key[i], *next; n; n = next) {
			next = n->next_key;
			f->nr_buckets = 2 * old;
			n->next_key = bk[key_bucket(f, n->slot, n->local)];
			bk[key_bucket(f, n->slot, n->local)] = n;
			f->nr_buckets = old;
		}
	}
	free(f->by_id);
	free(f->by_key);
	f->by_id = bi;
	f->by_key = bk;
	f->nr_buckets = 2 * old;
}

fuse_ino_t forge_ino_out(struct forge *f, unsigned slot, fuse_ino_t local,
			 int count)
{
	struct fnode *n;
	fuse_ino_t id = 0;

	if (!slot && local == LOCAL_DIR_BASE)
		return FUSE_ROOT_ID;
	pthread_mutex_lock(&f->nodes_lock);
	if ((n = find_key(f, slot, local))) {
		n->nlookup += count ? 1 : 0;
		id = n->id;
	} else if (count && (n = calloc(1, sizeof(*n)))) {
		n->id = id = f->next_id++;
		n->slot = slot;
		n->local = local;
		n->nlookup = 1;
		n->next_id = f->by_id[id_bucket(f, id)];
		f->by_id[id_bucket(f, id)] = n;
		n->next_key = f->by_key[key_bucket(f, slot, local)];
		f->by_key[key_bucket(f, slot, local)] = n;
		f->nr_nodes++;
		nodes_grow(f);
	}
	pthread_mutex_unlock(&f->nodes_lock);
	return id;
}

/* Take back `nlookup` references to `id`; the node it stood for, if known. */
static int nodes_forget(struct forge *f, fuse_ino_t id, uint64_t nlookup,
			unsigned *slot, fuse_ino_t *local)
{
	struct fnode **pp, *n;
	int found = 0;

	pthread_mutex_lock(&f->nodes_lock);
	if ((n = find_id(f, id))) {
		found = 1;
		*slot = n->slot;
		*local = n->local;
		if (n->nlookup > nlookup) {
			n->nlookup -= nlookup;
			n = NULL;
		}
	}
	if (n) {
		for (pp = &f->by_id[id_bucket(f, id)]; *pp != n; pp = &(*pp)->next_id)
			;
		*pp = n->next_id;
		for (pp = &f->by_key[key_bucket(f, n->slot, n->local)]; *pp != n;
		     pp = &(*pp)->next_key)
			;
		*pp = n->next_key;
		f->nr_nodes--;
		free(n);
	}
	pthread_mutex_unlock(&f->nodes_lock);
	return found;
}

void forge_ino_unref(struct forge *f, fuse_ino_t ino)
{
	unsigned slot;
	fuse_ino_t local;

	if (ino != FUSE_ROOT_ID)
		nodes_forget(f, ino, 1, &slot, &local);
}

/* Which slot and local number `ino` is; ENOENT if the kernel holds no such. */
static int decode(struct forge *f, fuse_ino_t ino, unsigned *slot,
		  fuse_ino_t *local)
{
	struct fnode *n;
	int ret = ENOENT;

	if (ino == FUSE_ROOT_ID) {
		*slot = 0;
		*local = LOCAL_DIR_BASE;
		return 0;
	}
	pthread_mutex_lock(&f->nodes_lock);
	if ((n = find_id(f, ino))) {
		*slot = n->slot;
		*local = n->local;
		ret = 0;
	}
	pthread_mutex_unlock(&f->nodes_lock);
	return ret;
}

/* ---- waking and sleeping -------------------------------------------------- */

/*
 * The least recently used awake slot that may sleep now, or NULL.  One
 * used in the last FORGE_IDLE_S is left alone while the forge is within
 * four times its bound: a client's requests come one after another,
 * with nothing running on the repository in between, and putting it to
 * sleep there would make it wake again for each of them (measured: 16
 * clients on 8 repositories' room woke 50 repositories 10,143 times
 * without the grace, 110 times with twice the bound, 51 with four
 * times).  Nor is one whose updater is building: it would have to
 * wait for the build to stop.
 */
static struct slot *idle_victim(struct forge *f, const struct slot *except,
				double now)
{
	struct slot *best = NULL;
	int recent_too = f->awake > 4 * f->max_open;

	for (size_t i = 1; i < f->nr_slots; i++) {
		struct slot *sl = f->slots[i];

		int building;

		if (sl == except || sl->state != SLOT_AWAKE || sl->busy ||
		    atomic_load(&sl->xfs->handles) || sl->stuck > now ||
		    (!recent_too && now - sl->used < FORGE_IDLE_S))
			continue;
		pthread_mutex_lock(&sl->xfs->status_lock);
		building = sl->xfs->status.state == XFS_BUILDING;
		pthread_mutex_unlock(&sl->xfs->status_lock);
		if (building)
			continue;
		if (!best || sl->used < best->used)
			best = sl;
	}
	return best;
}

/* Put `v` to sleep; called and returns with f->lock held.  1 if it slept. */
static int put_to_sleep(struct forge *f, struct slot *v)
{
	int ret;

	v->state = SLOT_SLEEPING;
	pthread_mutex_unlock(&f->lock);
	ret = xfs_sleep(v->xfs);
	pthread_mutex_lock(&f->lock);
	if (ret) {
		/* a build would not stop: its updater ends after it (janitor) */
		v->state = SLOT_AWAKE;
		v->stuck = xfs_now() + 10;
		v->restart = 1;
	} else {
		v->state = SLOT_ASLEEP;
		f->awake--;
		f->sleeps++;
	}
	pthread_cond_broadcast(&f->changed);
	return !ret;
}

/*
 * Put idle repositories to sleep until there is room for one more;
 * called and returns with f->lock held.  Returns how many slept: the
 * caller then gives their pages back (forge_trim), once it has let go
 * of the lock.
 */
static int make_room(struct forge *f, const struct slot *waking)
{
	struct slot *v;
	int slept = 0;

	while (f->awake > f->max_open &&
	       (v = idle_victim(f, waking, xfs_now())))
		slept += put_to_sleep(f, v);
	return slept;
}

/*
 * What a repository let go of stays in the allocator's free lists of
 * whichever threads freed it, and the next repository to wake runs on
 * other threads: without giving the pages back, the daemon grew by
 * about 0.9 MB per wake (see FORGE_MALLOC below).  Not under f->lock:
 * it walks every arena.
 */
static void forge_trim(int slept)
{
	if (slept)
		malloc_trim(0);
}

/* Once a second, for the janitor: see janitor_main().  f->lock held. */
static int janitor_round(struct forge *f)
{
	int slept = make_room(f, NULL);
	struct stat st;

	for (size_t i = 1; i < f->nr_slots; i++) {
		struct slot *sl = f->slots[i];

		if (sl->state != SLOT_AWAKE)
			continue;
		if (sl->restart && updater_restart(sl->xfs) != 1)
			sl->restart = 0;	/* restarted, or failed (logged) */
		/* deleted: let go of its files now, not at the next wake */
		if (!sl->busy && !atomic_load(&sl->xfs->handles) &&
		    stat(sl->path, &st) && errno == ENOENT && !sl->restart)
			slept += put_to_sleep(f, sl);
	}
	return slept;
}

/*
 * Once a second: put to sleep what went idle past the bound (when every
 * client stops at once, no request comes to do it) and what was
 * deleted, and start again an updater that a sleep stopped in vain.
 */
static void *janitor_main(void *arg)
{
	struct forge *f = arg;

	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		struct timespec until;
		int slept;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&f->janitor_wake, &f->lock, &until);
		if (f->stop)
			break;
		slept = janitor_round(f);
		pthread_mutex_unlock(&f->lock);
		forge_trim(slept);
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* Make slot sl's context for the first time (not under the lock). */
static int first_wake(struct forge *f, struct slot *sl, unsigned slot,
		      struct xfs **out)
{
	struct xfs *xfs = calloc(1, sizeof(*xfs));
	struct xfs_conf conf = {
		.repo = sl->path,
		.unknown_headers = f->unknown_headers,
		.memo_bytes = f->memo_bytes,
		.page_cache_kib = f->page_cache_kib,
		.readers = 2,
		.mounted = f->mounted,
	};
	int ret;

	if (!xfs)
		return err_set(XL_ENOMEM, "out of memory");
	xfs->forge = f;
	xfs->slot = slot;
	xfs->log_name = sl->rel;
	if ((ret = xfs_setup(xfs, &conf))) {
		xfs_teardown(xfs);
		free(xfs);
		return ret;
	}
	if (xfs_first_build(xfs))
		xfs_log(xfs, "%s", err_msg());
	if ((ret = xfs_start(xfs))) {
		updater_stop(xfs);
		xfs_teardown(xfs);
		free(xfs);
		return ret;
	}
	*out = xfs;
	return 0;
}

/*
 * Slot `slot`'s context, awake, with one request counted on it (give it
 * back with slot_put): 0, or an errno value (logged).
 */
static int slot_get(struct forge *f, unsigned slot, struct xfs **out)
{
	struct slot *sl;
	struct xfs *made = NULL;
	int ret, slept;

	pthread_mutex_lock(&f->lock);
	if (!slot || slot >= f->nr_slots) {
		pthread_mutex_unlock(&f->lock);
		return ENOENT;
	}
	sl = f->slots[slot];
	if ((sl->state == SLOT_WAKING || sl->state == SLOT_SLEEPING) &&
	    f->waiting >= FORGE_MAX_WAITING) {
		/*
		 * A first build may take minutes: requests waiting for it
		 * must not take every worker thread, or the whole mount
		 * (other repositories, forgets) would wait too.
		 */
		pthread_mutex_unlock(&f->lock);
		return EAGAIN;
	}
	f->waiting++;
	while (sl->state == SLOT_WAKING || sl->state == SLOT_SLEEPING)
		pthread_cond_wait(&f->changed, &f->lock);
	f->waiting--;
	if (sl->state == SLOT_AWAKE) {
		sl->busy++;
		sl->used = xfs_now();
		*out = sl->xfs;
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	sl->state = SLOT_WAKING;
	f->awake++;
	slept = make_room(f, sl);
	pthread_mutex_unlock(&f->lock);
	forge_trim(slept);

	/* sl->xfs is only set under the lock; while WAKING nobody else does */
	ret = sl->xfs ? xfs_wake(sl->xfs) : first_wake(f, sl, slot, &made);
	if (ret) {
		struct xfs fake = { .log_name = sl->rel };

		xfs_log(&fake, "%s", err_msg());
	}

	pthread_mutex_lock(&f->lock);
	if (made)
		sl->xfs = made;
	if (ret) {
		sl->state = SLOT_ASLEEP;
		f->awake--;
	} else {
		sl->state = SLOT_AWAKE;
		sl->busy++;
		sl->used = xfs_now();
		f->wakes++;
		*out = sl->xfs;
	}
	pthread_cond_broadcast(&f->changed);
	pthread_mutex_unlock(&f->lock);
	if (ret)
		return ret == XL_ENOTFOUND ? ENOENT : EIO;
	return 0;
}

static void slot_put(struct forge *f, unsigned slot)
{
	int slept;

	pthread_mutex_lock(&f->lock);
	f->slots[slot]->busy--;
	/* past the bound while all were busy: back within it as they finish */
	slept = make_room(f, NULL);
	pthread_mutex_unlock(&f->lock);
	forge_trim(slept);
}

/* The context of a slot, if it was ever made (for forgets: no wake). */
static struct xfs *slot_xfs(struct forge *f, unsigned slot)
{
	struct xfs *xfs = NULL;

	pthread_mutex_lock(&f->lock);
	if (slot && slot < f->nr_slots)
		xfs = f->slots[slot]->xfs;
	pthread_mutex_unlock(&f->lock);
	return xfs;
}

/* ---- what is under the root ------------------------------------------------ */

enum kind { K_NONE, K_DIR, K_REPO };

/* What rel/name under the root is: a directory, a repository, or nothing shown. */
static enum kind classify(struct forge *f, const char *rel, const char *name,
			  char **child)
{
	const struct hash_algo *algo;
	struct stat st;
	char *path;
	enum kind k = K_NONE;
	int ret;

	*child = NULL;
	if (name[0] == '.' || strchr(name, '/'))
		return K_NONE;
	if (!(*child = rel_join(rel, name)) ||
	    !(path = rel_join(f->root, *child)))
		return K_NONE;
	if (lstat(path, &st) || !S_ISDIR(st.st_mode)) {
		free(path);
		return K_NONE;
	}
	ret = repo_probe(path, &algo);
	if (!ret)
		k = K_REPO;	/* either way round, as a single mount */
	else if (ret == XL_ENOTFOUND)
		k = K_DIR;
	err_clear();
	free(path);
	return k;
}

static void dir_attr(const struct forge *f, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = S_IFDIR | 0555;
	st->st_nlink = 2;
	st->st_uid = f->uid;
	st->st_gid = f->gid;
	st->st_blksize = 65536;
	st->st_atime = st->st_mtime = st->st_ctime = f->mounted;
}

/* MNT/.status: the forge's account of itself. */
static int status_text(struct forge *f, struct buf *out)
{
	int ret;

	pthread_mutex_lock(&f->lock);
	ret = buf_addf(out, "root: %s\nrepositories seen: %zu\n"
		       "awake: %u (at most %u while idle)\n"
		       "woken: %llu\nput to sleep: %llu\n",
		       f->root, f->nr_slots - 1, f->awake, f->max_open,
		       (unsigned long long)f->wakes,
		       (unsigned long long)f->sleeps);
	for (size_t i = 1; !ret && i < f->nr_slots; i++) {
		const struct slot *sl = f->slots[i];

		if (sl->state != SLOT_ASLEEP)
			ret = buf_addf(out, "repository awake: %s\n", sl->rel);
	}
	pthread_mutex_unlock(&f->lock);
	pthread_mutex_lock(&f->nodes_lock);
	ret = ret ?: buf_addf(out, "inodes held: %zu\n", f->nr_nodes);
	pthread_mutex_unlock(&f->nodes_lock);
	return ret;
}

static void status_attr(struct forge *f, fuse_ino_t ino, struct stat *st)
{
	struct buf b = BUF_INIT;

	status_text(f, &b);
	dir_attr(f, ino, st);
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)b.len;
	buf_release(&b);
}

/* ---- the operations ----------------------------------------------------------- */

/* What a handle on one of the forge's own files holds. */
struct forge_fh {
	struct buf text;		/* .status */
	struct dir_listing dir;		/* a directory */
};

static struct forge *req_forge(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void reply_forge_entry(fuse_req_t req, struct forge *f, unsigned slot,
			      fuse_ino_t local, int is_status)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	if (!(e.ino = forge_ino_out(f, slot, local, 1))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	e.generation = 1;
	if (is_status)
		status_attr(f, e.ino, &e.attr);
	else
		dir_attr(f, e.ino, &e.attr);
	/* repositories come and go: ask again after a second */
	e.attr_timeout = is_status ? 0 : XFS_TTL_LIVE;
	e.entry_timeout = XFS_TTL_LIVE;
	if (fuse_reply_entry(req, &e) == -ENOENT)
		forge_ino_unref(f, e.ino);
}

static void forge_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct forge *f = req_forge(req);
	unsigned slot;
	fuse_ino_t local;
	struct xfs *xfs;
	char *child, *rel;
	int ret;

	if ((ret = decode(f, parent, &slot, &local))) {
		fuse_reply_err(req, ret);
		return;
	}
	if (slot) {
		if ((ret = slot_get(f, slot, &xfs))) {
			fuse_reply_err(req, ret);
			return;
		}
		xfs_op_lookup(req, xfs, local, name);
		slot_put(f, slot);
		return;
	}
	if (local == LOCAL_STATUS) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (local == LOCAL_DIR_BASE && !strcmp(name, ".status")) {
		reply_forge_entry(req, f, 0, LOCAL_STATUS, 1);
		return;
	}
	pthread_mutex_lock(&f->lock);
	rel = local - LOCAL_DIR_BASE < f->nr_dirs ?
		strdup(f->dirs[local - LOCAL_DIR_BASE]) : NULL;
	pthread_mutex_unlock(&f->lock);
	if (!rel) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	switch (classify(f, rel, name, &child)) {
	case K_REPO:
		if (!(slot = slot_intern(f, child)))
			fuse_reply_err(req, ENOMEM);
		else
			reply_forge_entry(req, f, slot, FUSE_ROOT_ID, 0);
		break;
	case K_DIR: {
		long d = dir_intern(f, child);

		if (d < 0)
			fuse_reply_err(req, ENOMEM);
		else
			reply_forge_entry(req, f, 0, LOCAL_DIR_BASE + (fuse_ino_t)d, 0);
		break;
	}
	default:
		fuse_reply_err(req, child ? ENOENT : ENOMEM);
	}
	free(child);
	free(rel);
}

static void forget_one(struct forge *f, fuse_ino_t ino, uint64_t nlookup)
{
	unsigned slot;
	fuse_ino_t local;
	struct xfs *xfs;

	if (ino == FUSE_ROOT_ID || !nodes_forget(f, ino, nlookup, &slot, &local))
		return;
	/* the context counted the same lookups (its inode table outlives sleep) */
	if (slot && (xfs = slot_xfs(f, slot)))
		node_forget(xfs, local, nlookup);
}

static void forge_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(req_forge(req), ino, nlookup);
	fuse_reply_none(req);
}

static void forge_forget_multi(fuse_req_t req, size_t count,
			       struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		forget_one(req_forge(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void forge_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct forge *f = req_forge(req);
	unsigned slot;
	fuse_ino_t local;
	struct xfs *xfs;
	struct stat st;
	int ret;

	if ((ret = decode(f, ino, &slot, &local))) {
		fuse_reply_err(req, ret);
		return;
	}
	if (!slot || local == FUSE_ROOT_ID) {
		/* a repository's own directory is answered without waking it */
		if (!slot && local == LOCAL_STATUS)
			status_attr(f, ino, &st);
		else
			dir_attr(f, ino, &st);
		/* an open .status reads its own copy: its size, not today's */
		if (!slot && local == LOCAL_STATUS && fi && fi->fh)
			st.st_size = (off_t)((struct forge_fh *)(uintptr_t)
					     fi->fh)->text.len;
		fuse_reply_attr(req, &st, !slot && local == LOCAL_STATUS ? 0 :
				XFS_TTL_LIVE);
		return;
	}
	if ((ret = slot_get(f, slot, &xfs))) {
		fuse_reply_err(req, ret);
		return;
	}
	xfs_op_getattr(req, xfs, local, fi);
	slot_put(f, slot);
}

/*
 * Run `call` on the context of the slot that ino belongs to, or, for
 * the forge's own nodes, do `own`; and for a repository's own directory
 * too unless `root_too` (so that what `ls -l` asks of a repository's
 * directory does not wake it).
 */
#define ON_REPO(req, ino, root_too, own, call) do { \
	struct forge *f_ = req_forge(req); \
	unsigned slot; \
	fuse_ino_t local; \
	struct xfs *xfs; \
	int ret_; \
	if ((ret_ = decode(f_, ino, &slot, &local))) { \
		fuse_reply_err(req, ret_); \
		break; \
	} \
	if (!slot || (local == FUSE_ROOT_ID && !root_too)) { \
		own; \
		break; \
	} \
	if ((ret_ = slot_get(f_, slot, &xfs))) { \
		fuse_reply_err(req, ret_); \
		break; \
	} \
	call; \
	slot_put(f_, slot); \
} while (0)

/*
 * The listing of forge directory `local`: the repositories and the
 * directories that lead to them, as they are on disk now (and .status
 * at the root).  0 or an errno value.
 */
static int own_list(struct forge *f, fuse_ino_t local, struct dir_listing *l)
{
	struct buf path = BUF_INIT;
	struct dirent *de;
	char *rel;
	DIR *d = NULL;
	int ret;

	pthread_mutex_lock(&f->lock);
	rel = local - LOCAL_DIR_BASE < f->nr_dirs ?
		strdup(f->dirs[local - LOCAL_DIR_BASE]) : NULL;
	pthread_mutex_unlock(&f->lock);
	ret = !rel ? ENOENT :
		buf_addf(&path, "%s%s%s", f->root, *rel ? "/" : "", rel) ? ENOMEM : 0;
	if (!ret && !(d = opendir(path.buf)))
		ret = errno == ENOENT || errno == ENOTDIR ? ENOENT : EIO;
	if (ret)
		goto out;
	ret = dir_listing_add(l, ".", 1, forge_ino_out(f, 0, local, 0), S_IFDIR) ?:
	      dir_listing_add(l, "..", 2, 0, S_IFDIR);
	while (!ret && (de = readdir(d))) {
		char *child;
		enum kind k = classify(f, rel, de->d_name, &child);
		fuse_ino_t ino = 0;

		if (k == K_REPO) {
			unsigned s = slot_intern(f, child);

			ino = s ? forge_ino_out(f, s, FUSE_ROOT_ID, 0) : 0;
		}
		if (k != K_NONE)
			ret = dir_listing_add(l, de->d_name, strlen(de->d_name),
					      ino, S_IFDIR);
		free(child);
	}
	closedir(d);
	if (!ret && local == LOCAL_DIR_BASE)
		ret = dir_listing_add(l, ".status", 7,
				      forge_ino_out(f, 0, LOCAL_STATUS, 0), S_IFREG);
out:
	free(rel);
	buf_release(&path);
	return ret;
}

static void own_open(fuse_req_t req, struct forge *f, fuse_ino_t local,
		     struct fuse_file_info *fi, int dir)
{
	struct forge_fh *h;
	int ret;

	if ((fi->flags & O_ACCMODE) != O_RDONLY && !dir) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (dir != (local != LOCAL_STATUS)) {
		fuse_reply_err(req, dir ? ENOTDIR : EISDIR);
		return;
	}
	if (!(h = calloc(1, sizeof(*h)))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	buf_init(&h->text);
	if (!dir)
		ret = status_text(f, &h->text) ? ENOMEM : 0;
	else
		ret = own_list(f, local, &h->dir);
	if (ret) {
		dir_listing_free(&h->dir);
		buf_release(&h->text);
		free(h);
		fuse_reply_err(req, ret);
		return;
	}
	fi->fh = (uintptr_t)h;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		dir_listing_free(&h->dir);
		buf_release(&h->text);
		free(h);
	}
}

static void forge_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	ON_REPO(req, ino, 1, own_open(req, f_, local, fi, 0),
		xfs_op_open(req, xfs, local, fi));
}

static void forge_opendir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	ON_REPO(req, ino, 1, own_open(req, f_, local, fi, 1),
		xfs_op_opendir(req, xfs, local, fi));
}

static void own_read(fuse_req_t req, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct forge_fh *h = (struct forge_fh *)(uintptr_t)fi->fh;
	size_t o = off < 0 ? h->text.len : (uint64_t)off < h->text.len ?
		(size_t)off : h->text.len;
	size_t n = size < h->text.len - o ? size : h->text.len - o;
	char *copy = malloc(n ? n : 1);

	/*
	 * From a copy, never from the handle: a RELEASE on another thread
	 * may free it while fuse_reply_buf() is still writing (as ops.c).
	 */
	if (!copy) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(copy, h->text.buf + o, n);
	fuse_reply_buf(req, copy, n);
	free(copy);
}

static void forge_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	ON_REPO(req, ino, 1, own_read(req, size, off, fi),
		xfs_op_read(req, xfs, size, off, fi));
}

static void own_readdir(fuse_req_t req, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	struct forge_fh *h = (struct forge_fh *)(uintptr_t)fi->fh;
	char *buf;
	size_t used = 0;

	if (off < 0 || !(buf = malloc(size ? size : 1))) {
		fuse_reply_err(req, off < 0 ? EINVAL : ENOMEM);
		return;
	}
	for (size_t i = (size_t)off; i < h->dir.nr; i++) {
		struct stat st;
		size_t n;

		memset(&st, 0, sizeof(st));
		st.st_ino = h->dir.ents[i].ino ? h->dir.ents[i].ino : 0xffffffffu;
		st.st_mode = h->dir.ents[i].mode;
		n = fuse_add_direntry(req, buf + used, size - used,
				      h->dir.ents[i].name, &st, (off_t)(i + 1));
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void forge_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi)
{
	ON_REPO(req, ino, 1, own_readdir(req, size, off, fi),
		xfs_op_readdir(req, size, off, fi));
}

static void own_release(fuse_req_t req, struct fuse_file_info *fi)
{
	struct forge_fh *h = (struct forge_fh *)(uintptr_t)fi->fh;

	if (h) {
		dir_listing_free(&h->dir);
		buf_release(&h->text);
		free(h);
	}
	fuse_reply_err(req, 0);
}

static void forge_release(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct forge *f = req_forge(req);
	unsigned slot;
	fuse_ino_t local;

	/*
	 * The kernel still holds ino while a file is open, so decode
	 * finds it; the open handle keeps its context awake, and
	 * releasing one needs no request counted.
	 */
	if (decode(f, ino, &slot, &local) || slot)
		xfs_op_release(req, fi);
	else
		own_release(req, fi);
}

static void forge_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			   size_t size)
{
	ON_REPO(req, ino, 0, fuse_reply_err(req, ENODATA),
		xfs_op_getxattr(req, xfs, local, name, size));
}

static void forge_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	ON_REPO(req, ino, 0, size ? fuse_reply_buf(req, NULL, 0) :
		fuse_reply_xattr(req, 0),
		xfs_op_listxattr(req, xfs, local, size));
}

static void forge_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops forge_ops = {
	.init = xfs_op_init,
	.lookup = forge_lookup,
	.forget = forge_forget,
	.forget_multi = forge_forget_multi,
	.getattr = forge_getattr,
	.open = forge_open,
	.read = forge_read,
	.release = forge_release,
	.opendir = forge_opendir,
	.readdir = forge_readdir,
	.releasedir = forge_release,
	.getxattr = forge_getxattr,
	.listxattr = forge_listxattr,
	.statfs = forge_statfs,
};

/* ---- life ------------------------------------------------------------------------ */

int forge_new(struct forge **out, const struct forge_conf *conf)
{
	char real[PATH_MAX];
	struct forge *f = calloc(1, sizeof(*f));
	const struct hash_algo *algo;
	struct stat st;

	if (!f)
		return err_set(XL_ENOMEM, "out of memory");
	*out = f;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->changed, NULL);
	pthread_cond_init(&f->janitor_wake, NULL);
	pthread_mutex_init(&f->nodes_lock, NULL);
	if (!realpath(conf->root, real))
		return err_errno("%s", conf->root);
	if (stat(real, &st) || !S_ISDIR(st.st_mode))
		return err_set(XL_EINVALID, "%s: not a directory", conf->root);
	if (!repo_probe(real, &algo))
		return err_set(XL_EINVALID, "%s is a repository itself: mount it "
			       "without --root", conf->root);
	err_clear();
	if (!(f->root = strdup(strcmp(real, "/") ? real : "")))
		return err_set(XL_ENOMEM, "out of memory");
	f->unknown_headers = conf->unknown_headers;
	f->max_open = conf->max_open ? conf->max_open : FORGE_MAX_OPEN;
	f->memo_bytes = conf->memo_bytes ? conf->memo_bytes : FORGE_MEMO_BYTES;
	f->page_cache_kib = conf->page_cache_kib ? conf->page_cache_kib :
		FORGE_PAGE_CACHE_KIB;
	f->mounted = time(NULL);
	f->uid = getuid();
	f->gid = getgid();
	f->nr_slots = 1;	/* slot 0 is the forge's own */
	f->alloc_slots = f->alloc_rels = 64;
	f->nr_buckets = 1024;
	f->next_id = 2;		/* 1 is the root */
	if (!(f->slots = calloc(f->alloc_slots, sizeof(*f->slots))) ||
	    !(f->slot_rels = calloc(f->alloc_rels, sizeof(*f->slot_rels))) ||
	    !(f->by_id = calloc(f->nr_buckets, sizeof(*f->by_id))) ||
	    !(f->by_key = calloc(f->nr_buckets, sizeof(*f->by_key))) ||
	    dir_intern(f, "") != 0)
		return err_set(XL_ENOMEM, "out of memory");
	return 0;
}

int forge_start(struct forge *f)
{
	int ret;

	/*
	 * FORGE_MALLOC: every wake allocates and frees the same big
	 * blocks (a 4 MiB memo, sqlite's caches, the build's tables).
	 * glibc raises its mmap threshold to the size of each big block
	 * freed, after which such blocks come from the heap, zeroed by
	 * hand (resident) and kept after free.  Measured on 10,000 small
	 * repositories, 300 wakes at a time, 32 awake: RssAnon 444, 711,
	 * 857 MB; with malloc_trim() after sleeping 131, 160, 178 MB; with
	 * the threshold fixed too, 58, 67, 74 MB.  Once, before any thread.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	ret = pthread_create(&f->janitor, NULL, janitor_main, f);

	if (ret)
		return err_set(XL_EIO, "starting a thread: %s", strerror(ret));
	f->janitor_started = 1;
	return 0;
}

int forge_free(struct forge *f)
{
	int busy = 0;

	if (!f)
		return 0;
	if (f->janitor_started) {
		pthread_mutex_lock(&f->lock);
		f->stop = 1;
		pthread_cond_signal(&f->janitor_wake);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->janitor, NULL);
		f->janitor_started = 0;
	}
	for (size_t i = 1; i < f->nr_slots; i++)
		if (f->slots[i]->xfs && updater_stop(f->slots[i]->xfs))
			busy = -1;
	if (busy)
		return -1;	/* a build still uses its context: leave it all */
	for (size_t i = 1; i < f->nr_slots; i++) {
		struct slot *sl = f->slots[i];

		if (sl->xfs) {
			xfs_teardown(sl->xfs);
			free(sl->xfs);
		}
		free(sl->rel);
		free(sl->path);
		free(sl);
	}
	for (size_t i = 0; i < f->nr_dirs; i++)
		free(f->dirs[i]);
	for (size_t i = 0; f->by_id && i < f->nr_buckets; i++)
		for (struct fnode *n = f->by_id[i], *next; n; n = next) {
			next = n->next_id;
			free(n);
		}
	free(f->by_id);
	free(f->by_key);
	free(f->slots);
	free(f->slot_rels);
	free(f->dirs);
	free(f->slot_names.at);
	free(f->dir_names.at);
	free(f->root);
	free(f);
	return 0;
}
