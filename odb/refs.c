/*
 * refs.c: references, from the files backend (loose files under refs/,
 * packed-refs, HEAD) or from reftable (reftable.c).
 *
 * Loose refs override packed ones of the same name.  In a linked
 * worktree, HEAD and refs/{bisect,worktree,rewritten}/ are the
 * worktree's own (in its gitdir); everything else is shared (commondir).
 * Directories under refs/ are walked with an explicit stack, and files
 * whose names Git would not accept as refs (editor droppings, *.lock)
 * are skipped, as Git skips them.
 */
#include "odb_i.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYMREF_DEPTH 5	/* as Git's SYMREF_MAXDEPTH */

void ref_release(struct ref *ref)
{
	free(ref->name);
	free(ref->target);
	memset(ref, 0, sizeof(*ref));
}

void ref_array_release(struct ref_array *arr)
{
	for (size_t i = 0; i < arr->nr; i++)
		ref_release(&arr->refs[i]);
	free(arr->refs);
	memset(arr, 0, sizeof(*arr));
}

int ref_array_push(struct ref_array *arr, const struct ref *ref)
{
	struct ref *r;

	if (ARRAY_GROW(arr->refs, arr->nr, arr->alloc, 32))
		return XL_ENOMEM;
	r = &arr->refs[arr->nr];
	*r = *ref;
	r->name = strdup(ref->name);
	r->target = ref->target ? strdup(ref->target) : NULL;
	if (!r->name || (ref->target && !r->target)) {
		free(r->name);
		free(r->target);
		return err_set(XL_ENOMEM, "out of memory");
	}
	arr->nr++;
	return 0;
}

/* a stable sort: equal names keep push order, so the last one wins */
struct ref_sort_item {
	struct ref ref;
	size_t order;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref_sort_item *x = a, *y = b;
	int c = strcmp(x->ref.name, y->ref.name);

	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

int ref_array_sort_dedup(struct ref_array *arr)
{
	struct ref_sort_item *items;
	size_t w = 0;

	if (arr->nr < 2)
		return 0;
	items = malloc(arr->nr * sizeof(*items));
	if (!items)
		return err_set(XL_ENOMEM, "out of memory");
	for (size_t i = 0; i < arr->nr; i++) {
		items[i].ref = arr->refs[i];
		items[i].order = i;
	}
	qsort(items, arr->nr, sizeof(*items), ref_cmp);
	for (size_t i = 0; i < arr->nr; i++) {
		if (i + 1 < arr->nr &&
		    !strcmp(items[i].ref.name, items[i + 1].ref.name)) {
			ref_release(&items[i].ref);
			continue;
		}
		arr->refs[w++] = items[i].ref;
	}
	arr->nr = w;
	free(items);
	return 0;
}

/*
 * Git's rules for a ref name, as far as files on disk can break them:
 * no empty component, none starting with '.', none ending in ".lock",
 * no "..", no control characters or any of " ~^:?*[\\", no "@{".
 */
static int refname_ok(const char *name)
{
	const char *comp = name;

	if (!*name)
		return 0;
	for (const char *p = name;; p++) {
		if (*p == '/' || !*p) {
			size_t n = (size_t)(p - comp);

			if (!n || comp[0] == '.' ||
			    (n >= 5 && !memcmp(p - 5, ".lock", 5)))
				return 0;
			if (!*p)
				break;
			comp = p + 1;
			continue;
		}
		if ((unsigned char)*p < 0x20 || *p == 0x7f ||
		    strchr(" ~^:?*[\\", *p))
			return 0;
		if (p[0] == '.' && p[1] == '.')
			return 0;
		if (p[0] == '@' && p[1] == '{')
			return 0;
	}
	return name[strlen(name) - 1] != '.';
}

/*
 * A name we may look up as a ref: Git's format rules, and either under
 * refs/ or a root ref (HEAD, FETCH_HEAD, CHERRY_PICK_HEAD...: capitals
 * and underscores).  Nothing else is ever joined to a directory path, so
 * a crafted symbolic ref cannot point us outside the repository.
 */
static int refname_lookup_ok(const char *name)
{
	if (!refname_ok(name))
		return 0;
	if (!strncmp(name, "refs/", 5))
		return 1;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || *p == '_'))
			return 0;
	return 1;
}

/* ---- packed-refs ---------------------------------------------------- */

int packed_refs_parse(const char *text, size_t len,
		      const struct hash_algo *algo, const char *origin,
		      struct ref_array *arr)
{
	const char *p = text, *end = text + len;
	int line = 0, ret, last_peeled = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct ref ref;
		char name[REFNAME_MAX];

		line++;
		if (n && p[n - 1] == '\r')
			n--;
		if (!n || p[0] == '#') {
			/* "# pack-refs with: peeled fully-peeled sorted" */
		} else if (p[0] == '^') {
			/* peels the ref on the line before, and only once */
			if (!arr->nr || n != 1 + algo->hexsz || last_peeled)
				return ERR_CORRUPT("%s: line %d: unexpected peeled line",
						   origin, line);
			if (oid_from_hex(&arr->refs[arr->nr - 1].peeled, algo, p + 1))
				return ERR_CORRUPT("%s: line %d: bad peeled name",
						   origin, line);
			arr->refs[arr->nr - 1].has_peeled = 1;
			last_peeled = 1;
			p = nl ? nl + 1 : end;
			continue;
		} else {
			size_t nlen;

			if (n < algo->hexsz + 2 || p[algo->hexsz] != ' ')
				return ERR_CORRUPT("%s: line %d: bad ref line",
						   origin, line);
			memset(&ref, 0, sizeof(ref));
			if (oid_from_hex(&ref.oid, algo, p))
				return ERR_CORRUPT("%s: line %d: bad object name",
						   origin, line);
			nlen = n - algo->hexsz - 1;
			if (nlen < sizeof(name)) {
				memcpy(name, p + algo->hexsz + 1, nlen);
				name[nlen] = '\0';
				ref.broken = !refname_ok(name);
			} else {
				/* too long to take: named by its start */
				memcpy(name, p + algo->hexsz + 1, 200);
				memcpy(name + 200, "...", 4);
				ref.broken = 1;
			}
			if (ref.broken)
				for (char *c = name; *c; c++)
					if ((unsigned char)*c < 0x20 || *c == 0x7f)
						*c = '?';
			ref.name = name;
			if ((ret = ref_array_push(arr, &ref)))
				return ret;
		}
		last_peeled = 0;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static int read_packed_refs(struct repo *repo, struct ref_array *arr)
{
	struct buf path = BUF_INIT, text = BUF_INIT;
	int ret;

	path_join(&path, repo->commondir, "packed-refs");
	ret = file_read_in(repo->commondir, path.buf, (size_t)1 << 32, &text);
	if (ret == XL_ENOTFOUND) {
		err_clear();
		ret = 0;
	} else if (!ret) {
		ret = packed_refs_parse(text.buf, text.len, repo->algo, path.buf,
					arr);
	}
	buf_release(&text);
	buf_release(&path);
	return ret;
}

/* ---- loose refs ----------------------------------------------------- */

/*
 * Parse a loose ref file: "<hex>" or "ref: <target>", a newline and
 * possibly more (Git ignores what follows the name).
 */
int loose_ref_parse(const struct hash_algo *algo, const char *path,
		    const char *name, const struct buf *text, struct ref *out)
{
	memset(out, 0, sizeof(*out));
	out->oid.algo = algo;
	if (!strncmp(text->buf, "ref:", 4)) {
		const char *t = text->buf + 4;
		size_t n;

		while (*t == ' ' || *t == '\t')
			t++;
		n = strcspn(t, "\r\n");
		out->target = strndup(t, n);
		out->name = strdup(name);
		if (!out->target || !out->name) {
			ref_release(out);
			return err_set(XL_ENOMEM, "out of memory");
		}
		return 0;
	}
	if (text->len < algo->hexsz ||
	    oid_from_hex(&out->oid, algo, text->buf) ||
	    (text->len > algo->hexsz &&
	     !strchr(" \t\r\n", text->buf[algo->hexsz])))
		return ERR_CORRUPT("%s: not a ref", path);
	out->name = strdup(name);
	if (!out->name)
		return err_set(XL_ENOMEM, "out of memory");
	return 0;
}

static int per_worktree(const char *name)
{
	return !strcmp(name, "HEAD") || !strncmp(name, "refs/bisect/", 12) ||
	       !strncmp(name, "refs/worktree/", 14) ||
	       !strncmp(name, "refs/rewritten/", 15) ||
	       !strchr(name, '/');	/* pseudorefs such as ORIG_HEAD */
}

/*
 * A loose ref's file, `name` below `root`, into text.  A symlink whose
 * target is a ref name ("refs/heads/main") is a symbolic ref, as Git
 * reads one (core.preferSymlinkRefs wrote them): text becomes "ref:
 * <target>".  Any other symlink is read through where it stays below
 * root (file_read_in()).
 */
static int read_ref_file(const char *root, const char *path, struct buf *text)
{
	char link[REFNAME_MAX];
	ssize_t n = readlink(path, link, sizeof(link) - 1);

	if (n > 5 && !strncmp(link, "refs/", 5)) {
		link[n] = '\0';
		if (refname_ok(link)) {
			buf_reset(text);
			return buf_addf(text, "ref: %s\n", link);
		}
	}
	return file_read_in(root, path, 1 << 16, text);
}

/* The loose ref `name` as stored; XL_ENOTFOUND if no such file. */
static int read_loose(struct repo *repo, const char *name, struct ref *out)
{
	struct buf path = BUF_INIT, text = BUF_INIT;
	const char *root = per_worktree(name) ? repo->gitdir : repo->commondir;
	int ret;

	path_join(&path, root, name);
	ret = read_ref_file(root, path.buf, &text);
	if (ret == XL_EIO) {
		struct stat st;

		/* a directory in the way means "no such ref" */
		if (!stat(path.buf, &st) && S_ISDIR(st.st_mode)) {
			err_clear();
			ret = XL_ENOTFOUND;
		}
	}
	if (!ret)
		ret = loose_ref_parse(repo->algo, path.buf, name, &text, out);
	buf_release(&path);
	buf_release(&text);
	return ret;
}

/* Walk dir (under base) for loose refs, pushing each onto arr. */
static int walk_loose(struct repo *repo, const char *base, const char *top,
		      struct ref_array *arr)
{
	struct ref_array stack = { 0 };	/* directories to visit, by name */
	struct buf path = BUF_INIT, text = BUF_INIT, name = BUF_INIT;
	struct ref dirref = { 0 };
	int ret = 0;

	dirref.name = (char *)top;
	if ((ret = ref_array_push(&stack, &dirref)))
		return ret;
	while (stack.nr && !ret) {
		struct ref cur = stack.refs[--stack.nr];
		struct dirent *de;
		DIR *d;

		path_join(&path, base, cur.name);
		d = dir_open_in(base, path.buf);
		while (d && (de = readdir(d)) && !ret) {
			struct stat st;
			struct ref ref;

			if (de->d_name[0] == '.')
				continue;
			buf_reset(&name);
			buf_addf(&name, "%s/%s", cur.name, de->d_name);
			path_join(&path, base, name.buf);
			/*
			 * A symlink to a directory is not descended into: two
			 * links to "." would make the walk exponential.
			 */
			if (lstat(path.buf, &st))
				continue;
			if (S_ISLNK(st.st_mode) &&
			    (stat(path.buf, &st) || S_ISDIR(st.st_mode)))
				continue;	/* as Git lists them */
			if (S_ISDIR(st.st_mode)) {
				dirref.name = name.buf;
				ret = ref_array_push(&stack, &dirref);
				continue;
			}
			if (!S_ISREG(st.st_mode) || !refname_ok(name.buf))
				continue;
			if (read_ref_file(base, path.buf, &text)) {
				err_clear();	/* vanished meanwhile, or leads out */
				continue;
			}
			if (loose_ref_parse(repo->algo, path.buf, name.buf, &text, &ref)) {
				/* Git skips a broken loose ref with a warning */
				err_clear();
				continue;
			}
			ret = ref_array_push(arr, &ref);
			ref_release(&ref);
		}
		if (d)
			closedir(d);
		ref_release(&cur);
	}
	ref_array_release(&stack);
	buf_release(&path);
	buf_release(&text);
	buf_release(&name);
	return ret;
}

/* ---- the public face ------------------------------------------------ */

/* Every stored ref (HEAD included for reftable), sorted, not resolved. */
static int refs_gather(struct repo *repo, struct ref_array *arr)
{
	struct buf dir = BUF_INIT;
	int ret;

	if (repo->ref_storage == REF_STORAGE_REFTABLE) {
		path_join(&dir, repo->commondir, "reftable");
		ret = reftable_read_refs(dir.buf, repo->algo, arr);
		buf_release(&dir);
		return ret;
	}
	if ((ret = read_packed_refs(repo, arr)) ||
	    (ret = walk_loose(repo, repo->commondir, "refs", arr)))
		return ret;
	if (strcmp(repo->gitdir, repo->commondir)) {
		static const char *const own[] = {
			"refs/bisect", "refs/worktree", "refs/rewritten",
		};

		for (size_t i = 0; i < 3 && !ret; i++)
			ret = walk_loose(repo, repo->gitdir, own[i], arr);
	}
	if (!ret)
		ret = ref_array_sort_dedup(arr);
	return ret;
}

/* The stored form of one ref, without following it. */
static int refs_lookup_raw(struct repo *repo, const char *name,
			   struct ref *out)
{
	struct ref_array arr = { 0 };
	int ret;

	memset(out, 0, sizeof(*out));
	if (!refname_lookup_ok(name))
		return err_set(XL_ENOTFOUND, "not a valid ref name: %s", name);
	if (repo->ref_storage == REF_STORAGE_FILES) {
		ret = read_loose(repo, name, out);
		if (ret != XL_ENOTFOUND)
			return ret;
		err_clear();
		if ((ret = read_packed_refs(repo, &arr)))
			return ret;
	} else if ((ret = refs_gather(repo, &arr))) {
		return ret;
	}
	ret = err_set(XL_ENOTFOUND, "no such ref: %s", name);
	/* later entries win, as the array is in layer order */
	for (size_t i = arr.nr; i-- > 0;) {
		if (arr.refs[i].broken || strcmp(arr.refs[i].name, name))
			continue;
		*out = arr.refs[i];
		arr.refs[i].name = NULL;
		arr.refs[i].target = NULL;
		ret = 0;
		err_clear();
		break;
	}
	ref_array_release(&arr);
	return ret;
}

/* Follow out->target (if any) to an object name, at most SYMREF_DEPTH hops. */
static int refs_follow(struct repo *repo, struct ref *out)
{
	char *target = out->target ? strdup(out->target) : NULL;
	int ret = 0;

	/* the ref itself was the first of Git's SYMREF_DEPTH reads */
	for (int depth = 1; target; depth++) {
		struct ref next;

		if (depth >= SYMREF_DEPTH) {
			ret = err_set(XL_ECORRUPT, "%s: symbolic refs nested too deep",
				      out->name);
			break;
		}
		ret = refs_lookup_raw(repo, target, &next);
		free(target);
		target = NULL;
		if (ret)
			break;
		if (next.target) {
			target = next.target;
			next.target = NULL;
		} else {
			out->oid = next.oid;
		}
		ref_release(&next);
	}
	free(target);
	return ret;
}

int refs_read(struct repo *repo, const char *name, struct ref *out)
{
	int ret = refs_lookup_raw(repo, name, out);

	if (ret)
		return ret;
	if (out->target) {
		ret = refs_follow(repo, out);
		if (ret == XL_ENOTFOUND) {
			/* an unborn branch: the ref exists, its oid is null */
			err_clear();
			memset(out->oid.hash, 0, sizeof(out->oid.hash));
			out->oid.algo = repo->algo;
			ret = 0;
		}
	}
	if (ret)
		ref_release(out);
	return ret;
}

int refs_for_each(struct repo *repo, refs_each_fn fn, void *data)
{
	struct ref_array arr = { 0 };
	int ret = refs_gather(repo, &arr);

	for (size_t i = 0; !ret && i < arr.nr; i++) {
		struct ref *r = &arr.refs[i];

		if (strncmp(r->name, "refs/", 5))
			continue;
		if (r->broken)
			memset(r->oid.hash, 0, sizeof(r->oid.hash));
		else if (r->target && refs_follow(repo, r)) {
			err_clear();	/* a dangling symref is still listed */
			memset(r->oid.hash, 0, sizeof(r->oid.hash));
		}
		ret = fn(r, data);
	}
	ref_array_release(&arr);
	return ret;
}
