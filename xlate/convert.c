/*
 * convert.c: one object from one algorithm's form to the other's.
 *
 * Byte-for-byte what upstream Git's object-file-convert.c produces, the
 * quirks included, because a name is only right if every byte is:
 *
 *   - trees are checked the way upstream checks them: the remaining
 *     bytes must hold at least rawsz+3 and end in "NUL + raw name", the
 *     mode must be octal digits up to a space, the name non-empty;
 *   - commit header keys are matched as upstream matches them (`tree `
 *     and `parent ` need something after the space; `author `,
 *     `committer `, `encoding ` and `gpgsig` are copied with their
 *     continuation lines); hex is read in either case and written in
 *     lower case;
 *   - a tag's in-body signature is the *last* line starting with an
 *     armor marker; the header for the target algorithm becomes the new
 *     in-body signature, any other gpgsig* header is dropped, and the old
 *     in-body signature becomes a header just before the first blank
 *     line.  Like upstream (which works on C strings there), the search
 *     for that blank line and the copy of the signature stop at a NUL.
 *
 * Every read is bounded by the object's length; nothing recurses (a
 * mergetag's tag is converted by a plain call, one level deep).
 */
#include "xlate_i.h"

#include <string.h>

static const unsigned char empty_tree[2][32] = {
	{ 0x4b, 0x82, 0x5d, 0xc6, 0x42, 0xcb, 0x6e, 0xb9, 0xa0, 0x60,
	  0xe5, 0x4b, 0xf8, 0xd6, 0x92, 0x88, 0xfb, 0xee, 0x49, 0x04 },
	{ 0x6e, 0xf1, 0x9b, 0x41, 0x22, 0x5c, 0x53, 0x69, 0xf1, 0xc1, 0x04,
	  0xd4, 0x5d, 0x8d, 0x85, 0xef, 0xa9, 0xb0, 0x57, 0xb5, 0x3b, 0x14,
	  0xb4, 0xb9, 0xb9, 0x39, 0xdd, 0x74, 0xde, 0xcc, 0x53, 0x21 },
};

static const unsigned char empty_blob[2][32] = {
	{ 0xe6, 0x9d, 0xe2, 0x9b, 0xb2, 0xd1, 0xd6, 0x43, 0x4b, 0x8b,
	  0x29, 0xae, 0x77, 0x5a, 0xd8, 0xc2, 0xe4, 0x8c, 0x53, 0x91 },
	{ 0x47, 0x3a, 0x0f, 0x4c, 0x3b, 0xe8, 0xa9, 0x36, 0x81, 0xa2, 0x67,
	  0xe3, 0xb1, 0xe9, 0xa7, 0xdc, 0xda, 0x11, 0x85, 0x43, 0x6f, 0xe1,
	  0x41, 0xf7, 0x74, 0x91, 0x20, 0xa3, 0x03, 0x72, 0x18, 0x13 },
};

/* The header that carries a signature over algorithm `algo`'s form. */
static const char *sig_header(const struct hash_algo *algo)
{
	return algo->id == HASH_SHA1 ? "gpgsig" : "gpgsig-sha256";
}

int xlate_builtin(const struct oid *in, const struct hash_algo *to,
		  struct oid *out)
{
	int from_i = in->algo->id == HASH_SHA1 ? 0 : 1;
	int to_i = to->id == HASH_SHA1 ? 0 : 1;

	if (oid_is_null(in)) {
		memset(out, 0, sizeof(*out));
		out->algo = to;
		return 1;
	}
	if (!memcmp(in->hash, empty_tree[from_i], in->algo->rawsz)) {
		oid_from_raw(out, to, empty_tree[to_i]);
		return 1;
	}
	if (!memcmp(in->hash, empty_blob[from_i], in->algo->rawsz)) {
		oid_from_raw(out, to, empty_blob[to_i]);
		return 1;
	}
	return 0;
}

static int map_oid(const struct xlate_opts *o, const struct oid *in,
		   struct oid *out)
{
	if (xlate_builtin(in, o->to, out))
		return 0;
	return o->map(o->map_data, in, out);
}

/* "what <hex>": the mapping failed; keep its code, say which reference. */
static int map_failed(int ret, const char *what, const struct oid *oid)
{
	char hex[OID_HEXSZ_MAX + 1];

	oid_to_hex_r(hex, oid);
	if (ret == XL_ENOTFOUND || ret == XL_EUNSUPPORTED)
		return err_set(ret, what, hex);
	return ret;
}

/* ---- trees ---------------------------------------------------------- */

/*
 * One entry at p (end - p bytes left), as upstream's
 * decode_tree_entry_raw reads it.  *name points after the mode's space,
 * *name_len counts the name and its NUL.
 */
int xlate_tree_entry(const char *p, const char *end, size_t rawsz,
		     unsigned *mode, const char **name, size_t *name_len)
{
	size_t size = (size_t)(end - p);
	const char *q = p, *nul;

	if (size < rawsz + 3 || end[-(long)(rawsz + 1)] != '\0')
		return ERR_CORRUPT("failed to decode tree entry");
	/* the NUL before the last raw name stops both scans below */
	if (*q == ' ')
		return ERR_CORRUPT("failed to decode tree entry");
	*mode = 0;
	while (*q != ' ') {
		if (*q < '0' || *q > '7')
			return ERR_CORRUPT("failed to decode tree entry");
		*mode = (*mode << 3) + (unsigned)(*q - '0');
		q++;
	}
	q++;
	if (!*q)
		return ERR_CORRUPT("failed to decode tree entry");
	nul = memchr(q, '\0', (size_t)(end - q));
	*name = q;
	*name_len = (size_t)(nul - q) + 1;
	return 0;
}

/* One entry at p (mode, name as xlate_tree_entry() found them), onto out. */
static int convert_entry(const struct xlate_opts *o, const char *p,
			 unsigned mode, const char *name, size_t name_len,
			 struct buf *out)
{
	struct oid in, mapped;
	int ret;

	oid_from_raw(&in, o->from, (const unsigned char *)name + name_len);
	if ((mode & 0170000) == 0160000 && o->map_gitlink &&
	    !xlate_builtin(&in, o->to, &mapped))
		ret = o->map_gitlink(o->map_data, &in, &mapped);
	else
		ret = map_oid(o, &in, &mapped);
	if (ret)
		return map_failed(ret, "failed to map tree entry for %s", &in);
	return buf_add(out, p, (size_t)(name - p) + name_len) ?:
	       buf_add(out, mapped.hash, o->to->rawsz);
}

static int convert_tree(const struct xlate_opts *o, const char *buf,
			size_t len, struct buf *out)
{
	const char *p = buf, *end = buf + len;
	size_t rawsz = o->from->rawsz;
	int ret;

	while (p < end) {
		const char *name;
		size_t name_len;
		unsigned mode;

		if ((ret = xlate_tree_entry(p, end, rawsz, &mode, &name, &name_len)) ||
		    (ret = convert_entry(o, p, mode, name, name_len, out)))
			return ret;
		p = name + name_len + rawsz;
	}
	return 0;
}

/*
 * Against a reference (tree_merge.c): a shared stretch is the
 * reference's SHA-1 entries as they are, since an entry's conversion is
 * a function of its bytes; the tree's own entries convert one by one, in
 * the tree's order, so the first that fails is the one convert_tree()
 * would have stopped at.
 */
struct against {
	const struct xlate_opts *o;
	const struct xlate_tree_ix *ref;
	const char *ref1;
	struct buf *out;
};

static int against_step(void *data, const struct xlate_merge_step *s)
{
	struct against *a = data;
	/* an entry's translated form is this much longer (either sign) */
	int64_t grow = (int64_t)a->o->to->rawsz - (int64_t)a->ref->rawsz;
	int64_t from, to;

	if (s->kind == XLATE_MERGE_OWN)
		return convert_entry(a->o, s->p, s->mode, s->name, s->name_len,
				     a->out);
	from = (int64_t)a->ref->at[s->first] + (int64_t)s->first * grow;
	to = (int64_t)a->ref->at[s->end] + (int64_t)s->end * grow;
	return buf_add(a->out, a->ref1 + from, (size_t)(to - from));
}

int xlate_tree_against(const struct xlate_opts *o, const char *t, size_t tlen,
		       const struct xlate_tree_ix *ref, const char *ref1,
		       size_t ref1_len, struct buf *out, struct xlate_tree_ix *t_ix)
{
	struct against a = { o, ref, ref1, out };
	int ret;

	buf_reset(out);
	if (o->from->rawsz != ref->rawsz ||
	    (int64_t)ref1_len != (int64_t)ref->len + (int64_t)ref->nr *
	    ((int64_t)o->to->rawsz - (int64_t)ref->rawsz))
		return err_set(XL_EINVALID, "a reference tree whose forms differ");
	if (buf_grow(out, tlen))
		return err_set(XL_ENOMEM, "out of memory");
	ret = xlate_tree_merge(ref, t, tlen, against_step, &a, NULL, t_ix);
	if (!ret && out->failed)
		ret = err_set(XL_ENOMEM, "out of memory converting an object");
	if (ret)
		buf_reset(out);
	return ret;
}

/* ---- tags ----------------------------------------------------------- */

static const char *const armor[] = {
	"-----BEGIN PGP SIGNATURE-----",
	"-----BEGIN PGP MESSAGE-----",
	"-----BEGIN SIGNED MESSAGE-----",
	"-----BEGIN SSH SIGNATURE-----",
};

static int starts_with_n(const char *p, const char *end, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(end - p) >= n && !memcmp(p, s, n);
}

/* Where the in-body signature starts (the last armor line), or len. */
static size_t signed_payload_len(const char *buf, size_t len)
{
	size_t at = 0, match = len;

	while (at < len) {
		const char *eol;

		for (size_t i = 0; i < sizeof(armor) / sizeof(*armor); i++)
			if (starts_with_n(buf + at, buf + len, armor[i]))
				match = at;
		eol = memchr(buf + at, '\n', len - at);
		at = eol ? (size_t)(eol - buf) + 1 : len;
	}
	return match;
}

/*
 * Split the part of a tag before its in-body signature: the header named
 * for `algo` goes to sig (without "name SP" and one SP per continuation
 * line), any other gpgsig* header is dropped with its continuations, and
 * the rest (and everything from the first blank line on) goes to payload.
 */
static void split_header_signature(const char *buf, size_t len,
				   const struct hash_algo *algo,
				   struct buf *payload, struct buf *sig)
{
	const char *line = buf, *tail = buf + len;
	const char *name = sig_header(algo);
	size_t name_len = strlen(name);
	int in_sig = 0, other = 0;

	while (line < tail) {
		const char *next = memchr(line, '\n', (size_t)(tail - line));
		const char *s = NULL;

		next = next ? next + 1 : tail;
		if (in_sig && line[0] == ' ') {
			s = line + 1;
		} else if (starts_with_n(line, tail, name) &&
			   line + name_len < tail && line[name_len] == ' ') {
			s = line + name_len + 1;
			other = 0;
		} else if (starts_with_n(line, tail, "gpgsig")) {
			other = 1;
		} else if (other && line[0] != ' ') {
			other = 0;
		}
		if (s) {
			buf_add(sig, s, (size_t)(next - s));
			in_sig = 1;
		} else {
			if (line[0] == '\n')
				next = tail;	/* the message, whole */
			if (!other)
				buf_add(payload, line, (size_t)(next - line));
			in_sig = 0;
		}
		line = next;
	}
}

/*
 * Insert sig as a header named for `algo` just before the first blank
 * line of out (or at its end): "name SP line1", then " line" for each
 * further line.  Both scans stop at a NUL, as upstream's C-string code
 * does.
 */
static void add_header_signature(struct buf *out, const char *sig,
				 size_t sig_len, const struct hash_algo *algo)
{
	struct buf tail = BUF_INIT;
	size_t pos = out->len, n;
	const char *p, *end;

	n = strnlen(out->buf, out->len);
	for (size_t i = 0; i + 1 < n; i++)
		if (out->buf[i] == '\n' && out->buf[i + 1] == '\n') {
			pos = i + 1;
			break;
		}
	buf_add(&tail, out->buf + pos, out->len - pos);
	buf_setlen(out, pos);

	end = sig + strnlen(sig, sig_len);
	for (p = sig; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t l = eol ? (size_t)(eol - p) + 1 : (size_t)(end - p);

		if (p == sig)
			buf_addstr(out, sig_header(algo));
		buf_addch(out, ' ');
		buf_add(out, p, l);
		p += l;
	}
	buf_add(out, tail.buf, tail.len);
	if (tail.failed)
		out->failed = 1;	/* a piece is missing: say so */
	buf_release(&tail);
}

static int convert_tag(const struct xlate_opts *o, const char *buf,
		       size_t len, struct buf *out)
{
	struct buf payload = BUF_INIT, other = BUF_INIT;
	size_t obj_line = 7 + o->from->hexsz, body_len, sig_at;
	struct oid in, mapped;
	char hex[OID_HEXSZ_MAX + 1];
	const char *body;
	int ret;

	if (obj_line >= len || memcmp(buf, "object ", 7) || buf[obj_line] != '\n')
		return ERR_CORRUPT("bogus tag object");
	if (oid_from_hex(&in, o->from, buf + 7))
		return ERR_CORRUPT("bad tag object ID");
	if ((ret = map_oid(o, &in, &mapped)))
		return map_failed(ret, "unable to map tree %s in tag object", &in);
	body = buf + obj_line + 1;
	body_len = len - obj_line - 1;

	/* our algorithm's signature is in the body; the other's in a header */
	sig_at = signed_payload_len(body, body_len);
	split_header_signature(body, sig_at, o->to, &payload, &other);

	buf_addstr(out, "object ");
	buf_addstr(out, oid_to_hex_r(hex, &mapped));
	buf_addch(out, '\n');
	buf_add(out, payload.buf, payload.len);
	if (sig_at < body_len)
		add_header_signature(out, body + sig_at, body_len - sig_at,
				     o->from);
	buf_add(out, other.buf, other.len);
	if (payload.failed || other.failed)
		out->failed = 1;
	buf_release(&payload);
	buf_release(&other);
	return 0;
}

/* ---- commits -------------------------------------------------------- */

/* `key <hex>\n` with exactly hexsz digits: parse, map, write back. */
static int convert_name_line(const struct xlate_opts *o, const char *line,
			     const char *eol, const char *key,
			     struct buf *out)
{
	size_t klen = strlen(key);
	struct oid in, mapped;
	char hex[OID_HEXSZ_MAX + 1];
	int ret;

	if ((size_t)(eol - line) != klen + 1 + o->from->hexsz ||
	    oid_from_hex(&in, o->from, line + klen + 1))
		return ERR_CORRUPT("bad %s in commit", key);
	if ((ret = map_oid(o, &in, &mapped))) {
		char what[64];

		snprintf(what, sizeof(what), "unable to map %s %%s in commit object",
			 key);
		return map_failed(ret, what, &in);
	}
	buf_addstr(out, key);
	buf_addch(out, ' ');
	buf_addstr(out, oid_to_hex_r(hex, &mapped));
	buf_addch(out, '\n');
	return 0;
}

/*
 * A mergetag header at *pp (eol ends its first line): unfold the tag,
 * convert it, fold it back.  *pp moves past its continuation lines.
 */
static int convert_mergetag(const struct xlate_opts *o, const char **pp,
			    const char *eol, const char *tail,
			    struct buf *out)
{
	struct buf tag = BUF_INIT, conv = BUF_INIT;
	const char *p = *pp, *q;
	int ret;

	buf_add(&tag, p + 9, (size_t)(eol - (p + 9)) + 1);
	p = eol + 1;
	while (p < tail && *p == ' ') {
		eol = memchr(p, '\n', (size_t)(tail - p));
		if (!eol) {
			buf_release(&tag);
			return ERR_CORRUPT("bad mergetag continuation in commit");
		}
		buf_add(&tag, p + 1, (size_t)(eol - p));
		p = eol + 1;
	}
	ret = tag.failed ? err_set(XL_ENOMEM, "out of memory") :
	      convert_tag(o, tag.buf, tag.len, &conv);
	if (!ret && conv.failed)
		ret = err_set(XL_ENOMEM, "out of memory");
	buf_release(&tag);
	if (ret) {
		buf_release(&conv);
		return ret;
	}
	/* "mergetag" + " line" for every line, then complete the last line */
	buf_addstr(out, "mergetag");
	for (q = conv.buf; q < conv.buf + conv.len;) {
		const char *nl = memchr(q, '\n', (size_t)(conv.buf + conv.len - q));
		size_t l = nl ? (size_t)(nl - q) + 1 : (size_t)(conv.buf + conv.len - q);

		buf_addch(out, ' ');
		buf_add(out, q, l);
		q += l;
	}
	if (out->len && out->buf[out->len - 1] != '\n')
		buf_addch(out, '\n');
	buf_release(&conv);
	*pp = p;
	return 0;
}

static int convert_commit(const struct xlate_opts *o, const char *buf,
			  size_t len, struct buf *out)
{
	const char *p = buf, *tail = buf + len, *eol;
	int ret;

	while (p < tail && *p != '\n') {
		eol = memchr(p, '\n', (size_t)(tail - p));
		if (!eol)
			return ERR_CORRUPT("bad line in commit");
		if (p + 5 < eol && !memcmp(p, "tree ", 5)) {
			if ((ret = convert_name_line(o, p, eol, "tree", out)))
				return ret;
		} else if (p + 7 < eol && !memcmp(p, "parent ", 7)) {
			if ((ret = convert_name_line(o, p, eol, "parent", out)))
				return ret;
		} else if (p + 9 < eol && !memcmp(p, "mergetag ", 9)) {
			if ((ret = convert_mergetag(o, &p, eol, tail, out)))
				return ret;
			continue;	/* p is past its continuation lines */
		} else if ((p + 7 < tail && !memcmp(p, "author ", 7)) ||
			   (p + 10 < tail && !memcmp(p, "committer ", 10)) ||
			   (p + 9 < tail && !memcmp(p, "encoding ", 9)) ||
			   (p + 6 < tail && !memcmp(p, "gpgsig", 6)) ||
			   o->unknown_headers == XLATE_UNKNOWN_COPY) {
			buf_add(out, p, (size_t)(eol - p) + 1);
		} else {
			const char *sp = memchr(p, ' ', (size_t)(eol - p));
			int n = (int)((sp ? sp : eol) - p);

			/* it might embed a name we cannot see: refuse, as upstream */
			return err_set(XL_EUNSUPPORTED,
				       "unknown commit header '%.*s'",
				       n > 64 ? 64 : n, p);
		}
		/* continuation lines of that header, copied */
		p = eol + 1;
		while (p < tail && *p == ' ') {
			eol = memchr(p, '\n', (size_t)(tail - p));
			if (!eol)
				return ERR_CORRUPT("bad continuation in commit");
			buf_add(out, p, (size_t)(eol - p) + 1);
			p = eol + 1;
		}
	}
	/* the blank line and the message, verbatim */
	buf_add(out, p, (size_t)(tail - p));
	return 0;
}

int xlate_object(const struct xlate_opts *o, enum obj_type type,
		 const char *buf, size_t len, struct buf *out)
{
	int ret;

	buf_reset(out);
	switch (type) {
	case OBJ_BLOB:
		return buf_add(out, buf, len);
	case OBJ_TREE:
		ret = convert_tree(o, buf, len, out);
		break;
	case OBJ_COMMIT:
		ret = convert_commit(o, buf, len, out);
		break;
	case OBJ_TAG:
		ret = convert_tag(o, buf, len, out);
		break;
	default:
		return err_set(XL_EINVALID, "cannot convert an object of type %d",
			       type);
	}
	/*
	 * The converters append piece by piece and check once, here: bytes
	 * with a piece missing would get a wrong name, which is worse than
	 * none.
	 */
	if (!ret && out->failed)
		ret = err_set(XL_ENOMEM, "out of memory converting an object");
	if (ret)
		buf_reset(out);
	return ret;
}

/* ---- references ----------------------------------------------------- */

/* The `object <hex>` line of a tag at buf (as the converter requires it). */
static int tag_target(const struct hash_algo *algo, const char *buf,
		      size_t len, struct oid *oid)
{
	size_t obj_line = 7 + algo->hexsz;

	if (obj_line >= len || memcmp(buf, "object ", 7) || buf[obj_line] != '\n' ||
	    oid_from_hex(oid, algo, buf + 7))
		return ERR_CORRUPT("bogus tag object");
	return 0;
}

int xlate_refs(const struct hash_algo *algo, enum obj_type type,
	       const char *buf, size_t len, xlate_ref_fn fn, void *data)
{
	const char *p = buf, *end = buf + len, *eol;
	struct oid oid;
	int ret;

	switch (type) {
	case OBJ_TREE:
		while (p < end) {
			enum xlate_ref_kind kind;
			const char *name;
			size_t name_len;
			unsigned mode;

			if ((ret = xlate_tree_entry(p, end, algo->rawsz, &mode,
						    &name, &name_len)))
				return ret;
			oid_from_raw(&oid, algo, (const unsigned char *)name + name_len);
			kind = (mode & 0170000) == 0160000 ? XLATE_REF_GITLINK :
			       (mode & 0170000) == 0040000 ? XLATE_REF_SUBTREE :
			       XLATE_REF_TREE_ENTRY;
			if ((ret = fn(data, kind, &oid, name, name_len - 1)))
				return ret;
			p = name + name_len + algo->rawsz;
		}
		return 0;
	case OBJ_TAG:
		if ((ret = tag_target(algo, buf, len, &oid)))
			return ret;
		return fn(data, XLATE_REF_TAG_OBJECT, &oid, NULL, 0);
	case OBJ_COMMIT:
		while (p < end && *p != '\n') {
			enum xlate_ref_kind kind;
			size_t klen;

			eol = memchr(p, '\n', (size_t)(end - p));
			if (!eol)
				return ERR_CORRUPT("bad line in commit");
			if (p + 5 < eol && !memcmp(p, "tree ", 5)) {
				kind = XLATE_REF_TREE;
				klen = 5;
			} else if (p + 7 < eol && !memcmp(p, "parent ", 7)) {
				kind = XLATE_REF_PARENT;
				klen = 7;
			} else if (p + 9 < eol && !memcmp(p, "mergetag ", 9)) {
				/* the unfolded tag starts "object <hex>\n" on this line */
				if (tag_target(algo, p + 9, (size_t)(eol - p - 9) + 1, &oid))
					return ERR_CORRUPT("bad mergetag in commit");
				if ((ret = fn(data, XLATE_REF_MERGETAG, &oid, NULL, 0)))
					return ret;
				p = eol + 1;
				continue;
			} else {
				p = eol + 1;
				continue;
			}
			if ((size_t)(eol - p) != klen + algo->hexsz ||
			    oid_from_hex(&oid, algo, p + klen))
				return ERR_CORRUPT("bad %.*s in commit", (int)klen - 1, p);
			if ((ret = fn(data, kind, &oid, NULL, 0)))
				return ret;
			p = eol + 1;
		}
		return 0;
	default:
		return 0;
	}
}
