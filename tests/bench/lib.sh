# lib.sh: what the benchmarks share, sourced by tests/bench/*.sh.
#
# Sets top, XL, dir, runs, genopts; defines die(), median(), now(),
# ratio(), timeit(), can_drop() and drop_caches(); and
# bench_repo, which makes (once; reused while the generator and its
# options are unchanged) the SHA-256 bench repository, sets $repo to it
# and $nobj to its number of objects; and bench_twin (after bench_repo),
# which makes the same way its SHA-1 twin, the same fast-import stream
# imported into a SHA-1 repository and repacked alike, and sets $twin.
#
#   XL_BENCH_DIR=DIR        where the generated repository is kept
#                           (default: .bench/ in the checkout)
#   XL_BENCH_RUNS=N         timed runs of each program (default 5)
#   XL_BENCH_GEN_OPTS=...   tests/gen-history.sh options
#                           (default "--commits 10000 --files 1000": ~130k objects)
#   XL_BENCH_MOUNT_RUNS=N   mount.sh: timed runs of its slow parts (default 3)
#   XL_BENCH_QUICK=1        a quick look: by default a ~20k-object repository
#                           ("--commits 1500 --files 200") kept in .bench/quick,
#                           and 3 runs; the variables above still win

top=$(cd "$(dirname "$0")/../.." && pwd)
XL=${XL:-$top/git-xlate}
if [ "${XL_BENCH_QUICK:-0}" = 1 ]; then
	dir=${XL_BENCH_DIR:-$top/.bench/quick}
	runs=${XL_BENCH_RUNS:-3}
	genopts=${XL_BENCH_GEN_OPTS:---commits 1500 --files 200}
else
	dir=${XL_BENCH_DIR:-$top/.bench}
	runs=${XL_BENCH_RUNS:-5}
	genopts=${XL_BENCH_GEN_OPTS:---commits 10000 --files 1000}
fi
bench=$(basename "$0" .sh)

die() {
	echo "bench $bench: $*" >&2
	exit 1
}

median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		if (NR % 2) printf "%.3f", v[(NR + 1) / 2]
		else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# now: wall-clock seconds with nanoseconds
now() {
	date +%s.%N
}

# ratio A B: A / B to two places ("n/a" when B is 0)
ratio() {
	echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "n/a" }'
}

# timeit FILE CMD...: append CMD's wall time in seconds to FILE (the
# caller's $tmp holds its stderr); a failure ends the benchmark
timeit() {
	f=$1
	shift
	s=$(now)
	"$@" >/dev/null 2>"$tmp/err" </dev/null || die "failed: $* ($(tail -1 "$tmp/err"))"
	e=$(now)
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$f"
}

# can_drop: 0 when the page cache can be dropped here (root);
# drop_caches drops it then, for a cold run
can_drop() {
	[ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/drop_caches ]
}

drop_caches() {
	if can_drop; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
	fi
}

# gen_repo ALGO PATH STAMP: import the gen-history stream ($genopts)
# into a bare ALGO repository at PATH, packed and with packed refs, unless
# PATH already carries STAMP (first line of PATH/xl-bench-stamp; the
# second is its number of objects).
gen_repo() {
	if [ -f "$2/xl-bench-stamp" ] && [ "$(head -1 "$2/xl-bench-stamp")" = "$3" ]; then
		return 0
	fi
	echo "bench: generating $2 ($genopts) ..." >&2
	t0=$(date +%s)
	rm -rf "$2" "$2.tmp"
	git init -q --bare --object-format="$1" "$2.tmp"
	git -C "$2.tmp" symbolic-ref HEAD refs/heads/main
	git -C "$2.tmp" config gc.auto 0
	# shellcheck disable=SC2086
	"$top/tests/gen-history.sh" $genopts | git -C "$2.tmp" fast-import --quiet
	git -C "$2.tmp" repack -adfq --window=10 --depth=50
	git -C "$2.tmp" pack-refs --all --prune
	n=$(git -C "$2.tmp" cat-file --batch-all-objects --batch-check | wc -l | tr -d ' ')
	printf '%s\n%s\n' "$3" "$n" >"$2.tmp/xl-bench-stamp"
	mv "$2.tmp" "$2"
	echo "bench: $n objects in $(($(date +%s) - t0)) s" >&2
}

bench_repo() {
	# Nobody's configuration but ours, for the build and for the timings.
	GIT_CONFIG_NOSYSTEM=1
	GIT_CONFIG_GLOBAL=/dev/null
	LC_ALL=C
	export GIT_CONFIG_NOSYSTEM GIT_CONFIG_GLOBAL LC_ALL
	unset GIT_DIR GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES 2>/dev/null || true

	[ -x "$XL" ] || die "no $XL (run make)"
	case $runs in ''|*[!0-9]*|0) die "XL_BENCH_RUNS must be a positive integer" ;; esac
	case $(date +%N) in *[!0-9]*|'') die "date +%N is not supported here (GNU date needed)" ;; esac

	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	repo=$dir/bench-sha256.git
	stamp="gen-history $(cksum <"$top/tests/gen-history.sh" | tr -s ' \t' '  ') options $genopts; repack -adf --window=10 --depth=50"

	gen_repo sha256 "$repo" "$stamp"
	nobj=$(sed -n 2p "$repo/xl-bench-stamp")
}

bench_twin() {
	[ -n "${stamp:-}" ] || die "bench_twin before bench_repo"
	twin=$dir/bench-sha1.git
	tstamp="sha1 twin: $stamp"
	gen_repo sha1 "$twin" "$tstamp"
}
