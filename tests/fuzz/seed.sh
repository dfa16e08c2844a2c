#!/usr/bin/env bash
# seed.sh OUTDIR: seed inputs for every fuzz target, made from the
# fixtures (tests/fixtures/*.tar.gz), into OUTDIR/<target>/.
#
#   fuzz-idx          each pack's .idx (first byte 0: SHA-256)
#   fuzz-pack         each pack's entries, with the offsets of its first
#                     eight entries that lie within the first 64 KiB
#   fuzz-loose        loose object files
#   fuzz-packed-refs  packed-refs files
#   fuzz-reftable     reftable tables
#   fuzz-config       config files
#   fuzz-object       every tree, commit and tag, SHA-256 form (first
#                     byte: 0 tree, 1 commit, 2 tag)
#   fuzz-delta        deltas Git made between versions of a fixture's
#                     blobs and trees, from its packs (base first)
#   fuzz-submodule-map  the fixtures' submodule maps
#   fuzz-compat       loose-object-idx files naming the objects
#                     fuzz-compat's cache knows, and others
#   fuzz-tree-delta   pairs of trees: one entry changed, entries moved
#                     and repeated, long names, an empty side
#   fuzz-alternates   a few alternates files (absolute, relative,
#                     comments, a loop back)
#   fuzz-cache        caches git xlate builds for two fixtures
#   fuzz-loose-ref    the fixtures' loose ref files and HEADs
#   fuzz-resolve      names of the history fixture's objects, in every
#                     form cat-file takes; and OUTDIR/repo.git: that
#                     fixture with its cache, for fuzz-resolve
#                     ($XL_FUZZ_REPO)
# (fuzz-cache and fuzz-resolve need ./git-xlate built.)
set -eu -o pipefail

out=$1
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-seed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for t in idx pack loose packed-refs reftable config object delta \
	submodule-map alternates cache loose-ref resolve compat tree-delta; do
	mkdir -p "$out/fuzz-$t"
done

for tgz in "$top"/tests/fixtures/*.tar.gz; do
	tar xzf "$tgz" -C "$tmp"
done
n=0
for repo in "$tmp"/*.git; do
	name=$(basename "$repo" .git)
	n=$((n + 1))
	[ -f "$repo/config" ] && cp "$repo/config" "$out/fuzz-config/$name"
	for f in "$repo/HEAD" "$repo"/refs/heads/* "$repo"/refs/tags/*; do
		[ -f "$f" ] && { printf '\0'; cat "$f"; } >"$out/fuzz-loose-ref/$name-$(basename "$f")"
	done
	[ -f "$repo/packed-refs" ] &&
		{ printf '\0'; cat "$repo/packed-refs"; } >"$out/fuzz-packed-refs/$name"
	for t in "$repo"/reftable/*.ref; do
		[ -f "$t" ] || continue
		{ printf '\0'; cat "$t"; } >"$out/fuzz-reftable/$name-$(basename "$t")"
	done
	i=0
	for f in "$repo"/objects/??/*; do
		[ -f "$f" ] || continue
		i=$((i + 1))
		[ $i -le 64 ] || break
		cp "$f" "$out/fuzz-loose/$name-$i"
	done
	for idx in "$repo"/objects/pack/*.idx; do
		[ -f "$idx" ] || continue
		p=$(basename "$idx" .idx)
		{ printf '\0'; cat "$idx"; } >"$out/fuzz-idx/$name-$p"
		python3 - "$idx" "${idx%.idx}.pack" "$out/fuzz-pack/$name-$p" \
			"$out/fuzz-delta/$name-$p" <<'PY'
import struct, sys, zlib
idx_path, pack_path, out_pack, out_delta = sys.argv[1:]
idx = open(idx_path, 'rb').read()
pack = open(pack_path, 'rb').read()
raw = 32
if idx[:4] == b'\xfftOc':
    n = struct.unpack('>I', idx[8 + 255 * 4:8 + 256 * 4])[0]
    base = 8 + 1024 + n * (raw + 4)
    offs = [struct.unpack('>I', idx[base + 4 * i:base + 4 * i + 4])[0] for i in range(n)]
    offs = [o for o in offs if not o & 0x80000000]
else:
    n = struct.unpack('>I', idx[255 * 4:256 * 4])[0]
    offs = [struct.unpack('>I', idx[1024 + i * (4 + raw):1024 + i * (4 + raw) + 4])[0]
            for i in range(n)]
offs.sort()
first = [o - 12 for o in offs if o - 12 < 65536][:8]
body = pack[12:-raw][:70000]
with open(out_pack, 'wb') as f:
    f.write(bytes([len(first)]) + b''.join(struct.pack('>H', o) for o in first) + body)
# the first OFS_DELTA whose base is a whole object: base, then delta
ends = offs[1:] + [len(pack) - raw]
whole = {}
for o, e in zip(offs, ends):
    c = pack[o]
    t = (c >> 4) & 7
    p = o + 1
    while c & 0x80:
        c = pack[p]
        p += 1
    if t in (1, 2, 3, 4):
        try:
            whole[o] = zlib.decompress(pack[p:e])
        except zlib.error:
            pass
    elif t == 6:
        c = pack[p]; p += 1
        d = c & 0x7f
        while c & 0x80:
            c = pack[p]; p += 1
            d = ((d + 1) << 7) | (c & 0x7f)
        b = whole.get(o - d)
        if b is None or len(b) > 65535:
            continue
        try:
            delta = zlib.decompress(pack[p:e])
        except zlib.error:
            continue
        with open(out_delta, 'wb') as f:
            f.write(struct.pack('>H', len(b)) + b + delta)
        break
PY
	done
	git --git-dir="$repo" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype)' 2>/dev/null |
		awk '$2 == "tree" || $2 == "commit" || $2 == "tag"' | head -200 >"$tmp/list" || true
	while read -r oid type; do
		case $type in tree) b='\0' ;; commit) b='\1' ;; tag) b='\2' ;; esac
		{ printf "$b"; git --git-dir="$repo" cat-file "$type" "$oid"; } >"$out/fuzz-object/$name-$oid"
	done <"$tmp/list"
done
[ $n -gt 0 ] || { echo "seed.sh: no fixtures in $top/tests/fixtures" >&2; exit 1; }
# the names fuzz-compat.c's cache holds: agree, refused, unnamed,
# disagree, stale, malformed, and no header
one=$(printf '1%.0s' $(seq 64)) bad=$(printf '2%.0s' $(seq 64))
later=$(printf '3%.0s' $(seq 64)) gone=$(printf '4%.0s' $(seq 64))
a=$(printf 'a%.0s' $(seq 40)) b=$(printf 'b%.0s' $(seq 40))
printf '# loose-object-idx\n%s %s\n' "$one" "$a" >"$out/fuzz-compat/agree"
printf '# loose-object-idx\n%s %s\n%s %s\n%s %s\n%s %s\n%s %s\nnot a pair\n' \
	"$one" "$b" "$bad" "$a" "$later" "$a" "$gone" "$b" "$one" "$a" \
	>"$out/fuzz-compat/every-class"
printf '%s %s\n' "$one" "$a" >"$out/fuzz-compat/no-header"

# fuzz-tree-delta: (mode, name, object) triples, base 0xff target
python3 - "$out/fuzz-tree-delta" <<'PY'
import sys
d = sys.argv[1]
def tree(es):
    return bytes(b for e in es for b in e)
base = [(0, n, n) for n in range(12)]
seeds = {
    'one-changed': (base, base[:5] + [(0, 5, 9)] + base[6:]),
    'moved-repeated': (base, base[6:] + base[:6] + [(1, 30, 3), (0, 31, 3)]),
    'long-names': ([(0, 0xc1 + n, n) for n in range(8)],
                   [(0, 0xc1 + n, n ^ (n == 4)) for n in range(8)]),
    'empty-base': ([], base),
    'empty-target': (base, []),
}
for name, (b, t) in seeds.items():
    open(d + '/' + name, 'wb').write(tree(b) + b'\xff' + tree(t))
PY

for m in "$top"/tests/fixtures/*.submodule-map.tsv; do
	[ -f "$m" ] && cp "$m" "$out/fuzz-submodule-map/$(basename "$m" .tsv)"
done
printf '%s\n' "$tmp/history.git/objects" >"$out/fuzz-alternates/absolute"
printf '# a comment\n\n../../alt/objects\n../../alt/objects\n' >"$out/fuzz-alternates/relative-twice"
printf '../../objects\r\n/nonexistent\n' >"$out/fuzz-alternates/self-crlf"
if [ -x "$top/git-xlate" ]; then
	rm -rf "$out/repo.git"
	cp -R "$tmp/history.git" "$out/repo.git"
	"$top/git-xlate" -C "$out/repo.git" build >/dev/null 2>&1
	i=0
	while IFS=$'\t' read -r ref o256 o1 _; do
		i=$((i + 1))
		short=${ref#refs/heads/}
		short=${short#refs/tags/}
		for n in "$ref" "$short" "$o256" "$o1" "${o256:0:7}" "${o1:0:9}" \
			"$short^{tree}" "$short~1" "$short^2" "$short^{}" "$o1^{sha1}" \
			"$short:a" "$short^{sha256}"; do
			printf '%s\n' "$n"
		done >"$out/fuzz-resolve/$i"
	done <"$top/tests/fixtures/history.refs.tsv"
	for f in history signed; do
		[ -d "$tmp/$f.git" ] &&
			"$top/git-xlate" -C "$tmp/$f.git" --cache "$out/fuzz-cache/$f.sqlite" build >/dev/null 2>&1
		rm -f "$out/fuzz-cache/$f.sqlite-wal" "$out/fuzz-cache/$f.sqlite-shm"
	done
fi
for t in "$out"/fuzz-*; do
	echo "$(basename "$t"): $(ls "$t" | wc -l) seeds"
done
