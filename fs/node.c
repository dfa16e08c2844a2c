/*
 * node.c: inode numbers, and what each one is.
 *
 * The kernel names files by inode number, so every number must lead back
 * to what it stands for, and the same file should keep its number.
 * Three ranges:
 *
 *   1..63            the fixed files and directories (static_nodes[])
 *   0x1000 + v*256 + b    objects/XX of view v, first byte b
 *   0x10000 + i      a path under refs/ of one Git directory, interned
 *                    (i-th distinct path seen; they are few: only
 *                    symbolic refs live there, the rest is packed-refs)
 *   bit 63 set       an object file: the view in bits 59..62, then the
 *                    first 59 bits of the object's name in that view
 *   bit 62 set       a file of objects/pack (pack.c)
 *   bit 61 set       one version of a text file that changes (below)
 *
 * So an object's number follows from its name (readdir can give it
 * without a lookup, and it is the same on every mount), except in the
 * astronomically rare case of two names sharing 59 bits, where the later
 * one takes the next free number.  Object nodes are counted (the
 * kernel's lookups minus its forgets) and freed at zero, so memory
 * follows what the kernel holds, not what has ever been read.
 */
#include "fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FANOUT_BASE 0x1000u
#define PATH_BASE 0x10000u
#define OBJECT_BIT (1ull << 63)
#define OBJECT_VIEW_SHIFT 59
#define OBJECT_NAME_MASK ((1ull << OBJECT_VIEW_SHIFT) - 1)
#define VERSION_BIT (1ull << 61)
#define VERSION_MASK (7ull << 61)	/* bits 61..63: 001 is a version */

struct static_node {
	fuse_ino_t ino, parent;
	const char *name;
	enum node_kind kind;
	enum dir_kind dir;
	int arg;		/* text kind, Git directory or view */
};

/* Inode numbers of the Git directories' members: base + offset. */
enum { GIT1_BASE = 10, GIT256_BASE = 20 };
enum { G_DIR, G_HEAD, G_CONFIG, G_PACKED_REFS, G_OBJECTS, G_INFO, G_PACK,
       G_INFO_PACKS, G_SHALLOW };

#define GIT_NODES(base, dirname, git, view) \
	{ base + G_DIR, FUSE_ROOT_ID, dirname, NODE_DIR, DIR_GIT, git }, \
	{ base + G_HEAD, base + G_DIR, "HEAD", NODE_TEXT, 0, TEXT_HEAD }, \
	{ base + G_CONFIG, base + G_DIR, "config", NODE_TEXT, 0, TEXT_CONFIG }, \
	{ base + G_PACKED_REFS, base + G_DIR, "packed-refs", NODE_TEXT, 0, \
	  TEXT_PACKED_REFS }, \
	{ base + G_OBJECTS, base + G_DIR, "objects", NODE_DIR, DIR_OBJECTS, view }, \
	{ base + G_INFO, base + G_OBJECTS, "info", NODE_DIR, DIR_INFO, git }, \
	{ base + G_PACK, base + G_OBJECTS, "pack", NODE_DIR, DIR_PACK, git }, \
	{ base + G_INFO_PACKS, base + G_INFO, "packs", NODE_TEXT, 0, \
	  TEXT_INFO_PACKS }, \
	{ base + G_SHALLOW, base + G_DIR, "shallow", NODE_TEXT, 0, TEXT_SHALLOW }

static const struct static_node static_nodes[] = {
	{ FUSE_ROOT_ID, FUSE_ROOT_ID, "", NODE_DIR, DIR_ROOT, 0 },
	{ 2, FUSE_ROOT_ID, "README", NODE_TEXT, 0, TEXT_README },
	{ 3, FUSE_ROOT_ID, "status", NODE_TEXT, 0, TEXT_STATUS },
	{ 4, FUSE_ROOT_ID, "objects-sha1", NODE_DIR, DIR_OBJECTS, XFS_RAW1 },
	{ 5, FUSE_ROOT_ID, "objects-sha256", NODE_DIR, DIR_OBJECTS, XFS_RAW256 },
	GIT_NODES(GIT1_BASE, "sha1", XFS_GIT1, XFS_LOOSE1),
	GIT_NODES(GIT256_BASE, "sha256", XFS_GIT256, XFS_LOOSE256),
};
#define NR_STATIC (sizeof(static_nodes) / sizeof(static_nodes[0]))

/* ---- the table -------------------------------------------------------- */

struct path_entry {
	enum xfs_git git;
	char *path;
};

/*
 * HEAD, packed-refs and objects/info/packs change while readers have
 * them open.  Git opens packed-refs, takes its size from fstat() and
 * reads that many bytes, and fstat() asks the kernel about the inode,
 * not about the open file: were one inode to stand for every version,
 * a reader could get one version's size with another's bytes and stop
 * in the middle of a line.  So each version of such a file is an inode
 * of its own, made by the lookup that first sees those bytes.  Its
 * bytes and size never change (the kernel may keep them), and its name
 * is looked up afresh every time (entry TTL 0), which is how a reader
 * comes to the next version.  A version lives while the kernel holds
 * it; the newest of each file stays, so that a file that has not
 * changed keeps its number and its page cache.
 */
struct text_version {
	struct text_version *next;
	fuse_ino_t ino;
	fuse_ino_t of;		/* the static node it is a version of */
	uint64_t nlookup;	/* kernel references */
	int newest;		/* the one lookups of `of` now give */
	struct buf bytes;
};

struct node_table {
	pthread_mutex_t lock;	/* guards everything below */
	struct node **buckets;	/* object nodes by ino, chained via ->next */
	size_t nr_buckets, nr;
	struct path_entry *paths;	/* interned refs paths; ino PATH_BASE + i */
	size_t nr_paths, alloc_paths;
	struct text_version *versions;	/* a short list: few are held */
	uint64_t last_version;		/* numbers are never reused */
};

/* An object node in its bucket chain. */
struct obj_node {
	struct node n;
	struct obj_node *next;
};

int node_table_new(struct node_table **out, size_t buckets)
{
	struct node_table *t = calloc(1, sizeof(*t));

	if (!t)
		return ENOMEM;
	t->nr_buckets = buckets;
	if (!(t->buckets = calloc(t->nr_buckets, sizeof(*t->buckets)))) {
		free(t);
		return ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

void node_table_free(struct node_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_buckets; i++) {
		struct obj_node *o = (struct obj_node *)t->buckets[i], *next;

		for (; o; o = next) {
			next = o->next;
			free(o);
		}
	}
	while (t->versions) {
		struct text_version *v = t->versions;

		t->versions = v->next;
		buf_release(&v->bytes);
		free(v);
	}
	for (size_t i = 0; i < t->nr_paths; i++)
		free(t->paths[i].path);
	free(t->paths);
	free(t->buckets);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static size_t bucket_of(const struct node_table *t, fuse_ino_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) % t->nr_buckets;
}

static struct obj_node *find_obj(struct node_table *t, fuse_ino_t ino)
{
	struct obj_node *o = (struct obj_node *)t->buckets[bucket_of(t, ino)];

	while (o && o->n.ino != ino)
		o = o->next;
	return o;
}

/* Double the buckets when the chains get long; best effort. */
static void maybe_grow(struct node_table *t)
{
	size_t old = t->nr_buckets;
	struct node **b, **ob = t->buckets;

	if (t->nr < 2 * old || !(b = calloc(2 * old, sizeof(*b))))
		return;
	t->buckets = b;
	t->nr_buckets = 2 * old;
	for (size_t i = 0; i < old; i++) {
		struct obj_node *o = (struct obj_node *)ob[i], *next;

		for (; o; o = next) {
			size_t k = bucket_of(t, o->n.ino);

			next = o->next;
			o->next = (struct obj_node *)t->buckets[k];
			t->buckets[k] = &o->n;
		}
	}
	free(ob);
}

fuse_ino_t object_ino(enum xfs_view view, const struct oid *name)
{
	uint64_t bits = 0;

	for (int i = 0; i < 8; i++)
		bits = bits << 8 | name->hash[i];
	return OBJECT_BIT | (uint64_t)view << OBJECT_VIEW_SHIFT |
	       (bits & OBJECT_NAME_MASK);
}

/*
 * Count one more kernel reference to the object node for n->name in
 * n->view, making it if needed; sets n->ino.
 */
static int intern_object(struct node_table *t, struct node *n)
{
	fuse_ino_t ino = object_ino(n->view, &n->name);
	struct obj_node *o;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (;;) {
		o = find_obj(t, ino);
		if (!o || (o->n.view == n->view && !oid_cmp(&o->n.name, &n->name)))
			break;
		/* 59 bits shared with another name: take the next number */
		ino = (ino & ~OBJECT_NAME_MASK) | ((ino + 1) & OBJECT_NAME_MASK);
	}
	if (o) {
		o->n.nlookup++;
		/* named by the updater since the kernel first looked */
		if (!o->n.sha1.algo && n->sha1.algo)
			o->n.sha1 = n->sha1;
		n->ino = ino;
	} else if ((o = malloc(sizeof(*o)))) {
		n->ino = ino;
		n->nlookup = 1;
		o->n = *n;
		o->next = (struct obj_node *)t->buckets[bucket_of(t, ino)];
		t->buckets[bucket_of(t, ino)] = &o->n;
		t->nr++;
		maybe_grow(t);
	} else {
		ret = ENOMEM;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void node_refresh_sha1(struct xfs *xfs, struct node *n)
{
	struct node_table *t = xfs->nodes;
	struct cache_object co;
	struct obj_node *o;

	if (n->kind != NODE_OBJECT || n->sha1.algo ||
	    cache_get(xfs_cache(xfs), &n->sha256, &co) || !co.sha1.algo)
		return;
	n->sha1 = co.sha1;
	pthread_mutex_lock(&t->lock);
	if ((o = find_obj(t, n->ino)))
		o->n.sha1 = co.sha1;
	pthread_mutex_unlock(&t->lock);
}

/* ---- versions of the text files that change ------------------------------ */

static int is_versioned(const struct node *n)
{
	return n->kind == NODE_TEXT &&
	       (n->text == TEXT_HEAD || n->text == TEXT_PACKED_REFS ||
		n->text == TEXT_INFO_PACKS || n->text == TEXT_SHALLOW);
}

int node_is_version(const struct node *n)
{
	return (n->ino & VERSION_MASK) == VERSION_BIT;
}

static void free_version(struct node_table *t, struct text_version *dead)
{
	struct text_version **pp;

	for (pp = &t->versions; *pp != dead; pp = &(*pp)->next)
		;
	*pp = dead->next;
	buf_release(&dead->bytes);
	free(dead);
}

/*
 * Turn the static node *n (HEAD, packed-refs, info/packs) into the
 * version of it that holds its bytes now, counting one kernel reference.
 */
static int intern_version(struct xfs *xfs, struct node *n)
{
	struct node_table *t = xfs->nodes;
	struct text_version *v, *old = NULL;
	struct buf now = BUF_INIT;
	int ret;

	if ((ret = text_content(xfs, n, &now))) {
		buf_release(&now);
		return ret == XL_ENOMEM ? ENOMEM : EIO;
	}
	pthread_mutex_lock(&t->lock);
	for (v = t->versions; v; v = v->next)
		if (v->of == n->ino && v->newest)
			break;
	if (v && v->bytes.len == now.len &&
	    !memcmp(v->bytes.buf, now.buf, now.len)) {
		v->nlookup++;
		buf_release(&now);
	} else {
		old = v;
		if (!(v = calloc(1, sizeof(*v)))) {
			pthread_mutex_unlock(&t->lock);
			buf_release(&now);
			return ENOMEM;
		}
		v->ino = VERSION_BIT | ++t->last_version;
		v->of = n->ino;
		v->nlookup = 1;
		v->newest = 1;
		v->bytes = now;		/* taken over */
		v->next = t->versions;
		t->versions = v;
		if (old) {
			old->newest = 0;
			if (!old->nlookup)
				free_version(t, old);
		}
	}
	n->ino = v->ino;
	n->size = v->bytes.len;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int node_version_bytes(struct xfs *xfs, const struct node *n, struct buf *out)
{
	struct node_table *t = xfs->nodes;
	struct text_version *v;
	int ret = XL_EIO;	/* forgotten: the kernel holds it no more */

	pthread_mutex_lock(&t->lock);
	for (v = t->versions; v && v->ino != n->ino; v = v->next)
		;
	if (v)
		ret = buf_add(out, v->bytes.buf, v->bytes.len);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

static void forget_version(struct node_table *t, fuse_ino_t ino, uint64_t nlookup)
{
	struct text_version *v;

	pthread_mutex_lock(&t->lock);
	for (v = t->versions; v && v->ino != ino; v = v->next)
		;
	if (v) {
		v->nlookup = v->nlookup > nlookup ? v->nlookup - nlookup : 0;
		if (!v->nlookup && !v->newest)
			free_version(t, v);
	}
	pthread_mutex_unlock(&t->lock);
}

void node_forget(struct xfs *xfs, fuse_ino_t ino, uint64_t nlookup)
{
	struct node_table *t = xfs->nodes;
	struct obj_node **pp, *o;

	if ((ino & VERSION_MASK) == VERSION_BIT) {
		forget_version(t, ino, nlookup);
		return;
	}
	if (!(ino & OBJECT_BIT))
		return;		/* everything else lives as long as the mount */
	pthread_mutex_lock(&t->lock);
	for (pp = (struct obj_node **)&t->buckets[bucket_of(t, ino)];
	     (o = *pp); pp = &o->next) {
		if (o->n.ino != ino)
			continue;
		if (o->n.nlookup > nlookup) {
			o->n.nlookup -= nlookup;
		} else {
			*pp = o->next;
			free(o);
			t->nr--;
		}
		break;
	}
	pthread_mutex_unlock(&t->lock);
}

/* The inode number of (git, path) under refs/, interning it. */
static int intern_path(struct node_table *t, enum xfs_git git,
		       const char *path, fuse_ino_t *ino, const char **stored)
{
	int ret = 0;
	size_t i;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->nr_paths; i++)
		if (t->paths[i].git == git && !strcmp(t->paths[i].path, path))
			break;
	if (i == t->nr_paths) {
		char *copy = strdup(path);

		if (!copy || ARRAY_GROW(t->paths, t->nr_paths, t->alloc_paths, 16)) {
			free(copy);
			ret = ENOMEM;
			goto out;
		}
		t->paths[i].git = git;
		t->paths[i].path = copy;
		t->nr_paths++;
	}
	*ino = PATH_BASE + i;
	*stored = t->paths[i].path;
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* ---- from numbers to nodes --------------------------------------------- */

static void from_static(const struct static_node *s, struct node *n)
{
	memset(n, 0, sizeof(*n));
	n->ino = s->ino;
	n->kind = s->kind;
	n->dir = s->dir;
	if (s->kind == NODE_TEXT) {
		n->text = (enum text_kind)s->arg;
		n->git = s->ino >= GIT256_BASE ? XFS_GIT256 : XFS_GIT1;
	} else if (s->dir == DIR_GIT || s->dir == DIR_INFO || s->dir == DIR_PACK) {
		n->git = (enum xfs_git)s->arg;
	} else if (s->dir == DIR_OBJECTS) {
		n->view = (enum xfs_view)s->arg;
	}
}

int node_get(struct xfs *xfs, fuse_ino_t ino, struct node *out)
{
	struct node_table *t = xfs->nodes;
	int ret = ENOENT;

	if (ino & OBJECT_BIT) {
		struct obj_node *o;

		pthread_mutex_lock(&t->lock);
		if ((o = find_obj(t, ino))) {
			*out = o->n;
			ret = 0;
		}
		pthread_mutex_unlock(&t->lock);
		return ret;
	}
	if (pack_ino(ino))
		return pack_node(xfs, ino, out);
	if ((ino & VERSION_MASK) == VERSION_BIT) {
		struct text_version *v;
		fuse_ino_t of = 0;
		uint64_t size = 0;

		pthread_mutex_lock(&t->lock);
		for (v = t->versions; v && v->ino != ino; v = v->next)
			;
		if (v) {
			of = v->of;
			size = v->bytes.len;
		}
		pthread_mutex_unlock(&t->lock);
		for (size_t i = 0; of && i < NR_STATIC; i++) {
			if (static_nodes[i].ino == of) {
				from_static(&static_nodes[i], out);
				out->ino = ino;
				out->size = size;
				return 0;
			}
		}
		return ENOENT;
	}
	if (ino >= PATH_BASE) {
		pthread_mutex_lock(&t->lock);
		if (ino - PATH_BASE < t->nr_paths) {
			const struct path_entry *p = &t->paths[ino - PATH_BASE];

			memset(out, 0, sizeof(*out));
			out->ino = ino;
			out->git = p->git;
			out->path = p->path;	/* interned: lives as long as t */
			/* a path is a directory unless a symbolic ref is there now */
			out->kind = NODE_REFDIR;
			ret = 0;
		}
		pthread_mutex_unlock(&t->lock);
		if (!ret && strcmp(out->path, "refs") &&
		    strcmp(out->path, "refs/heads") &&
		    strcmp(out->path, "refs/tags")) {
			struct refsnap *snap = refsnap_get(xfs);

			if (!snap)
				return EIO;
			if (refsnap_find(&snap->view[out->git], out->path))
				out->kind = NODE_SYMREF;
			refsnap_put(snap);
		}
		return ret;
	}
	if (ino >= FANOUT_BASE && ino < FANOUT_BASE + 256 * XFS_VIEW__COUNT) {
		memset(out, 0, sizeof(*out));
		out->ino = ino;
		out->kind = NODE_FANOUT;
		out->view = (enum xfs_view)((ino - FANOUT_BASE) / 256);
		out->fanout = (ino - FANOUT_BASE) % 256;
		return 0;
	}
	for (size_t i = 0; i < NR_STATIC; i++) {
		if (static_nodes[i].ino == ino) {
			from_static(&static_nodes[i], out);
			return 0;
		}
	}
	return ENOENT;
}

/* ---- lookups -------------------------------------------------------------- */

static int parse_lower_hex(const char *s, size_t len, unsigned char *out)
{
	for (size_t i = 0; i < len; i++) {
		int v = hex_value((unsigned char)s[i]);

		/* Git writes lowercase only; one spelling, one file */
		if (v < 0 || (s[i] >= 'A' && s[i] <= 'F'))
			return -1;
		if (i & 1)
			out[i / 2] |= (unsigned char)v;
		else
			out[i / 2] = (unsigned char)(v << 4);
	}
	return 0;
}

/*
 * Fill an object node for `name` in `view` from the cache (or, for a
 * stored object the cache does not know yet, from the repository).
 * Returns 0, ENOENT, or EIO (logged).
 */
static int resolve_in(struct xfs *xfs, struct odb *odb, struct cache *c,
		      enum xfs_view view, const struct oid *name,
		      struct node *n)
{
	struct cache_object co;
	char hex[OID_HEXSZ_MAX + 1];
	size_t size;
	int ret;

	memset(n, 0, sizeof(*n));
	n->kind = NODE_OBJECT;
	n->view = view;
	n->name = *name;
	if (view_translated(xfs, view))
		ret = cache_get_by_sha1(c, name, &co);
	else
		ret = cache_get(c, name, &co);
	if (ret == XL_ENOTFOUND || ret == XL_EAMBIGUOUS) {
		if (view_translated(xfs, view))
			return ENOENT;	/* a translated name is only what the cache says */
		n->sha256 = *name;
		ret = odb_read_header(odb, name, &n->type, &size);
		if (ret == XL_ENOTFOUND)
			return ENOENT;
		if (ret) {
			xfs_log(xfs, "%s: %s", oid_to_hex_r(hex, name), err_msg());
			return EIO;
		}
		n->size = size;
		return 0;
	}
	if (ret) {
		xfs_log(xfs, "looking up %s: %s", oid_to_hex_r(hex, name), err_msg());
		return EIO;
	}
	/*
	 * The cache remembers objects that gc may since have pruned; the
	 * repository decides what exists.
	 */
	if (!odb_has(odb, &co.sha256) && (odb_refresh(odb), !odb_has(odb, &co.sha256)))
		return ENOENT;
	n->sha256 = co.sha256;
	n->sha1 = co.sha1;
	n->type = co.type;
	n->size = view_translated(xfs, view) ? co.size1 : co.size256;
	return 0;
}

/* resolve_in() with the repository as it is now. */
static int resolve_object(struct xfs *xfs, enum xfs_view view,
			  const struct oid *name, struct node *n)
{
	struct cache *c = xfs_cache(xfs);
	struct repo_ref *repo = xfs_repo_get(xfs);
	int ret = resolve_in(xfs, repo_odb(repo->repo), c, view, name, n);

	xfs_repo_put(repo);
	return ret;
}

static int lookup_ref_path(struct xfs *xfs, enum xfs_git git,
			   const char *dir, const char *name, struct node *n)
{
	struct buf path = BUF_INIT;
	struct refsnap *snap;
	int ret = ENOENT, fixed;

	if (!strcmp(name, ".") || !strcmp(name, "..") ||
	    buf_addf(&path, "%s/%s", dir, name))
		return !strcmp(name, ".") || !strcmp(name, "..") ? ENOENT : ENOMEM;
	fixed = !strcmp(path.buf, "refs/heads") || !strcmp(path.buf, "refs/tags");
	if (!(snap = refsnap_get(xfs))) {
		buf_release(&path);
		return EIO;
	}
	memset(n, 0, sizeof(*n));
	n->git = git;
	if (refsnap_find(&snap->view[git], path.buf)) {
		n->kind = NODE_SYMREF;
		ret = 0;
	} else if (fixed || refsnap_has_dir(&snap->view[git], path.buf)) {
		n->kind = NODE_REFDIR;
		ret = 0;
	}
	refsnap_put(snap);
	if (!ret)
		ret = intern_path(xfs->nodes, git, path.buf, &n->ino, &n->path);
	buf_release(&path);
	return ret;
}

/* Does the view have a shallow file now (a shallow clone's)? */
static int is_shallow(struct xfs *xfs, enum xfs_git git)
{
	struct refsnap *snap = refsnap_get(xfs);
	int yes = snap && snap->view[git].has_shallow;

	refsnap_put(snap);
	return yes;
}

int node_lookup(struct xfs *xfs, fuse_ino_t parent, const char *name,
		struct node *out)
{
	struct node dir;
	size_t len = strlen(name);
	int ret;

	if ((ret = node_get(xfs, parent, &dir)))
		return ret;
	switch (dir.kind) {
	case NODE_DIR:
		for (size_t i = 0; i < NR_STATIC; i++) {
			const struct static_node *s = &static_nodes[i];

			if (s->parent == parent && s->ino != FUSE_ROOT_ID &&
			    !strcmp(s->name, name)) {
				if (s->kind == NODE_TEXT && s->arg == TEXT_SHALLOW &&
				    !is_shallow(xfs, dir.git))
					return ENOENT;
				from_static(s, out);
				return is_versioned(out) ?
					intern_version(xfs, out) : 0;
			}
		}
		if (dir.dir == DIR_PACK)
			return pack_lookup(xfs, dir.git, name, out);
		if (dir.dir == DIR_GIT && !strcmp(name, "refs")) {
			memset(out, 0, sizeof(*out));
			out->kind = NODE_REFDIR;
			out->git = dir.git;
			return intern_path(xfs->nodes, dir.git, "refs", &out->ino,
					   &out->path);
		}
		if (dir.dir == DIR_OBJECTS && len == 2) {
			unsigned char b;

			if (parse_lower_hex(name, 2, &b))
				return ENOENT;
			memset(out, 0, sizeof(*out));
			out->kind = NODE_FANOUT;
			out->view = dir.view;
			out->fanout = b;
			out->ino = FANOUT_BASE + dir.view * 256u + b;
			return 0;
		}
		return ENOENT;
	case NODE_FANOUT: {
		const struct hash_algo *algo = view_algo(dir.view);
		unsigned char raw[OID_RAWSZ_MAX];
		struct oid oid;

		if (len != algo->hexsz - 2 || parse_lower_hex(name, len, raw + 1))
			return ENOENT;
		raw[0] = (unsigned char)dir.fanout;
		oid_from_raw(&oid, algo, raw);
		if ((ret = resolve_object(xfs, dir.view, &oid, out)))
			return ret;
		return intern_object(xfs->nodes, out);
	}
	case NODE_REFDIR:
		return lookup_ref_path(xfs, dir.git, dir.path, name, out);
	default:
		return ENOTDIR;
	}
}

/* ---- attributes ------------------------------------------------------------ */

void node_stat(struct xfs *xfs, const struct node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = xfs->uid;
	st->st_gid = xfs->gid;
	st->st_blksize = 65536;
	st->st_atime = st->st_mtime = st->st_ctime = xfs->mounted;
	switch (n->kind) {
	case NODE_DIR:
	case NODE_FANOUT:
	case NODE_REFDIR:
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		break;
	case NODE_OBJECT: {
		uint64_t size = n->size;

		if (view_is_loose(n->view)) {
			char hdr[32];

			size = loose_file_size(loose_header(hdr, n->type, n->size) +
					       n->size);
		}
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)size;
		break;
	}
	case NODE_PACKFILE:
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)n->size;
		break;
	case NODE_TEXT:
	case NODE_SYMREF:
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)text_size(xfs, n);
		break;
	}
	st->st_blocks = (st->st_size + 511) / 512;
}

double node_entry_ttl(const struct node *n)
{
	if (node_is_version(n))
		return 0;	/* the next lookup may find the next version */
	return n->kind == NODE_REFDIR || n->kind == NODE_SYMREF ?
		XFS_TTL_LIVE : XFS_TTL_IMMUTABLE;
}

double node_attr_ttl(const struct node *n)
{
	if (node_is_version(n))
		return XFS_TTL_IMMUTABLE;	/* its bytes never change */
	if (n->kind == NODE_SYMREF ||
	    (n->kind == NODE_TEXT && n->text != TEXT_README &&
	     n->text != TEXT_CONFIG))
		return 0;	/* sizes change: always ask */
	return node_entry_ttl(n);
}

/* ---- listings --------------------------------------------------------------- */

void dir_listing_free(struct dir_listing *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->ents[i].name);
	free(l->ents);
	memset(l, 0, sizeof(*l));
}

int dir_listing_add(struct dir_listing *l, const char *name, size_t len,
		    fuse_ino_t ino, mode_t mode)
{
	char *copy = strndup(name, len);

	if (!copy || ARRAY_GROW(l->ents, l->nr, l->alloc, 64)) {
		free(copy);
		return ENOMEM;
	}
	l->ents[l->nr].name = copy;
	l->ents[l->nr].ino = ino;
	l->ents[l->nr].mode = mode;
	l->nr++;
	return 0;
}

struct fanout_walk {
	struct odb *odb;
	struct dir_listing *l;
	enum xfs_view view;
	int translated;			/* view_translated() */
	int err;
	/* a loose view lists only what none of these packs holds */
	struct odb_pack_info *packs;
	size_t nr_packs;
};

/*
 * The native packs whose objects a loose view leaves to objects/pack:
 * in the repository's own view, all of them; in the translated one
 * (sha1/), those with a SHA-1 pack listed.  An object packed natively
 * but not yet laid out stays loose in sha1/, so every object can be read
 * one way or the other.  (Mounted the other way round, sha256/ has no
 * packs yet: every object is loose there.)
 */
static int fanout_packs(struct xfs *xfs, struct fanout_walk *w)
{
	enum xfs_git git = view_git(w->view);
	struct packsnap *snap;

	if (!view_is_loose(w->view))
		return 0;
	if (!(snap = packsnap_get(xfs)))
		return EIO;
	if (snap->nr[git] &&
	    !(w->packs = calloc(snap->nr[git], sizeof(*w->packs)))) {
		packsnap_put(snap);
		return ENOMEM;
	}
	for (size_t i = 0; i < snap->nr[git]; i++)
		if (!odb_find_pack(w->odb, snap->packs[git][i].native,
				   &w->packs[w->nr_packs]))
			w->nr_packs++;
	packsnap_put(snap);
	return 0;
}

static int fanout_ent(const struct cache_object *co, void *data)
{
	struct fanout_walk *w = data;
	const struct oid *name = w->translated ? &co->sha1 : &co->sha256;
	char hex[OID_HEXSZ_MAX + 1];

	for (size_t i = 0; i < w->nr_packs; i++)
		if (odb_pack_has(&w->packs[i], &co->sha256))
			return 0;	/* in objects/pack */
	if (!odb_has(w->odb, &co->sha256))
		return 0;	/* pruned since the cache saw it */
	oid_to_hex_r(hex, name);
	if ((w->err = dir_listing_add(w->l, hex + 2, name->algo->hexsz - 2,
			      object_ino(w->view, name), S_IFREG)))
		return 1;
	return 0;
}

static int list_refdir(struct xfs *xfs, const struct node *dir,
		       struct dir_listing *l)
{
	struct refsnap *snap = refsnap_get(xfs);
	const struct refsnap_view *v;
	size_t plen = strlen(dir->path);
	int ret = 0;

	if (!snap)
		return EIO;
	v = &snap->view[dir->git];
	if (!strcmp(dir->path, "refs"))
		ret = dir_listing_add(l, "heads", 5, 0, S_IFDIR) ?:
		      dir_listing_add(l, "tags", 4, 0, S_IFDIR);
	for (size_t i = 0; !ret && i < v->nr_symrefs; i++) {
		const char *p = v->symrefs[i].path, *rest, *slash;
		size_t n;
		int is_dir;

		if (strncmp(p, dir->path, plen) || p[plen] != '/')
			continue;
		rest = p + plen + 1;
		slash = strchr(rest, '/');
		n = slash ? (size_t)(slash - rest) : strlen(rest);
		is_dir = !!slash;
		/* symrefs are sorted: a repeated directory is the last entry */
		if (l->nr > 2 && strlen(l->ents[l->nr - 1].name) == n &&
		    !memcmp(l->ents[l->nr - 1].name, rest, n))
			continue;
		if (!strcmp(dir->path, "refs") && is_dir &&
		    ((n == 5 && !memcmp(rest, "heads", 5)) ||
		     (n == 4 && !memcmp(rest, "tags", 4))))
			continue;
		ret = dir_listing_add(l, rest, n, 0, is_dir ? S_IFDIR : S_IFREG);
	}
	refsnap_put(snap);
	return ret;
}

/*
 * A loose view's objects/XX from the snapshot of loose objects: 0, an
 * errno value, or 1 when the snapshot cannot say (then ask the cache).
 */
static int list_loose(struct xfs *xfs, const struct node *dir,
		      struct dir_listing *l)
{
	enum xfs_git git = view_git(dir->view);
	struct packsnap *snap = packsnap_get(xfs);
	char hex[OID_HEXSZ_MAX + 1];
	int ret = 0;

	if (!snap)
		return EIO;
	if (!snap->loose_ok[git]) {
		packsnap_put(snap);
		return 1;
	}
	for (size_t i = 0; i < snap->nr_loose[git] && !ret; i++) {
		const struct oid *name = &snap->loose[git][i];

		if (name->hash[0] != dir->fanout)
			continue;
		oid_to_hex_r(hex, name);
		ret = dir_listing_add(l, hex + 2, name->algo->hexsz - 2,
			      object_ino(dir->view, name), S_IFREG);
	}
	packsnap_put(snap);
	return ret;
}

/*
 * objects/: its fan-out directories.  In Git's own views only those that
 * hold a loose object, when the snapshot can say, as Git leaves them
 * after gc: a local clone walks every directory it finds, and 256 empty
 * ones cost it a FUSE round trip or four each.  Any of the 256 can still
 * be looked up (node_lookup()), and lists what is there.
 */
static int list_fanouts(struct xfs *xfs, const struct node *dir,
			struct dir_listing *l)
{
	unsigned char used[256];
	int ret = 0;

	memset(used, 1, sizeof(used));
	if (view_is_loose(dir->view)) {
		enum xfs_git git = view_git(dir->view);
		struct packsnap *snap = packsnap_get(xfs);

		if (!snap)
			return EIO;
		if (snap->loose_ok[git]) {
			memset(used, 0, sizeof(used));
			for (size_t i = 0; i < snap->nr_loose[git]; i++)
				used[snap->loose[git][i].hash[0]] = 1;
		}
		packsnap_put(snap);
	}
	for (unsigned b = 0; b < 256 && !ret; b++) {
		char name[3];

		if (!used[b])
			continue;
		snprintf(name, sizeof(name), "%02x", b);
		ret = dir_listing_add(l, name, 2, FANOUT_BASE + dir->view * 256u + b,
				      S_IFDIR);
	}
	return ret;
}

static int list_packs(struct xfs *xfs, enum xfs_git git, struct dir_listing *l)
{
	struct packsnap *snap = packsnap_get(xfs);
	char name[OID_HEXSZ_MAX + 16];
	int ret = 0;

	if (!snap)
		return EIO;
	for (size_t i = 0; i < snap->nr[git] && !ret; i++) {
		const struct served_pack *sp = &snap->packs[git][i];
		int n = snprintf(name, sizeof(name), "%s.idx", sp->name);

		ret = dir_listing_add(l, name, (size_t)n, sp->ino | PACK_FILE_IDX, S_IFREG);
		n = snprintf(name, sizeof(name), "%s.pack", sp->name);
		ret = ret ?: dir_listing_add(l, name, (size_t)n, sp->ino, S_IFREG);
		if (!ret && sp->promisor) {
			n = snprintf(name, sizeof(name), "%s.promisor", sp->name);
			ret = dir_listing_add(l, name, (size_t)n,
				      sp->ino | PACK_FILE_PROMISOR, S_IFREG);
		}
	}
	packsnap_put(snap);
	return ret;
}

int node_list(struct xfs *xfs, const struct node *dir, struct dir_listing *l)
{
	int ret;

	memset(l, 0, sizeof(*l));
	if ((ret = dir_listing_add(l, ".", 1, dir->ino, S_IFDIR)) ||
	    (ret = dir_listing_add(l, "..", 2, 0, S_IFDIR)))
		goto fail;
	switch (dir->kind) {
	case NODE_DIR:
		for (size_t i = 0; i < NR_STATIC; i++) {
			const struct static_node *s = &static_nodes[i];

			if (s->kind == NODE_TEXT && s->arg == TEXT_SHALLOW &&
			    s->parent == dir->ino && !is_shallow(xfs, dir->git))
				continue;
			if (s->parent == dir->ino && s->ino != FUSE_ROOT_ID &&
			    (ret = dir_listing_add(l, s->name, strlen(s->name), s->ino,
					   s->kind == NODE_DIR ? S_IFDIR : S_IFREG)))
				goto fail;
		}
		if (dir->dir == DIR_GIT && (ret = dir_listing_add(l, "refs", 4, 0, S_IFDIR)))
			goto fail;
		if (dir->dir == DIR_PACK && (ret = list_packs(xfs, dir->git, l)))
			goto fail;
		if (dir->dir == DIR_OBJECTS && (ret = list_fanouts(xfs, dir, l)))
			goto fail;
		return 0;
	case NODE_FANOUT: {
		struct repo_ref *repo = xfs_repo_get(xfs);
		struct fanout_walk w = { repo_odb(repo->repo), l, dir->view,
					 view_translated(xfs, dir->view), 0,
					 NULL, 0 };
		char hex[3];

		snprintf(hex, sizeof(hex), "%02x", dir->fanout);
		if (view_is_loose(dir->view) &&
		    (ret = list_loose(xfs, dir, l)) <= 0) {
			xfs_repo_put(repo);
			if (ret)
				goto fail;
			return 0;
		}
		if (!(ret = fanout_packs(xfs, &w)))
			ret = cache_for_each_prefix(xfs_cache(xfs),
						    view_algo(dir->view), hex, 2,
						    fanout_ent, &w);
		free(w.packs);
		xfs_repo_put(repo);
		if (ret > 0)
			goto fail;	/* an errno value from fanout_packs */
		if (w.err) {
			ret = w.err;
			goto fail;
		}
		if (ret) {
			xfs_log(xfs, "listing objects %s/: %s", hex, err_msg());
			ret = EIO;
			goto fail;
		}
		return 0;
	}
	case NODE_REFDIR:
		if ((ret = list_refdir(xfs, dir, l)))
			goto fail;
		return 0;
	default:
		ret = ENOTDIR;
	}
fail:
	dir_listing_free(l);
	return ret;
}
