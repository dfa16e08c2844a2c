/*
 * fuzz-object.c: trees, commits and tags: xlate_refs() and xlate_object()
 * in both directions, mergetags and signatures included.
 *
 * Input: one byte (bits 0-1: tree, commit or tag; bit 2: the object is
 * in SHA-1 form, else SHA-256; bit 3: copy unknown commit headers), then
 * the object's bytes.  Names map by a made-up rule that is one to one
 * (a SHA-256 name's SHA-1 twin is its first 20 bytes turned; a SHA-1
 * name's SHA-256 twin is it padded): a name whose twin another name has
 * already taken is refused, as a collision is.
 *
 * Invariants: an object that converts is one xlate_refs() parses, and
 * every name the conversion asked for is a reference it lists.  Unless
 * it holds a signature, converted back with the pairs the first
 * conversion used and forth again, it is what the first conversion made;
 * and where it names objects in lower-case hex, the trip back gives the
 * very bytes it started from.  Upstream's rules write hex in lower case,
 * and they swap signatures between header and body by their markers and
 * drop a gpgsig header of the wrong name, so a signature that is not
 * armored, or one whose text begins "gpgsig", is not kept by a round
 * trip: that is the rule.  The fixtures hold the signed cases (and their
 * trips) to the byte.
 */
#include "fuzz.h"
#include "../../xlate/xlate.h"

#define PAIRS_MAX 1024

struct pairs {
	struct oid from[PAIRS_MAX], to[PAIRS_MAX];
	size_t nr;
	int reverse;	/* look up by `to`, answer `from` */
};

static void twin(const struct oid *in, struct oid *out)
{
	unsigned char raw[32] = { 0 };

	if (in->algo == &hash_sha256) {
		for (int i = 0; i < 20; i++)
			raw[i] = in->hash[i] ^ 0x5a;
		oid_from_raw(out, &hash_sha1, raw);
	} else {
		memcpy(raw, in->hash, 20);
		memset(raw + 20, 0xa5, 12);
		oid_from_raw(out, &hash_sha256, raw);
	}
}

static int map(void *data, const struct oid *in, struct oid *out)
{
	struct pairs *p = data;
	struct oid t;

	if (p->reverse) {
		for (size_t i = 0; i < p->nr; i++)
			if (!oid_cmp(&p->to[i], in)) {
				*out = p->from[i];
				return 0;
			}
		return err_set(XL_ENOTFOUND, "no pair");
	}
	twin(in, &t);
	for (size_t i = 0; i < p->nr; i++) {
		if (!oid_cmp(&p->from[i], in)) {
			*out = p->to[i];
			return 0;
		}
		if (!oid_cmp(&p->to[i], &t))
			return err_set(XL_EUNSUPPORTED, "collision");
	}
	if (p->nr == PAIRS_MAX)
		return err_set(XL_EUNSUPPORTED, "too many names");
	p->from[p->nr] = *in;
	p->to[p->nr++] = t;
	*out = t;
	return 0;
}

struct refs_seen {
	struct oid oid[PAIRS_MAX];
	size_t nr;
	int overflow;
};

static int see_ref(void *data, enum xlate_ref_kind kind, const struct oid *oid,
		   const char *name, size_t name_len)
{
	struct refs_seen *r = data;

	if (r->nr == PAIRS_MAX) {
		r->overflow = 1;
		return 0;
	}
	r->oid[r->nr++] = *oid;
	return 0;
}

/* Where upstream's rules move signatures (see the top). */
static int signed_like(const char *obj, size_t len)
{
	return memmem(obj, len, "gpgsig", 6) || memmem(obj, len, "-----BEGIN ", 11);
}

/* Where they may write a name otherwise than it was written. */
static int lossy(const char *obj, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (obj[i] >= 'A' && obj[i] <= 'F')
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum obj_type types[4] = { OBJ_TREE, OBJ_COMMIT, OBJ_TAG, OBJ_TREE };
	struct pairs *p = calloc(1, sizeof(*p));
	struct refs_seen *seen = calloc(1, sizeof(*seen));
	struct buf out = BUF_INIT, back = BUF_INIT, again = BUF_INIT;
	struct xlate_opts o = { 0 }, back_o;
	enum obj_type type;
	char *obj = NULL;
	int refs_ret;

	if (size < 1 || !p || !seen)
		goto out;
	type = types[data[0] & 3];
	o.from = data[0] & 4 ? &hash_sha1 : &hash_sha256;
	o.to = data[0] & 4 ? &hash_sha256 : &hash_sha1;
	o.unknown_headers = data[0] & 8 ? XLATE_UNKNOWN_COPY : XLATE_UNKNOWN_FAIL;
	o.map = map;
	o.map_data = p;
	if (!(obj = (char *)fuzz_copy(data + 1, size - 1)))
		goto out;
	refs_ret = xlate_refs(o.from, type, obj, size - 1, see_ref, seen);
	if (xlate_object(&o, type, obj, size - 1, &out))
		goto out;
	/* what converts, parses; and every name it asked for is a reference */
	fuzz_check(!refs_ret);
	if (!seen->overflow)
		for (size_t i = 0; i < p->nr; i++) {
			size_t k = 0;

			while (k < seen->nr && oid_cmp(&seen->oid[k], &p->from[i]))
				k++;
			fuzz_check(k < seen->nr);
		}
	/* back, and forth again */
	if (signed_like(obj, size - 1))
		goto out;
	back_o = o;
	back_o.from = o.to;
	back_o.to = o.from;
	p->reverse = 1;
	fuzz_check(!xlate_object(&back_o, type, out.buf, out.len, &back));
	p->reverse = 0;
	fuzz_check(!xlate_object(&o, type, back.buf, back.len, &again));
	fuzz_check(again.len == out.len && !memcmp(again.buf, out.buf, out.len));
	if (!lossy(obj, size - 1))
		fuzz_check(back.len == size - 1 && !memcmp(back.buf, obj, size - 1));
out:
	buf_release(&out);
	buf_release(&back);
	buf_release(&again);
	free(obj);
	free(p);
	free(seen);
	err_clear();
	return 0;
}
