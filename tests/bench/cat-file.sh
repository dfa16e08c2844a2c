#!/usr/bin/env bash
# cat-file.sh: `git-xlate cat-file` against `git cat-file`, side by side.
#
#   tests/bench/cat-file.sh
#
# On the bench repository (tests/bench/lib.sh: a generated SHA-256
# repository of ~130k objects, packed with `git repack -adf --window=10
# --depth=50`; XL_BENCH_* variables there), times R alternating runs of
# each program and prints the medians and the ratio git-xlate/git.  Every
# timed run's output is checked against git's, by checksum:
#   - "file": the output goes to a file in /dev/shm (or the scratch
#     directory), checksummed after the clock stops;
#   - "pipe": through a pipe into cksum, as a consumer of batch output
#     reads it; the checksum is the consumer, inside the timing, the
#     same for both programs.
# A run that fails, in any part of its pipeline (pipefail), or whose
# output differs, fails the benchmark.  Exits 0 whatever the ratio.

set -eu -o pipefail

. "$(dirname "$0")/lib.sh"
bench_repo

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-bench.XXXXXX")
out=$tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	out=$(mktemp -d /dev/shm/xl-bench.XXXXXX)
fi
trap 'rm -rf "$tmp" "$out"' EXIT

# timeit FILE SINK CMD...: append CMD's wall time in seconds to FILE,
# and the checksum of its output ("cksum" format) to FILE.sum
timeit() {
	f=$1 sink=$2
	shift 2
	if [ "$sink" = pipe ]; then
		s=$(now)
		"$@" </dev/null 2>"$tmp/err" | cksum >"$tmp/sum" || die "failed: $* ($(tail -1 "$tmp/err"))"
		e=$(now)
	else
		s=$(now)
		"$@" </dev/null >"$out/out" 2>"$tmp/err" || die "failed: $* ($(tail -1 "$tmp/err"))"
		e=$(now)
		cksum <"$out/out" >"$tmp/sum"
		rm -f "$out/out"
	fi
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$f"
	cat "$tmp/sum" >>"$f.sum"
}

status=0
for job in "--batch file" "--batch pipe" "--batch-check file"; do
	set -- $job
	mode=$1 sink=$2
	: >"$tmp/t.git"
	: >"$tmp/t.xl"
	: >"$tmp/t.git.sum"
	: >"$tmp/t.xl.sum"
	i=0
	while [ $i -lt "$runs" ]; do
		timeit "$tmp/t.git" "$sink" git -C "$repo" cat-file --batch-all-objects "$mode"
		timeit "$tmp/t.xl" "$sink" "$XL" -C "$repo" cat-file --batch-all-objects "$mode"
		i=$((i + 1))
	done
	# every run of both printed the bytes git's first run printed
	want=$(head -1 "$tmp/t.git.sum")
	bad=$(cat "$tmp/t.git.sum" "$tmp/t.xl.sum" | grep -cvxF "$want" || true)
	where="> file"
	[ "$sink" = pipe ] && where="| cksum"
	echo "cat-file --batch-all-objects $mode $where  ($nobj objects, SHA-256, $runs runs each)"
	if [ "$bad" -ne 0 ]; then
		echo "  OUTPUTS DIFFER: $bad of $((2 * runs)) runs did not print what git's first run printed (cksum, size: $want)"
		status=1
	else
		echo "  output of every run: the same (cksum, size: $want)"
	fi
	mg=$(median "$tmp/t.git")
	mx=$(median "$tmp/t.xl")
	echo "  git        median $mg s  (runs: $(tr '\n' ' ' <"$tmp/t.git" | sed 's/ $//'))"
	echo "  git-xlate  median $mx s  (runs: $(tr '\n' ' ' <"$tmp/t.xl" | sed 's/ $//'))"
	echo "  ratio      $(echo "$mx $mg" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "n/a" }')"
done
exit $status
