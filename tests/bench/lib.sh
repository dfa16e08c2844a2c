# lib.sh: what the benchmarks share, sourced by tests/bench/*.sh.
#
# Sets top, XL, dir, runs, genopts; defines die(), median(); and
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

top=$(cd "$(dirname "$0")/../.." && pwd)
XL=${XL:-$top/git-xlate}
dir=${XL_BENCH_DIR:-$top/.bench}
runs=${XL_BENCH_RUNS:-5}
genopts=${XL_BENCH_GEN_OPTS:---commits 10000 --files 1000}
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

	if [ ! -f "$repo/xl-bench-stamp" ] || [ "$(head -1 "$repo/xl-bench-stamp")" != "$stamp" ]; then
		echo "bench: generating $repo ($genopts) ..." >&2
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
		echo "bench: $n objects in $(($(date +%s) - t0)) s" >&2
	fi
	nobj=$(sed -n 2p "$repo/xl-bench-stamp")
}

bench_twin() {
	[ -n "${stamp:-}" ] || die "bench_twin before bench_repo"
	twin=$dir/bench-sha1.git
	tstamp="sha1 twin: $stamp"
	if [ ! -f "$twin/xl-bench-stamp" ] || [ "$(head -1 "$twin/xl-bench-stamp")" != "$tstamp" ]; then
		echo "bench: generating the SHA-1 twin $twin ($genopts) ..." >&2
		t0=$(date +%s)
		rm -rf "$twin" "$twin.tmp"
		git init -q --bare --object-format=sha1 "$twin.tmp"
		git -C "$twin.tmp" symbolic-ref HEAD refs/heads/main
		git -C "$twin.tmp" config gc.auto 0
		# shellcheck disable=SC2086
		"$top/tests/gen-history.sh" $genopts | git -C "$twin.tmp" fast-import --quiet
		git -C "$twin.tmp" repack -adfq --window=10 --depth=50
		git -C "$twin.tmp" pack-refs --all --prune
		n=$(git -C "$twin.tmp" cat-file --batch-all-objects --batch-check | wc -l | tr -d ' ')
		printf '%s\n%s\n' "$tstamp" "$n" >"$twin.tmp/xl-bench-stamp"
		mv "$twin.tmp" "$twin"
		echo "bench: $n objects in $(($(date +%s) - t0)) s" >&2
	fi
}
