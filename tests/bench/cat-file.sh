#!/bin/sh
# cat-file.sh: `git-xlate cat-file` against `git cat-file`, side by side.
#
#   tests/bench/cat-file.sh
#
#   XL_BENCH_DIR=DIR        where the generated repository is cached
#                           (default: .bench/ in the checkout)
#   XL_BENCH_RUNS=N         timed runs of each program (default 5)
#   XL_BENCH_GEN_OPTS=...   tests/gen-history.sh options
#                           (default "--commits 10000 --files 1000": ~130k objects)
#
# Generates (once; reused while the generator and options are unchanged) a
# SHA-256 bare repository with tests/gen-history.sh, packed with
# `git repack -adf --window=10 --depth=50`; checks once that both programs
# print the same bytes; then times R alternating runs of each and prints
# the medians and the ratio git-xlate/git.  Exits 0 whatever the ratio;
# non-zero only when the outputs differ or something fails.

set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
XL=${XL:-$top/git-xlate}
dir=${XL_BENCH_DIR:-$top/.bench}
runs=${XL_BENCH_RUNS:-5}
genopts=${XL_BENCH_GEN_OPTS:---commits 10000 --files 1000}

# Nobody's configuration but ours, for the build and for the timings.
GIT_CONFIG_NOSYSTEM=1
GIT_CONFIG_GLOBAL=/dev/null
LC_ALL=C
export GIT_CONFIG_NOSYSTEM GIT_CONFIG_GLOBAL LC_ALL
unset GIT_DIR GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES 2>/dev/null || true

die() {
	echo "bench cat-file: $*" >&2
	exit 1
}

[ -x "$XL" ] || die "no $XL (run make)"
case $runs in ''|*[!0-9]*|0) die "XL_BENCH_RUNS must be a positive integer" ;; esac
case $(date +%N) in *[!0-9]*|'') die "date +%N is not supported here (GNU date needed)" ;; esac

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
repo=$dir/cat-file-sha256.git
stamp="gen-history $(cksum <"$top/tests/gen-history.sh" | tr -s ' \t' '  ') options $genopts; repack -adf --window=10 --depth=50"

if [ ! -f "$repo/xl-bench-stamp" ] || [ "$(head -1 "$repo/xl-bench-stamp")" != "$stamp" ]; then
	echo "bench cat-file: generating $repo ($genopts) ..." >&2
	t0=$(date +%s)
	rm -rf "$repo" "$repo.tmp"
	git init -q --bare --object-format=sha256 "$repo.tmp"
	git -C "$repo.tmp" symbolic-ref HEAD refs/heads/main
	git -C "$repo.tmp" config gc.auto 0
	# shellcheck disable=SC2086
	"$top/tests/gen-history.sh" $genopts | git -C "$repo.tmp" fast-import --quiet
	git -C "$repo.tmp" repack -adfq --window=10 --depth=50
	git -C "$repo.tmp" pack-refs --all --prune
	n=$(git -C "$repo.tmp" cat-file --batch-all-objects --batch-check | wc -l | tr -d ' ')
	printf '%s\n%s\n' "$stamp" "$n" >"$repo.tmp/xl-bench-stamp"
	mv "$repo.tmp" "$repo"
	echo "bench cat-file: $n objects in $(($(date +%s) - t0)) s" >&2
fi
nobj=$(sed -n 2p "$repo/xl-bench-stamp")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# same_output ARGS...: both programs print the same bytes (streamed, no
# copy on disk)
same_output() {
	rm -f "$tmp/g" "$tmp/x"
	mkfifo "$tmp/g" "$tmp/x"
	git -C "$repo" cat-file "$@" >"$tmp/g" </dev/null &
	gpid=$!
	"$XL" -C "$repo" cat-file "$@" >"$tmp/x" </dev/null &
	xpid=$!
	if cmp "$tmp/g" "$tmp/x" >"$tmp/cmp" 2>&1; then
		same=0
	else
		same=1
	fi
	grc=0 xrc=0
	wait $gpid || grc=$?
	wait $xpid || xrc=$?
	if [ $same -ne 0 ]; then
		echo "bench cat-file: OUTPUTS DIFFER for cat-file $*:" >&2
		sed 's/^/  /' "$tmp/cmp" >&2
		return 1
	fi
	[ $grc -eq 0 ] || { echo "bench cat-file: git cat-file $* exited $grc" >&2; return 1; }
	[ $xrc -eq 0 ] || { echo "bench cat-file: git-xlate cat-file $* exited $xrc" >&2; return 1; }
}

# timeit FILE SINK CMD...: append CMD's wall time in seconds to FILE;
# SINK "null" writes to /dev/null, "pipe" through a pipe to cat, as a
# consumer of batch output reads it
timeit() {
	f=$1 sink=$2
	shift 2
	s=$(date +%s.%N)
	if [ "$sink" = pipe ]; then
		"$@" </dev/null | cat >/dev/null || die "failed: $*"
	else
		"$@" >/dev/null </dev/null || die "failed: $*"
	fi
	e=$(date +%s.%N)
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$f"
}

median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		if (NR % 2) printf "%.3f", v[(NR + 1) / 2]
		else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

status=0
for job in "--batch null" "--batch pipe" "--batch-check null"; do
	set -- $job
	mode=$1 sink=$2
	if ! same_output --batch-all-objects "$mode"; then
		status=1
		continue
	fi
	: >"$tmp/t.git"
	: >"$tmp/t.xl"
	i=0
	while [ $i -lt "$runs" ]; do
		timeit "$tmp/t.git" "$sink" git -C "$repo" cat-file --batch-all-objects "$mode"
		timeit "$tmp/t.xl" "$sink" "$XL" -C "$repo" cat-file --batch-all-objects "$mode"
		i=$((i + 1))
	done
	mg=$(median "$tmp/t.git")
	mx=$(median "$tmp/t.xl")
	where=">/dev/null"
	[ "$sink" = pipe ] && where="| cat >/dev/null"
	echo "cat-file --batch-all-objects $mode $where  ($nobj objects, SHA-256, $runs runs each)"
	echo "  git        median $mg s  (runs: $(tr '\n' ' ' <"$tmp/t.git" | sed 's/ $//'))"
	echo "  git-xlate  median $mx s  (runs: $(tr '\n' ' ' <"$tmp/t.xl" | sed 's/ $//'))"
	echo "  ratio      $(echo "$mx $mg" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "n/a" }')"
done
exit $status
