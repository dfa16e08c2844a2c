#!/bin/sh
# build.sh: `git xlate build` against `git index-pack` on the same pack.
#
#   tests/bench/build.sh
#
# index-pack reads every object of a pack, resolves its deltas and hashes
# each one: the same reading a translation build must do before it can
# hash each object's SHA-1 form.  Both get the same threads.  Times R
# alternating runs of a full build (fresh cache) and of index-pack on the
# bench repository (tests/bench/lib.sh), then the time of a build after
# one new commit on a ~15k-object repository, and prints the medians and
# the ratio.  Exits 0 whatever the figures.

set -eu

. "$(dirname "$0")/lib.sh"
bench_repo

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
threads=$(nproc 2>/dev/null || echo 2)
pack=$(ls "$repo"/objects/pack/pack-*.pack | head -1)

# timeit FILE CMD...: append CMD's wall time in seconds to FILE
timeit() {
	f=$1
	shift
	s=$(now)
	"$@" >/dev/null 2>&1 </dev/null || die "failed: $*"
	e=$(now)
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$f"
}

full_build() {
	rm -f "$tmp/c.sqlite" "$tmp/c.sqlite-wal" "$tmp/c.sqlite-shm"
	"$XL" -C "$repo" --cache "$tmp/c.sqlite" build
}

: >"$tmp/t.git"
: >"$tmp/t.xl"
i=0
while [ $i -lt "$runs" ]; do
	timeit "$tmp/t.git" git -C "$repo" index-pack --threads="$threads" -o "$tmp/x.idx" "$pack"
	timeit "$tmp/t.xl" full_build
	i=$((i + 1))
done
"$XL" -C "$repo" --cache "$tmp/c.sqlite" verify >"$tmp/verify" || die "verify failed: $(tail -1 "$tmp/verify")"
mg=$(median "$tmp/t.git")
mx=$(median "$tmp/t.xl")
echo "full translation build  ($nobj objects, SHA-256, $threads threads, $runs runs each)"
echo "  git index-pack  median $mg s  (runs: $(tr '\n' ' ' <"$tmp/t.git" | sed 's/ $//'))"
echo "  git xlate build median $mx s  (runs: $(tr '\n' ' ' <"$tmp/t.xl" | sed 's/ $//'))"
echo "  ratio           $(echo "$mx $mg" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "n/a" }')"
echo "  $(tail -1 "$tmp/verify")"

# one new commit on a ~15k-object repository
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
small=$tmp/small.git
git init -q --bare --object-format=sha256 "$small"
"$top/tests/gen-history.sh" --commits 1200 --files 150 --big-blob-kib 64 |
	git -C "$small" fast-import --quiet
git -C "$small" repack -adq
n=$(git -C "$small" cat-file --batch-all-objects --batch-check | wc -l | tr -d ' ')
"$XL" -C "$small" --cache "$tmp/s.sqlite" build
: >"$tmp/t.inc"
i=0
while [ $i -lt "$runs" ]; do
	blob=$(echo "change $i" | git -C "$small" hash-object -w --stdin)
	tree=$(printf '100644 blob %s\tchange.txt\n' "$blob" | git -C "$small" mktree)
	commit=$(echo "commit $i" | git -C "$small" commit-tree "$tree" -p main)
	git -C "$small" update-ref refs/heads/main "$commit"
	timeit "$tmp/t.inc" "$XL" -C "$small" --cache "$tmp/s.sqlite" build
	i=$((i + 1))
done
echo "build after one new commit  ($n objects, $runs runs)"
echo "  git xlate build median $(median "$tmp/t.inc") s  (runs: $(tr '\n' ' ' <"$tmp/t.inc" | sed 's/ $//'))"
