/*
 * odb.h: read a Git repository natively (SHA-1 or SHA-256).
 *
 * This is the one public header of odb/, the lowest module of xlatefs.
 * Everything above it (xlate/, cache/, fs/, the git-xlate command) reads
 * repositories only through what is declared here.  The module never ends
 * the process, never prints, and never trusts a byte it read from disk:
 * every function returns 0 or a negative XL_E* code and leaves a
 * one-line, human-readable reason in a thread-local record (err_msg()).
 *
 * What lives here, bottom-up:
 *   err     integer error codes with a thread-local message
 *   buf     the one growable byte buffer
 *   oid     object names of either algorithm, hex, hashing
 *   repo    discovery (work tree, .git dir, bare, gitdir: file, worktrees),
 *           config and extensions checked by Git's rules
 *   odb     objects: loose, packs (.idx v1/v2, deltas), alternates;
 *           enumeration in name order; streaming of large blobs
 *   refs    HEAD, loose refs, packed-refs, symbolic refs, reftable
 *   name    revision names as cat-file takes them (hex, refs, ^{}, ~N, :path)
 *
 * Thread safety: a struct repo may be shared by any number of threads
 * once repo_open() has returned; reads take the locks they need (see the
 * comments in odb.c and pack.c).  A struct buf or struct odb_stream
 * belongs to one thread at a time.
 */
#ifndef XLATEFS_ODB_H
#define XLATEFS_ODB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- errors --------------------------------------------------------- */

enum xl_err {
	XL_OK = 0,
	XL_ENOTFOUND = -1,	/* no such object, ref or file */
	XL_ECORRUPT = -2,	/* bytes on disk break the format */
	XL_EUNSUPPORTED = -3,	/* valid Git that we refuse (an extension...) */
	XL_ETOOBIG = -4,	/* over a documented limit */
	XL_ENOMEM = -5,		/* allocation failed */
	XL_EIO = -6,		/* a system call failed; errno kept in the message */
	XL_EAMBIGUOUS = -7,	/* an abbreviated name matches several objects */
	XL_EINVALID = -8,	/* a malformed argument from the caller */
};

/*
 * Record `code` with a printf-style reason for this thread and return
 * `code`, so that `return err_set(XL_ENOTFOUND, "...")` is the idiom.
 */
int err_set(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Corruption goes through one function that also records where the check
 * lives in our source: one place to break on, and logs that name the rule.
 */
int err_corrupt(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define ERR_CORRUPT(...) err_corrupt(__FILE__, __LINE__, __VA_ARGS__)

/* Like err_set(XL_EIO, ...), with ": strerror(errno)" appended. */
int err_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The last reason recorded on this thread ("" if none); borrowed. */
const char *err_msg(void);
int err_code(void);
void err_clear(void);

/*
 * Prefix the current message with more context ("reading X: <old>"),
 * keeping the code; returns the code.
 */
int err_wrap(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- buffers -------------------------------------------------------- */

/*
 * A growable byte buffer.  Invariants: `buf` is never NULL (an empty
 * buffer points at a shared, read-only "\0"), and buf[len] == '\0', so
 * text can be used as a C string; objects may contain NULs, so lengths
 * always travel with the pointer.  buf_detach() is the only way to take
 * ownership of the bytes, and buf_attach() the only way to give it.
 */
struct buf {
	char *buf;
	size_t len;
	size_t alloc;		/* 0 while buf points at the shared empty string */
	/*
	 * Set when growing failed since the last buf_reset(): code that
	 * appends many pieces and checks once at the end (a conversion)
	 * must not hand on bytes with a piece missing.
	 */
	int failed;
};

extern char buf_empty_[];
#define BUF_INIT { buf_empty_, 0, 0, 0 }

void buf_init(struct buf *b);
void buf_release(struct buf *b);	/* free, and leave b empty and usable */
char *buf_detach(struct buf *b, size_t *len);
/* The other way: b (empty, owning nothing) takes mem, malloc'd, of alloc bytes. */
void buf_attach(struct buf *b, char *mem, size_t alloc);
int buf_grow(struct buf *b, size_t extra);	/* room for extra more bytes */
int buf_add(struct buf *b, const void *data, size_t len);
int buf_addstr(struct buf *b, const char *s);
int buf_addch(struct buf *b, int c);
int buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_setlen(struct buf *b, size_t len);	/* len <= alloc-1 */
/*
 * Varints as Git's delta headers spell them: seven bits a byte, least
 * significant first, the high bit set on every byte but the last.
 * buf_add_varint() appends v; varint_get() reads one from [*pp, end)
 * and moves *pp past it, or returns -1 (truncated, or over 64 bits).
 */
int buf_add_varint(struct buf *b, uint64_t v);
int varint_get(const unsigned char **pp, const unsigned char *end,
	       uint64_t *out);
static inline void buf_reset(struct buf *b)
{
	if (b->alloc)
		b->buf[0] = '\0';
	b->len = 0;
	b->failed = 0;
}

/*
 * Room for one more element in a malloc'd array holding `nr` of `*alloc`
 * elements of `elem` bytes: when full it doubles (starting at `first`).
 * `arrayp` points at the array pointer.  Returns 0, or XL_ENOMEM with
 * the array untouched.  ARRAY_GROW(arr, nr, alloc, first) is the typed
 * spelling.
 */
int array_grow(void *arrayp, size_t *alloc, size_t nr, size_t elem,
	       size_t first);
#define ARRAY_GROW(arr, nr, alloc, first) \
	array_grow(&(arr), &(alloc), (nr), sizeof(*(arr)), (first))

/*
 * A mutex that spins a little before it sleeps, for sections held for
 * a fraction of a microsecond that several threads take all the time
 * (odb/lock.c).  Destroyed with pthread_mutex_destroy().
 */
void mutex_init_brief(pthread_mutex_t *m);

/* Overflow-checked size arithmetic: 0 on success, XL_ETOOBIG on overflow. */
static inline int size_add(size_t a, size_t b, size_t *out)
{
	if (__builtin_add_overflow(a, b, out))
		return err_set(XL_ETOOBIG, "size overflow (%zu + %zu)", a, b);
	return 0;
}

static inline int size_mul(size_t a, size_t b, size_t *out)
{
	if (__builtin_mul_overflow(a, b, out))
		return err_set(XL_ETOOBIG, "size overflow (%zu * %zu)", a, b);
	return 0;
}

/* ---- mapped files that shrink ------------------------------------------ */

/*
 * A file someone truncates in place while we have it mapped (a pack or
 * an .idx cut short by hand) turns every touch of a page past its new
 * end into SIGBUS, and a daemon that dies of it takes the mount with
 * it.  map_guard_install() catches such a fault in a map that
 * file_map_in() made, and maps zeros over the rest of it, so that the
 * read goes on and sees zeros: damage, which the reader's checks meet
 * as they meet any other (a zlib stream that does not inflate, a CRC32
 * that does not match), and the request fails with an error.  A fault
 * anywhere else (sqlite's -shm, whose readers cannot tell zeros from the
 * truth; see file.c), and a SIGBUS sent by kill, does what it did.
 *
 * Call it once, before any thread starts (it saves the action it
 * replaces).  map_guard_take() returns how many faults were caught since
 * it was last called, so that one caller reports each of them once.
 */
int map_guard_install(void);
unsigned long map_guard_take(void);

/* ---- object names --------------------------------------------------- */

enum hash_id { HASH_SHA1 = 1, HASH_SHA256 = 2 };

#define OID_RAWSZ_MAX 32
#define OID_HEXSZ_MAX 64

struct hash_algo {
	const char *name;	/* "sha1" or "sha256", as in extensions.objectFormat */
	enum hash_id id;	/* the number Git writes into .rev/midx headers */
	size_t rawsz;		/* 20 or 32 */
	size_t hexsz;		/* 40 or 64 */
	const char *title;	/* "SHA-1" or "SHA-256", for messages */
};

extern const struct hash_algo hash_sha1;
extern const struct hash_algo hash_sha256;

/* NULL if the name is neither "sha1" nor "sha256" (case-sensitive, as Git). */
const struct hash_algo *hash_algo_by_name(const char *name);

/*
 * The other of Git's two algorithms: what a repository of `algo`
 * translates to (a SHA-256 repository to SHA-1, and the other way round).
 */
const struct hash_algo *hash_algo_other(const struct hash_algo *algo);

/*
 * An object name.  `algo` tells how many of the 32 bytes count; the rest
 * are zero so that whole structs can be compared and hashed.
 */
struct oid {
	unsigned char hash[OID_RAWSZ_MAX];
	const struct hash_algo *algo;
};

void oid_from_raw(struct oid *oid, const struct hash_algo *algo,
		  const unsigned char *raw);
int oid_cmp(const struct oid *a, const struct oid *b);
int oid_is_null(const struct oid *oid);

/* Writes algo->hexsz lowercase hex digits and a NUL; returns hex. */
char *oid_to_hex_r(char *hex, const struct oid *oid);

/*
 * Parse exactly algo->hexsz hex digits (either case) at `hex`; the byte
 * after them is not looked at.  Returns 0, or XL_EINVALID.
 */
int oid_from_hex(struct oid *oid, const struct hash_algo *algo,
		 const char *hex);
int hex_value(int c);	/* 0..15, or -1 */

/*
 * The OpenSSL digest of algo (an EVP_MD), fetched once for the process:
 * pass it to EVP_DigestInit_ex() rather than EVP_sha1() or EVP_sha256().
 */
struct evp_md_st;
const struct evp_md_st *hash_md(const struct hash_algo *algo);

/*
 * The name Git gives `content` of `type` ("blob", ...):
 * H("type len\0" + content).  Returns 0 or XL_ENOMEM.
 */
int hash_object(const struct hash_algo *algo, const char *type,
		 const void *content, size_t len, struct oid *out);

/*
 * SHA-1's state every HASH_MARK_STRIDE bytes into an object's hashed
 * stream ("type len\0" + content), one state of 20 bytes a mark: what a
 * tree converted a moment after a version of itself needs, to hash only
 * from where the two differ.  Measured on the build's trees: hashing
 * resumed past 38.7% of their bytes at a million objects with marks
 * every 256 bytes, 26.9% every 4096; at 131k objects (smaller trees)
 * 32.6% against 6.0%.  Marks cost 8% of the bytes they cover.
 */
#define HASH_MARK_STRIDE 256
struct hash_marks {
	unsigned char (*state)[20];
	size_t nr, alloc;
};
#define HASH_MARKS_INIT { NULL, 0, 0 }
/* Room for n marks (nr unchanged).  Returns 0 or XL_ENOMEM. */
int hash_marks_reserve(struct hash_marks *m, size_t n);
void hash_marks_release(struct hash_marks *m);

/*
 * hash_object() for SHA-1, leaving the marks of `content` in *marks.
 * `like` (may be NULL) is another object of the same type, `like_len`
 * bytes, with its marks: if the two are as long, the stream is hashed
 * from the last mark of the stretch they share from the start, and those
 * marks are copied.  Returns 0 or XL_ENOMEM.
 */
int hash_sha1_marked(const char *type, const void *content, size_t len,
		     const void *like, size_t like_len,
		     const struct hash_marks *like_marks,
		     struct hash_marks *marks, struct oid *out);

/* ---- object types --------------------------------------------------- */

/* The numbers are Git's pack type codes. */
enum obj_type {
	OBJ_NONE = 0,
	OBJ_COMMIT = 1,
	OBJ_TREE = 2,
	OBJ_BLOB = 3,
	OBJ_TAG = 4,
	OBJ_OFS_DELTA = 6,
	OBJ_REF_DELTA = 7,
};

const char *type_name(enum obj_type type);	/* NULL for non-object types */
enum obj_type type_from_name(const char *name, size_t len); /* OBJ_NONE if unknown */

/* ---- repositories --------------------------------------------------- */

struct repo;
struct odb;

enum ref_storage { REF_STORAGE_FILES, REF_STORAGE_REFTABLE };

/*
 * Open the repository at `path`, as `git -C path` would find it: a work
 * tree (or a directory inside one), a .git directory, a bare repository,
 * or a .git file holding "gitdir: ...".  A linked worktree's shared parts
 * (objects, refs, config) come from its commondir.  The repository format
 * is checked by Git's rules: a version above 1, an unknown extension in a
 * version-1 repository, or a v1-only extension in a version-0 one is
 * refused with XL_EUNSUPPORTED and Git's wording.
 *
 * Returns 0, XL_ENOTFOUND (no repository there), XL_EUNSUPPORTED, or
 * another code for bad files.
 */
int repo_open(struct repo **out, const char *path);
void repo_close(struct repo *repo);
/*
 * Is `dir` itself a repository (a git directory, or a directory with a
 * .git directory or file)?  Unlike repo_open(), parent directories are
 * not searched and no object is opened: cheap enough to ask of every
 * directory of a tree.  Returns 0 with its object format in *algo,
 * XL_ENOTFOUND, XL_EUNSUPPORTED, or another code for bad files.
 */
int repo_probe(const char *dir, const struct hash_algo **algo);

const struct hash_algo *repo_algo(const struct repo *repo);
/* The compat algorithm from extensions.compatObjectFormat, or NULL. */
const struct hash_algo *repo_compat_algo(const struct repo *repo);
const char *repo_gitdir(const struct repo *repo);	/* absolute */
const char *repo_commondir(const struct repo *repo);	/* absolute */
const char *repo_objdir(const struct repo *repo);	/* absolute */
enum ref_storage repo_ref_storage(const struct repo *repo);
int repo_is_bare(const struct repo *repo);
/* core.quotePath: quote names with bytes >= 0x80 when printing (default 1). */
int repo_quote_path(const struct repo *repo);
/*
 * A partial clone: its promisor remote's name as the config gives it
 * (extensions.partialClone, else the first remote.<name>.promisor that
 * is true), or NULL; and whether objects/pack holds promisor packs.
 */
const char *repo_promisor(const struct repo *repo);
int repo_has_promisor_packs(const struct repo *repo);
/*
 * A shallow clone: how many boundary commits its `shallow` file lists
 * (0 if it has none).  Returns 0 or the read's error.
 */
int repo_shallow_count(const struct repo *repo, uint64_t *out);
/* Its `shallow` file as it is: 0, XL_ENOTFOUND (not shallow), or an error. */
int repo_shallow_read(const struct repo *repo, struct buf *out);
struct odb *repo_odb(struct repo *repo);

/* ---- the object database -------------------------------------------- */

/*
 * Limits on untrusted input.  Each is documented in the README; going
 * over one gives XL_ETOOBIG naming the object.
 */
#define ODB_MAX_DELTA_DEPTH 10000	/* longest delta chain we follow */
#define ODB_DELTA_CACHE_DEFAULT (96u << 20)	/* bytes of delta bases kept */

/*
 * Read a whole object into `out` (which is reset first).  On success *type
 * is a base type and out->len the object's size.
 * Returns 0, XL_ENOTFOUND, XL_ECORRUPT, XL_ETOOBIG, XL_ENOMEM, XL_EIO.
 */
int odb_read(struct odb *odb, const struct oid *oid, enum obj_type *type,
	     struct buf *out);

/*
 * Like odb_read(), but an object bigger than `limit` that could be
 * streamed (odb_stream_open) is not read: the function returns 1 with
 * *type and *size set and `out` empty.  Otherwise it returns what
 * odb_read() does, with *size = out->len.  This lets a caller read the
 * common small object with one lookup and stream the rare huge one.
 */
int odb_read_small(struct odb *odb, const struct oid *oid,
		   enum obj_type *type, size_t *size, struct buf *out,
		   size_t limit);

/*
 * Type and size without reading the content (for a delta, the chain's
 * headers are walked, and only the start of the delta is inflated).
 * Either output may be NULL.  Same returns as odb_read().
 */
int odb_read_header(struct odb *odb, const struct oid *oid,
		    enum obj_type *type, size_t *size);

/* 1 if the object is in the database, 0 if not (a corrupt index is "not"). */
int odb_has(struct odb *odb, const struct oid *oid);

/*
 * Find the one object whose hex name starts with `hex` (len >= 4 digits,
 * either case).  Returns 0, XL_ENOTFOUND, XL_EAMBIGUOUS or XL_EINVALID.
 */
int odb_resolve_prefix(struct odb *odb, const char *hex, size_t len,
		       struct oid *out);

/*
 * Call fn for every object in the database once, in name order, across
 * all packs, loose objects and alternates.  Memory is bounded by the
 * largest 1/256th slice of names.  A non-zero return from fn stops the
 * walk and is returned.
 */
typedef int (*odb_each_fn)(const struct oid *oid, void *data);
int odb_for_each_object(struct odb *odb, odb_each_fn fn, void *data);

/*
 * The packs, for callers that keep per-pack state (the translation
 * cache remembers which packs it has fully processed).  `checksum` is
 * the pack's trailing hash in hex, the name in pack-<hex>.pack.
 */
/*
 * Where a packed object is stored, and for a delta, where in the same
 * pack its base is: for the build, which makes the SHA-1 pack's tree
 * deltas while both forms are at hand.  `pack` is what struct
 * odb_pack_info's `pack` is for the same pack (NULL: the object is
 * loose); `base` is ODB_NO_PLACE for an object stored whole (or a
 * REF_DELTA whose base is in another pack).  Returns 0, XL_ENOTFOUND or
 * XL_ECORRUPT.
 */
#define ODB_NO_PLACE UINT64_MAX
struct odb_place {
	const void *pack;
	uint64_t offset;
	uint64_t base;
};
int odb_place(struct odb *odb, const struct oid *oid, struct odb_place *out);
/*
 * The object stored at `offset` of `pack` (odb_place()'s, for the same
 * odb), into out: for the build, which reads a tree's delta base by
 * where it is (mostly from the delta-base cache, since reading the tree
 * just rebuilt it).  Returns 0, XL_ENOMEM, XL_ECORRUPT or XL_ETOOBIG.
 */
int odb_read_placed(struct odb *odb, const void *pack, uint64_t offset,
		    enum obj_type *type, struct buf *out);
/*
 * Where the delta base of the object stored at `offset` of `pack` is
 * stored, as odb_place() says it (ODB_NO_PLACE for none in that pack):
 * for the build, which looks a few steps along a delta chain.  Returns
 * 0 or XL_ECORRUPT.
 */
int odb_placed_base(struct odb *odb, const void *pack, uint64_t offset,
		    uint64_t *base);

struct odb_pack_info {
	const char *path;		/* the .pack file */
	char checksum[OID_HEXSZ_MAX + 1];
	uint32_t objects;
	const void *pack;		/* for odb_pack_object(); opaque */
};

typedef int (*odb_pack_fn)(const struct odb_pack_info *info, void *data);
int odb_for_each_pack(struct odb *odb, odb_pack_fn fn, void *data);

/*
 * The packs the last scan could not open (a bad .idx, a pack that does
 * not match it, a pack directory behind a link that leads out), each
 * with why; they are tried again at every scan.  Their objects are
 * found elsewhere or not at all, so a caller says they were skipped.
 * fn runs under the lock of pack scans: it must not read objects.
 */
typedef int (*odb_broken_fn)(const char *path, const char *reason, void *data);
int odb_for_each_broken_pack(struct odb *odb, odb_broken_fn fn, void *data);
/* The name of the i-th object (i < info->objects) of a pack, in name order. */
void odb_pack_object(const struct odb_pack_info *info, uint32_t i,
		     struct oid *out);
/*
 * A pack's entries in the order they are stored, for callers that write
 * a pack of their own from one (the synthesized SHA-1 packs).  Entry i
 * spans [offset, end): its header, then its zlib stream from `data`.
 * Its delta base, if any, is named by its index in the same array
 * (ODB_NO_BASE: outside this pack).  An entry whose header cannot be
 * parsed, or that shares its offset with an earlier one, has type
 * OBJ_NONE: a reader of the pack would fail on it, so a writer skips it.
 * *out is malloc'd, info->objects long.  Returns 0, XL_ENOMEM, or
 * XL_ECORRUPT (a bad large-offset table).
 */
#define ODB_NO_BASE UINT32_MAX
struct odb_pack_entry {
	uint64_t offset, end, data;
	uint64_t size;		/* inflated size of what is stored (the delta, for a delta) */
	uint32_t pos;		/* its place in the .idx, so its name: odb_pack_object() */
	uint32_t base;		/* a delta's base, as an index into the array */
	enum obj_type type;	/* as stored: a base type, a delta type or OBJ_NONE */
};
int odb_pack_entries(const struct odb_pack_info *info,
		     struct odb_pack_entry **out);
/* The pack's bytes, trailer included, mapped for as long as the odb lives. */
const unsigned char *odb_pack_map(const struct odb_pack_info *info,
				  size_t *len);
/* The pack named pack-<hex>.pack: 0 and *out, or XL_ENOTFOUND. */
int odb_find_pack(struct odb *odb, const char *hex, struct odb_pack_info *out);
/* 1 if `oid` is in the pack, else 0. */
int odb_pack_has(const struct odb_pack_info *info, const struct oid *oid);
/* Every loose object (of every source), unsorted. */
int odb_for_each_loose(struct odb *odb, odb_each_fn fn, void *data);

/* Look again for packs that appeared since the last scan (gc, fetch). */
int odb_refresh(struct odb *odb);

/* Set the delta-base cache budget in bytes (0 turns the cache off). */
void odb_set_delta_cache_limit(struct odb *odb, size_t bytes);
size_t odb_delta_cache_limit(struct odb *odb);
/*
 * Let go of the delta bases kept so far (a phase whose reads will not
 * reuse them is next); the cache refills as reads need it.
 */
void odb_release_memory(struct odb *odb);

/*
 * Streaming.  A loose object or a non-delta packed object is inflated a
 * piece at a time, so a blob of any size costs a fixed amount of memory;
 * a deltified object has to be rebuilt whole first (as in Git).
 */
struct odb_stream;
int odb_stream_open(struct odb *odb, const struct oid *oid,
		    struct odb_stream **out, enum obj_type *type,
		    size_t *size);
/* Up to len bytes into dst; *got is 0 only at the end. */
int odb_stream_read(struct odb_stream *st, void *dst, size_t len,
		    size_t *got);
void odb_stream_close(struct odb_stream *st);

/* ---- refs ----------------------------------------------------------- */

/*
 * One ref as stored.  For a symbolic ref, `target` is the name it points
 * at and `oid` is what that resolves to (null if it dangles).  `peeled` is
 * set (has_peeled) when the backend recorded what an annotated tag peels to.
 *
 * A broken ref is a packed-refs line whose name Git's rules refuse ("..",
 * a space, a control character, ".lock"...), or too long to take
 * (REFNAME_MAX).  Git ignores such a ref with a warning and reads the
 * rest; so do we.  Its name is for messages only, never a path or a
 * lookup key: control characters become '?', and an over-long name is
 * cut short and ends in "...".
 */
#define REFNAME_MAX 4096

struct ref {
	char *name;
	char *target;		/* NULL unless symbolic */
	struct oid oid;
	struct oid peeled;
	int has_peeled;
	int broken;		/* see above; refs_for_each() passes these too */
};

void ref_release(struct ref *ref);

/*
 * Read one ref by its full name ("HEAD", "refs/heads/main"), following
 * symbolic refs (at most 5 levels, as Git).  `out` gets the stored form
 * of `name` itself, with oid resolved.
 * Returns 0, XL_ENOTFOUND, XL_ECORRUPT or XL_EIO.
 */
int refs_read(struct repo *repo, const char *name, struct ref *out);

/*
 * Every ref under refs/ (not HEAD), sorted by name as Git sorts
 * (byte-wise), loose refs overriding packed ones.  The struct passed to fn
 * is borrowed for the call.  A non-zero return from fn stops the walk.
 * Broken refs (ref->broken) are passed as well, so that a caller can say
 * it leaves them out, as Git warns "ignoring ref with broken name"; their
 * oid is not to be used.
 */
typedef int (*refs_each_fn)(const struct ref *ref, void *data);
int refs_for_each(struct repo *repo, refs_each_fn fn, void *data);

/* ---- names as cat-file takes them ----------------------------------- */

/*
 * Resolve a revision name: full or abbreviated hex, a ref (with Git's
 * DWIM rules: NAME, refs/NAME, refs/tags/NAME, refs/heads/NAME,
 * refs/remotes/NAME, refs/remotes/NAME/HEAD), HEAD or @, followed by any
 * of ^{}, ^{type}, ^N, ~N, and an optional :path into a tree.
 * Returns 0, XL_ENOTFOUND, XL_EAMBIGUOUS, XL_ECORRUPT...
 */
int repo_resolve_name(struct repo *repo, const char *name, struct oid *out);

/*
 * Peel `oid` through tags (and from a commit to its tree) until an
 * object of type `want` (OBJ_NONE: the first non-tag) is reached, as
 * `git cat-file TYPE` does.  Returns 0 or XL_ENOTFOUND if the chain ends
 * at another type.
 */
int repo_peel(struct repo *repo, const struct oid *oid, enum obj_type want,
	      struct oid *out);

#endif
