#!/usr/bin/env bash
# large.sh: the build at the scale of a long-lived project (make
# bench-large; opt-in: generating the repository takes many minutes on
# two cores, and it is kept in .bench/large for the next run).
#
#   tests/bench/large.sh
#
# The repository: tests/gen-history.sh with XL_BENCH_GEN_OPTS (default
# "--commits 80000 --files 8000 --big-blob-kib 1024", about a million
# objects: deep history, wide trees, merges, renames, big blobs), one
# pack made by repack -adf, as for make bench.  Prints:
#
#   - build.sh on it: git xlate build against git index-pack --threads=N
#     on the same pack (medians, RSS total and anonymous peaks, the same
#     on one thread);
#   - start-up: how long a mount whose cache is built takes to come up
#     (until the mount point is there), median of XL_BENCH_RUNS;
#   - incremental: a real fetch of about 10,000 new objects (the pack
#     it leaves): git xlate build against git index-pack on that pack
#     alone, medians;
#   - the fold those builds put off: a build moves the recent rows into
#     the big table once they pass an eighth of it, timed on a copy of
#     the cache with an eighth of its rows put back among the recent
#     ones (needs sqlite3), and its share per fetch.
#
# XL_BENCH_RUNS defaults to 3 here.  Exits 0 whatever the figures.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
export XL_BENCH_DIR=${XL_BENCH_DIR:-$here/../../.bench/large}
export XL_BENCH_GEN_OPTS=${XL_BENCH_GEN_OPTS:---commits 80000 --files 8000 --big-blob-kib 1024}
export XL_BENCH_RUNS=${XL_BENCH_RUNS:-3}

. "$here/lib.sh"
bench_repo

echo "== large repository: $nobj objects ($genopts)"
"$here/build.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-large.XXXXXX")
cleanup() {
	mountpoint -q "$tmp/mnt" 2>/dev/null && fusermount3 -u "$tmp/mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
threads=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null || echo 2)

# ---- start-up of a mount whose cache is built ----------------------------------
cache=$tmp/c.sqlite
"$XL" -C "$repo" --cache "$cache" build
XLATEFS=${XLATEFS:-$top/xlatefs}
if [ -x "$XLATEFS" ] && [ -e /dev/fuse ]; then
	mkdir "$tmp/mnt"
	: >"$tmp/t.start"
	i=0
	while [ $i -lt "$runs" ]; do
		s=$(now)
		"$XLATEFS" -o cache="$cache" "$repo" "$tmp/mnt"
		until mountpoint -q "$tmp/mnt"; do sleep 0.005; done
		e=$(now)
		echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$tmp/t.start"
		fusermount3 -u "$tmp/mnt"
		while pgrep -f "xlatefs -o cache=$cache" >/dev/null; do sleep 0.05; done
		i=$((i + 1))
	done
	echo "start-up of a mount whose cache is built ($nobj objects; no stock-git counterpart)"
	echo "  median $(median "$tmp/t.start") s  (runs: $(tr '\n' ' ' <"$tmp/t.start"))"
else
	echo "start-up: skipped (no $XLATEFS or no /dev/fuse)"
fi

# ---- incremental: a fetch of ~10,000 new objects -----------------------------------
# The new commits are made in a clone of their own and fetched, so that
# the new pack is what a fetch leaves: made by pack-objects (newer
# versions whole, older ones deltas against them), thin, completed by
# index-pack --fix-thin.  (fast-import's own pack has its deltas the
# other way round and no appended bases: not what users fetch.)
inc=$tmp/inc.git
src=$tmp/src.git
git clone -q --bare --no-hardlinks "$repo" "$inc"
git clone -q --bare --shared "$repo" "$src"
cp "$cache" "$tmp/i.sqlite"
# new commits on main, each changing a few files: about 10,000 objects
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
git -C "$inc" ls-tree -r --name-only main | awk 'NR % 37 == 1' | head -300 >"$tmp/files"
[ -s "$tmp/files" ] || die "no files to change on main"
# 700 commits of 3 changed files each (blobs, the trees above them, the
# commit): about 10,000 objects on the default repository
awk -v commits=700 '
	{ f[n++] = $0 }
	END {
		for (c = 0; c < commits; c++) {
			print "commit refs/heads/main"
			printf "committer bench <bench@example.com> %d +0000\n", 1700000000 + c
			printf "data <<EOT\nincremental %d\nEOT\n", c
			if (c == 0)
				print "from refs/heads/main^0"
			for (k = 0; k < 3; k++) {
				p = f[(c * 3 + k) % n]
				printf "M 100644 inline %s\ndata <<EOT\nchange %d to %s\nEOT\n", p, c, p
			}
		}
	}' "$tmp/files" >"$tmp/inc.fi"
git -C "$src" fast-import --quiet <"$tmp/inc.fi"
before=$(ls "$inc"/objects/pack/*.pack)
git -C "$inc" -c fetch.unpackLimit=1 fetch -q "$src" main:main
newpack=$(ls "$inc"/objects/pack/*.pack | grep -vxF "$before" | head -1)
[ -n "$newpack" ] || die "the fetch left no pack"
newobj=$(git -C "$inc" show-index <"${newpack%.pack}.idx" | wc -l | tr -d ' ')
nonrepo=$tmp/nonrepo
mkdir "$nonrepo"
: >"$tmp/t.inc.git"
: >"$tmp/t.inc.xl"
i=0
while [ $i -lt "$runs" ]; do
	rm -f "$nonrepo/x.idx" "$nonrepo/x.rev"
	s=$(now)
	(cd "$nonrepo" && git index-pack --object-format=sha256 --threads="$threads" \
		-o x.idx "$newpack" >/dev/null)
	e=$(now)
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$tmp/t.inc.git"
	cp "$cache" "$tmp/i.sqlite"
	rm -f "$tmp/i.sqlite-wal" "$tmp/i.sqlite-shm"
	# the copy's writeback is not the build's work: out of its time
	sync
	s=$(now)
	"$XL" -C "$inc" --cache "$tmp/i.sqlite" build
	e=$(now)
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$tmp/t.inc.xl"
	i=$((i + 1))
done
mg=$(median "$tmp/t.inc.git")
mx=$(median "$tmp/t.inc.xl")
echo "incremental build after a fetch of $newobj objects into $nobj ($runs runs each)"
echo "  git index-pack (the new pack alone)   median $mg s  (runs: $(tr '\n' ' ' <"$tmp/t.inc.git"))"
echo "  git xlate build (the cache of the rest) median $mx s  (runs: $(tr '\n' ' ' <"$tmp/t.inc.xl"))"
echo "  ratio xlate/index-pack                $(echo "$mx $mg" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "n/a" }')"

# ---- the fold: what builds after a fetch put off ---------------------------------
# Their rows wait in the table of recent rows; the build that takes
# them past an eighth of the big table moves them all into it, in name
# order.  That build is timed here with nothing else to do: on a copy
# of the cache whose rows are an eighth recent (what some twelve such
# fetches leave), `build --fold`.
if command -v sqlite3 >/dev/null 2>&1; then
	cp "$cache" "$tmp/f.sqlite"
	sqlite3 "$tmp/f.sqlite" "BEGIN;
		INSERT INTO objects_recent SELECT * FROM objects WHERE abs(random()) % 9 = 0;
		DELETE FROM objects WHERE sha256 IN (SELECT sha256 FROM objects_recent);
		COMMIT; VACUUM;" >/dev/null
	nrecent=$(sqlite3 "$tmp/f.sqlite" 'SELECT count(*) FROM objects_recent')
	: >"$tmp/t.fold"
	i=0
	while [ $i -lt "$runs" ]; do
		cp "$tmp/f.sqlite" "$tmp/g.sqlite"
		rm -f "$tmp/g.sqlite-wal" "$tmp/g.sqlite-shm"
		sync
		s=$(now)
		"$XL" -C "$repo" --cache "$tmp/g.sqlite" build --fold
		e=$(now)
		echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$tmp/t.fold"
		i=$((i + 1))
	done
	[ "$(sqlite3 "$tmp/g.sqlite" 'SELECT count(*) FROM objects_recent')" = 0 ] ||
		die "build --fold left recent rows"
	mf=$(median "$tmp/t.fold")
	echo "the fold of $nrecent recent rows into the big table ($runs runs; no stock-git counterpart)"
	echo "  git xlate build --fold                median $mf s  (runs: $(tr '\n' ' ' <"$tmp/t.fold"))"
	echo "  its share per fetch of $newobj objects   $(echo "$mf $newobj $nrecent" | awk '{ printf "%.3f", $1 * $2 / $3 }') s"
	echo "  build after the fetch with that share  $(echo "$mx $mf $newobj $nrecent $mg" | awk '{ t = $1 + $2 * $3 / $4; r = $5 > 0 ? t / $5 : 0; printf "%.3f s, ratio %.2f", t, r }')"
else
	echo "the fold: skipped (no sqlite3)"
fi
