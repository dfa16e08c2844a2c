/*
 * odb_i.h: the inside of odb/.  Only the odb sources and the unit tests include
 * this; other modules use odb.h.
 */
#ifndef XLATEFS_ODB_I_H
#define XLATEFS_ODB_I_H

#include "odb.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

/* ---- big-endian readers over trusted-length buffers ---------------- */

static inline uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint64_t get_be64(const unsigned char *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* ---- small file helpers (file.c) ------------------------------------ */

/*
 * Read a whole regular file of at most `max` bytes into out.
 * Returns 0, XL_ENOTFOUND (ENOENT/ENOTDIR), XL_ETOOBIG or XL_EIO.
 */
int file_read(const char *path, size_t max, struct buf *out);

/*
 * Map a whole file read-only.  *len gets its size; an empty file maps to
 * NULL with *len 0.  Returns 0, XL_ENOTFOUND or XL_EIO.
 */
int file_map(const char *path, const unsigned char **map, size_t *len);
void file_unmap(const unsigned char *map, size_t len);

/*
 * The same for a file below `root` (path is root + "/" + more): opened
 * only where the path, symlinks followed, stays below root; a symlink
 * that leads out of it is XL_ECORRUPT, "not followed" (file.c says why).
 * Every file below objects/ and of the refs is read so.
 */
int file_read_in(const char *root, const char *path, size_t max,
		 struct buf *out);
int file_map_in(const char *root, const char *path,
		const unsigned char **map, size_t *len);

/* opendir() of a directory below root, on the same terms (NULL, errno) */
DIR *dir_open_in(const char *root, const char *path);

/* Join dir and name with one '/'. */
int path_join(struct buf *out, const char *dir, const char *name);

/* Make `path` absolute and drop "." and ".." components lexically. */
int path_absolute(struct buf *out, const char *path);

/* ---- config (config.c) ---------------------------------------------- */

/*
 * Git's config syntax: [section], [section "sub"], [section.sub],
 * key = value, bare keys (true), ; and # comments, quotes, the escapes
 * \\ \" \n \t \b, and backslash-newline continuations.  The callback
 * gets the full key in Git's canonical form ("section.sub.key", with
 * section and key lower-cased and the subsection as written) and the
 * value, or NULL for a bare key.  A non-zero return stops the parse.
 * `origin` names the file in error messages.
 *
 * Returns 0, XL_ECORRUPT (a syntax error, with the line number), or the
 * callback's value.
 */
typedef int (*config_fn)(const char *key, const char *value, void *data);
int config_parse(const char *text, size_t len, const char *origin,
		 config_fn fn, void *data);

/* Git's boolean spellings; -1 if none. A NULL value (bare key) is true. */
int config_bool(const char *value);
/* A decimal integer with optional k/m/g suffix; XL_EINVALID if not. */
int config_int(const char *value, long long *out);

/* ---- repository (repo.c) -------------------------------------------- */

struct repo {
	char *gitdir;		/* absolute; immutable after open */
	char *commondir;	/* absolute; == gitdir unless a linked worktree */
	char *objdir;		/* commondir/objects */
	const struct hash_algo *algo;
	const struct hash_algo *compat_algo;	/* NULL if none */
	enum ref_storage ref_storage;
	int bare;
	int quote_path;		/* core.quotePath (default true) */
	char *promisor;		/* the promisor remote's name, or NULL */
	struct odb *odb;
};

/* Checks the repository format keys gathered from config; see repo.c. */
struct repo_format {
	long long version;
	const struct hash_algo *algo;
	const struct hash_algo *compat_algo;
	enum ref_storage ref_storage;
	int bare;		/* -1 if unset */
	int quote_path;		/* core.quotePath; 1 unless set false */
	char *promisor;		/* extensions.partialClone, or the first
				   remote.<name>.promisor that is true */
	int promisor_ext;	/* promisor came from the extension */
	struct buf unknown;	/* unknown extensions, "\tname\n" each */
	struct buf v1_only;	/* v1-only extensions seen */
	int err;		/* first value error (XL_*), message kept */
	char *errmsg;
};

void repo_format_init(struct repo_format *fmt);
void repo_format_release(struct repo_format *fmt);
int repo_format_parse(struct repo_format *fmt, const char *text, size_t len,
		      const char *origin);
/* Apply Git's rules to a parsed format: 0 or XL_EUNSUPPORTED / XL_ECORRUPT. */
int repo_format_verify(const struct repo_format *fmt);

/* ---- inflate (inflate.c) -------------------------------------------- */

/*
 * Inflate a zlib stream from in[0..in_len) into exactly `size` bytes at
 * dst, requiring the stream to end there.  *used gets the number of input
 * bytes the stream took.  Returns 0 or XL_ECORRUPT (with a reason that
 * the caller wraps with the object's name).
 */
int inflate_exact(const unsigned char *in, size_t in_len, void *dst,
		  size_t size, size_t *used);

/*
 * Inflate just enough of a zlib stream to fill `want` bytes (or less if
 * the stream ends first); *got is the count.  For peeking at headers.
 */
int inflate_prefix(const unsigned char *in, size_t in_len, void *dst,
		   size_t want, size_t *got);

/*
 * The largest inflated size a deflate stream of n compressed bytes can
 * declare: deflate cannot expand more than 1032:1.  A size claimed above
 * this is a lie, caught before any allocation.
 */
static inline int inflate_size_plausible(size_t compressed, size_t size)
{
	return size / 1032 <= compressed + 64;
}

/* ---- delta (delta.c) ------------------------------------------------ */

/*
 * Read the two sizes at the start of a delta.  *p advances past them.
 * Returns 0 or XL_ECORRUPT.
 */
int delta_sizes(const unsigned char **p, const unsigned char *end,
		size_t *base_size, size_t *result_size);

/*
 * Apply `delta` to `base`, into `out` (reset first).  Every instruction is
 * checked against the base and against the declared result size before
 * anything is allocated.  Returns 0, XL_ECORRUPT or XL_ENOMEM.
 */
int delta_apply(const unsigned char *base, size_t base_len,
		const unsigned char *delta, size_t delta_len, struct buf *out);

/* ---- .idx (idx.c) --------------------------------------------------- */

struct idx {
	const unsigned char *map;
	size_t map_len;
	const struct hash_algo *algo;
	int version;			/* 1 or 2 */
	uint32_t nr;			/* objects */
	const unsigned char *fanout;	/* 256 big-endian counts */
	const unsigned char *names;	/* v2: nr * rawsz; v1: entries */
	const unsigned char *offsets;	/* v2: nr * 4 */
	const unsigned char *large;	/* v2: large offsets */
	uint32_t nr_large;
	const unsigned char *pack_checksum;	/* rawsz bytes */
};

/*
 * Validate a mapped .idx of either version: the size formula and a
 * non-decreasing fanout.  (A large-offset index is checked where it is
 * read, by idx_offset.)  `map` stays
 * owned by the caller.  Returns 0 or XL_ECORRUPT naming `path`.
 */
int idx_parse(struct idx *idx, const unsigned char *map, size_t len,
	      const struct hash_algo *algo, const char *path);

/* The raw name at sorted position i (< nr). */
const unsigned char *idx_name(const struct idx *idx, uint32_t i);
/* The pack offset at sorted position i; XL_ECORRUPT on a bad large index. */
int idx_offset(const struct idx *idx, uint32_t i, uint64_t *out);
/*
 * Binary search for a raw name; *pos gets its position if found (0), or
 * where it would go (XL_ENOTFOUND).
 */
int idx_find(const struct idx *idx, const unsigned char *raw, uint32_t *pos);

/* ---- packs (pack.c) ------------------------------------------------- */

struct delta_cache;

struct pack {
	char *path;			/* .pack */
	struct idx idx;
	const unsigned char *map;	/* the whole .pack, mapped */
	size_t map_len;
	size_t data_end;		/* map_len - rawsz: where entries stop */
	const struct hash_algo *algo;
	struct delta_cache *cache;	/* shared, owned by the odb */
	/*
	 * What type the delta at an offset makes, remembered by
	 * pack_read_header() (pack.c, "types of deltas"): offset << 3 |
	 * type, read and written by any thread without a lock.  NULL
	 * when there was no room; types_mask + 1 slots.
	 */
	_Atomic uint64_t *types;
	size_t types_mask;
	struct pack *next;
};

/*
 * Open a .pack and its .idx (given the .idx path, below the objects
 * directory `root`: file_map_in()), check the pack header against the
 * index and the trailing checksum against the one the index recorded.
 * Returns 0, XL_ENOTFOUND, XL_ECORRUPT or XL_EIO.
 */
int pack_open(struct pack **out, const char *root, const char *idx_path,
	      const struct hash_algo *algo, struct delta_cache *cache);
void pack_close(struct pack *pack);

/* The entry header at `offset`: type (possibly a delta type) and size. */
struct pack_entry {
	uint64_t offset;	/* where the entry starts */
	enum obj_type type;
	size_t size;		/* inflated size (of the delta, for deltas) */
	size_t data;		/* offset of the zlib stream */
	uint64_t base;		/* OFS_DELTA: base entry offset */
	const unsigned char *base_name;	/* REF_DELTA: raw base name */
};

int pack_entry_header(const struct pack *pack, uint64_t offset,
		      struct pack_entry *out);

/* Read the object at `offset`, resolving its delta chain iteratively. */
int pack_read(struct pack *pack, uint64_t offset, enum obj_type *type,
	      struct buf *out);
int pack_read_header(struct pack *pack, uint64_t offset,
		     enum obj_type *type, size_t *size);

/* ---- delta-base cache (delta_cache.c) -------------------------------- */

/*
 * Bases recently rebuilt, keyed by (pack, offset), under a byte budget
 * with least-recently-used eviction.  Entries are reference-counted, so
 * a reader keeps its base while another thread evicts it.  All state is
 * behind the locks of the cache's shards.
 */
struct delta_cache_entry;

struct delta_cache *delta_cache_new(size_t budget);
void delta_cache_free(struct delta_cache *cache);
void delta_cache_set_budget(struct delta_cache *cache, size_t budget);
size_t delta_cache_budget(struct delta_cache *cache);
/* Let every entry go; the budget stays. */
void delta_cache_empty(struct delta_cache *cache);

/* A referenced entry, or NULL on a miss. */
struct delta_cache_entry *delta_cache_get(struct delta_cache *cache,
					  const struct pack *pack,
					  uint64_t offset);
/*
 * Insert a copy-free entry taking data's bytes (data is left empty), and
 * return it referenced; on failure the bytes are freed and NULL returned.
 */
struct delta_cache_entry *delta_cache_put(struct delta_cache *cache,
					  const struct pack *pack,
					  uint64_t offset, enum obj_type type,
					  struct buf *data);
/*
 * Give out, which must own no bytes yet, the buffer of an entry let go
 * that has room for len bytes (and a NUL), if one is kept: what a base
 * about to be rebuilt and put is made in.  out stays empty otherwise.
 */
void delta_cache_spare(struct delta_cache *cache, size_t len, struct buf *out);
void delta_cache_unref(struct delta_cache *cache,
		       struct delta_cache_entry *entry);
const unsigned char *delta_cache_data(const struct delta_cache_entry *e,
				      size_t *len, enum obj_type *type);

/* ---- loose objects (loose.c) ---------------------------------------- */

/*
 * Parse "type SP size NUL" at the start of an inflated loose object.
 * The size must be canonical decimal.  *hdr_len counts the NUL.
 * Returns 0 or XL_ECORRUPT.
 */
int loose_parse_header(const unsigned char *p, size_t len,
		       enum obj_type *type, size_t *size, size_t *hdr_len);

void loose_path(struct buf *out, const char *objdir, const struct oid *oid);
int loose_read(const char *objdir, const struct oid *oid,
	       enum obj_type *type, struct buf *out);
/*
 * A loose object's file, already in memory (`what` names it in
 * messages): its type and content into out.  Returns 0, XL_ECORRUPT,
 * XL_ETOOBIG or XL_ENOMEM.
 */
int loose_decode(const unsigned char *map, size_t map_len, const char *what,
		 enum obj_type *type, struct buf *out);
int loose_read_header(const char *objdir, const struct oid *oid,
		      enum obj_type *type, size_t *size);
/* 1 if a file for oid is there, even one that cannot be opened (then reading it says why) */
int loose_has(const char *objdir, const struct oid *oid);

/*
 * The loose names whose first byte is `fanout`, sorted, appended to
 * *names as 32-byte records (zero-padded for SHA-1), so that one
 * comparator sorts either algorithm.  Ignores files that are not names.
 */
int loose_list(const char *objdir, const struct hash_algo *algo,
	       unsigned fanout, struct buf *names);

/* ---- the object database (odb.c) ------------------------------------ */

struct odb_source {
	char *objdir;			/* absolute objects directory */
	int depth;			/* 0: the repository's own; n: nth alternate level */
	struct odb_source *next;
};

struct odb {
	const struct hash_algo *algo;	/* immutable */
	struct odb_source *sources;	/* immutable after open: ours, then alternates */
	/*
	 * Packs are only ever pushed on the front and never removed while
	 * the odb lives, so readers walk the list with one acquire load and
	 * no lock; scan_lock serialises the writers (rescans).
	 */
	pthread_mutex_t scan_lock;
	struct pack *_Atomic packs;
	struct delta_cache *cache;	/* has its own lock */
};

int odb_open(struct odb **out, const char *objdir,
	     const struct hash_algo *algo);
void odb_close(struct odb *odb);

/* ---- refs (refs.c, reftable.c) -------------------------------------- */

/* A growable array of refs, used to gather and sort them. */
struct ref_array {
	struct ref *refs;
	size_t nr, alloc;
};

void ref_array_release(struct ref_array *arr);
/* Append a copy of ref (strings duplicated). */
int ref_array_push(struct ref_array *arr, const struct ref *ref);
/* Sort by name; for equal names keep the later one (a higher layer wins). */
int ref_array_sort_dedup(struct ref_array *arr);	/* 0 or XL_ENOMEM */

/*
 * Parse packed-refs text into arr: "# pack-refs with: ..." header,
 * "<hex> <name>" lines and "^<hex>" peeled lines.  A name Git refuses
 * makes a broken ref (struct ref), not an error, as in Git.  Returns 0
 * or XL_ECORRUPT with the line number (a line Git would die on).
 */
int packed_refs_parse(const char *text, size_t len,
		      const struct hash_algo *algo, const char *origin,
		      struct ref_array *arr);

/*
 * Parse a loose ref file's text (NUL-terminated, as file_read() leaves
 * it): "<hex>" or "ref: <target>", then a newline and possibly more,
 * which Git ignores.  `path` is for messages.  Returns 0, XL_ECORRUPT
 * ("not a ref") or XL_ENOMEM.
 */
int loose_ref_parse(const struct hash_algo *algo, const char *path,
		    const char *name, const struct buf *text, struct ref *out);

/*
 * Read every ref record of the reftable stack in `dir` (its
 * tables.list), later tables overriding earlier ones and deletions
 * honoured, into arr, sorted by name.  Symbolic refs have target set and
 * a null oid (resolution is the caller's job).  Returns 0, XL_ENOTFOUND
 * (no tables.list), XL_ECORRUPT naming the table, or XL_EUNSUPPORTED.
 */
int reftable_read_refs(const char *dir, const struct hash_algo *algo,
		       struct ref_array *arr);

/*
 * One table already in memory (`name` for messages): its ref records,
 * tombstones included (oid.algo NULL), appended to arr in table order.
 * The unit tests drive the parser through this.
 */
int reftable_parse_table(const unsigned char *map, size_t len,
			 const char *name, const struct hash_algo *algo,
			 struct ref_array *arr);

#endif
