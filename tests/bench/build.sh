#!/usr/bin/env bash
# build.sh: `git xlate build` against `git index-pack` on the same pack.
#
#   tests/bench/build.sh
#
# index-pack reads every object of a pack, resolves its deltas and hashes
# each one: the same reading a translation build must do before it can
# hash each object's SHA-1 form.  It runs here as
#
#   git index-pack --object-format=sha256 --threads=N -o TMP/x.idx PACK
#
# from a directory that is no repository: inside the repository that
# holds the objects, index-pack reads every object a second time for its
# collision check, which flatters the build by 20-40%.  N is the number
# of online processors (getconf _NPROCESSORS_ONLN), which is what
# `git xlate build` uses by default: it hashes blobs and walks trees, commits and tags on
# that many threads.  Both read the pack from the page cache (runs
# alternate).  Times R alternating runs of a full build (fresh cache)
# and of index-pack on the bench repository (tests/bench/lib.sh), each
# under /usr/bin/time for its peak RSS (total), plus one untimed run of
# each whose anonymous memory (RssAnon in /proc/PID/status) is sampled
# every 10 ms for its peak; the same runs on one thread each (how the
# two scale); then the time of a build after one new commit on a
# ~15k-object repository.  Prints the medians and the
# ratios.  Exits 0 whatever the figures.

set -eu -o pipefail

. "$(dirname "$0")/lib.sh"
bench_repo

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
threads=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null || echo 2)
pack=$(ls "$repo"/objects/pack/pack-*.pack | head -1)
[ "$(ls "$repo"/objects/pack/pack-*.pack | wc -l)" -eq 1 ] || die "$repo has more than one pack"
nonrepo=$tmp/nonrepo
mkdir "$nonrepo"
if (cd "$nonrepo" && GIT_CEILING_DIRECTORIES=$tmp git rev-parse --git-dir >/dev/null 2>&1); then
	die "$nonrepo is inside a repository"
fi
have_time=0
[ -x /usr/bin/time ] && have_time=1

# timeit FILE CMD...: append CMD's wall time in seconds to FILE, and its
# peak RSS in KiB (from /usr/bin/time) to FILE.rss
timeit() {
	f=$1
	shift
	s=$(now)
	if [ $have_time = 1 ]; then
		/usr/bin/time -f %M -o "$tmp/time.out" "$@" >/dev/null 2>"$tmp/err" </dev/null ||
			die "failed: $* ($(tail -1 "$tmp/err"))"
	else
		"$@" >/dev/null 2>"$tmp/err" </dev/null || die "failed: $* ($(tail -1 "$tmp/err"))"
	fi
	e=$(now)
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$f"
	[ $have_time = 0 ] || tail -1 "$tmp/time.out" >>"$f.rss"
}

# sample_anon FILE CMD...: run CMD once, untimed, reading its
# /proc/PID/status every 10 ms; FILE gets "peak-RssAnon-KiB VmHWM-KiB"
# (the largest values seen: a peak between two samples can be missed)
sample_anon() {
	f=$1
	shift
	"$@" >/dev/null 2>"$tmp/err" </dev/null &
	pid=$!
	anon=0 hwm=0
	while [ -r "/proc/$pid/status" ]; do
		while read -r k v _; do
			case $k in
			RssAnon:) [ "$v" -le "$anon" ] || anon=$v ;;
			VmHWM:) [ "$v" -le "$hwm" ] || hwm=$v ;;
			esac
		done <"/proc/$pid/status" 2>/dev/null || true
		# a zombie has no VmHWM line any more: done
		grep -q '^VmHWM:' "/proc/$pid/status" 2>/dev/null || break
		sleep 0.01
	done
	wait $pid || die "failed: $* ($(tail -1 "$tmp/err"))"
	echo "$anon $hwm" >"$f"
}

rm_cache() {
	rm -f "$tmp/c.sqlite" "$tmp/c.sqlite-wal" "$tmp/c.sqlite-shm"
}

mib() {
	awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'
}

runs_of() {
	tr '\n' ' ' <"$1" | sed 's/ $//'
}

: >"$tmp/t.git"
: >"$tmp/t.xl"
ipack=(git index-pack --object-format=sha256 --threads="$threads" -o "$nonrepo/x.idx" "$pack")
build=("$XL" -C "$repo" --cache "$tmp/c.sqlite" build)
i=0
while [ $i -lt "$runs" ]; do
	rm -f "$nonrepo/x.idx" "$nonrepo/x.rev"
	(cd "$nonrepo" && timeit "$tmp/t.git" "${ipack[@]}")
	rm_cache
	timeit "$tmp/t.xl" "${build[@]}"
	i=$((i + 1))
done
# the index-pack output is the pack's own index: it did the whole job
cmp -s "$nonrepo/x.idx" "${pack%.pack}.idx" || die "index-pack outside the repository made another .idx"
"$XL" -C "$repo" --cache "$tmp/c.sqlite" verify >"$tmp/verify" || die "verify failed: $(tail -1 "$tmp/verify")"
rm -f "$nonrepo/x.idx" "$nonrepo/x.rev"
(cd "$nonrepo" && sample_anon "$tmp/m.git" "${ipack[@]}")
rm_cache
sample_anon "$tmp/m.xl" "${build[@]}" -v
phases=$(sed -n 's/^seconds: //p' "$tmp/err")

# the same on one thread each: how each side scales
if [ "$threads" -gt 1 ]; then
	: >"$tmp/t1.git"
	: >"$tmp/t1.xl"
	ipack1=(git index-pack --object-format=sha256 --threads=1 -o "$nonrepo/x.idx" "$pack")
	i=0
	while [ $i -lt "$runs" ]; do
		rm -f "$nonrepo/x.idx" "$nonrepo/x.rev"
		(cd "$nonrepo" && timeit "$tmp/t1.git" "${ipack1[@]}")
		rm_cache
		timeit "$tmp/t1.xl" "${build[@]}" --threads 1
		i=$((i + 1))
	done
	cmp -s "$nonrepo/x.idx" "${pack%.pack}.idx" || die "index-pack --threads=1 made another .idx"
fi

mg=$(median "$tmp/t.git")
mx=$(median "$tmp/t.xl")
echo "full translation build  ($nobj objects, SHA-256, $threads threads each, $runs runs each, alternating)"
echo "  git index-pack (outside any repository)  median $mg s  (runs: $(runs_of "$tmp/t.git"))"
echo "  git xlate build (fresh cache)            median $mx s  (runs: $(runs_of "$tmp/t.xl"))"
echo "  ratio xlate/index-pack                   $(ratio "$mx" "$mg")"
read -r ag hg <"$tmp/m.git"
read -r ax hx <"$tmp/m.xl"
if [ $have_time = 1 ]; then
	rg=$(median "$tmp/t.git.rss")
	rx=$(median "$tmp/t.xl.rss")
	echo "  peak RSS, total (/usr/bin/time %M, median)  index-pack $(mib "$rg"), xlate build $(mib "$rx"); ratio $(ratio "$rx" "$rg")"
else
	echo "  peak RSS, total: no /usr/bin/time here; VmHWM of the sampled run: index-pack $(mib "$hg"), xlate build $(mib "$hx")"
fi
[ -z "$phases" ] || echo "  where the build's time goes (the sampled run, wall seconds): $phases"
echo "  peak RSS, anonymous (RssAnon sampled every 10 ms, one run)  index-pack $(mib "$ag"), xlate build $(mib "$ax"); ratio $(ratio "$ax" "$ag")"
echo "  $(tail -1 "$tmp/verify")"
if [ "$threads" -gt 1 ]; then
	mg1=$(median "$tmp/t1.git")
	mx1=$(median "$tmp/t1.xl")
	echo "  on 1 thread each: index-pack --threads=1 median $mg1 s, xlate build --threads 1 median $mx1 s; ratio $(ratio "$mx1" "$mg1")"
	echo "  speed-up from 1 to $threads threads: index-pack $(ratio "$mg1" "$mg")x, xlate build $(ratio "$mx1" "$mx")x"
fi

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
echo "build after one new commit  ($n objects, $runs runs; no stock-git counterpart)"
echo "  git xlate build median $(median "$tmp/t.inc") s  (runs: $(runs_of "$tmp/t.inc"))"
