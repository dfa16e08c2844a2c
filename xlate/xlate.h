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
	XLATE_REF_TREE_ENTRY,	/* blob, tree or symlink entry */
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

#endif
