/*
 * xlate.h: converting Git objects between their SHA-256 and SHA-1 forms.
 *
 * The one public header of xlate/.  The rules are upstream Git's
 * (object-file-convert.c), restated in the project's conversion spec:
 *
 *   blob    unchanged
 *   tree    mode bytes, names and entry order kept; each raw name mapped
 *   commit  `tree` and `parent` mapped; each `mergetag` unfolded,
 *           converted as a tag and folded again; `author`, `committer`,
 *           `encoding` and every header starting with `gpgsig` copied;
 *           any other header makes the commit untranslatable (it might
 *           embed a name), unless XLATE_UNKNOWN_COPY is asked for
 *   tag     the `object` line mapped; the in-body signature (over the
 *           object's own form) and the header signature of the other
 *           algorithm swap places; other headers copied
 *
 * The conversion itself never looks names up: the caller hands in a
 * mapping function, so the same code serves the whole-repository build
 * (names from memory), the daemon (names from the cache) and the tests
 * (names from upstream's fixtures).  The empty tree, the empty blob and
 * the null name map to their twins without asking, as upstream's
 * built-in pairs do.
 */
#ifndef XLATEFS_XLATE_H
#define XLATEFS_XLATE_H

#include "../odb/odb.h"

#include <stdatomic.h>

enum xlate_unknown {
	XLATE_UNKNOWN_FAIL,	/* upstream's rule: refuse the commit */
	XLATE_UNKNOWN_COPY,	/* copy unknown commit headers verbatim */
};

/*
 * Map `in` (of the source algorithm) to its name in the target
 * algorithm.  Returns 0, XL_ENOTFOUND (no mapping known), or
 * XL_EUNSUPPORTED (the object is known to be untranslatable); a message
 * may be set.
 */
typedef int (*xlate_map_fn)(void *data, const struct oid *in,
			    struct oid *out);

struct xlate_opts {
	const struct hash_algo *from;
	const struct hash_algo *to;
	xlate_map_fn map;
	void *map_data;
	enum xlate_unknown unknown_headers;
	/*
	 * For gitlinks (tree entries of mode 160000) only, if not NULL:
	 * upstream looks a gitlink up in the repository's own table like
	 * any name, and a submodule map can only add names for commits the
	 * repository does not have; so this is map plus the outside names.
	 * NULL: gitlinks go through map.
	 */
	xlate_map_fn map_gitlink;
};

/*
 * Convert `len` bytes of an object of `type` from o->from's form to
 * o->to's form, appending to `out` (which is reset first).  A blob is
 * copied.  Returns 0; XL_ENOTFOUND or XL_EUNSUPPORTED from the mapping
 * (the message names the reference); XL_EUNSUPPORTED for an unknown
 * commit header; XL_ECORRUPT for an object the rules cannot parse.
 * On failure `out` is empty.  Upstream's wording is kept in messages
 * ("failed to map tree entry for ...", "bad tree in commit", ...).
 */
int xlate_object(const struct xlate_opts *o, enum obj_type type,
		 const char *buf, size_t len, struct buf *out);

/*
 * The built-in pairs: if `in` is the empty tree, the empty blob or the
 * null name, set *out to its twin in `to` and return 1; else 0.
 */
int xlate_builtin(const struct oid *in, const struct hash_algo *to,
		  struct oid *out);

/*
 * The names an object refers to, in its own form: a tree's entries
 * (gitlinks included, flagged), a commit's tree, parents and mergetag
 * targets, a tag's target.  fn is called once per reference; a non-zero
 * return stops the walk and is returned.  Returns XL_ECORRUPT where the
 * object cannot be parsed the way the converter would parse it.
 */
enum xlate_ref_kind {
	XLATE_REF_TREE_ENTRY,	/* a file or symlink entry (by its mode) */
	XLATE_REF_SUBTREE,	/* a directory entry (mode 040000) */
	XLATE_REF_GITLINK,	/* mode 160000: a commit in another repository */
	XLATE_REF_TREE,		/* a commit's tree */
	XLATE_REF_PARENT,
	XLATE_REF_MERGETAG,	/* the object a mergetag's tag names */
	XLATE_REF_TAG_OBJECT,	/* a tag's target */
};

typedef int (*xlate_ref_fn)(void *data, enum xlate_ref_kind kind,
			    const struct oid *oid, const char *name,
			    size_t name_len);
int xlate_refs(const struct hash_algo *algo, enum obj_type type,
	       const char *buf, size_t len, xlate_ref_fn fn, void *data);

/* ---- the whole-repository build ------------------------------------- */

struct cache;
struct cache_object;
struct xlate_pack1_opts;
struct xlate_pack1_stats;

/*
 * Names someone already holds in memory, asked before the cache: a
 * build hands its own table to the layout of the packs it finished, so
 * that laying them out looks nothing up in sqlite for the objects it
 * has just named.  get() fills *out as cache_get() would (a reason
 * borrowed while the table lives) and returns 0, or XL_ENOTFOUND when
 * the table does not know the name; then the cache is asked.  map() is
 * the same question when only the SHA-1 name is wanted (converting):
 * as an xlate_map_fn, XL_ENOTFOUND meaning "ask the cache".
 */
struct xlate_names {
	int (*get)(void *data, const struct oid *sha256,
		   struct cache_object *out);
	xlate_map_fn map;
	/*
	 * May be NULL.  The SHA-1 form of a tree, commit or tag, as the
	 * holder of the table made and hashed it, into out (reset first);
	 * XL_ENOTFOUND if it did not keep that one.
	 */
	int (*form)(void *data, const struct oid *sha256, struct buf *out);
	void *data;
	/*
	 * May be NULL.  The delta (xlate_tree_delta()) from the SHA-1 form
	 * of the tree stored at `base` to that of tree sha256 stored at
	 * `offset`, both in `pack` (odb_pack_info.pack), as the holder made
	 * it, into out (reset first); XL_ENOTFOUND if it did not keep that
	 * one.  Kept only when smaller than the tree's form.
	 */
	int (*delta)(void *data, const struct oid *sha256, const void *pack,
		     uint64_t offset, uint64_t base, struct buf *out);
};
/* What `names` (may be NULL), or else the cache, says of sha256. */
int xlate_names_get(const struct xlate_names *names, struct cache *cache,
		    const struct oid *sha256, struct cache_object *out);

struct xlate_build_opts {
	enum xlate_unknown unknown_headers;
	const char *map;	/* file of "<sha256> <sha1>" lines, or NULL */
	int threads;			/* 0: one per online processor */
	/* called now and then with objects done and to do (may be NULL) */
	void (*progress)(void *data, uint64_t done, uint64_t total);
	void *progress_data;
	/*
	 * May be NULL.  When it becomes non-zero the build stops within a
	 * thousand objects, rolls back its open batch (what it committed
	 * stays) and returns XL_EIO, "build stopped".
	 */
	const atomic_int *cancel;
	/*
	 * May be NULL: a memo of names (below) that readers convert with.
	 * The build clears it when it changes names already stored: when
	 * it empties a cache made under other settings (before naming
	 * anything), and after refusing a named object for a collision.
	 */
	struct xlate_memo *memo;
	/*
	 * May be NULL.  Else, once its names are committed, the build
	 * brings the SHA-1 packs up to date with these options
	 * (xlate_pack1_update(), below: its `names` is the build's own
	 * table), and its figures go to *pack1_stats.  A build that fails
	 * lays nothing out.
	 */
	const struct xlate_pack1_opts *pack1;
	struct xlate_pack1_stats *pack1_stats;
	/*
	 * Fold the recent rows into the big table at the end whatever
	 * their share (cache_fold()); else only once it is due.
	 */
	int fold;
};

/*
 * What the repository lacks: the objects that objects refused for now
 * refer to and the repository does not have, each counted once, by what
 * refers to it (a tree entry's blob, a commit's parent, ...; `other`: a
 * tag's target).  Counted by every build that walks the refusals for
 * now again, and kept in the cache.
 */
struct xlate_missing {
	int known;			/* 0: no build has counted them yet */
	uint64_t blobs, trees, commits, other;
};

/*
 * Upstream Git's own map (compat.c): a repository running compat mode
 * records "<sha256> <sha1>" for each object it writes in
 * objects/loose-object-idx.  Every line is checked against this cache:
 */
struct xlate_compat {
	int present;			/* the repository has the file */
	uint64_t lines;			/* after the header */
	uint64_t agree;
	uint64_t disagree;		/* another SHA-1 name here */
	uint64_t refused;		/* no SHA-1 name here, for good */
	uint64_t unnamed;		/* not named here yet: checked later */
	uint64_t stale;			/* objects the repository lacks (pruned) */
	uint64_t malformed;		/* no pair, or no header first */
};

struct xlate_build_stats {
	uint64_t objects;		/* distinct objects known: the cache's rows
					   (an object in two packs counts once),
					   plus those that could not be read */
	uint64_t new_objects;		/* named (or refused) by this build */
	uint64_t untranslatable;	/* of those */
	uint64_t retry;			/* of those, refused only for now */
	uint64_t collisions;		/* objects refused for sharing a SHA-1 name */
	int retried;			/* the refusals for now were walked again
					   (the repository gained objects), or
					   there were none (an empty cache) */
	struct xlate_missing missing;	/* known if this build counted them */
	struct xlate_compat compat;	/* upstream's map, if the repository has one */
	char compat_error[300];		/* why it could not be checked, if so */
	uint64_t map_disagree;		/* map lines for objects this build named
					   otherwise: ignored (the repository's
					   own conversion wins) */
	char first_map_disagree[300];	/* "<sha256>: map <sha1>, named <sha1>" */
	int emptied;			/* the cache, made under other settings,
					   was emptied first: names may differ */
	uint64_t unreadable;		/* objects that could not be read: not
					   stored, tried again by the next build */
	char first_unreadable[600];	/* "<name>: <why>" of the first of them */
	uint64_t broken_packs;		/* packs that cannot be opened: skipped */
	uint32_t broken_packs_sum;	/* tells one set of them from another */
	char first_broken_pack[600];	/* "<path>: <why>" of the first */
	uint64_t spill_bytes;		/* what the walk kept for the layout */
	uint64_t trees;			/* trees converted by the walk */
	uint64_t trees_against;		/* of those, against a reference */
	int bulk;			/* the rows went in at the end, in name
					   order (a big first build) */
	uint64_t folded;		/* recent rows moved into the big table
					   (cache_fold()); 0 if not due */
	/* wall seconds spent in each phase (see build.c), for -v */
	double secs_gather, secs_classify, secs_blobs, secs_walk,
	       secs_store, secs_layout, secs_fold;
};

/*
 * Bring the cache up to date with the repository: give every object not
 * yet in the cache its SHA-1 name, or record why it has none.  Work is
 * in proportion to what is new: packs the cache has finished are not
 * looked at, and names already stored are read, not recomputed.
 *
 * Objects are named in dependency order (blobs; then trees, commits and
 * tags, each after everything it refers to) on opts->threads threads,
 * with explicit queues, never recursion; the cache holds the same bytes
 * whatever the number of threads.  Results are committed in batches in
 * that same order, so a build killed at any moment leaves a cache whose
 * every entry is right, and the next build carries on from there.
 *
 * An object that cannot be converted, and everything that refers to it,
 * is stored without a SHA-1 name and with the reason.  Two objects that
 * would share a SHA-1 name are both refused.  A refusal because a
 * reference is missing or unreadable is stored as retry, and looked at
 * again by every later build until it settles.
 *
 * An object whose bytes cannot be read (corrupt, over a limit, gone) is
 * not stored at all, and counted in stats->unreadable; its pack is not
 * marked finished, so the next build tries it again.
 *
 * Returns 0, or an error: cache failures, an unreadable submodule map,
 * and read errors that say nothing about the object (out of memory, I/O
 * errors), which stop the build; what was committed stays.
 */
int xlate_build(struct repo *repo, struct cache *cache,
		const struct xlate_build_opts *opts,
		struct xlate_build_stats *stats);

/*
 * What the last build that counted them found missing (see struct
 * xlate_missing): `known` 0 if none has.  Returns 0 or XL_EIO.
 */
int xlate_missing_read(struct cache *cache, struct xlate_missing *out);

/*
 * Why objects of `repo` have no SHA-1 name for want of others, and what
 * would bring those: one line a cause, each ending in '\n', appended to
 * `out` (nothing when nothing is missing).  A partial clone (a promisor
 * remote, or promisor packs) is told by its missing blobs and trees, a
 * shallow one by its `shallow` file.  Returns 0 or XL_ENOMEM.
 */
int xlate_missing_explain(struct repo *repo, const struct xlate_missing *m,
			  struct buf *out);

/* Upstream Git's own map, checked (see struct xlate_compat above). */
enum xlate_compat_bad {
	XLATE_COMPAT_DISAGREE,		/* ours: our SHA-1 name */
	XLATE_COMPAT_REFUSED,		/* why: our reason */
	XLATE_COMPAT_MALFORMED,		/* why: what is wrong with the line */
};

/* A line worth naming: its number (the header is 1) and text. */
typedef int (*xlate_compat_fn)(void *data, enum xlate_compat_bad kind,
			       uint64_t lineno, const char *line,
			       const struct oid *ours, const char *why);

/* The file's path, for messages. */
int xlate_compat_path(struct repo *repo, struct buf *out);

/*
 * Check the file whole: counts into *out (present 0 without a file),
 * and fn (if not NULL) called for each line that disagrees, is refused
 * here or is malformed.  Returns 0, XL_EIO (the file cannot be read),
 * a cache error, or fn's return.
 */
int xlate_compat_check(struct repo *repo, struct cache *cache,
		       xlate_compat_fn fn, void *data, struct xlate_compat *out);

/*
 * For builds: check the file again if it changed since the counts the
 * cache keeps were made, or if `named` (this build named objects) and
 * lines were waiting for names; keep the new counts.  *out gets the
 * counts either way.  Returns 0 or an error as xlate_compat_check().
 */
int xlate_compat_update(struct repo *repo, struct cache *cache, int named,
			struct xlate_compat *out);

/* The counts as one line for `status`, the log and `build`; none without a file. */
int xlate_compat_explain(const struct xlate_compat *c, struct buf *out);

/*
 * A progress bar for a build on a terminal: "Translating objects:  45%
 * (58000/130037), 120000/s, ETA 1s", redrawn in place at most ten times
 * a second, and not at all for a build done within half a second.  Pass
 * xlate_progress_cb with the struct as opts->progress(_data);
 * xlate_progress_end() ends the line if one was drawn.
 */
struct xlate_progress {
	FILE *out;
	double start, last;
	int shown;
};
void xlate_progress_init(struct xlate_progress *p, FILE *out);
void xlate_progress_cb(void *data, uint64_t done, uint64_t total);
void xlate_progress_end(struct xlate_progress *p);

/*
 * The settings text a cache built with these options records (see
 * cache_check_settings): the unknown-header policy and a digest of the
 * submodule map's pairs.  Returns 0 or an error reading the map.
 */
int xlate_build_settings(const struct xlate_build_opts *opts,
			 struct buf *out);

/*
 * Read a map (--map): lines "<sha256-hex> <sha1-hex>", as upstream
 * Git's loose-object-idx has them (its "# loose-object-idx" header is
 * a comment here), and as `git xlate export` writes them (in its tsv
 * the type that follows is ignored, and a "-" for an object without
 * its other name skips the line).  A SHA-1 repository's files put the
 * SHA-1 name first: the length of the first name says which it is.
 * '#' comments and blank lines allowed.  fn is called for each pair,
 * the SHA-256 name first whatever the line's order.  Returns 0, XL_ENOTFOUND / XL_EIO (the
 * file), XL_ECORRUPT (a bad line, numbered).
 */
typedef int (*xlate_pair_fn)(void *data, const struct oid *sha256,
			     const struct oid *sha1);
int xlate_read_map(const char *path, xlate_pair_fn fn, void *data);

/* ---- zlib streams of stored blocks (zstored.c) ---------------------- */

/*
 * A zlib stream of stored deflate blocks carrying `size` payload bytes:
 * its length follows from the size alone, and any byte of it from
 * arithmetic (the framing used for loose object files and for the
 * rewritten entries of synthesized packs).
 */
uint64_t zstored_size(uint64_t size);

enum zstored_part {
	ZSTORED_FRAME,		/* zlib header or a block header: p->frame */
	ZSTORED_PAYLOAD,	/* payload bytes [at, at + len) */
	ZSTORED_ADLER,		/* bytes [at, at + len) of the big-endian Adler-32 */
};
struct zstored_piece {
	enum zstored_part part;
	uint64_t at;
	size_t len;		/* 0 only past the end of the stream */
	unsigned char frame[5];
};
/* What lies at `off` of the stream: one piece, at most `len` bytes. */
void zstored_piece(uint64_t size, uint64_t off, size_t len,
		   struct zstored_piece *p);
/* Bytes [off, off + len) of the stream, the payload all in memory. */
void zstored_copy(const void *payload, uint64_t size, uint32_t adler,
		  uint64_t off, void *dst, size_t len);

/* ---- synthesized SHA-1 packs (pack1.c) ------------------------------ */

struct cache_pack1;

/*
 * Lay out the SHA-1 pack of every native pack the build has finished
 * and that has none yet, into the cache (see pack1.c), and forget the
 * layouts of native packs that are gone, unless keep() says a reader
 * still has one open.  Run it after xlate_build(), or let the build run
 * it (xlate_build_opts.pack1), which is faster.
 */
struct xlate_pack1_gate;
struct xlate_pack1_opts {
	enum xlate_unknown unknown_headers;
	struct xlate_memo *memo;	/* may be NULL: a memo of its own */
	const struct xlate_names *names;	/* may be NULL: the cache alone */
	const atomic_int *cancel;	/* may be NULL; as in xlate_build_opts */
	int (*keep)(void *data, const struct cache_pack1 *p);	/* may be NULL */
	void *keep_data;
	int threads;			/* 0: one per online processor */
	const struct xlate_pack1_gate *gate;	/* may be NULL */
};
/*
 * A caller that starts the layout before its own batch is committed
 * (a first build lays its packs out while sqlite sorts its names): the
 * packs it is finishing are laid out first, and the layout writes
 * nothing to the cache (it holds its rows, up to a bound) until wait()
 * returns 0 or 1 (the caller's batch is committed, the packs are
 * finished; 1 if it had to wait for that); if wait() returns an error,
 * the layout fails with it, as it does at its next window once `failed`
 * is set.  finishing() says whether the caller is finishing native pack
 * `checksum`.  Called on the layout's thread; wait() may be called more
 * than once.
 */
struct xlate_pack1_gate {
	int (*finishing)(void *data, const char *checksum);
	int (*wait)(void *data);
	const atomic_int *failed;
	void *data;
};
struct xlate_pack1_stats {
	uint64_t made;		/* packs laid out */
	uint64_t objects;	/* entries in them */
	uint64_t dropped;	/* layouts forgotten */
	uint64_t tree_deltas;	/* entries that are tree deltas */
	uint64_t tree_deltas_walked;	/* ... made by the build's walk */
	uint64_t gated;		/* packs laid out behind the gate */
	uint64_t gate_waits;	/* ... that waited at it, ready before it opened */
	uint64_t gate_full;	/* ... that held all they may first */
};
int xlate_pack1_update(struct repo *repo, struct cache *cache,
		       const struct xlate_pack1_opts *opts,
		       struct xlate_pack1_stats *stats);

/*
 * Reading a SHA-1 pack: a reader belongs to one thread at a time, and
 * remembers the last SHA-1 form it made (an entry read in pieces is
 * converted once).  `repo` must outlive it; its native pack is found by
 * name there (XL_ENOTFOUND if it is gone).  A read must lie within the
 * pack (or the .idx); it returns 0, or an error with the message set
 * (XL_ECORRUPT for a native entry or a cache row that is not what the
 * layout said).
 */
struct xlate_pack1_reader;
int xlate_pack1_reader_new(struct xlate_pack1_reader **out, struct repo *repo,
			   const struct cache_pack1 *pack);
void xlate_pack1_reader_free(struct xlate_pack1_reader *r);
int xlate_pack1_read(struct xlate_pack1_reader *r, struct cache *cache,
		     struct xlate_memo *memo, enum xlate_unknown unknown_headers,
		     uint64_t off, void *dst, size_t len);
int xlate_pack1_read_idx(struct cache *cache, const struct cache_pack1 *p,
			 uint64_t off, void *dst, size_t len);

/* ---- reading through the cache -------------------------------------- */

/*
 * A memo of SHA-1 names (memo.c): a fixed-size, thread-safe table that
 * remembers recent SHA-256 -> SHA-1 pairs in front of the cache, for
 * readers that convert many objects (the daemon).  `bytes` bounds its
 * memory.  get returns 1 and fills *sha1 on a hit, else 0.  put
 * remembers a pair read from the cache while the memo was at
 * `generation` (taken before the cache was asked), unless it has been
 * cleared since; it may forget an older pair.  Whoever changes names in
 * the cache (empties it, refuses a named object) must clear the memo:
 * xlate_build() does, given it in opts->memo.
 * A NULL memo is allowed everywhere and remembers nothing.
 */
struct xlate_memo;
int xlate_memo_new(struct xlate_memo **out, size_t bytes);
void xlate_memo_free(struct xlate_memo *memo);
int xlate_memo_get(struct xlate_memo *memo, const struct oid *sha256,
		   struct oid *sha1);
uint64_t xlate_memo_generation(struct xlate_memo *memo);
void xlate_memo_put(struct xlate_memo *memo, uint64_t generation,
		    const struct oid *sha256, const struct oid *sha1);
void xlate_memo_clear(struct xlate_memo *memo);

/*
 * The SHA-1 form of the object stored under `sha256`, made from its
 * stored form and the names in the cache (gitlinks from the cache's
 * record of the submodule map), asking `memo` and then `names` (either
 * may be NULL) first.  The
 * result is checked against the size the cache recorded.  Returns 0;
 * XL_ENOTFOUND (not in the repository); XL_EUNSUPPORTED (untranslatable:
 * the message says why); or a read error.
 */
int xlate_sha1_form(struct repo *repo, struct cache *cache,
		    const struct xlate_names *names, struct xlate_memo *memo,
		    enum xlate_unknown unknown_headers,
		    const struct oid *sha256, enum obj_type *type,
		    struct buf *out);

/*
 * Resolve a name of either algorithm: full hex (the length says which),
 * NAME^{sha1} or NAME^{sha256} to force one, a revision name as
 * repo_resolve_name() takes it, or abbreviated hex of either algorithm
 * (found in both: ambiguous).  *sha256 gets the object's stored name,
 * *given the algorithm the name was written in.
 * Returns 0, XL_ENOTFOUND, XL_EAMBIGUOUS.
 */
int xlate_resolve(struct repo *repo, struct cache *cache, const char *name,
		  struct oid *sha256, const struct hash_algo **given);

#endif
