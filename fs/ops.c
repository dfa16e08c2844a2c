/*
 * ops.c: the FUSE low-level operations.
 *
 * Each operation turns an inode number into a node (node.c), does its
 * work, and replies; failures become errno values, and anything that
 * says the repository or the cache is damaged is logged where it is
 * found (node.c, object.c) and answered with EIO, for that file only.
 *
 * Open files carry a handle: an object file's reader (object.c), or a
 * copy of a text file's content as it was when opened, so that a file
 * read in pieces is one consistent version even if the refs change
 * meanwhile (fstat on the open file reports that copy's size too).
 *
 * Everything that would write answers EROFS, even though the mount is
 * also read-only in the kernel's eyes ("ro"), which normally stops such
 * calls before they reach us.
 */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

enum fh_kind { FH_OBJECT, FH_TEXT, FH_DIR, FH_PACK };

struct fh {
	enum fh_kind kind;
	struct xfs *xfs;
	struct fh *prev, *next;		/* in xfs->open_handles */
	struct objfile *obj;
	struct packfile *pack;
	struct buf text;
	struct dir_listing dir;
};

static struct xfs *req_xfs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* A new handle on one of xfs's files, counted (a forge keeps it awake). */
static struct fh *fh_new(struct xfs *xfs, enum fh_kind kind)
{
	struct fh *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	buf_init(&h->text);
	h->kind = kind;
	h->xfs = xfs;
	pthread_mutex_lock(&xfs->handles_lock);
	h->next = xfs->open_handles;
	if (h->next)
		h->next->prev = h;
	xfs->open_handles = h;
	pthread_mutex_unlock(&xfs->handles_lock);
	atomic_fetch_add(&xfs->handles, 1);
	return h;
}

static struct fh *fh_of(const struct fuse_file_info *fi)
{
	return fi ? (struct fh *)(uintptr_t)fi->fh : NULL;
}

static void fh_free(struct fh *h)
{
	struct xfs *xfs;

	if (!h)
		return;
	xfs = h->xfs;
	pthread_mutex_lock(&xfs->handles_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		xfs->open_handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&xfs->handles_lock);
	objfile_close(h->obj);
	packfile_close(h->xfs, h->pack);
	buf_release(&h->text);
	dir_listing_free(&h->dir);
	atomic_fetch_sub(&h->xfs->handles, 1);
	free(h);
}

void xfs_handles_close(struct xfs *xfs)
{
	int n = 0;

	while (xfs->open_handles) {
		fh_free(xfs->open_handles);
		n++;
	}
	if (n && xfs->debug)
		xfs_log(xfs, "closed %d handle%s whose release did not come", n,
			n == 1 ? "" : "s");
}

void xfs_op_init(void *userdata, struct fuse_conn_info *conn)
{
	/*
	 * Plain readdir: readdirplus would make us stat (look up in the
	 * cache) every object in a fan-out directory that is only listed.
	 */
	conn->want &= ~FUSE_CAP_READDIRPLUS;
}

static void reply_entry(fuse_req_t req, struct xfs *xfs, const struct node *n)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	if (!(e.ino = xfs_ino_out(xfs, n->ino, 1))) {
		node_forget(xfs, n->ino, 1);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	e.generation = 1;
	node_stat(xfs, n, &e.attr);
	e.attr.st_ino = e.ino;
	e.attr_timeout = node_attr_ttl(n);
	e.entry_timeout = node_entry_ttl(n);
	if (fuse_reply_entry(req, &e) == -ENOENT) {
		/* the lookup was interrupted: nobody holds what we counted */
		node_forget(xfs, n->ino, 1);
		if (xfs->forge)
			forge_ino_unref(xfs->forge, e.ino);
	}
}

void xfs_op_lookup(fuse_req_t req, struct xfs *xfs, fuse_ino_t parent,
		   const char *name)
{
	struct node n;
	int ret = node_lookup(xfs, parent, name, &n);

	if (ret)
		fuse_reply_err(req, ret);
	else
		reply_entry(req, xfs, &n);
}

static void xfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	xfs_op_lookup(req, req_xfs(req), parent, name);
}

static void xfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_forget(req_xfs(req), ino, nlookup);
	fuse_reply_none(req);
}

static void xfs_forget_multi(fuse_req_t req, size_t count,
			     struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		node_forget(req_xfs(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

void xfs_op_getattr(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		    struct fuse_file_info *fi)
{
	struct fh *h = fh_of(fi);
	struct node n;
	struct stat st;
	int ret = node_get(xfs, ino, &n);

	if (ret) {
		fuse_reply_err(req, ret);
		return;
	}
	node_stat(xfs, &n, &st);
	if (xfs->forge)
		st.st_ino = xfs_ino_out(xfs, ino, 0);
	if (h && h->kind == FH_TEXT)
		st.st_size = (off_t)h->text.len;	/* what this open file reads */
	fuse_reply_attr(req, &st, node_attr_ttl(&n));
}

static void xfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xfs_op_getattr(req, req_xfs(req), ino, fi);
}

void xfs_op_open(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		 struct fuse_file_info *fi)
{
	struct fh *h;
	struct node n;
	int ret;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if ((ret = node_get(xfs, ino, &n))) {
		fuse_reply_err(req, ret);
		return;
	}
	if (n.kind == NODE_DIR || n.kind == NODE_FANOUT || n.kind == NODE_REFDIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (!(h = fh_new(xfs, FH_TEXT))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (n.kind == NODE_OBJECT) {
		h->kind = FH_OBJECT;
		ret = objfile_open(xfs, &n, &h->obj);
		fi->keep_cache = 1;	/* an object's bytes never change */
	} else if (n.kind == NODE_PACKFILE) {
		h->kind = FH_PACK;
		ret = packfile_open(xfs, &n, &h->pack);
		fi->keep_cache = 1;	/* named by its checksum: never changes */
	} else {
		h->kind = FH_TEXT;
		ret = text_content(xfs, &n, &h->text) ? EIO : 0;
		fi->keep_cache = node_is_version(&n) || (n.kind == NODE_TEXT &&
			(n.text == TEXT_README || n.text == TEXT_CONFIG));
	}
	if (ret) {
		fh_free(h);
		fuse_reply_err(req, ret);
		return;
	}
	fi->fh = (uintptr_t)h;
	if (fuse_reply_open(req, fi) == -ENOENT)
		fh_free(h);	/* interrupted: no release will come */
}

static void xfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xfs_op_open(req, req_xfs(req), ino, fi);
}

void xfs_op_read(fuse_req_t req, struct xfs *xfs, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	struct fh *h = fh_of(fi);
	size_t got;
	char *buf;
	int ret;

	if (!h || off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/*
	 * Reply from a buffer of this request's own, never from the
	 * handle: the kernel may complete the read, and a RELEASE may free
	 * the handle on another thread, while fuse_reply_buf() is still
	 * returning (AddressSanitizer checks writev's buffer afterwards).
	 */
	if (!(buf = malloc(size ? size : 1))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (h->kind == FH_TEXT) {
		size_t o = (uint64_t)off < h->text.len ? (size_t)off : h->text.len;

		got = size < h->text.len - o ? size : h->text.len - o;
		memcpy(buf, h->text.buf + o, got);
		ret = 0;
	} else if (h->kind == FH_PACK) {
		ret = packfile_read(xfs, h->pack, (uint64_t)off, buf, size, &got);
	} else {
		ret = objfile_read(xfs, h->obj, (uint64_t)off, buf, size, &got);
	}
	if (ret)
		fuse_reply_err(req, ret);
	else
		fuse_reply_buf(req, buf, got);
	free(buf);
}

static void xfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	xfs_op_read(req, req_xfs(req), size, off, fi);
}

void xfs_op_release(fuse_req_t req, struct fuse_file_info *fi)
{
	fh_free(fh_of(fi));
	fuse_reply_err(req, 0);
}

static void xfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xfs_op_release(req, fi);
}

void xfs_op_opendir(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		    struct fuse_file_info *fi)
{
	struct fh *h;
	struct node n;
	int ret;

	if ((ret = node_get(xfs, ino, &n))) {
		fuse_reply_err(req, ret);
		return;
	}
	if (!(h = fh_new(xfs, FH_DIR))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if ((ret = node_list(xfs, &n, &h->dir))) {
		fh_free(h);
		fuse_reply_err(req, ret);
		return;
	}
	fi->fh = (uintptr_t)h;
	if (fuse_reply_open(req, fi) == -ENOENT)
		fh_free(h);
}

static void xfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	xfs_op_opendir(req, req_xfs(req), ino, fi);
}

void xfs_op_readdir(fuse_req_t req, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fh *h = fh_of(fi);
	char *buf;
	size_t used = 0;

	if (!h || h->kind != FH_DIR || off < 0) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (!(buf = malloc(size ? size : 1))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* the offset of an entry is its index + 1: where to go on after it */
	for (size_t i = (size_t)off; i < h->dir.nr; i++) {
		const struct dirent_rec *d = &h->dir.ents[i];
		struct stat st;
		size_t n;

		memset(&st, 0, sizeof(st));
		/* a hint only (readdir counts no reference): 0 if unknown */
		st.st_ino = d->ino ? xfs_ino_out(h->xfs, d->ino, 0) : 0;
		if (!st.st_ino)
			st.st_ino = 0xffffffffu;
		st.st_mode = d->mode;
		n = fuse_add_direntry(req, buf + used, size - used, d->name, &st,
				      (off_t)(i + 1));
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void xfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	xfs_op_readdir(req, size, off, fi);
}

/* ---- extended attributes -------------------------------------------------- */

static const char *const xattr_names[] = {
	"user.git.type", "user.git.size", "user.git.sha1", "user.git.sha256",
};

/* The name in `algo` of object node n: NULL if it has none. */
static const struct oid *name_in(const struct node *n,
				 const struct hash_algo *algo)
{
	if (n->sha256.algo == algo)
		return &n->sha256;	/* the repository's own */
	if (view_algo(n->view) == algo)
		return &n->name;
	return n->sha1.algo ? &n->sha1 : NULL;	/* not named yet, or none */
}

/* The value of xattr `i` of object node n into out; 0 if it has none. */
static int xattr_value(const struct node *n, size_t i, char *out, size_t cap)
{
	char hex[OID_HEXSZ_MAX + 1];
	const struct oid *name;

	switch (i) {
	case 0:
		return snprintf(out, cap, "%s", type_name(n->type));
	case 1:
		return snprintf(out, cap, "%llu", (unsigned long long)n->size);
	default:
		name = name_in(n, i == 2 ? &hash_sha1 : &hash_sha256);
		return name ? snprintf(out, cap, "%s", oid_to_hex_r(hex, name)) : 0;
	}
}

void xfs_op_getxattr(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		     const char *name, size_t size)
{
	struct node n;
	char value[OID_HEXSZ_MAX + 32];
	int len;

	if (node_get(xfs, ino, &n)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n.kind != NODE_OBJECT) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	node_refresh_sha1(xfs, &n);
	for (size_t i = 0; i < sizeof(xattr_names) / sizeof(*xattr_names); i++) {
		if (strcmp(name, xattr_names[i]))
			continue;
		if (!(len = xattr_value(&n, i, value, sizeof(value))))
			break;
		if (!size)
			fuse_reply_xattr(req, (size_t)len);
		else if (size < (size_t)len)
			fuse_reply_err(req, ERANGE);
		else
			fuse_reply_buf(req, value, (size_t)len);
		return;
	}
	fuse_reply_err(req, ENODATA);
}

static void xfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 size_t size)
{
	xfs_op_getxattr(req, req_xfs(req), ino, name, size);
}

void xfs_op_listxattr(fuse_req_t req, struct xfs *xfs, fuse_ino_t ino,
		      size_t size)
{
	struct node n;
	char list[128], value[OID_HEXSZ_MAX + 32];
	size_t len = 0;

	if (!node_get(xfs, ino, &n) && n.kind == NODE_OBJECT) {
		node_refresh_sha1(xfs, &n);
		for (size_t i = 0; i < sizeof(xattr_names) / sizeof(*xattr_names); i++) {
			size_t l = strlen(xattr_names[i]) + 1;

			if (!xattr_value(&n, i, value, sizeof(value)))
				continue;
			memcpy(list + len, xattr_names[i], l);
			len += l;
		}
	}
	if (!size)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, list, len);
}

static void xfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	xfs_op_listxattr(req, req_xfs(req), ino, size);
}

static void xfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct xfs *xfs = req_xfs(req);
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	pthread_mutex_lock(&xfs->status_lock);
	sv.f_files = xfs->status.objects * XFS_VIEW__COUNT;
	pthread_mutex_unlock(&xfs->status_lock);
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* ---- writes: none ------------------------------------------------------------ */

static void erofs(fuse_req_t req)
{
	fuse_reply_err(req, EROFS);
}

static void xfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			int to_set, struct fuse_file_info *fi)
{
	erofs(req);
}

static void xfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev)
{
	erofs(req);
}

static void xfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode)
{
	erofs(req);
}

static void xfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	erofs(req);
}

static void xfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			const char *name)
{
	erofs(req);
}

static void xfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		       fuse_ino_t newparent, const char *newname,
		       unsigned int flags)
{
	erofs(req);
}

static void xfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		     const char *newname)
{
	erofs(req);
}

static void xfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		      size_t size, off_t off, struct fuse_file_info *fi)
{
	erofs(req);
}

static void xfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, struct fuse_file_info *fi)
{
	erofs(req);
}

static void xfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 const char *value, size_t size, int flags)
{
	erofs(req);
}

static void xfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	erofs(req);
}

static void xfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			  off_t offset, off_t length, struct fuse_file_info *fi)
{
	erofs(req);
}

void xfs_ops_readonly(struct fuse_lowlevel_ops *ops)
{
	ops->setattr = xfs_setattr;
	ops->mknod = xfs_mknod;
	ops->mkdir = xfs_mkdir;
	ops->unlink = xfs_unlink;
	ops->rmdir = xfs_unlink;
	ops->symlink = xfs_symlink;
	ops->rename = xfs_rename;
	ops->link = xfs_link;
	ops->write = xfs_write;
	ops->create = xfs_create;
	ops->setxattr = xfs_setxattr;
	ops->removexattr = xfs_removexattr;
	ops->fallocate = xfs_fallocate;
}

const struct fuse_lowlevel_ops xfs_ops = {
	.init = xfs_op_init,
	.lookup = xfs_lookup,
	.forget = xfs_forget,
	.forget_multi = xfs_forget_multi,
	.getattr = xfs_getattr,
	.open = xfs_open,
	.read = xfs_read,
	.release = xfs_release,
	.opendir = xfs_opendir,
	.readdir = xfs_readdir,
	.releasedir = xfs_release,
	.getxattr = xfs_getxattr,
	.listxattr = xfs_listxattr,
	.statfs = xfs_statfs,
	/* the writes: xfs_ops_readonly() */
};
