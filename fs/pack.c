/*
 * pack.c: objects/pack and objects/info/packs of the two Git directories.
 *
 * Stock tools read many objects, and a loose file costs FUSE round trips
 * on every one, so each view also serves packs (DESIGN.md §6):
 *
 *   sha256/objects/pack   the repository's own .pack and .idx files, read
 *                         straight through from the file
 *   sha1/objects/pack     for every native pack the build has laid out,
 *                         the SHA-1 pack made from it (xlate/pack1.c):
 *                         the .idx comes whole from the cache, a range of
 *                         the .pack is made when read
 *   objects/info/packs    lists them, as `git update-server-info` would
 *
 * A SHA-1 repository mounted the other way round is the same with the
 * views swapped: sha1/objects/pack holds its own packs, read straight
 * through, and sha256/objects/pack the SHA-256 packs made from them.
 *
 * A pack file is named by its trailer, so its bytes never change while
 * it is listed: the kernel may keep them (keep_cache) and its name for
 * long.  What is listed is snapshotted (struct packsnap) and made anew
 * when older than XFS_REFS_MAX_AGE, so a new pack shows within seconds
 * of the build that lays it out, and a pack gc deleted leaves the
 * listing.  A file open when its pack goes keeps reading the same bytes:
 * it holds the repository it opened (whose mapping of the deleted native
 * pack lives on), and the updater keeps the layout of a pack that is
 * open (packs_seen counts opens).
 *
 * Every pack ever listed is remembered in xfs->packs_seen (a few per gc,
 * for the life of the mount), so an inode number the kernel still holds
 * always leads back to its file.
 */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Inode numbers of pack files: bit 62 (object files have bit 63), the
 * Git directory in bit 61, the first 60 bits of the pack's name with the
 * lowest two clear, and those two saying which file (enum pack_file).  Names are hashes, so
 * two packs sharing 59 bits do not happen; if they did, the later one
 * would not be listed.
 */
#define PACK_BIT (1ull << 62)
#define PACK_GIT_SHIFT 61
#define PACK_NAME_MASK ((1ull << 60) - 1)

/* Readers of one SHA-1 .pack that may convert at once (read-ahead). */
#define PACKFILE_READERS 4

int pack_ino(fuse_ino_t ino)
{
	return (ino & (PACK_BIT | (1ull << 63))) == PACK_BIT;
}

static fuse_ino_t pack_ino_of(enum xfs_git git, const char *hex)
{
	uint64_t bits = 0;

	for (int i = 0; i < 15 && hex[i]; i++)
		bits = bits << 4 | (uint64_t)hex_value((unsigned char)hex[i]);
	return PACK_BIT | (uint64_t)git << PACK_GIT_SHIFT |
	       (bits & PACK_NAME_MASK & ~3ull);
}

/* ---- what is listed --------------------------------------------------- */

/*
 * Remember `sp` in packs_seen (once) and give it its lasting path
 * string.  Called with pack_lock held.
 */
static int seen_add(struct xfs *xfs, struct served_pack *sp, const char *path)
{
	for (size_t i = 0; i < xfs->nr_packs_seen; i++) {
		struct served_pack *s = &xfs->packs_seen[i];

		if (s->ino != sp->ino)
			continue;
		if (s->git != sp->git || strcmp(s->name, sp->name))
			return EEXIST;	/* 59 bits shared: see PACK_BIT */
		/* a layout made again after a cache was emptied: the new one */
		s->layout = sp->layout;
		memcpy(s->size, sp->size, sizeof(s->size));
		s->promisor = sp->promisor;
		sp->native_path = s->native_path;
		return 0;
	}
	if (ARRAY_GROW(xfs->packs_seen, xfs->nr_packs_seen,
		       xfs->alloc_packs_seen, 8))
		return ENOMEM;
	if (!(sp->native_path = strdup(path)))
		return ENOMEM;
	sp->opens = 0;
	xfs->packs_seen[xfs->nr_packs_seen++] = *sp;
	return 0;
}

struct natives {
	struct odb_pack_info *packs;
	size_t nr, alloc;
};

static int note_native(const struct odb_pack_info *info, void *data)
{
	struct natives *n = data;

	if (ARRAY_GROW(n->packs, n->nr, n->alloc, 8))
		return err_set(XL_ENOMEM, "out of memory");
	n->packs[n->nr++] = *info;
	return 0;
}

static void packsnap_free(struct packsnap *snap)
{
	for (int g = 0; g < XFS_GIT__COUNT; g++) {
		free(snap->packs[g]);
		free(snap->loose[g]);
		buf_release(&snap->info_packs[g]);
	}
	free(snap);
}

struct loose_walk {
	struct oid *names;
	size_t nr;
	int too_many;
};

static int note_loose(const struct oid *oid, void *data)
{
	struct loose_walk *w = data;

	if (w->nr == XFS_LOOSE_SNAP_MAX) {
		w->too_many = 1;
		return 1;
	}
	w->names[w->nr++] = *oid;
	return 0;
}

static int cmp_oid(const void *a, const void *b)
{
	return oid_cmp(a, b);
}

/*
 * The loose objects for snap->loose: git (log, rev-list...) lists every
 * objects/XX of a repository for its loose-object cache, and asking the
 * cache for all the objects of each fan-out would cost a walk of the
 * whole name table per command.
 */
static int loose_snap(struct xfs *xfs, struct odb *odb, struct packsnap *snap,
		      int all_served1)
{
	struct loose_walk w = { malloc(XFS_LOOSE_SNAP_MAX * sizeof(struct oid)), 0, 0 };
	struct cache *c = xfs_cache(xfs);
	size_t n1 = 0;
	int ret;

	if (!w.names)
		return ENOMEM;
	ret = odb_for_each_loose(odb, note_loose, &w);
	if (ret < 0 || w.too_many) {
		free(w.names);
		return 0;	/* listings ask the cache */
	}
	qsort(w.names, w.nr, sizeof(*w.names), cmp_oid);
	snap->loose[xfs->own] = w.names;
	snap->nr_loose[xfs->own] = w.nr;
	snap->loose_ok[xfs->own] = 1;
	if (!all_served1)
		return 0;
	if (!(snap->loose[xfs->other] = malloc((w.nr ? w.nr : 1) * sizeof(struct oid))))
		return ENOMEM;
	for (size_t i = 0; i < w.nr; i++) {
		struct cache_object co;

		ret = cache_get(c, &w.names[i], &co);
		if (!ret && co.sha1.algo)
			snap->loose[xfs->other][n1++] = co.sha1;
		else if (ret && ret != XL_ENOTFOUND)
			return 0;	/* listings ask the cache, and say why */
	}
	qsort(snap->loose[xfs->other], n1, sizeof(struct oid), cmp_oid);
	snap->nr_loose[xfs->other] = n1;
	snap->loose_ok[xfs->other] = 1;
	return 0;
}

void packsnap_put(struct packsnap *snap)
{
	if (snap && atomic_fetch_sub(&snap->refcount, 1) == 1)
		packsnap_free(snap);
}

static int snap_push(struct xfs *xfs, struct packsnap *snap,
		     struct served_pack *sp, const char *path)
{
	enum xfs_git g = sp->git;
	struct served_pack *grown;
	int ret;

	sp->ino = pack_ino_of(g, sp->name + 5);
	if ((ret = seen_add(xfs, sp, path)))
		return ret == EEXIST ? 0 : ret;
	if (!(grown = realloc(snap->packs[g], (snap->nr[g] + 1) * sizeof(*grown))))
		return ENOMEM;
	snap->packs[g] = grown;
	grown[snap->nr[g]++] = *sp;
	return buf_addf(&snap->info_packs[g], "P %s.pack\n", sp->name) ? ENOMEM : 0;
}

/* A new snapshot of the repository as it is now; pack_lock held. */
static int packsnap_make(struct xfs *xfs, struct packsnap **out)
{
	struct packsnap *snap = calloc(1, sizeof(*snap));
	struct repo_ref *repo = xfs_repo_get(xfs);
	struct natives natives = { 0 };
	struct cache_pack1 *layouts = NULL;
	struct buf idx_path = BUF_INIT;
	size_t nr_layouts = 0;
	int ret = ENOMEM;

	*out = NULL;
	if (!snap)
		goto out;
	atomic_init(&snap->refcount, 1);
	snap->made = xfs_now();
	for (int g = 0; g < XFS_GIT__COUNT; g++)
		buf_init(&snap->info_packs[g]);
	if (odb_for_each_pack(repo_odb(repo->repo), note_native, &natives) ||
	    cache_pack1_list(xfs_cache(xfs), &layouts, &nr_layouts)) {
		xfs_log(xfs, "listing packs: %s", err_msg());
		ret = EIO;
		goto out;
	}
	ret = 0;
	size_t served1 = 0;

	for (size_t i = 0; i < natives.nr && !ret; i++) {
		const struct odb_pack_info *info = &natives.packs[i];
		struct served_pack sp = { .git = xfs->own };
		size_t plen = strlen(info->path);
		struct stat st;

		snprintf(sp.name, sizeof(sp.name), "pack-%s", info->checksum);
		memcpy(sp.native, info->checksum, sizeof(sp.native));
		odb_pack_map(info, &plen);
		sp.size[0] = plen;
		buf_reset(&idx_path);
		if (buf_add(&idx_path, info->path, strlen(info->path) - 5) ||
		    buf_addstr(&idx_path, ".idx")) {
			ret = ENOMEM;
			break;
		}
		if (stat(idx_path.buf, &st))
			continue;	/* deleted since we opened it: not listed */
		sp.size[1] = (uint64_t)st.st_size;
		/* a partial clone's pack: marked in both views */
		buf_setlen(&idx_path, idx_path.len - 4);
		if (buf_addstr(&idx_path, ".promisor")) {
			ret = ENOMEM;
			break;
		}
		if (!stat(idx_path.buf, &st)) {
			sp.promisor = 1;
			sp.size[2] = (uint64_t)st.st_size;
		}
		ret = snap_push(xfs, snap, &sp, info->path);

		for (size_t j = 0; j < nr_layouts && !ret; j++) {
			struct served_pack s1 = { .git = xfs->other };
			struct oid sum;
			char hex[OID_HEXSZ_MAX + 1];

			if (strcmp(layouts[j].native, info->checksum) ||
			    !layouts[j].objects)
				continue;
			oid_from_raw(&sum, hash_algo_other(xfs->algo),
				     layouts[j].checksum);
			snprintf(s1.name, sizeof(s1.name), "pack-%s",
				 oid_to_hex_r(hex, &sum));
			memcpy(s1.native, info->checksum, sizeof(s1.native));
			s1.layout = layouts[j];
			s1.size[0] = layouts[j].pack_size;
			s1.size[1] = layouts[j].idx_size;
			s1.promisor = sp.promisor;	/* an empty .promisor */
			ret = snap_push(xfs, snap, &s1, info->path);
			served1++;
		}
	}
	/* a layout with no objects (all untranslatable) is not listed, but done */
	for (size_t i = 0; i < natives.nr; i++)
		for (size_t j = 0; j < nr_layouts; j++)
			if (!layouts[j].objects &&
			    !strcmp(layouts[j].native, natives.packs[i].checksum))
				served1++;
	if (!ret)
		ret = loose_snap(xfs, repo_odb(repo->repo), snap,
				 served1 >= natives.nr);
	for (int g = 0; g < XFS_GIT__COUNT && !ret; g++)
		ret = buf_addch(&snap->info_packs[g], '\n') ? ENOMEM : 0;
out:
	if (ret && snap) {
		packsnap_free(snap);
		snap = NULL;
	}
	*out = snap;
	buf_release(&idx_path);
	free(natives.packs);
	free(layouts);
	xfs_repo_put(repo);
	return ret;
}

void packsnap_refresh(struct xfs *xfs)
{
	struct packsnap *snap;

	pthread_mutex_lock(&xfs->pack_lock);
	if (!packsnap_make(xfs, &snap)) {
		packsnap_put(xfs->packsnap);
		xfs->packsnap = snap;
	}
	pthread_mutex_unlock(&xfs->pack_lock);
}

struct packsnap *packsnap_get(struct xfs *xfs)
{
	struct packsnap *snap;

	pthread_mutex_lock(&xfs->pack_lock);
	if (!xfs->packsnap || xfs_now() - xfs->packsnap->made > XFS_REFS_MAX_AGE) {
		if (!packsnap_make(xfs, &snap)) {
			packsnap_put(xfs->packsnap);
			xfs->packsnap = snap;
		}
	}
	snap = xfs->packsnap;
	if (snap)
		atomic_fetch_add(&snap->refcount, 1);
	pthread_mutex_unlock(&xfs->pack_lock);
	return snap;
}

/* ---- nodes ------------------------------------------------------------- */

static int fill_node(const struct served_pack *sp, enum pack_file file,
		     struct node *n)
{
	if (file > PACK_FILE_PROMISOR ||
	    (file == PACK_FILE_PROMISOR && !sp->promisor))
		return ENOENT;
	memset(n, 0, sizeof(*n));
	n->ino = sp->ino | (fuse_ino_t)file;
	n->kind = NODE_PACKFILE;
	n->git = sp->git;
	n->size = sp->size[file];
	return 0;
}

static int seen_node(struct xfs *xfs, fuse_ino_t ino, struct node *n)
{
	int ret = ENOENT;

	pthread_mutex_lock(&xfs->pack_lock);
	for (size_t i = 0; i < xfs->nr_packs_seen; i++) {
		if (xfs->packs_seen[i].ino == (ino & ~3ull)) {
			ret = fill_node(&xfs->packs_seen[i],
					(enum pack_file)(ino & 3), n);
			break;
		}
	}
	pthread_mutex_unlock(&xfs->pack_lock);
	return ret;
}

int pack_node(struct xfs *xfs, fuse_ino_t ino, struct node *n)
{
	struct packsnap *snap;
	int ret = seen_node(xfs, ino, n);

	/*
	 * Not seen since a forge put this repository to sleep (which
	 * forgets the packs, not the numbers the kernel holds): listing
	 * the packs again brings back those that are still there.
	 */
	if (ret == ENOENT && xfs->forge && (snap = packsnap_get(xfs))) {
		packsnap_put(snap);
		ret = seen_node(xfs, ino, n);
	}
	return ret;
}

int pack_lookup(struct xfs *xfs, enum xfs_git git, const char *name,
		struct node *n)
{
	struct packsnap *snap = packsnap_get(xfs);
	size_t len = strlen(name);
	enum pack_file file;
	int ret = ENOENT;

	if (!snap)
		return EIO;
	if (len > 5 && !strcmp(name + len - 5, ".pack"))
		file = PACK_FILE_PACK, len -= 5;
	else if (len > 4 && !strcmp(name + len - 4, ".idx"))
		file = PACK_FILE_IDX, len -= 4;
	else if (len > 9 && !strcmp(name + len - 9, ".promisor"))
		file = PACK_FILE_PROMISOR, len -= 9;
	else
		goto out;
	for (size_t i = 0; i < snap->nr[git]; i++) {
		const struct served_pack *sp = &snap->packs[git][i];

		if (strlen(sp->name) == len && !memcmp(sp->name, name, len)) {
			ret = fill_node(sp, file, n);
			break;
		}
	}
out:
	packsnap_put(snap);
	return ret;
}

/* ---- files ------------------------------------------------------------- */

struct packfile {
	struct served_pack sp;
	enum pack_file file;
	int fd;				/* sha256/: the native file */
	struct repo_ref *repo;		/* sha1/ .pack: its native pack's bytes */
	pthread_mutex_t lock;		/* guards busy[] */
	struct xlate_pack1_reader *readers[PACKFILE_READERS];
	int busy[PACKFILE_READERS];
};

/* Count an open (+1) or a close (-1) of the pack in packs_seen. */
static void count_open(struct xfs *xfs, fuse_ino_t ino, int delta)
{
	pthread_mutex_lock(&xfs->pack_lock);
	for (size_t i = 0; i < xfs->nr_packs_seen; i++)
		if (xfs->packs_seen[i].ino == ino)
			xfs->packs_seen[i].opens += (unsigned)delta;
	pthread_mutex_unlock(&xfs->pack_lock);
}

int packfile_open(struct xfs *xfs, const struct node *n, struct packfile **out)
{
	struct packfile *f = calloc(1, sizeof(*f));
	int ret = ENOENT;

	*out = NULL;
	if (!f)
		return ENOMEM;
	f->fd = -1;
	f->file = (enum pack_file)(n->ino & 3);
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_lock(&xfs->pack_lock);
	for (size_t i = 0; i < xfs->nr_packs_seen; i++) {
		if (xfs->packs_seen[i].ino == (n->ino & ~3ull)) {
			f->sp = xfs->packs_seen[i];
			xfs->packs_seen[i].opens++;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&xfs->pack_lock);
	if (ret) {
		pthread_mutex_destroy(&f->lock);
		free(f);
		return ret;
	}
	if (f->sp.git == xfs->own) {
		struct buf path = BUF_INIT;
		size_t plen = strlen(f->sp.native_path);

		if (f->file != PACK_FILE_PACK)
			ret = buf_add(&path, f->sp.native_path, plen - 5) ||
			      buf_addstr(&path, f->file == PACK_FILE_IDX ?
					 ".idx" : ".promisor") ? ENOMEM : 0;
		else
			ret = buf_addstr(&path, f->sp.native_path) ? ENOMEM : 0;
		if (!ret && (f->fd = open(path.buf, O_RDONLY | O_CLOEXEC)) < 0)
			ret = errno == ENOENT ? ENOENT : EIO;
		buf_release(&path);
	} else if (f->file == PACK_FILE_PACK) {
		struct odb_pack_info info;

		f->repo = xfs_repo_get(xfs);
		if (odb_find_pack(repo_odb(f->repo->repo), f->sp.native, &info))
			ret = ENOENT;	/* gone, and this repository never had it */
	}
	if (ret) {
		packfile_close(xfs, f);
		return ret;
	}
	*out = f;
	return 0;
}

/* A reader of the SHA-1 .pack for this read: a free one, or a new one. */
static int reader_take(struct xfs *xfs, struct packfile *f, int *slot)
{
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	for (*slot = 0; *slot < PACKFILE_READERS && f->busy[*slot]; (*slot)++)
		;
	if (*slot == PACKFILE_READERS) {
		ret = EAGAIN;
	} else {
		f->busy[*slot] = 1;
		if (!f->readers[*slot] &&
		    xlate_pack1_reader_new(&f->readers[*slot], f->repo->repo,
					   &f->sp.layout)) {
			xfs_log(xfs, "%s.pack: %s", f->sp.name, err_msg());
			f->busy[*slot] = 0;
			ret = EIO;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static void reader_give(struct packfile *f, int slot)
{
	pthread_mutex_lock(&f->lock);
	f->busy[slot] = 0;
	pthread_mutex_unlock(&f->lock);
}

int packfile_read(struct xfs *xfs, struct packfile *f, uint64_t off, char *dst,
		  size_t len, size_t *got)
{
	uint64_t size = f->sp.size[f->file];
	int ret = 0, slot;

	*got = 0;
	if (off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (f->fd >= 0) {
		while (*got < len) {
			ssize_t n = pread(f->fd, dst + *got, len - *got,
					  (off_t)(off + *got));

			if (n <= 0) {
				if (n < 0 && errno == EINTR)
					continue;
				xfs_log(xfs, "%s: %s", f->sp.native_path,
					n ? strerror(errno) : "shorter than it was");
				return EIO;
			}
			*got += (size_t)n;
		}
		return 0;
	}
	if (f->file == PACK_FILE_IDX) {
		ret = xlate_pack1_read_idx(xfs_cache(xfs), &f->sp.layout, off,
					   dst, len);
	} else {
		/* more readers at once than slots: wait for one, briefly */
		while ((ret = reader_take(xfs, f, &slot)) == EAGAIN)
			usleep(100);
		if (ret)
			return ret;
		ret = xlate_pack1_read(f->readers[slot], xfs_cache(xfs), xfs->memo,
				       xfs->unknown_headers, off, dst, len);
		reader_give(f, slot);
	}
	if (ret) {
		xfs_log(xfs, "%s.%s at %llu: %s", f->sp.name,
			f->file == PACK_FILE_IDX ? "idx" : "pack",
			(unsigned long long)off,
			err_msg());
		return EIO;
	}
	*got = len;
	return 0;
}

void packfile_close(struct xfs *xfs, struct packfile *f)
{
	if (!f)
		return;
	count_open(xfs, f->sp.ino, -1);
	for (int i = 0; i < PACKFILE_READERS; i++)
		xlate_pack1_reader_free(f->readers[i]);
	if (f->fd >= 0)
		close(f->fd);
	xfs_repo_put(f->repo);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* ---- keeping layouts up to date (the updater) --------------------------- */

/* A layout whose native pack is gone stays while a file of it is open. */
static int layout_open(void *data, const struct cache_pack1 *p)
{
	struct xfs *xfs = data;
	int open = 0;

	pthread_mutex_lock(&xfs->pack_lock);
	for (size_t i = 0; i < xfs->nr_packs_seen; i++)
		if (xfs->packs_seen[i].git == xfs->other &&
		    xfs->packs_seen[i].layout.id == p->id &&
		    xfs->packs_seen[i].opens)
			open = 1;
	pthread_mutex_unlock(&xfs->pack_lock);
	return open;
}

void pack1_opts(struct xfs *xfs, struct xlate_pack1_opts *out)
{
	*out = (struct xlate_pack1_opts){
		.unknown_headers = xfs->unknown_headers,
		.memo = xfs->memo,
		.cancel = &xfs->cancel_build,
		.keep = layout_open,
		.keep_data = xfs,
	};
}

void pack1_log(struct xfs *xfs, const struct xlate_pack1_stats *st)
{
	if (st->made)
		xfs_log(xfs, "laid out %llu %s pack%s (%llu objects)",
			(unsigned long long)st->made,
			hash_algo_other(xfs->algo)->title, st->made == 1 ? "" : "s",
			(unsigned long long)st->objects);
}

void pack_teardown(struct xfs *xfs)
{
	packsnap_put(xfs->packsnap);
	xfs->packsnap = NULL;
	for (size_t i = 0; i < xfs->nr_packs_seen; i++)
		free((char *)xfs->packs_seen[i].native_path);
	free(xfs->packs_seen);
	xfs->packs_seen = NULL;
	xfs->nr_packs_seen = xfs->alloc_packs_seen = 0;
}
