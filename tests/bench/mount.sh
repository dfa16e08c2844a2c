#!/bin/sh
# mount.sh: stock git on MNT/sha1 against stock git on the SHA-1 twin.
#
#   tests/bench/mount.sh
#
# Mounts the bench repository (tests/bench/lib.sh: a generated SHA-256
# repository of ~130k objects; XL_BENCH_* variables there) with
# ./xlatefs, and its SHA-1 twin (the same fast-import stream imported into
# a SHA-1 repository, packed alike: bench_twin), checks once that both
# show the same HEAD, then times, stock git on the twin beside stock git
# on MNT/sha1:
#   - `git log >/dev/null` (default format: every commit of HEAD);
#   - `git rev-list --all --objects >/dev/null` (every commit and tree);
#   - the latency of reading one object: a python3 process reading the
#     files MNT/objects-sha1/XX/YYYY... of 200 commits (then of their 200
#     root trees), beside `git cat-file --batch` on the twin answering
#     the same 200 names one request at a time; the per-object time.
# Each part starts on a fresh mount, so that its first run reads through
# FUSE with nothing in the kernel's caches: that first run is printed
# apart ("first"), and the timed runs after it are warm (object files are
# kept in the page cache; xlatefs still answers every open).  The latency
# runs are all cold: each run reads 200 objects not read before.
# The mount serves loose objects only (no synthesized packs yet), so a
# rev-list on it is slow: it gets XL_BENCH_MOUNT_RUNS timed runs (default
# 3, at most XL_BENCH_RUNS).  No target yet: this is the baseline.  Exits
# 0 whatever the figures, and when there is no FUSE here; non-zero when
# something fails or the two sides disagree.

set -eu

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
nlat=200

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-bench.XXXXXX")
mnt=$tmp/mnt
mkdir "$mnt"
xpid=

unmount() {
	if [ -n "$xpid" ]; then
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

# fresh_mount: (re)mount, so that the kernel has nothing of it cached
fresh_mount() {
	unmount
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

# timeit FILE CMD...: append CMD's wall time in seconds to FILE
timeit() {
	f=$1
	shift
	s=$(now)
	"$@" >/dev/null 2>"$tmp/err" </dev/null || die "failed: $* ($(tail -1 "$tmp/err"))"
	e=$(now)
	echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$f"
}

# median1 FILE: median(), to 1 decimal
median1() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		if (NR % 2) printf "%.1f", v[(NR + 1) / 2]
		else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() {
	echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "n/a" }'
}

runs_of() {
	tr '\n' ' ' <"$1" | sed 's/ $//'
}

# compare TITLE N GIT-ARGS...: the first run of git GIT-ARGS on each side
# (on a fresh mount), then N alternating timed runs
compare() {
	title=$1 n=$2
	shift 2
	fresh_mount
	: >"$tmp/c.git"
	: >"$tmp/c.mnt"
	: >"$tmp/t.git"
	: >"$tmp/t.mnt"
	timeit "$tmp/c.git" git --git-dir="$twin" "$@"
	timeit "$tmp/c.mnt" git --git-dir="$mnt/sha1" "$@"
	i=0
	while [ $i -lt "$n" ]; do
		timeit "$tmp/t.git" git --git-dir="$twin" "$@"
		timeit "$tmp/t.mnt" git --git-dir="$mnt/sha1" "$@"
		i=$((i + 1))
	done
	cg=$(cat "$tmp/c.git")
	cm=$(cat "$tmp/c.mnt")
	mg=$(median "$tmp/t.git")
	mm=$(median "$tmp/t.mnt")
	echo "$title"
	echo "  git on SHA-1 twin  median $mg s  (runs: $(runs_of "$tmp/t.git"); first run: $cg s)"
	echo "  git on MNT/sha1    median $mm s  (runs: $(runs_of "$tmp/t.mnt"); first run after mount: $cm s)"
	echo "  ratio              $(ratio "$mm" "$mg")  (first runs: $(ratio "$cm" "$cg"))"
}

# The mount is the twin: same HEAD by the cache (this also brings the
# cache up to date, so that no mount below waits for a build), and on
# the mount.
h1=$(git --git-dir="$twin" rev-parse HEAD)
hx=$("$XL" -C "$repo" map HEAD) || die "git-xlate map HEAD failed"
[ "$h1" = "$hx" ] || die "the twin's HEAD $h1 is not git-xlate map HEAD $hx"
fresh_mount
hm=$(git --git-dir="$mnt/sha1" rev-parse HEAD) || die "git rev-parse HEAD failed on the mount"
[ "$h1" = "$hm" ] || die "the twin's HEAD $h1 is not MNT/sha1's HEAD $hm"
ncommits=$(git --git-dir="$twin" rev-list --count HEAD)

compare "git log >/dev/null  ($ncommits commits; $nobj objects; warm: after the first run, shown apart; $runs runs each)" \
	"$runs" log
compare "git rev-list --all --objects >/dev/null  ($nobj objects; warm: after the first run, shown apart; $mruns runs each: XL_BENCH_MOUNT_RUNS, default 3)" \
	"$mruns" rev-list --all --objects

# Latency of one object, cold.
if ! command -v python3 >/dev/null 2>&1; then
	echo "cat of one object: no python3 here: skipped"
	exit 0
fi
[ $((nlat * runs)) -le "$ncommits" ] || die "too many runs for $ncommits commits"
git --git-dir="$twin" log --format='%H %T' | head -n $((nlat * runs)) >"$tmp/objs"
cat >"$tmp/lat.py" <<'EOF'
# lat.py TWIN MNT LIST KIND FIRST N: per-object seconds of reading, cold,
# N objects (column KIND: 0 commits, 1 their trees, of lines FIRST.. of
# LIST) from MNT/objects-sha1 (open, read, close each) and from `git
# cat-file --batch` on TWIN (one request, then its whole answer, at a
# time, after one untimed request); checks that both gave the same bytes.
import os, subprocess, sys, time
twin, mnt, lst, kind, first, n = sys.argv[1:7]
kind, first, n = int(kind), int(first), int(n)
with open(lst) as f:
    names = [l.split()[kind] for l in f.read().splitlines()[first:first + n]]
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
ask("HEAD")
t0 = time.perf_counter()
g = [ask(x) for x in names]
tg = time.perf_counter() - t0
p.stdin.close()
p.wait()
t0 = time.perf_counter()
m = []
for x in names:
    with open(os.path.join(mnt, "objects-sha1", x[:2], x[2:]), "rb") as f:
        m.append(f.read())
tm = time.perf_counter() - t0
for x, a, b in zip(names, g, m):
    if a != b:
        sys.exit("objects-sha1/%s/%s differs from git cat-file" % (x[:2], x[2:]))
print("%.9f %.9f" % (tg / n, tm / n))
EOF

fresh_mount
for kind in 0 1; do
	: >"$tmp/l$kind.git"
	: >"$tmp/l$kind.mnt"
done
i=0
while [ $i -lt "$runs" ]; do
	for kind in 0 1; do
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
	echo "  git cat-file --batch on twin  median $mg us  (runs: $(runs_of "$tmp/l$kind.git"); one request at a time)"
	echo "  read MNT/objects-sha1/XX/...  median $mm us  (runs: $(runs_of "$tmp/l$kind.mnt"); open, read, close; first read after mount)"
	echo "  ratio                         $(ratio "$mm" "$mg")"
done
