#!/usr/bin/env bash
# mount.sh: stock git on MNT/sha1 against stock git on the SHA-1 twin.
#
#   tests/bench/mount.sh
#
# Mounts the bench repository (tests/bench/lib.sh: a generated SHA-256
# repository of ~130k objects; XL_BENCH_* variables there, XL_BENCH_QUICK=1
# for a small one) with ./xlatefs, and its SHA-1 twin (the same
# fast-import stream imported into a SHA-1 repository, packed alike:
# bench_twin), checks that both show the same HEAD, then times stock git
# on the twin beside stock git on MNT/sha1, each as a ratio mount/twin of
# medians:
#   - `git log` (default format: every commit of HEAD), cold and warm;
#   - `git rev-list --all --objects`, cold and warm;
#   - `git cat-file --batch-all-objects --batch`, warm;
#   - `git clone --mirror --no-hardlinks SRC DEST` (a local clone that
#     copies the files, as it must from a mount: a plain local clone of
#     the twin would hard-link its packs and cost nothing);
#   - `git clone --mirror file://SRC DEST` (through pack-objects);
#   - the latency of reading one object, cold: a python3 process reading
#     the files MNT/objects-sha1/XX/YYYY... of 200 commits (then of their
#     200 root trees), beside `git cat-file --batch` on the twin answering
#     the same 200 names one request at a time; the per-object time.
# What each side prints is compared once, outside the timed runs (sha256
# of the output of log, rev-list and cat-file; refs and every object of
# each clone), and a difference fails the benchmark.
#
# Cold and warm.  Each part starts on a fresh mount of a built cache.  A
# cold run is the first run after a mount with the page cache dropped
# (`echo 3 >/proc/sys/vm/drop_caches`) just before it, on each side
# (XL_BENCH_COLD_RUNS of them, default 3, each on a mount of its own; the
# median is quoted): the
# twin's files, the SHA-256 repository's and the cache are all read from
# disk, and the kernel has nothing of the mount.  Where the page cache
# cannot be dropped (not root), that is said, and the "cold" runs are
# only first runs.  Warm runs come after, alternating: object files are
# then in the page cache, and xlatefs still answers every open.  For the
# latency each run has its own fresh mount and dropped page cache, and
# each side one untimed read of the same object (not one of the timed
# ones) first: git has opened its pack, xlatefs has answered once.
#
# Whether the mount serves loose objects only or packs too is not
# assumed: what MNT/sha1/objects/pack holds is printed.  Runs that are
# slow on a mount of loose objects (rev-list, cat-file, clones) get
# XL_BENCH_MOUNT_RUNS timed runs each (default 3, at most XL_BENCH_RUNS).
# Prints, for each part, the daemon's peak RSS (VmHWM) and its RssAnon
# when it was unmounted.  No target yet: this is the baseline.  Exits 0
# whatever the figures, and when there is no FUSE here; non-zero when
# something fails or the two sides disagree.

set -eu -o pipefail

. "$(dirname "$0")/lib.sh"

XLFS=${XLFS:-$top/xlatefs}
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	echo "mount: no FUSE here (/dev/fuse or fusermount3 missing): the mount figures are skipped"
	exit 0
fi
[ -x "$XLFS" ] || die "no $XLFS (run make)"

bench_repo
bench_twin

mruns=${XL_BENCH_MOUNT_RUNS:-3}
case $mruns in ''|*[!0-9]*|0) die "XL_BENCH_MOUNT_RUNS must be a positive integer" ;; esac
[ "$mruns" -le "$runs" ] || mruns=$runs
# cold runs: each the first run of a fresh mount, the page cache dropped
cruns=${XL_BENCH_COLD_RUNS:-3}
case $cruns in ''|*[!0-9]*|0) die "XL_BENCH_COLD_RUNS must be a positive integer" ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-bench.XXXXXX")
mnt=$tmp/mnt
mkdir "$mnt"
xpid=
part=
status=0
: >"$tmp/rss"

if can_drop; then
	cold="cold: page cache dropped before each side's first run"
else
	cold="first runs only: the page cache cannot be dropped here (not root), so the twin's and the repository's files may be cached"
fi

# unmount: take the mount down; note the daemon's memory first
unmount() {
	if [ -n "$xpid" ]; then
		if [ -r "/proc/$xpid/status" ]; then
			awk -v p="$part" '/^VmHWM:/ { h = $2 } /^RssAnon:/ { a = $2 }
				END { printf "%s\t%d\t%d\n", p, h, a }' "/proc/$xpid/status" >>"$tmp/rss"
		fi
		if mountpoint -q "$mnt"; then
			fusermount3 -u "$mnt" || kill "$xpid" 2>/dev/null || true
		else
			kill "$xpid" 2>/dev/null || true
		fi
		wait "$xpid" 2>/dev/null || true
		xpid=
	fi
}
trap 'unmount; rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# fresh_mount PART: (re)mount, so that the kernel has nothing of it
# cached and the daemon starts afresh; PART names it in the RSS table
fresh_mount() {
	unmount
	part=$1
	"$XLFS" -f "$repo" "$mnt" 2>>"$tmp/xlatefs.log" </dev/null &
	xpid=$!
	w=0
	until mountpoint -q "$mnt"; do
		kill -0 "$xpid" 2>/dev/null || {
			wait "$xpid" || true
			xpid=
			die "xlatefs exited before mounting: $(tail -1 "$tmp/xlatefs.log")"
		}
		w=$((w + 1))
		[ $w -lt 6000 ] || die "not mounted after 600 s"
		sleep 0.1
	done
}

# median1 FILE: median(), to 1 decimal
median1() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		if (NR % 2) printf "%.1f", v[(NR + 1) / 2]
		else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

runs_of() {
	tr '\n' ' ' <"$1" | sed 's/ $//'
}

# differ WHAT: say that the two sides disagree, and fail at the end
differ() {
	echo "  OUTPUTS DIFFER: $*"
	status=1
}

# same_output GIT-ARGS...: git GIT-ARGS prints the same bytes on both
# sides (sha256 of each output; untimed); echoes the size and checksum
same_output() {
	a=$(git --git-dir="$twin" "$@" 2>"$tmp/err" | sha256sum) ||
		die "failed on the twin: git $* ($(tail -1 "$tmp/err"))"
	b=$(git --git-dir="$mnt/sha1" "$@" 2>"$tmp/err" | sha256sum) ||
		die "failed on MNT/sha1: git $* ($(tail -1 "$tmp/err"))"
	if [ "$a" = "$b" ]; then
		echo "  output compared once: the same on both sides (sha256 ${a%% *})"
		return
	fi
	differ "git $*: sha256 ${a%% *} on the twin, ${b%% *} on MNT/sha1"
	git --git-dir="$twin" "$@" >"$tmp/out.twin" 2>/dev/null || true
	git --git-dir="$mnt/sha1" "$@" >"$tmp/out.mnt" 2>/dev/null || true
	diff "$tmp/out.twin" "$tmp/out.mnt" | head -5 | sed 's/^/    /' || true
	# git sizes abbreviated names by the objects it counts in packs
	# (core.abbrev=auto): say so when that is all that differs
	if git --git-dir="$twin" "$@" --no-abbrev 2>/dev/null | cmp -s - \
		<(git --git-dir="$mnt/sha1" "$@" --no-abbrev 2>/dev/null); then
		echo "    only the abbreviated names differ: with --no-abbrev both print the same;" \
			"git's abbreviation length ($(git --git-dir="$twin" rev-parse --short HEAD | tr -d '\n' | wc -c) on the twin," \
			"$(git --git-dir="$mnt/sha1" rev-parse --short HEAD | tr -d '\n' | wc -c) on MNT/sha1) follows the number of objects it finds in packs"
	fi
	rm -f "$tmp/out.twin" "$tmp/out.mnt"
}

# compare TITLE N COLD GIT-ARGS...: on a fresh mount, if COLD is 1 the
# first run of git GIT-ARGS on each side after dropping the page cache;
# then the outputs compared, untimed; then N alternating timed runs
compare() {
	title=$1 n=$2 withcold=$3
	shift 3
	fresh_mount "$title"
	: >"$tmp/t.git"
	: >"$tmp/t.mnt"
	echo "$title"
	if [ "$withcold" = 1 ]; then
		: >"$tmp/c.git"
		: >"$tmp/c.mnt"
		i=0
		while [ $i -lt "$cruns" ]; do
			[ $i = 0 ] || fresh_mount "$title"
			drop_caches
			timeit "$tmp/c.git" git --git-dir="$twin" "$@"
			drop_caches
			timeit "$tmp/c.mnt" git --git-dir="$mnt/sha1" "$@"
			i=$((i + 1))
		done
	fi
	same_output "$@"
	i=0
	while [ $i -lt "$n" ]; do
		timeit "$tmp/t.git" git --git-dir="$twin" "$@"
		timeit "$tmp/t.mnt" git --git-dir="$mnt/sha1" "$@"
		i=$((i + 1))
	done
	mg=$(median "$tmp/t.git")
	mm=$(median "$tmp/t.mnt")
	echo "  warm: git on SHA-1 twin  median $mg s  (runs: $(runs_of "$tmp/t.git"))"
	echo "  warm: git on MNT/sha1    median $mm s  (runs: $(runs_of "$tmp/t.mnt"))"
	echo "  warm: ratio              $(ratio "$mm" "$mg")"
	if [ "$withcold" = 1 ]; then
		cg=$(median "$tmp/c.git")
		cm=$(median "$tmp/c.mnt")
		echo "  cold: git on SHA-1 twin  median $cg s  (runs: $(runs_of "$tmp/c.git"))"
		echo "  cold: git on MNT/sha1    median $cm s  (runs: $(runs_of "$tmp/c.mnt"); each the first run on a fresh mount)"
		echo "  cold: ratio              $(ratio "$cm" "$cg")  ($cold)"
	fi
}

# objects_of REPO: every object of REPO, for comparing clones
objects_of() {
	git --git-dir="$1" cat-file --batch-all-objects --batch-check
}

# clone_of SRC DEST ARGS...: the clone, made afresh
clone_of() {
	src=$1 dest=$2
	shift 2
	rm -rf "$dest"
	git clone -q --mirror "$@" "$src" "$dest"
}

# clones TITLE N PREFIX ARGS...: N alternating timed runs of git clone
# --mirror ARGS PREFIX+SRC on each side (on a fresh mount); the clones
# of the first runs are compared (refs and every object), untimed
clones() {
	title=$1 n=$2 prefix=$3
	shift 3
	fresh_mount "$title"
	echo "$title"
	: >"$tmp/t.git"
	: >"$tmp/t.mnt"
	i=0
	while [ $i -lt "$n" ]; do
		timeit "$tmp/t.git" clone_of "$prefix$twin" "$tmp/clone-twin.git" "$@"
		timeit "$tmp/t.mnt" clone_of "$prefix$mnt/sha1" "$tmp/clone-mnt.git" "$@"
		if [ $i = 0 ]; then
			git --git-dir="$tmp/clone-twin.git" for-each-ref >"$tmp/refs.twin"
			git --git-dir="$tmp/clone-mnt.git" for-each-ref >"$tmp/refs.mnt"
			a=$(objects_of "$tmp/clone-twin.git" | sha256sum)
			b=$(objects_of "$tmp/clone-mnt.git" | sha256sum)
			no=$(objects_of "$tmp/clone-mnt.git" | wc -l | tr -d ' ')
			if ! cmp -s "$tmp/refs.twin" "$tmp/refs.mnt"; then
				differ "the clone of MNT/sha1 has other refs than the clone of the twin"
			elif [ "$a" != "$b" ]; then
				differ "the clone of MNT/sha1 has other objects than the clone of the twin"
			else
				echo "  clones compared once: the same $(wc -l <"$tmp/refs.mnt" | tr -d ' ') refs and $no objects (cat-file --batch-all-objects --batch-check)"
			fi
		fi
		rm -rf "$tmp/clone-twin.git" "$tmp/clone-mnt.git"
		i=$((i + 1))
	done
	mg=$(median "$tmp/t.git")
	mm=$(median "$tmp/t.mnt")
	echo "  git on SHA-1 twin  median $mg s  (runs: $(runs_of "$tmp/t.git"))"
	echo "  git on MNT/sha1    median $mm s  (runs: $(runs_of "$tmp/t.mnt"))"
	echo "  ratio              $(ratio "$mm" "$mg")"
}

# The mount is the twin: same HEAD by the cache (this also brings the
# cache up to date, so that no mount below waits for a build), and on
# the mount.
h1=$(git --git-dir="$twin" rev-parse HEAD)
hx=$("$XL" -C "$repo" map HEAD) || die "git-xlate map HEAD failed"
[ "$h1" = "$hx" ] || die "the twin's HEAD $h1 is not git-xlate map HEAD $hx"
fresh_mount "HEAD"
hm=$(git --git-dir="$mnt/sha1" rev-parse HEAD) || die "git rev-parse HEAD failed on the mount"
[ "$h1" = "$hm" ] || die "the twin's HEAD $h1 is not MNT/sha1's HEAD $hm"
ncommits=$(git --git-dir="$twin" rev-list --count HEAD)
if [ -d "$mnt/sha1/objects/pack" ]; then
	packs=$(ls "$mnt/sha1/objects/pack" | grep -c '\.pack$' || true)
else
	packs=0
fi
echo "mount: MNT/sha1/objects/pack holds $packs pack(s); the twin: $(ls "$twin/objects/pack" | grep -c '\.pack$') pack(s), $nobj objects"
echo "mount: $runs runs of the fast parts (XL_BENCH_RUNS), $mruns of the slow ones (XL_BENCH_MOUNT_RUNS), $cruns cold ones (XL_BENCH_COLD_RUNS); $cold"

compare "git log >/dev/null  ($ncommits commits; $runs warm runs each)" \
	"$runs" 1 log
compare "git rev-list --all --objects >/dev/null  ($nobj objects; $mruns warm runs each)" \
	"$mruns" 1 rev-list --all --objects
compare "git cat-file --batch-all-objects --batch >/dev/null  ($nobj objects; $mruns warm runs each)" \
	"$mruns" 0 cat-file --batch-all-objects --batch
clones "git clone --mirror --no-hardlinks SRC DEST  (a local clone, copying every file; $mruns runs each)" \
	"$mruns" "" --no-hardlinks
clones "git clone --mirror file://SRC DEST  (through upload-pack and pack-objects; $mruns runs each)" \
	"$mruns" "file://"

# Latency of one object, cold.
if ! command -v python3 >/dev/null 2>&1; then
	echo "cat of one object: no python3 here: skipped"
else
	# 200 objects a run, fewer on a small repository; one more commit,
	# after them, for the untimed first read
	nlat=200
	[ $((nlat * runs)) -lt "$ncommits" ] || nlat=$(((ncommits - 1) / runs))
	[ "$nlat" -ge 10 ] || die "too few commits ($ncommits) for $runs latency runs"
	git --git-dir="$twin" log --format='%H %T' >"$tmp/log"
	head -n $((nlat * runs + 1)) "$tmp/log" >"$tmp/objs"
	cat >"$tmp/lat.py" <<'EOF'
# lat.py TWIN MNT LIST KIND FIRST N: per-object seconds of reading N
# objects (column KIND: 0 commits, 1 their trees, of lines FIRST.. of
# LIST) from MNT/objects-sha1 (open, read, close each) and from `git
# cat-file --batch` on TWIN (one request, then its whole answer, at a
# time).  Each side first reads, untimed, the object of LIST's last line
# (not one of the timed ones).  Checks that both gave the same bytes.
import os, subprocess, sys, time
twin, mnt, lst, kind, first, n = sys.argv[1:7]
kind, first, n = int(kind), int(first), int(n)
with open(lst) as f:
    lines = f.read().splitlines()
names = [l.split()[kind] for l in lines[first:first + n]]
warm = lines[-1].split()[kind]
def path(x):
    return os.path.join(mnt, "objects-sha1", x[:2], x[2:])
p = subprocess.Popen(["git", "--git-dir=" + twin, "cat-file", "--batch"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def ask(name):
    p.stdin.write(name.encode() + b"\n")
    p.stdin.flush()
    size = int(p.stdout.readline().split()[2])
    b = p.stdout.read(size + 1)
    if len(b) != size + 1:
        sys.exit("git cat-file --batch: short answer")
    return b[:-1]
ask(warm)
t0 = time.perf_counter()
g = [ask(x) for x in names]
tg = time.perf_counter() - t0
p.stdin.close()
p.wait()
with open(path(warm), "rb") as f:
    f.read()
t0 = time.perf_counter()
m = []
for x in names:
    with open(path(x), "rb") as f:
        m.append(f.read())
tm = time.perf_counter() - t0
for x, a, b in zip(names, g, m):
    if a != b:
        sys.exit("objects-sha1/%s/%s differs from git cat-file" % (x[:2], x[2:]))
print("%.9f %.9f" % (tg / n, tm / n))
EOF
	for kind in 0 1; do
		: >"$tmp/l$kind.git"
		: >"$tmp/l$kind.mnt"
	done
	i=0
	while [ $i -lt "$runs" ]; do
		for kind in 0 1; do
			fresh_mount "latency"
			drop_caches
			python3 "$tmp/lat.py" "$twin" "$mnt" "$tmp/objs" $kind $((i * nlat)) $nlat >"$tmp/lat" ||
				die "latency run failed"
			read -r g m <"$tmp/lat"
			# microseconds
			echo "$g" | awk '{ printf "%.1f\n", $1 * 1e6 }' >>"$tmp/l$kind.git"
			echo "$m" | awk '{ printf "%.1f\n", $1 * 1e6 }' >>"$tmp/l$kind.mnt"
		done
		i=$((i + 1))
	done
	for kind in 0 1; do
		what=commit
		[ $kind -eq 1 ] && what="tree (root trees of those commits)"
		mg=$(median1 "$tmp/l$kind.git")
		mm=$(median1 "$tmp/l$kind.mnt")
		echo "read one $what, cold: per-object time over $nlat different ones per run, in one process  ($runs runs each)"
		echo "  (each run: a fresh mount, the page cache dropped, one untimed read of another object on each side; bytes compared)"
		echo "  git cat-file --batch on twin  median $mg us  (runs: $(runs_of "$tmp/l$kind.git"); one request at a time)"
		echo "  read MNT/objects-sha1/XX/...  median $mm us  (runs: $(runs_of "$tmp/l$kind.mnt"); open, read, close)"
		echo "  ratio                         $(ratio "$mm" "$mg")"
	done
fi

unmount
echo "the daemon's memory, per mount: peak RSS (VmHWM) and RssAnon when unmounted"
# one line a part; the latency's mounts (one a run) as their largest
awk -F '\t' '{ t = $1; sub(/  .*/, "", t)
		if (!(t in n)) order[++k] = t
		n[t]++; if ($2 > h[t]) h[t] = $2; if ($3 > a[t]) a[t] = $3 }
	END { for (i = 1; i <= k; i++) { t = order[i]
		printf "  %-48s VmHWM %6.0f MiB  RssAnon %6.0f MiB%s\n", t, h[t] / 1024, a[t] / 1024,
			(n[t] > 1 ? "  (the largest of " n[t] " mounts)" : "") } }' "$tmp/rss"
exit $status
