/*
 * refsnap.c: the refs, as each Git directory of the mount shows them.
 *
 * Both views hold every ref in one packed-refs file (sorted, each
 * annotated tag followed by its "^peeled" line, so the header may say
 * "fully-peeled": a reader then never has to open a tag to peel it), and
 * only symbolic refs as loose files, since packed-refs cannot hold them.
 * In sha1/ a ref appears under its SHA-1 name once the cache has one,
 * that is, once its object's whole closure is translated; until then, or
 * for good if the object is untranslatable, it is left out and counted.
 * (Mounted the other way round, the same goes for sha256/: "vo" below is
 * the repository's own view, "vt" the translated one, and "SHA-1 name"
 * means the name in the translated view's algorithm.)
 *
 * A snapshot is made on demand and kept for XFS_REFS_MAX_AGE, so a
 * burst of reads costs one walk of the refs, and a change in the
 * repository shows within about a second.  One thread remakes it while
 * the others go on with the previous one (only the very first one is
 * waited for).  Snapshots are reference counted, so one can be read
 * while the next replaces it; an open file keeps a copy of its text.
 */
#include "fs.h"

#include <stdlib.h>
#include <string.h>

static const char packed_refs_header[] =
	"# pack-refs with: peeled fully-peeled sorted \n";

static void view_release(struct refsnap_view *v)
{
	for (size_t i = 0; i < v->nr_symrefs; i++) {
		free(v->symrefs[i].path);
		free(v->symrefs[i].content);
	}
	free(v->symrefs);
	for (size_t i = 0; i < v->nr_hidden_names; i++)
		free(v->hidden_names[i]);
	free(v->hidden_names);
	buf_release(&v->head);
	buf_release(&v->packed_refs);
	buf_release(&v->shallow);
}

void refsnap_put(struct refsnap *snap)
{
	if (!snap || atomic_fetch_sub(&snap->refcount, 1) != 1)
		return;
	for (int g = 0; g < XFS_GIT__COUNT; g++)
		view_release(&snap->view[g]);
	free(snap);
}

const struct symref_file *refsnap_find(const struct refsnap_view *v,
				       const char *path)
{
	size_t lo = 0, hi = v->nr_symrefs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(v->symrefs[mid].path, path);

		if (!c)
			return &v->symrefs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int refsnap_has_dir(const struct refsnap_view *v, const char *path)
{
	size_t len = strlen(path);

	/* few symbolic refs exist; a scan is plenty */
	for (size_t i = 0; i < v->nr_symrefs; i++)
		if (!strncmp(v->symrefs[i].path, path, len) &&
		    v->symrefs[i].path[len] == '/')
			return 1;
	return 0;
}

static int add_symref(struct refsnap_view *v, const char *name,
		      const char *target)
{
	struct symref_file *s;

	if (ARRAY_GROW(v->symrefs, v->nr_symrefs, v->alloc_symrefs, 8))
		return XL_ENOMEM;
	s = &v->symrefs[v->nr_symrefs];
	s->path = strdup(name);
	if (!s->path || asprintf(&s->content, "ref: %s\n", target) < 0) {
		free(s->path);
		return err_set(XL_ENOMEM, "out of memory");
	}
	s->len = strlen(s->content);
	v->nr_symrefs++;
	return 0;
}

/* Count a ref this view leaves out, and remember the first few names. */
static int hide(struct refsnap_view *v, const char *name)
{
	char *copy;

	v->hidden++;
	if (v->nr_hidden_names >= XFS_HIDDEN_NAMED)
		return 0;
	if (!(copy = strdup(name)) ||
	    ARRAY_GROW(v->hidden_names, v->nr_hidden_names,
		       v->alloc_hidden_names, 8)) {
		free(copy);
		return err_set(XL_ENOMEM, "out of memory");
	}
	v->hidden_names[v->nr_hidden_names++] = copy;
	return 0;
}

/*
 * The ref names (the cache's ref_names, which every build rewrites), so
 * that a fresh mount's first snapshot asks the big table nothing for
 * them: cold, each such lookup is a disk read (0.13 s for the 2,700 refs
 * of the bench repository).  Read once per mount, before the first
 * snapshot, into a sorted array of the two names, each zero-padded to
 * 32 bytes, the repository's own first (not into the memo,
 * where each name would land on a page of its own).  They stay good
 * while the memo's generation stays: a build that changes names clears
 * the memo.  Failing to read them costs only the lookups.
 */
static int cmp_ref_name(const void *a, const void *b)
{
	return memcmp(a, b, OID_RAWSZ_MAX);
}

static int load_ref_name(const struct oid *sha256, const struct oid *sha1,
			 void *data)
{
	struct xfs *xfs = data;

	if (sha256->algo != xfs->algo ||
	    ARRAY_GROW(xfs->ref_names, xfs->nr_ref_names,
		       xfs->alloc_ref_names, 256))
		return 0;
	/* struct oid's bytes: zero-padded past the algorithm's */
	memcpy(xfs->ref_names[xfs->nr_ref_names], sha256->hash, OID_RAWSZ_MAX);
	memcpy(xfs->ref_names[xfs->nr_ref_names] + OID_RAWSZ_MAX, sha1->hash,
	       OID_RAWSZ_MAX);
	xfs->nr_ref_names++;
	return 0;
}

static void load_ref_names(struct xfs *xfs)
{
	if (xfs->ref_names_loaded)
		return;
	xfs->ref_names_loaded = 1;
	xfs->ref_names_gen = xlate_memo_generation(xfs->memo);
	if (cache_for_each_ref_name(xfs_cache(xfs), load_ref_name, xfs))
		xfs_log(xfs, "reading the ref names: %s", err_msg());
	if (xfs->nr_ref_names)
		qsort(xfs->ref_names, xfs->nr_ref_names, sizeof(*xfs->ref_names),
		      cmp_ref_name);
}

static int ref_name(struct xfs *xfs, const struct oid *oid, struct oid *out)
{
	const unsigned char (*hit)[2 * OID_RAWSZ_MAX];

	if (!xfs->nr_ref_names || oid->algo != xfs->algo)
		return 0;
	if (xlate_memo_generation(xfs->memo) != xfs->ref_names_gen) {
		/* names have changed since they were read: forget them all */
		free(xfs->ref_names);
		xfs->ref_names = NULL;
		xfs->nr_ref_names = xfs->alloc_ref_names = 0;
		return 0;
	}
	hit = bsearch(oid->hash, xfs->ref_names, xfs->nr_ref_names,
		      sizeof(*xfs->ref_names), cmp_ref_name);
	if (!hit)
		return 0;
	oid_from_raw(out, hash_algo_other(xfs->algo), *hit + OID_RAWSZ_MAX);
	return 1;
}

void refsnap_teardown(struct xfs *xfs)
{
	refsnap_put(xfs->snap);
	xfs->snap = NULL;
	free(xfs->ref_names);
	xfs->ref_names = NULL;
	xfs->nr_ref_names = xfs->alloc_ref_names = 0;
	xfs->ref_names_loaded = 0;	/* a forge wakes it again: load them then */
}

/*
 * The SHA-1 name of a stored object, if it has one now: 0; 1 if it has
 * none yet (not named: the build has not come to it); -1 if it has none
 * (untranslatable) or the cache cannot say.
 */
static int sha1_of(struct xfs *xfs, const struct oid *oid, struct oid *out)
{
	struct cache_object co;
	int ret;

	if (xlate_builtin(oid, hash_algo_other(xfs->algo), out) ||
	    ref_name(xfs, oid, out))
		return 0;
	if ((ret = cache_get(xfs_cache(xfs), oid, &co)))
		return ret == XL_ENOTFOUND ? 1 : -1;
	if (!co.sha1.algo)
		return -1;
	*out = co.sha1;
	return 0;
}

/*
 * A ref's SHA-1 line in the snapshot before this one.  A ref moved to a
 * commit the build has not named yet (a push a moment ago) keeps its
 * last SHA-1 value in sha1/ until the new one is named, as a reader a
 * moment earlier saw it: it does not vanish, which would make HEAD's
 * branch look unborn ("does not have any commits yet") for a second.
 * The old snapshot's packed-refs is sorted by name; it is indexed the
 * first time a ref needs it.
 */
struct prev_ref {
	const char *name;	/* in the old text, up to the newline */
	size_t len;
	struct oid o1, p1;
	int has_p1;
};

struct prev_refs {
	struct refsnap *snap;	/* the snapshot before, held */
	enum xfs_git git;	/* the translated view */
	const struct hash_algo *algo;	/* its names' */
	struct prev_ref *e;
	size_t nr, alloc;
	int indexed;
};

static int prev_index(struct prev_refs *pr)
{
	const struct buf *t = &pr->snap->view[pr->git].packed_refs;
	const char *p = t->buf, *end = t->buf + t->len;
	size_t hexsz = pr->algo->hexsz;

	pr->indexed = 1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n > hexsz + 1 && p[hexsz] == ' ') {
			if (ARRAY_GROW(pr->e, pr->nr, pr->alloc, 64))
				return XL_ENOMEM;
			memset(&pr->e[pr->nr], 0, sizeof(pr->e[pr->nr]));
			if (!oid_from_hex(&pr->e[pr->nr].o1, pr->algo, p)) {
				pr->e[pr->nr].name = p + hexsz + 1;
				pr->e[pr->nr].len = n - hexsz - 1;
				pr->nr++;
			}
		} else if (n == hexsz + 1 && p[0] == '^' && pr->nr &&
			   !oid_from_hex(&pr->e[pr->nr - 1].p1, pr->algo, p + 1)) {
			pr->e[pr->nr - 1].has_p1 = 1;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static const struct prev_ref *prev_find(struct prev_refs *pr, const char *name)
{
	size_t lo = 0, hi, n = strlen(name);

	if (!pr->snap || (!pr->indexed && prev_index(pr)))
		return NULL;
	hi = pr->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct prev_ref *e = &pr->e[mid];
		int c = memcmp(e->name, name, e->len < n ? e->len : n);

		if (!c && e->len == n)
			return e;
		if (c < 0 || (!c && e->len < n))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct snap_walk {
	struct xfs *xfs;
	struct repo *repo;
	struct refsnap *snap;
	uint64_t broken;	/* broken refs seen, and a sum of their names */
	uint32_t broken_sum;
	char first_broken[128];
	struct prev_refs prev;
};

static int add_line(struct buf *b, const struct oid *oid, const char *name)
{
	char hex[OID_HEXSZ_MAX + 1];

	oid_to_hex_r(hex, oid);
	return name ? buf_addf(b, "%s %s\n", hex, name) : buf_addf(b, "^%s\n", hex);
}

static int snap_ref(const struct ref *ref, void *data)
{
	struct snap_walk *w = data;
	struct refsnap_view *vt = &w->snap->view[w->xfs->other];
	struct refsnap_view *vo = &w->snap->view[w->xfs->own];
	char hex[OID_HEXSZ_MAX + 1];
	struct oid peeled, o1, p1;
	int has_peeled = 0, ret;
	enum obj_type type;

	if (ref->broken) {
		/* Git ignores it with a warning: in neither view */
		if (!w->broken++)
			snprintf(w->first_broken, sizeof(w->first_broken), "%s",
				 ref->name);
		/* tells one set of broken names from another, for the log */
		w->broken_sum = w->broken_sum * 31 + (uint32_t)str_hash(ref->name);
		return hide(vt, ref->name) ?: hide(vo, ref->name);
	}
	if (ref->target)
		return add_symref(vo, ref->name, ref->target) ?:
		       add_symref(vt, ref->name, ref->target);
	if (ref->has_peeled) {
		peeled = ref->peeled;
		has_peeled = 1;
	} else if (odb_read_header(repo_odb(w->repo), &ref->oid, &type, NULL)) {
		/*
		 * "fully-peeled" would be a lie if it were a tag: leave it out
		 * (status names it; no log line, as this recurs every second).
		 * A pack written a moment ago is found: a miss rescans.
		 */
		return hide(vt, ref->name) ?: hide(vo, ref->name);
	} else if (type == OBJ_TAG) {
		if (repo_peel(w->repo, &ref->oid, OBJ_NONE, &peeled)) {
			/* "fully-peeled" would be a lie for this one: leave it out */
			xfs_log(w->xfs, "%s: cannot peel %s: %s", ref->name,
				oid_to_hex_r(hex, &ref->oid), err_msg());
			return hide(vt, ref->name) ?: hide(vo, ref->name);
		}
		has_peeled = 1;
	}
	if ((ret = add_line(&vo->packed_refs, &ref->oid, ref->name)) ||
	    (has_peeled && (ret = add_line(&vo->packed_refs, &peeled, NULL))))
		return ret;
	if ((ret = sha1_of(w->xfs, &ref->oid, &o1)) ||
	    (has_peeled && (ret = sha1_of(w->xfs, &peeled, &p1)))) {
		const struct prev_ref *old;

		if (ret < 0 || !(old = prev_find(&w->prev, ref->name)))
			return hide(vt, ref->name);
		/* not named yet: its value before, until it is */
		o1 = old->o1;
		p1 = old->p1;
		has_peeled = old->has_p1;
	}
	return add_line(&vt->packed_refs, &o1, ref->name) ?:
	       (has_peeled ? add_line(&vt->packed_refs, &p1, NULL) : 0);
}

static int snap_head(struct xfs *xfs, struct repo *repo, struct refsnap *snap)
{
	struct refsnap_view *vt = &snap->view[xfs->other];
	struct refsnap_view *vo = &snap->view[xfs->own];
	char hex[OID_HEXSZ_MAX + 1];
	struct ref head = { 0 };
	struct oid o1;
	int ret;

	if ((ret = refs_read(repo, "HEAD", &head))) {
		/*
		 * Git does not see a directory without a valid HEAD as a
		 * repository at all; an unborn branch keeps the rest usable.
		 */
		xfs_log(xfs, "reading HEAD: %s", err_msg());
		return buf_addstr(&vo->head, "ref: refs/heads/main\n") ?:
		       buf_addstr(&vt->head, "ref: refs/heads/main\n");
	}
	if (head.target) {
		ret = buf_addf(&vo->head, "ref: %s\n", head.target) ?:
		      buf_addf(&vt->head, "ref: %s\n", head.target);
	} else {
		ret = buf_addf(&vo->head, "%s\n", oid_to_hex_r(hex, &head.oid));
		if (!ret && !sha1_of(xfs, &head.oid, &o1)) {
			ret = buf_addf(&vt->head, "%s\n", oid_to_hex_r(hex, &o1));
		} else if (!ret) {
			/* a detached HEAD without a SHA-1 name: an unborn branch */
			ret = hide(vt, "HEAD") ?: buf_addstr(&vt->head,
					 "ref: refs/heads/xlatefs-untranslatable-HEAD\n");
		}
	}
	ref_release(&head);
	return ret;
}

/*
 * A shallow clone's boundary, as each view names it, so that stock git
 * stops there as it does in the repository (without the file it would
 * look for the parents, which neither view has).  sha256/ shows the
 * file as it is; sha1/ the boundary commits that have a SHA-1 name.
 */
static int snap_shallow(struct xfs *xfs, struct repo *repo,
			struct refsnap *snap)
{
	struct refsnap_view *vt = &snap->view[xfs->other];
	struct refsnap_view *vo = &snap->view[xfs->own];
	char hex[OID_HEXSZ_MAX + 1];
	int ret = repo_shallow_read(repo, &vo->shallow);

	if (ret == XL_ENOTFOUND) {
		err_clear();
		return 0;
	}
	if (ret)
		return ret;
	vo->has_shallow = vt->has_shallow = 1;
	for (const char *p = vo->shallow.buf, *end = p + vo->shallow.len;
	     p < end && !ret;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct oid o256, o1;

		if (len == xfs->algo->hexsz && !oid_from_hex(&o256, xfs->algo, p) &&
		    !sha1_of(xfs, &o256, &o1))
			ret = buf_addf(&vt->shallow, "%s\n", oid_to_hex_r(hex, &o1));
		p += len + 1;
	}
	return ret;
}

static struct refsnap *snap_make(struct xfs *xfs)
{
	struct refsnap *snap = calloc(1, sizeof(*snap));
	struct repo_ref *repo = xfs_repo_get(xfs);
	struct snap_walk w = { .xfs = xfs, .repo = repo->repo, .snap = snap };
	int ret;

	if (!snap) {
		xfs_repo_put(repo);
		return NULL;
	}
	atomic_init(&snap->refcount, 1);
	load_ref_names(xfs);
	snap->made = xfs_now();
	for (int g = 0; g < XFS_GIT__COUNT; g++) {
		buf_init(&snap->view[g].head);
		buf_init(&snap->view[g].packed_refs);
		buf_init(&snap->view[g].shallow);
	}
	/* the one before: we hold snap_busy, so nobody swaps it meanwhile */
	pthread_mutex_lock(&xfs->snap_lock);
	if ((w.prev.snap = xfs->snap))
		atomic_fetch_add(&w.prev.snap->refcount, 1);
	pthread_mutex_unlock(&xfs->snap_lock);
	w.prev.git = xfs->other;
	w.prev.algo = hash_algo_other(xfs->algo);
	ret = buf_addstr(&snap->view[XFS_GIT1].packed_refs, packed_refs_header) ?:
	      buf_addstr(&snap->view[XFS_GIT256].packed_refs, packed_refs_header) ?:
	      snap_head(xfs, repo->repo, snap) ?:
	      snap_shallow(xfs, repo->repo, snap) ?:
	      refs_for_each(repo->repo, snap_ref, &w);
	xfs_repo_put(repo);
	free(w.prev.e);
	refsnap_put(w.prev.snap);
	if (ret) {
		xfs_log(xfs, "reading refs: %s", err_msg());
		refsnap_put(snap);
		return NULL;
	}
	/* once for each set of broken refs, not for every snapshot */
	if ((w.broken || xfs->broken_logged) &&
	    (w.broken != xfs->broken_logged || w.broken_sum != xfs->broken_sum)) {
		if (w.broken)
			xfs_log(xfs, "ignoring %llu ref%s with a name Git refuses, "
				"as Git does (the first: %s); status lists them",
				(unsigned long long)w.broken, w.broken > 1 ? "s" : "",
				w.first_broken);
		xfs->broken_logged = w.broken;
		xfs->broken_sum = w.broken_sum;
	}
	return snap;
}

/* Begun by the caller, who held snap_busy since snap_gen was `gen`: swap it in. */
static struct refsnap *snap_install(struct xfs *xfs, struct refsnap *snap,
				    uint64_t gen)
{
	struct refsnap *old;

	pthread_mutex_lock(&xfs->snap_lock);
	xfs->snap_busy = 0;
	pthread_cond_broadcast(&xfs->snap_cond);
	old = xfs->snap;
	if (snap) {
		snap->gen = gen;
		xfs->snap = snap;
		atomic_fetch_add(&snap->refcount, 1);	/* the caller's */
	} else if ((snap = old)) {
		/* keep serving the last good snapshot; try again next time */
		old = NULL;
		atomic_fetch_add(&snap->refcount, 1);
	}
	pthread_mutex_unlock(&xfs->snap_lock);
	refsnap_put(old);
	return snap;
}

struct refsnap *refsnap_get(struct xfs *xfs)
{
	struct refsnap *snap;
	uint64_t gen;

	pthread_mutex_lock(&xfs->snap_lock);
	/* the very first one: wait for it rather than make it many times */
	while (!xfs->snap && xfs->snap_busy)
		pthread_cond_wait(&xfs->snap_cond, &xfs->snap_lock);
	snap = xfs->snap;
	if (snap && (xfs->snap_busy || (snap->gen == xfs->snap_gen &&
					xfs_now() - snap->made < XFS_REFS_MAX_AGE))) {
		atomic_fetch_add(&snap->refcount, 1);
		pthread_mutex_unlock(&xfs->snap_lock);
		return snap;
	}
	xfs->snap_busy = 1;
	gen = xfs->snap_gen;
	pthread_mutex_unlock(&xfs->snap_lock);

	return snap_install(xfs, snap_make(xfs), gen);
}

void refsnap_refresh(struct xfs *xfs)
{
	uint64_t gen;

	pthread_mutex_lock(&xfs->snap_lock);
	xfs->snap_gen++;
	/* one begun before the names changed may hide refs: wait it out */
	while (xfs->snap_busy)
		pthread_cond_wait(&xfs->snap_cond, &xfs->snap_lock);
	xfs->snap_busy = 1;
	gen = xfs->snap_gen;
	pthread_mutex_unlock(&xfs->snap_lock);

	refsnap_put(snap_install(xfs, snap_make(xfs), gen));
}
