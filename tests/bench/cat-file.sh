#!/bin/sh
# cat-file.sh: `git-xlate cat-file` against `git cat-file`, side by side.
#
#   tests/bench/cat-file.sh
#
# On the bench repository (tests/bench/lib.sh: a generated SHA-256
# repository of ~130k objects, packed with `git repack -adf --window=10
# --depth=50`; XL_BENCH_* variables there), checks once that both programs
# print the same bytes; then times R alternating runs of each and prints
# the medians and the ratio git-xlate/git.  Exits 0 whatever the ratio;
# non-zero only when the outputs differ or something fails.

set -eu

. "$(dirname "$0")/lib.sh"
bench_repo

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
