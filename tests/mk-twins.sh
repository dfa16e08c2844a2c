#!/bin/sh
# mk-twins.sh: twin SHA-1 / SHA-256 repositories in several storage forms.
#
#   tests/mk-twins.sh DIR [gen-history options]
#
# Imports one tests/gen-history.sh stream (DIR/stream.fi) into
#   DIR/sha1.git, DIR/sha256.git      as fast-import left them (packs from
#                                     fast-import, a loose tag, loose refs)
# and derives, for ALGO in sha1 sha256, the same objects, refs and HEAD as
#   DIR/ALGO-packed.git    one pack (repack -adf: OFS_DELTA), .idx v2, .rev,
#                          .bitmap; all refs in packed-refs
#   DIR/ALGO-loose.git     every object loose; loose refs
#   DIR/ALGO-mixed.git     a pack with REF_DELTA entries (old history), a
#                          pack with OFS_DELTA entries (middle), loose
#                          objects (the rest); packed-refs with some refs
#                          also loose
#   DIR/ALGO-idx1.git      ALGO-packed with its index rewritten as idx v1
#   DIR/ALGO-largeofs.git  ALGO-packed with an idx v2 whose offsets above
#                          4 KiB are in the 64-bit offset table
# Besides the stream's refs, refs/tags/light-tree and refs/tags/light-blob
# point at a tree and a blob (fast-import can only point refs at commits).
# Every repository is checked with git fsck, and all variants of an
# algorithm are checked to hold the same objects, refs and HEAD.
# DIR/ALGO.objects lists every object name of ALGO, sorted.
# Prints nothing on success but a one-line summary on stderr.

set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 DIR [gen-history options]" >&2
	exit 2
fi
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)

# Nobody's configuration but ours: twins must be reproducible.
GIT_CONFIG_NOSYSTEM=1
GIT_CONFIG_GLOBAL=/dev/null
LC_ALL=C
export GIT_CONFIG_NOSYSTEM GIT_CONFIG_GLOBAL LC_ALL
unset GIT_DIR GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_INDEX_FILE 2>/dev/null || true

die() {
	echo "mk-twins: $*" >&2
	exit 1
}

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
"$here/gen-history.sh" "$@" >"$dir/stream.fi"

newrepo() { # newrepo PATH ALGO
	rm -rf "$1"
	git init -q --bare --object-format="$2" "$1"
	git -C "$1" symbolic-ref HEAD refs/heads/main
	git -C "$1" config gc.auto 0
}

# allobjs REPO: every object name, sorted
allobjs() {
	git -C "$1" cat-file --batch-all-objects --batch-check='%(objectname)' | sort
}

refsof() {
	git -C "$1" for-each-ref --format='%(objectname) %(refname)'
	echo "HEAD -> $(git -C "$1" symbolic-ref HEAD)"
}

# the only pack of REPO
onepack() {
	set -- "$1"/objects/pack/pack-*.pack
	[ $# -eq 1 ] && [ -f "$1" ] || die "expected one pack, got: $*"
	echo "$1"
}

# copy_refs FROM TO: refs (loose and packed) and HEAD
copy_refs() {
	rm -rf "$2/refs" "$2/packed-refs"
	cp -R "$1/refs" "$2/refs"
	if [ -f "$1/packed-refs" ]; then cp "$1/packed-refs" "$2/packed-refs"; fi
	cp "$1/HEAD" "$2/HEAD"
}

for algo in sha1 sha256; do
	src=$dir/$algo.git
	newrepo "$src" "$algo"
	git -C "$src" fast-import --quiet <"$dir/stream.fi"
	git -C "$src" update-ref refs/tags/light-tree "$(git -C "$src" rev-parse 'main^{tree}')"
	git -C "$src" update-ref refs/tags/light-blob "$(git -C "$src" rev-parse 'main:README.md')"
	allobjs "$src" >"$dir/$algo.objects"
	refsof "$src" >"$dir/$algo.refs"

	# packed: one pack with OFS deltas, .rev and .bitmap; packed refs
	p=$dir/$algo-packed.git
	rm -rf "$p"
	cp -R "$src" "$p"
	git -C "$p" -c pack.writeReverseIndex=true -c repack.writeBitmaps=true \
		repack -adfq
	git -C "$p" pack-refs --all --prune
	pack=$(onepack "$p")

	# loose: every object loose, refs loose
	l=$dir/$algo-loose.git
	newrepo "$l" "$algo"
	git -C "$l" unpack-objects -q <"$pack"
	copy_refs "$src" "$l"

	# mixed: REF_DELTA pack (old history), OFS_DELTA pack (middle), loose
	# objects (the rest); packed-refs, some refs also loose
	m=$dir/$algo-mixed.git
	newrepo "$m" "$algo"
	n=$(git -C "$src" rev-list --first-parent --count main)
	c1=$(git -C "$src" rev-parse "main~$((n * 2 / 3))")
	c2=$(git -C "$src" rev-parse "main~$((n / 3))")
	git -C "$src" rev-list --objects "$c1" |
		git -C "$src" pack-objects -q "$m/objects/pack/pack" >/dev/null
	git -C "$src" rev-list --objects "$c2" --not "$c1" |
		git -C "$src" pack-objects -q --delta-base-offset "$m/objects/pack/pack" >/dev/null
	allobjs "$m" | comm -13 - "$dir/$algo.objects" |
		git -C "$src" pack-objects -q --stdout |
		git -C "$m" unpack-objects -q
	copy_refs "$p" "$m"
	mkdir -p "$m/refs/heads"
	cp "$src/refs/heads/main" "$src/refs/heads/side" "$m/refs/heads/"

	# idx1: the packed variant with an idx v1
	i=$dir/$algo-idx1.git
	rm -rf "$i"
	cp -R "$p" "$i"
	pack=$(onepack "$i")
	rm -f "${pack%.pack}.idx" "${pack%.pack}.rev" "${pack%.pack}.bitmap"
	git -C "$i" index-pack --index-version=1 -o "${pack%.pack}.idx" "$pack" >/dev/null

	# largeofs: idx v2 with every offset above 0x1000 in the 64-bit table
	o=$dir/$algo-largeofs.git
	rm -rf "$o"
	cp -R "$p" "$o"
	pack=$(onepack "$o")
	rm -f "${pack%.pack}.idx" "${pack%.pack}.rev" "${pack%.pack}.bitmap"
	git -C "$o" index-pack --index-version=2,0x1000 -o "${pack%.pack}.idx" "$pack" >/dev/null

	for r in "$src" "$p" "$l" "$m" "$i" "$o"; do
		git -C "$r" fsck --full --strict --no-dangling --no-progress >"$dir/fsck.out" 2>&1 ||
			{ cat "$dir/fsck.out" >&2; die "fsck failed: $r"; }
		[ ! -s "$dir/fsck.out" ] || { cat "$dir/fsck.out" >&2; die "fsck complained: $r"; }
		allobjs "$r" | cmp -s - "$dir/$algo.objects" || die "objects differ: $r"
		refsof "$r" | cmp -s - "$dir/$algo.refs" || die "refs differ: $r"
	done
	rm -f "$dir/fsck.out"

	# the storage forms are what they claim to be
	[ -z "$(find "$l/objects/pack" -name '*.pack')" ] || die "packs in $l"
	[ "$(find "$m/objects/pack" -name '*.pack' | wc -l)" -eq 2 ] || die "not 2 packs in $m"
	[ -n "$(find "$m/objects" -path '*/objects/[0-9a-f][0-9a-f]/*' | head -1)" ] || die "no loose objects in $m"
done

cmp -s "$dir/sha1.objects" "$dir/sha256.objects" &&
	die "sha1 and sha256 object names are the same?"
[ "$(wc -l <"$dir/sha1.objects")" -eq "$(wc -l <"$dir/sha256.objects")" ] ||
	die "twins differ in object count"
echo "mk-twins: $(wc -l <"$dir/sha256.objects" | tr -d ' ') objects per repository, in $dir" >&2
