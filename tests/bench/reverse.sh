#!/usr/bin/env bash
# reverse.sh: the other direction, a SHA-1 repository seen as its
# SHA-256 self, against stock git on the SHA-256 repository itself.
#
#   tests/bench/reverse.sh
#
# The bench repository's SHA-1 twin (tests/bench/lib.sh, bench_twin) is
# the SHA-1 repository; the bench repository, made from the same
# fast-import stream, is what its SHA-256 form must be.  Times, as
# medians of alternating runs and each as a ratio:
#   - `git xlate build` on the SHA-1 twin (a fresh cache each run)
#     against `git index-pack --threads=N` of the twin's pack, run from a
#     directory that is no repository (N: the online processors, which
#     the build uses too); the build's names are checked once (HEAD's
#     SHA-256 name is the bench repository's), and index-pack's .idx
#     against the twin's own;
#   - `git log` (every commit of HEAD) on MNT/sha256 of the twin mounted
#     the other way round, against the same on the bench repository:
#     warm, and cold (each side's first run after the page cache is
#     dropped, on a fresh mount; XL_BENCH_COLD_RUNS of them, default 3);
#   - `git rev-list --all --objects` and `git cat-file
#     --batch-all-objects --batch`, warm (XL_BENCH_MOUNT_RUNS runs);
#   - `git clone --mirror --no-hardlinks` of MNT/sha256 against the same
#     of the bench repository (a local clone that copies the files, as
#     it must from a mount; XL_BENCH_MOUNT_RUNS runs).
# Outputs are compared once, untimed (the clones by their refs and every
# object); a difference fails the benchmark.  MNT/sha256/objects/pack
# holds the SHA-256 packs made from the twin's (DESIGN.md §6, the other
# way round), which the build lays out.  Prints the daemon's peak RSS.
# Exits 0 whatever the figures.

set -eu -o pipefail

. "$(dirname "$0")/lib.sh"

XLFS=${XLFS:-$top/xlatefs}
bench_repo
bench_twin

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-bench.XXXXXX")
mnt=$tmp/mnt
mkdir "$mnt"
xpid=
status=0
threads=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null || echo 2)
mruns=${XL_BENCH_MOUNT_RUNS:-3}
cruns=${XL_BENCH_COLD_RUNS:-3}
nonrepo=$tmp/nonrepo
mkdir "$nonrepo"
if (cd "$nonrepo" && GIT_CEILING_DIRECTORIES=$tmp git rev-parse --git-dir >/dev/null 2>&1); then
	die "$nonrepo is inside a repository"
fi
pack=$(ls "$twin"/objects/pack/pack-*.pack | head -1)
[ "$(ls "$twin"/objects/pack/pack-*.pack | wc -l)" -eq 1 ] || die "$twin has more than one pack"

unmount() {
	if [ -n "$xpid" ]; then
		[ -r "/proc/$xpid/status" ] &&
			awk '/^VmHWM:/ { printf "%d\n", $2 / 1024 }' "/proc/$xpid/status" >>"$tmp/rss"
		fusermount3 -u "$mnt" 2>/dev/null || kill "$xpid" 2>/dev/null || true
		wait "$xpid" 2>/dev/null || true
		xpid=
	fi
}
trap 'unmount; rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

row() {	# row TITLE XLATEFS-FILE STOCK-FILE STOCK-NAME
	a=$(median "$2")
	b=$(median "$3")
	printf '  %-34s %8s s  %-22s %8s s  ratio %s\n' "$1" "$a" "$4" "$b" "$(ratio "$a" "$b")"
}

echo "reverse: the SHA-1 twin ($twin, $nobj objects) seen as its SHA-256 self"

# ---- the build -------------------------------------------------------
: >"$tmp/build"
: >"$tmp/ipack"
build() {
	rm -f "$tmp/rev.sqlite"*
	"$XL" -C "$twin" --cache "$tmp/rev.sqlite" build
}
ipack() {
	(cd "$nonrepo" && rm -f x.idx && git index-pack --threads="$threads" -o x.idx "$pack")
}
build >/dev/null 2>&1 || die "git xlate build on the twin failed"
got=$("$XL" -C "$twin" --cache "$tmp/rev.sqlite" map HEAD)
want=$(git --git-dir="$repo" rev-parse HEAD)
[ "$got" = "$want" ] || die "the twin's HEAD is named $got, not $want"
ipack >/dev/null 2>&1 || die "index-pack failed"
cmp -s "$nonrepo/x.idx" "${pack%.pack}.idx" || die "index-pack outside the repository made another .idx"
for _ in $(seq "$runs"); do
	timeit "$tmp/build" build
	timeit "$tmp/ipack" ipack
done
echo "  (HEAD's SHA-256 name checked once: $want; $runs runs each, $threads threads)"
row "build, the other way round" "$tmp/build" "$tmp/ipack" "index-pack (SHA-1 pack)"

# ---- the mount -------------------------------------------------------
fresh_mount() {
	unmount
	"$XLFS" -f -o cache="$tmp/rev.sqlite" "$twin" "$mnt" 2>>"$tmp/xlatefs.log" </dev/null &
	xpid=$!
	w=0
	until mountpoint -q "$mnt"; do
		kill -0 "$xpid" 2>/dev/null || die "xlatefs exited: $(tail -1 "$tmp/xlatefs.log")"
		w=$((w + 1))
		[ $w -lt 6000 ] || die "not mounted after 600 s"
		sleep 0.1
	done
}

# same GIT-ARGS...: the same output from both sides.  git sizes the
# names it abbreviates (core.abbrev=auto) by the objects it finds in
# packs, which a mount may count otherwise: a difference in
# abbreviations alone is said, and compared again with --no-abbrev.
same() {
	a=$(git --git-dir="$repo" "$@" | sha256sum)
	b=$(git --git-dir="$mnt/sha256" "$@" | sha256sum)
	if [ "$a" = "$b" ]; then
		echo "  git $*: output compared once, the same on both sides (sha256 ${a%% *})"
		return
	fi
	a=$(git --git-dir="$repo" "$@" --no-abbrev | sha256sum)
	b=$(git --git-dir="$mnt/sha256" "$@" --no-abbrev | sha256sum)
	if [ "$a" = "$b" ]; then
		echo "  git $*: the same on both sides but for the length of abbreviated names" \
			"($(git --git-dir="$repo" rev-parse --short HEAD | tr -d '\n' | wc -c) digits on the repository," \
			"$(git --git-dir="$mnt/sha256" rev-parse --short HEAD | tr -d '\n' | wc -c) on MNT/sha256);" \
			"with --no-abbrev the same (sha256 ${a%% *})"
	else
		echo "  OUTPUTS DIFFER: git $*: ${a%% *} on the repository, ${b%% *} on MNT/sha256"
		status=1
	fi
}

: >"$tmp/log.cold.x"
: >"$tmp/log.cold.g"
for _ in $(seq "$cruns"); do
	fresh_mount
	drop_caches
	timeit "$tmp/log.cold.x" git --git-dir="$mnt/sha256" log
	drop_caches
	timeit "$tmp/log.cold.g" git --git-dir="$repo" log
done
fresh_mount
ls "$mnt/sha256/objects/pack" >"$tmp/packs"
echo "  MNT/sha256/objects/pack holds $(grep -c . "$tmp/packs" || true) files"
same log
same rev-list --all --objects
same cat-file --batch-all-objects --batch
: >"$tmp/log.x"
: >"$tmp/log.g"
for _ in $(seq "$runs"); do
	timeit "$tmp/log.x" git --git-dir="$mnt/sha256" log
	timeit "$tmp/log.g" git --git-dir="$repo" log
done
: >"$tmp/rl.x"
: >"$tmp/rl.g"
: >"$tmp/cf.x"
: >"$tmp/cf.g"
for _ in $(seq "$mruns"); do
	timeit "$tmp/rl.x" git --git-dir="$mnt/sha256" rev-list --all --objects
	timeit "$tmp/rl.g" git --git-dir="$repo" rev-list --all --objects
	timeit "$tmp/cf.x" git --git-dir="$mnt/sha256" cat-file --batch-all-objects --batch
	timeit "$tmp/cf.g" git --git-dir="$repo" cat-file --batch-all-objects --batch
done
# the clones, compared once by their refs and every object
clone_of() {
	rm -rf "$2"
	git clone -q --mirror --no-hardlinks "$1" "$2"
}
: >"$tmp/cl.x"
: >"$tmp/cl.g"
for i in $(seq "$mruns"); do
	timeit "$tmp/cl.x" clone_of "$mnt/sha256" "$tmp/clone-mnt.git"
	timeit "$tmp/cl.g" clone_of "$repo" "$tmp/clone-repo.git"
	if [ "$i" = 1 ]; then
		for c in mnt repo; do
			git --git-dir="$tmp/clone-$c.git" for-each-ref >"$tmp/refs.$c"
			git --git-dir="$tmp/clone-$c.git" cat-file --batch-all-objects \
				--batch-check >"$tmp/objs.$c"
		done
		if cmp -s "$tmp/refs.mnt" "$tmp/refs.repo" && cmp -s "$tmp/objs.mnt" "$tmp/objs.repo"; then
			echo "  clones compared once: the same $(wc -l <"$tmp/refs.mnt" | tr -d ' ') refs" \
				"and $(wc -l <"$tmp/objs.mnt" | tr -d ' ') objects"
		else
			echo "  CLONES DIFFER: the clone of MNT/sha256 has other refs or objects"
			status=1
		fi
	fi
	rm -rf "$tmp/clone-mnt.git" "$tmp/clone-repo.git"
done
unmount
if can_drop; then
	row "git log, cold (MNT/sha256)" "$tmp/log.cold.x" "$tmp/log.cold.g" "the SHA-256 repository"
else
	row "git log, first run (MNT/sha256)" "$tmp/log.cold.x" "$tmp/log.cold.g" "the SHA-256 repository"
	echo "  (not root: the page cache was not dropped)"
fi
row "git log, warm" "$tmp/log.x" "$tmp/log.g" "the SHA-256 repository"
row "git rev-list --all --objects, warm" "$tmp/rl.x" "$tmp/rl.g" "the SHA-256 repository"
row "cat-file --batch-all-objects --batch" "$tmp/cf.x" "$tmp/cf.g" "the SHA-256 repository"
row "clone --mirror --no-hardlinks" "$tmp/cl.x" "$tmp/cl.g" "the SHA-256 repository"
echo "  daemon peak RSS: $(sort -n "$tmp/rss" | tail -1) MiB"
exit $status
