/*
 * fs.h: the xlatefs daemon, shared by the files of fs/ (and nothing else).
 *
 * fs/ is the top of the project: a libfuse3 low-level file system over
 * odb/ (the repository), cache/ (the name mapping) and xlate/ (the
 * conversion).  The layout it serves is the contract in DESIGN.md §2:
 *
 *   README, status
 *   sha1/, sha256/              a bare Git directory per algorithm: HEAD,
 *                               config, packed-refs, refs/, objects/XX/...
 *                               (Git's loose format), objects/info, pack
 *   objects-sha1/, objects-sha256/   XX/YYYY... holding the raw forms
 *
 * Where things are:
 *   main.c      options, the first (foreground) build, mounting, signals
 *   context.c   one repository's state: set up, put to sleep, woken
 *   forge.c     a forge mount (--root DIR): every repository under DIR,
 *               each a context of its own, in front of ops.c
 *   daemon.c    the shared state the others use: the repository swap,
 *               the sqlite connection pool, the log, the clock
 *   node.c      inode numbers and what each one is
 *   ops.c       the FUSE operations
 *   object.c    object files: sizes, zlib framing, streaming big blobs
 *   pack.c      objects/pack: native packs read through (sha256/), SHA-1
 *               packs made from them (sha1/, xlate/pack1.c), info/packs
 *   refsnap.c   the refs as each view shows them (HEAD, packed-refs,
 *               symbolic refs), snapshotted and refreshed every second
 *   text.c      README, status, config
 *   updater.c   the thread that keeps the cache up to date, and opens
 *               the repository afresh after gc deletes packs
 *
 * Conversions ask xlate_sha1_form() with a memo of recent SHA-1 names
 * (xlate/memo.c) in front of the cache; the build clears it whenever it
 * changes a name the cache held.
 *
 * Threads: FUSE requests run on libfuse's worker threads.  They share
 * one struct xfs; what changes after start-up is guarded by the lock
 * named beside it.  Each worker picks a sqlite connection from a pool
 * (a connection serves one thread at a time); the updater has its own
 * connection for writing.  No request waits for the updater's build.
 */
#ifndef XLATEFS_FS_H
#define XLATEFS_FS_H

#define FUSE_USE_VERSION 312

#include "../odb/odb.h"
#include "../cache/cache.h"
#include "../xlate/xlate.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

/* How long the kernel may keep what we said (seconds). */
#define XFS_TTL_IMMUTABLE 86400.0	/* object files, fixed directories */
#define XFS_TTL_LIVE 1.0		/* names of refs, HEAD, status */
#define XFS_REFS_MAX_AGE 1.0		/* a refs snapshot is redone after this */
#define XFS_POLL_INTERVAL_MS 1000	/* the updater looks for new objects */
#define XFS_STOP_WAIT_S 3		/* for a running build, at unmount */

/*
 * Objects up to this size are made whole when opened; a bigger blob is
 * streamed from the repository (its SHA-1 form is the same bytes), so a
 * reader of a 4 GiB file costs a fixed amount of memory (unless the blob
 * is stored as a delta: then the stream rebuilds it whole, as Git does).
 */
#define XFS_STREAM_MIN (8u << 20)

/* Memory for remembered SHA-1 names (xlate_memo): about 600k names. */
#define XFS_MEMO_BYTES (32u << 20)

/* ---- views -------------------------------------------------------------- */

/* The two Git directories. */
enum xfs_git { XFS_GIT1, XFS_GIT256, XFS_GIT__COUNT };

/* The four object directories. */
enum xfs_view {
	XFS_LOOSE1,	/* sha1/objects: Git's loose format */
	XFS_LOOSE256,	/* sha256/objects */
	XFS_RAW1,	/* objects-sha1: the raw SHA-1 form */
	XFS_RAW256,	/* objects-sha256: the raw stored form */
	XFS_VIEW__COUNT
};

static inline const struct hash_algo *view_algo(enum xfs_view v)
{
	return v == XFS_LOOSE1 || v == XFS_RAW1 ? &hash_sha1 : &hash_sha256;
}

static inline int view_is_loose(enum xfs_view v)
{
	return v == XFS_LOOSE1 || v == XFS_LOOSE256;
}

/*
 * FNV-1a of a string: for tables keyed by path (the forge's) and for
 * telling one set of names from another (refsnap's broken refs).
 */
static inline uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* ---- the refs as a view shows them (refsnap.c) ---------------------------- */

struct symref_file {
	char *path;		/* "refs/remotes/origin/HEAD" */
	char *content;		/* "ref: refs/remotes/origin/main\n" */
	size_t len;
};

struct refsnap_view {
	struct buf head;		/* the HEAD file */
	struct buf packed_refs;		/* the packed-refs file */
	/*
	 * The shallow file, if the repository has one: its boundary
	 * commits by this view's names (in sha1/, those with a SHA-1 name;
	 * a map can name their parents, and then they are in the view)
	 */
	struct buf shallow;
	int has_shallow;
	struct symref_file *symrefs;	/* sorted by path */
	size_t nr_symrefs, alloc_symrefs;
	uint64_t hidden;		/* refs left out: no name in this view */
	char **hidden_names;		/* the first XFS_HIDDEN_NAMED of them */
	size_t nr_hidden_names, alloc_hidden_names;
};

/* How many left-out refs status names (the count is always complete). */
#define XFS_HIDDEN_NAMED 100

struct refsnap {
	atomic_int refcount;
	double made;			/* monotonic seconds */
	uint64_t gen;			/* xfs->snap_gen when it was begun */
	struct refsnap_view view[XFS_GIT__COUNT];
};

struct xfs;
/* The current snapshot (made anew if older than XFS_REFS_MAX_AGE); put it back. */
struct refsnap *refsnap_get(struct xfs *xfs);
void refsnap_put(struct refsnap *snap);
void refsnap_teardown(struct xfs *xfs);	/* the last snapshot, and the ref names */
/*
 * Make the snapshot anew now, after a build that named new objects, and
 * retire the one that may hide their refs: once this returns, every
 * reader sees the refs those names allow (status "ready" means that).
 */
void refsnap_refresh(struct xfs *xfs);
/* A symbolic ref file at `path`, or NULL. */
const struct symref_file *refsnap_find(const struct refsnap_view *v,
				       const char *path);
/* 1 if some symbolic ref lives below the directory `path`. */
int refsnap_has_dir(const struct refsnap_view *v, const char *path);

/* ---- status (updater.c) --------------------------------------------------- */

enum xfs_state { XFS_BUILDING, XFS_READY, XFS_ERROR };

struct xfs_status {
	enum xfs_state state;
	uint64_t objects;		/* in the repository, as last counted */
	uint64_t translated;
	uint64_t untranslatable;
	uint64_t pending;		/* still to name in the running build */
	double rate;			/* objects/s of the running build */
	double build_started;
	uint64_t builds;		/* builds finished since mounting */
	double last_update;		/* when the cache last caught up (epoch s) */
	char error[256];		/* the last build's failure, or "" */
	/*
	 * What the repository lacks, in words (xlate_missing_explain():
	 * lines ending in '\n'), or "": the usual reason for objects
	 * without a name (a partial or shallow clone).
	 */
	char missing[2048];
	char compat[512];	/* upstream's map, checked: one line, or "" */
	/* the updater's whole-file check: "" before it, "ok", or why not */
	char cache_check[384];
};

/* ---- the file system -------------------------------------------------------- */

struct node_table;
struct packsnap;
struct served_pack;
struct forge;

struct xfs {
	/* set up before mounting, then read-only */
	char *repo_path;		/* as given, made absolute */
	/*
	 * The repository's own algorithm, fixed when it is first opened:
	 * `own` is its Git directory read through (sha256/, or sha1/ for a
	 * SHA-1 repository, mounted the other way round), `other` the one
	 * made by translation.
	 */
	const struct hash_algo *algo;
	enum xfs_git own, other;
	char *cache_path;
	char *map;
	enum xlate_unknown unknown_headers;
	int background;
	size_t memo_bytes;
	unsigned pool_readers;		/* sqlite readers; 0: by the CPUs */
	unsigned page_cache_kib;	/* each reader's; 0: cache_open()'s */
	/*
	 * In a forge mount: the forge, this repository's slot in it, and
	 * its path under the forge's root (log lines begin with it);
	 * NULL, 0 and NULL in a single mount.  Inode numbers go out
	 * through xfs_ino_out().
	 */
	struct forge *forge;
	unsigned slot;
	const char *log_name;
	/*
	 * Set by the context's owner (main.c, or forge.c under the slot's
	 * lock): the repository, the pool, the memo and the updater are
	 * there.
	 */
	int awake;
	atomic_int handles;		/* open files and directories */
	/*
	 * The open handles themselves (ops.c), so that the daemon's end
	 * can close those whose release never came: the kernel sends it
	 * in the background, and an unmount may end the session first.
	 */
	pthread_mutex_t handles_lock;	/* guards open_handles */
	struct fh *open_handles;
	int foreground, debug;		/* -f, -d: log to stderr */
	uid_t uid;
	gid_t gid;
	time_t mounted;			/* the times every file shows */
	struct buf readme;
	struct buf config[XFS_GIT__COUNT];

	pthread_mutex_t repo_lock;	/* guards repo (not what it points to) */
	struct repo_ref *repo;		/* the repository now: xfs_repo_get() */

	/* sqlite connections for readers; each has its own lock inside */
	struct cache **readers;
	unsigned nr_readers;
	atomic_uint next_reader;
	struct cache *writer;		/* the updater's */
	struct xlate_memo *memo;	/* recent SHA-1 names, for conversions */

	struct node_table *nodes;	/* node.c; has its own lock */

	pthread_mutex_t snap_lock;	/* guards snap, snap_busy, snap_gen */
	pthread_cond_t snap_cond;	/* with it: snap_busy went to 0 */
	struct refsnap *snap;
	int snap_busy;
	uint64_t snap_gen;		/* a snapshot begun before it changed is old */
	/*
	 * The ref names the last build recorded (refsnap.c), sorted pairs
	 * of raw names; good while the memo is at ref_names_gen.  Touched
	 * only by the one thread that holds snap_busy.
	 */
	unsigned char (*ref_names)[2 * OID_RAWSZ_MAX];	/* own, other */
	size_t nr_ref_names, alloc_ref_names;
	uint64_t ref_names_gen;
	int ref_names_loaded;
	/* the unreadable packs last logged (updater.c): only its thread */
	uint64_t broken_packs_logged;
	uint32_t broken_packs_sum;
	/* the broken refs last logged (refsnap.c): their count and sum */
	uint64_t broken_logged;
	uint32_t broken_sum;

	pthread_mutex_t pack_lock;	/* guards packsnap, packs_seen */
	struct packsnap *packsnap;
	struct served_pack *packs_seen;	/* every pack ever listed (pack.c) */
	size_t nr_packs_seen, alloc_packs_seen;

	pthread_mutex_t status_lock;	/* guards status */
	struct xfs_status status;

	pthread_mutex_t updater_lock;	/* guards stop; updater_cond with it */
	pthread_cond_t updater_cond;
	int stop;
	atomic_int cancel_build;	/* set with stop: a running build ends */
	pthread_t updater;
	int updater_started;
	int cache_checked;		/* the updater's: once a process */
};

/* The Git directory of a view. */
static inline enum xfs_git view_git(enum xfs_view v)
{
	return view_algo(v) == &hash_sha1 ? XFS_GIT1 : XFS_GIT256;
}

/* Does view v show translated forms (not the repository's own)? */
static inline int view_translated(const struct xfs *xfs, enum xfs_view v)
{
	return view_algo(v) != xfs->algo;
}

/* ---- a repository's state (context.c) --------------------------------------- */

struct xfs_conf {
	const char *repo;		/* as given */
	const char *cache;		/* NULL: beside the repository */
	const char *map;		/* NULL: none */
	enum xlate_unknown unknown_headers;
	int background;
	size_t memo_bytes;		/* 0: XFS_MEMO_BYTES */
	unsigned readers;		/* sqlite readers; 0: by the CPUs */
	unsigned page_cache_kib;	/* each reader's page cache; 0: 64 MiB */
	time_t mounted;			/* 0: now */
};

/* Open the repository and make the whole state (awake, no threads yet). */
int xfs_setup(struct xfs *xfs, const struct xfs_conf *conf);
/*
 * Bring the cache up to date, on a connection of its own, then close
 * it.  The whole file is not checked here, since that grows with it:
 * the updater checks it once the mount serves (updater.c).
 */
int xfs_first_build(struct xfs *xfs);
/* Open the sqlite pool and start the updater (after the fork). */
int xfs_start(struct xfs *xfs);
/*
 * Let go of what an idle repository need not hold (the repository, the
 * pool, the memo, the snapshots, the updater), keeping what the kernel
 * may still name (the inode table).  -1 if a build would not stop:
 * then it stays awake.  No request may be running on it, no file open.
 */
int xfs_sleep(struct xfs *xfs);
/* Make it all again, with the cache brought up to date first; 0 or an error. */
int xfs_wake(struct xfs *xfs);
void xfs_teardown(struct xfs *xfs);

/*
 * The repository, reference counted (daemon.c).  Packs that gc or repack deleted
 * stay mapped (and their descriptors open) while a struct repo lives,
 * so after such a change the updater opens the repository afresh and
 * swaps it in; the old one is closed when its last user lets go.  Take
 * a reference for the length of a request, or of an open file that
 * streams.
 */
struct repo_ref {
	struct repo *repo;
	atomic_int refs;
};
struct repo_ref *xfs_repo_get(struct xfs *xfs);
void xfs_repo_put(struct repo_ref *ref);
/* Make `repo` the current repository (0, or XL_ENOMEM: then it is closed). */
int xfs_repo_set(struct xfs *xfs, struct repo *repo);

/*
 * The pool of sqlite connections (daemon.c): the updater's writer and
 * the readers, opened after the fork.  xfs_cache() is a reader for
 * this request (round robin over the pool).
 */
int xfs_pool_open(struct xfs *xfs);
void xfs_pool_close(struct xfs *xfs);
struct cache *xfs_cache(struct xfs *xfs);
/* cache_open()'s warning callback: a log line (data is the struct xfs). */
void xfs_cache_warn(void *data, const char *message);

/* A line in the log: stderr with -f/-d, syslog after xfs_log_to_syslog(). */
void xfs_log(struct xfs *xfs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void xfs_log_to_syslog(void);	/* once, before any thread starts */

double xfs_now(void);		/* monotonic seconds */

/* ---- inodes (node.c) -------------------------------------------------------- */

enum node_kind {
	NODE_DIR,		/* a fixed directory (enum dir_kind says which) */
	NODE_TEXT,		/* README, status, HEAD, config, packed-refs */
	NODE_FANOUT,		/* objects/XX in one of the four views */
	NODE_OBJECT,		/* an object file */
	NODE_REFDIR,		/* a directory under refs/ */
	NODE_SYMREF,		/* a symbolic ref's loose file */
	NODE_PACKFILE,		/* objects/pack/pack-<hex>.pack or .idx */
};

enum dir_kind {
	DIR_ROOT,
	DIR_GIT,		/* sha1/, sha256/ */
	DIR_OBJECTS,		/* sha1/objects, ..., objects-sha256: 256 fan-outs */
	DIR_INFO,		/* objects/info: packs */
	DIR_PACK,		/* objects/pack: the packs (pack.c) */
};

/* What a generated text file is. */
enum text_kind {
	TEXT_README, TEXT_STATUS, TEXT_HEAD, TEXT_CONFIG, TEXT_PACKED_REFS,
	TEXT_INFO_PACKS,	/* objects/info/packs (pack.c) */
	TEXT_SHALLOW,		/* shallow: only in a shallow clone's views */
};

struct node {
	fuse_ino_t ino;
	enum node_kind kind;
	enum dir_kind dir;		/* DIR */
	enum xfs_git git;		/* DIR_GIT, DIR_PACK, TEXT, REFDIR, SYMREF,
					   PACKFILE */
	enum text_kind text;		/* TEXT */
	enum xfs_view view;		/* DIR_OBJECTS, FANOUT, OBJECT */
	unsigned fanout;		/* FANOUT: the first byte */
	const char *path;		/* REFDIR, SYMREF: "refs/..." (interned) */
	/* OBJECT */
	struct oid name;		/* in the view's algorithm */
	struct oid sha256;		/* the stored object */
	struct oid sha1;		/* null algo if none (untranslatable) */
	enum obj_type type;
	uint64_t size;			/* of the view's form; PACKFILE: of the
					   file; a text version: of its bytes */
	uint64_t nlookup;		/* kernel references (node_table lock) */
};

/* The inode number of an object file (before any collision probing). */
fuse_ino_t object_ino(enum xfs_view view, const struct oid *name);

/* A table of `buckets` to begin with (it grows with what the kernel holds). */
int node_table_new(struct node_table **out, size_t buckets);
void node_table_free(struct node_table *t);

/*
 * The node for `ino`, copied into *out (nodes may go away when the
 * kernel forgets them, so callers keep a copy).  Returns 0 or ENOENT.
 */
int node_get(struct xfs *xfs, fuse_ino_t ino, struct node *out);

/*
 * Look `name` up in directory `parent`: fill *out (ino and all) and
 * count one kernel reference.  Returns 0 or an errno value.
 */
int node_lookup(struct xfs *xfs, fuse_ino_t parent, const char *name,
		struct node *out);
void node_forget(struct xfs *xfs, fuse_ino_t ino, uint64_t nlookup);
/*
 * An object node looked up before the updater named it: its SHA-1 name
 * from the cache now, if it has one (kept in the table too).
 */
void node_refresh_sha1(struct xfs *xfs, struct node *n);

/*
 * 1 if n is one version of HEAD, packed-refs or info/packs: its bytes
 * are fixed (see node.c), and node_version_bytes() appends them to out
 * (XL_EIO if the kernel has forgotten that version).
 */
int node_is_version(const struct node *n);
int node_version_bytes(struct xfs *xfs, const struct node *n, struct buf *out);

/* Attributes of a node (size from the cache or the snapshot, never content). */
void node_stat(struct xfs *xfs, const struct node *n, struct stat *st);
/* How long the kernel may keep this node's name, and its attributes. */
double node_entry_ttl(const struct node *n);
double node_attr_ttl(const struct node *n);

/* One directory entry, as readdir gives it. */
struct dirent_rec {
	char *name;
	fuse_ino_t ino;
	mode_t mode;
};

struct dir_listing {
	struct dirent_rec *ents;
	size_t nr, alloc;
};

/* Everything in directory `dir` (with "." and ".."); 0 or an errno value. */
int node_list(struct xfs *xfs, const struct node *dir, struct dir_listing *out);
/* Add name[0, len) to l; 0 or ENOMEM. */
int dir_listing_add(struct dir_listing *l, const char *name, size_t len,
		    fuse_ino_t ino, mode_t mode);
void dir_listing_free(struct dir_listing *l);

/* ---- object files (object.c) -------------------------------------------------- */

/* Bytes of `payload` bytes framed as zlib stored blocks (Git's loose format). */
uint64_t loose_file_size(uint64_t payload);
/* The header Git writes before an object's content: "blob 12\0"; returns its length. */
size_t loose_header(char *buf, enum obj_type type, uint64_t size);

struct objfile;
/*
 * Open object node `n`.  Nothing is read yet: the content is made on the
 * first read, and the kernel keeps object files in its page cache, so an
 * open of a file it already holds costs no conversion.  Returns 0 or an
 * errno value.
 */
int objfile_open(struct xfs *xfs, const struct node *n, struct objfile **out);
/* Read up to `len` bytes at `off` into `dst`; *got bytes; 0 or an errno value. */
int objfile_read(struct xfs *xfs, struct objfile *f, uint64_t off, char *dst,
		 size_t len, size_t *got);
void objfile_close(struct objfile *f);

/* ---- packs (pack.c) ---------------------------------------------------------- */

/*
 * A pack a Git directory lists in objects/pack: in sha256/, a native
 * pack read through; in sha1/, the SHA-1 pack made from one (its layout
 * in the cache).  Its two files are pack-<hex>.pack (inode `ino`) and
 * pack-<hex>.idx (ino + 1).
 */
/* The files of a served pack, in the low bits of their inode numbers. */
enum pack_file { PACK_FILE_PACK, PACK_FILE_IDX, PACK_FILE_PROMISOR };

struct served_pack {
	enum xfs_git git;
	char name[OID_HEXSZ_MAX + 6];	/* "pack-<hex>" */
	char native[OID_HEXSZ_MAX + 1];	/* the native pack's checksum hex */
	const char *native_path;	/* its .pack (lives as long as the mount) */
	struct cache_pack1 layout;	/* sha1/ only */
	uint64_t size[3];		/* bytes of the .pack, the .idx, the
					   .promisor */
	int promisor;			/* a promisor pack (a partial clone's):
					   it has a .promisor file */
	fuse_ino_t ino;
	unsigned opens;			/* packs_seen only: open files */
};

/* What objects/pack lists now: made anew when older than XFS_REFS_MAX_AGE. */
struct packsnap {
	atomic_int refcount;
	double made;
	struct served_pack *packs[XFS_GIT__COUNT];
	size_t nr[XFS_GIT__COUNT];
	struct buf info_packs[XFS_GIT__COUNT];	/* objects/info/packs */
	/*
	 * What objects/XX lists: the repository's loose objects, by each
	 * view's names, sorted.  Only when loose_ok: in sha1/, every
	 * native pack must have its SHA-1 pack listed (else objects of the
	 * others are loose there too), and there must be at most
	 * XFS_LOOSE_SNAP_MAX of them; otherwise a listing asks the cache.
	 */
	int loose_ok[XFS_GIT__COUNT];
	struct oid *loose[XFS_GIT__COUNT];
	size_t nr_loose[XFS_GIT__COUNT];
};
#define XFS_LOOSE_SNAP_MAX 20000
struct packsnap *packsnap_get(struct xfs *xfs);	/* NULL: EIO (logged) */
void packsnap_refresh(struct xfs *xfs);	/* make it anew now, as refsnap_refresh */
void packsnap_put(struct packsnap *snap);

/* 1 if `ino` is a pack file's number (it need not be listed any more). */
int pack_ino(fuse_ino_t ino);
/* The pack file `ino` as last listed: fills n; 0 or ENOENT. */
int pack_node(struct xfs *xfs, fuse_ino_t ino, struct node *n);
/* "pack-<hex>.pack" or ".idx" in objects/pack of `git`: 0 or ENOENT/EIO. */
int pack_lookup(struct xfs *xfs, enum xfs_git git, const char *name,
		struct node *n);

struct packfile;
int packfile_open(struct xfs *xfs, const struct node *n, struct packfile **out);
int packfile_read(struct xfs *xfs, struct packfile *f, uint64_t off, char *dst,
		  size_t len, size_t *got);
void packfile_close(struct xfs *xfs, struct packfile *f);

/*
 * How the updater's build lays out new SHA-1 packs (xlate_build_opts
 * .pack1), and the log line for what it did.
 */
void pack1_opts(struct xfs *xfs, struct xlate_pack1_opts *out);
void pack1_log(struct xfs *xfs, const struct xlate_pack1_stats *st);
void pack_teardown(struct xfs *xfs);

/* ---- generated text (text.c) ---------------------------------------------------- */

int text_readme(struct xfs *xfs, struct buf *out);
int text_config(enum xfs_git git, const char *promisor, struct buf *out);
int text_status(struct xfs *xfs, struct buf *out);
/* The content of a TEXT or SYMREF node now (snapshotted files included). */
int text_content(struct xfs *xfs, const struct node *n, struct buf *out);
/* Its length, without copying what a snapshot already holds. */
size_t text_size(struct xfs *xfs, const struct node *n);

/* ---- the updater (updater.c) ------------------------------------------------------ */

/* Bring the cache up to date once; progress to stderr when `tty`. */
int updater_build(struct xfs *xfs, int tty);
int updater_start(struct xfs *xfs);
/*
 * Start it again after an updater_stop() that timed out (its build has
 * ended since): 0, 1 while the old one still runs, or an error.
 */
int updater_restart(struct xfs *xfs);
/*
 * Stop the updater, telling a running build to stop; -1 if it has not
 * within XFS_STOP_WAIT_S (then leave the caches open: it still uses them).
 */
int updater_stop(struct xfs *xfs);

/* ---- the FUSE operations (ops.c) ------------------------------------------------ */

/*
 * The operations table of a single mount (ops.c), but for the writes,
 * which xfs_ops_readonly() fills in (in a copy: libfuse copies it too).
 */
extern const struct fuse_lowlevel_ops xfs_ops;

/*
 * The same operations on one repository's state and its own inode
 * numbers, for a forge mount to call once it has found which
 * repository a request is for.  Each replies to req.
 */
void xfs_op_init(void *userdata, struct fuse_conn_info *conn);
void xfs_op_lookup(fuse_req_t req, struct xfs *xfs, fuse_ino_t parent,
		   const char *name);
void xfs_op_getattr(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		    struct fuse_file_info *fi);
void xfs_op_open(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		 struct fuse_file_info *fi);
void xfs_op_read(fuse_req_t req, struct xfs *xfs, size_t size, off_t off,
		 struct fuse_file_info *fi);
void xfs_op_release(fuse_req_t req, struct fuse_file_info *fi);
/* Close the handles still open (the session is over): xfs_teardown(). */
void xfs_handles_close(struct xfs *xfs);
void xfs_op_opendir(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		    struct fuse_file_info *fi);
void xfs_op_readdir(fuse_req_t req, size_t size, off_t off,
		    struct fuse_file_info *fi);
void xfs_op_getxattr(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		     const char *name, size_t size);
void xfs_op_listxattr(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		      size_t size);
/* Every operation that would write: EROFS. */
void xfs_ops_readonly(struct fuse_lowlevel_ops *ops);

/* ---- a forge mount (forge.c) ------------------------------------------------------ */

struct forge_conf {
	const char *root;		/* as given */
	enum xlate_unknown unknown_headers;
	unsigned max_open;		/* repositories awake at once; 0: default */
	size_t memo_bytes;		/* each repository's; 0: FORGE_MEMO_BYTES */
	unsigned page_cache_kib;	/* each reader's; 0: FORGE_PAGE_CACHE_KIB */
};
/* A forge's repositories are many: each gets less than a single mount. */
#define FORGE_MEMO_BYTES (4u << 20)
#define FORGE_PAGE_CACHE_KIB (8u << 10)
#define FORGE_MAX_OPEN 32

int forge_new(struct forge **out, const struct forge_conf *conf);
/* Start its thread (after the fork), which puts idle repositories to sleep. */
int forge_start(struct forge *f);
/* Put every repository to sleep and free it all; -1 if a build still runs. */
int forge_free(struct forge *f);
extern const struct fuse_lowlevel_ops forge_ops;	/* writes: as xfs_ops */

/*
 * The number the kernel knows repository `slot`'s node `local` by,
 * counting one kernel reference when `count` (a lookup's reply); 0 if
 * not known (count 0) or out of memory.  forge_ino_unref() takes back
 * a count whose reply did not reach the kernel.
 */
fuse_ino_t forge_ino_out(struct forge *f, unsigned slot, fuse_ino_t local,
			 int count);
void forge_ino_unref(struct forge *f, fuse_ino_t ino);

/* A node's number as the kernel knows it: the same in a single mount. */
static inline fuse_ino_t xfs_ino_out(struct xfs *xfs, fuse_ino_t local, int count)
{
	return xfs->forge ? forge_ino_out(xfs->forge, xfs->slot, local, count) :
		local;
}

#endif
