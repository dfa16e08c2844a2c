/*
 * fuzz-tree-delta.c: the translated pack's tree deltas (xlate/pack1.c),
 * both ways round: SHA-256 trees to SHA-1 forms, and SHA-1 trees to
 * SHA-256 forms.  The build's walk works a delta out from the two
 * trees' native forms (xlate_tree_delta_native()); readers of the pack
 * make it again from the two translated forms (xlate_tree_delta()).  A
 * layout is only good if both make the same bytes, so: for a base and a
 * target tree described by the input, both ways give the same delta,
 * and that delta, applied to the base's translated form, makes the
 * target's.
 *
 * Input: entries of three bytes (mode, name, object), the base's, then
 * 0xff, then the target's.  Names and objects come from small pools, so
 * that the two trees share entries, in and out of order, and the same
 * object shows under several names; a name byte over 0xc0 takes a long
 * name, past one insert instruction's 127 bytes.  The SHA-256 names of
 * the pool differ in their first 20 bytes, which are their SHA-1 names:
 * one SHA-1 name each, as the build's refusal of collisions ensures.
 *
 * The walk also works both out by walking the target against a tree
 * it shares entries with (tree_merge.c): the delta from the base's
 * index (xlate_tree_delta_merged()), which must be the same bytes
 * whenever it says it can, and must say so when both trees are in
 * Git's order; and the target's SHA-1 form from the base's
 * (xlate_tree_against()), which must be what xlate_object() makes,
 * whatever the order.
 */
#include "fuzz.h"
#include "../../xlate/xlate_i.h"

static const char *const modes[] = { "100644", "100755", "40000", "120000" };

/* Entry (m, n, o) of a tree with names rawsz bytes long, into t. */
static int add_entry(struct buf *t, size_t rawsz, uint8_t m, uint8_t n,
		     uint8_t o)
{
	unsigned char name[32];
	char path[200];

	if (n > 0xc0)
		snprintf(path, sizeof(path), "%0150u", (unsigned)n);
	else
		snprintf(path, sizeof(path), "f%u", (unsigned)(n % 24));
	for (int i = 0; i < 32; i++)
		name[i] = (unsigned char)((o % 16) * 16 + i);
	return buf_addf(t, "%s %s", modes[m % 4], path) ?:
	       buf_addch(t, '\0') ?: buf_add(t, name, rawsz);
}

/* The pool's SHA-1 names are the first 20 bytes of its SHA-256 ones. */
static int map_prefix(void *data, const struct oid *in, struct oid *out)
{
	(void)data;
	oid_from_raw(out, &hash_sha1, in->hash);
	return 0;
}

/* And the other way round: byte i of a pool name is its first plus i. */
static int map_extend(void *data, const struct oid *in, struct oid *out)
{
	unsigned char name[32];

	(void)data;
	for (int i = 0; i < 32; i++)
		name[i] = (unsigned char)(in->hash[0] + i);
	oid_from_raw(out, &hash_sha256, name);
	return 0;
}

/*
 * Every way of making the translated pack's delta and form agrees, for
 * native trees b and t (names of `from`) and their translated forms b1
 * and t1 (names of `to`).
 */
static void check_direction(const struct hash_algo *from,
			    const struct hash_algo *to, xlate_map_fn map,
			    const struct buf *b, const struct buf *t,
			    const struct buf *b1, const struct buf *t1)
{
	struct xlate_opts o = { from, to, map, NULL, XLATE_UNKNOWN_FAIL, NULL };
	struct xlate_tree_ix bix, tix, mix;
	struct buf dm = BUF_INIT, conv = BUF_INIT, against = BUF_INIT;
	struct buf d1 = BUF_INIT, dn = BUF_INIT, made = BUF_INIT;
	int r1, rn, rm;

	r1 = xlate_tree_delta(to, b1, t1, &d1);
	rn = xlate_tree_delta_native(from, to, b, t, t1, &dn);
	fuzz_check(!r1 && !rn);
	fuzz_check(d1.len == dn.len && !memcmp(d1.buf, dn.buf, d1.len));
	fuzz_check(!delta_apply((const unsigned char *)b1->buf, b1->len,
				(const unsigned char *)d1.buf, d1.len, &made));
	fuzz_check(made.len == t1->len && !memcmp(made.buf, t1->buf, t1->len));

	xlate_tree_ix_init(&bix);
	xlate_tree_ix_init(&tix);
	xlate_tree_ix_init(&mix);
	fuzz_check(!xlate_tree_ix_build(&bix, from, b->buf, b->len));
	fuzz_check(!xlate_tree_ix_build(&tix, from, t->buf, t->len));
	rm = xlate_tree_delta_merged(&bix, t->buf, t->len, t1, to, &dm);
	fuzz_check(!rm || rm == XL_EUNSUPPORTED);
	if (bix.sorted && tix.sorted)
		fuzz_check(!rm);
	if (!rm)
		fuzz_check(dm.len == d1.len && !memcmp(dm.buf, d1.buf, d1.len));
	fuzz_check(!xlate_object(&o, OBJ_TREE, t->buf, t->len, &conv));
	fuzz_check(conv.len == t1->len && !memcmp(conv.buf, t1->buf, t1->len));
	fuzz_check(!xlate_tree_against(&o, t->buf, t->len, &bix, b1->buf,
				       b1->len, &against, &mix));
	fuzz_check(against.len == conv.len &&
		   !memcmp(against.buf, conv.buf, conv.len));
	/* and the target's index made on the way is the parsed one */
	fuzz_check(mix.nr == tix.nr &&
		   !memcmp(mix.at, tix.at, (tix.nr + 1) * sizeof(*tix.at)));
	fuzz_check(!bix.sorted || mix.sorted == tix.sorted);
	fuzz_check(mix.has_gitlink >= tix.has_gitlink);
	xlate_tree_ix_release(&bix);
	xlate_tree_ix_release(&tix);
	xlate_tree_ix_release(&mix);
	buf_release(&dm);
	buf_release(&conv);
	buf_release(&against);
	buf_release(&d1);
	buf_release(&dn);
	buf_release(&made);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf b256 = BUF_INIT, t256 = BUF_INIT, b1 = BUF_INIT, t1 = BUF_INIT;
	struct buf *into256 = &b256, *into1 = &b1;

	if (size > 3 * 2000)
		return 0;
	for (size_t i = 0; i < size;) {
		if (data[i] == 0xff) {
			into256 = &t256;
			into1 = &t1;
			i++;
			continue;
		}
		if (size - i < 3)
			break;
		fuzz_check(!add_entry(into256, 32, data[i], data[i + 1], data[i + 2]));
		fuzz_check(!add_entry(into1, 20, data[i], data[i + 1], data[i + 2]));
		i += 3;
	}
	/* each entry 12 bytes shorter translated, and 12 longer the other way */
	check_direction(&hash_sha256, &hash_sha1, map_prefix, &b256, &t256, &b1, &t1);
	check_direction(&hash_sha1, &hash_sha256, map_extend, &b1, &t1, &b256, &t256);
	buf_release(&b256);
	buf_release(&t256);
	buf_release(&b1);
	buf_release(&t1);
	return 0;
}
