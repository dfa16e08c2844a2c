#!/usr/bin/env bash
# t0530-faults.sh: faults around a build and a mount.
#
#   - the cache's file system full: the build stops with a clear message,
#     the cache stays intact, and the next build completes once there is
#     room (a small tmpfs: needs root, as CI is);
#   - the cache deleted, or overwritten with garbage, under a mount;
#   - a pack truncated in place under a mount;
#   - the repository moved away, or deleted, under a mount;
#   - kill -9 of the daemon in the middle of its build, then a mount
#     again: the cache ends as a clean build's;
#   - SIGSTOP and SIGCONT of the daemon while readers wait;
#   - another process holding the cache's write lock for 10 s: readers
#     go on being served from what is committed.
# In each, no crash, and a clean unmount (xl_umount checks the exit).
. "$(dirname "$0")/lib.sh"

require_fuse

"$XL_TOP/tests/gen-history.sh" --commits 400 --files 100 >"$TRASH/stream.fi"
mkrepo() {
	git init -q --bare --object-format="${2:-sha256}" "$1"
	git -C "$1" fast-import --quiet <"$TRASH/stream.fi"
	git -C "$1" symbolic-ref HEAD refs/heads/main
}
mkrepo "$TRASH/sha1.git" sha1
S1=$TRASH/sha1.git
git --git-dir="$S1" log --format='%H %T' >"$TRASH/log1"

# ---- the cache's file system full -----------------------------------------------
R=$TRASH/full.git
mkrepo "$R"
if [ "$(id -u)" != 0 ]; then
	skip "a full file system under the cache" "needs root to mount a tmpfs"
else
	mkdir "$TRASH/small"
	# streaming, and writing the rows at the end (XLATE_TEST_BULK=1),
	# when the SHA-1 packs are laid out on another thread meanwhile and
	# must write nothing if the rows fail
	for bulk in 0 1; do
	    how=$([ $bulk = 1 ] && echo ", its rows at the end" || echo "")
	    if mount -t tmpfs -o size=512k tmpfs "$TRASH/small"; then
		C=$TRASH/small/c.sqlite
		XLATE_TEST_BULK=$bulk "$XL" -C "$R" --cache "$C" build >"$TRASH/out" 2>&1
		rc=$?
		[ $rc -ne 0 ] && grep -q 'full' "$TRASH/out" &&
			ok "a build on a full file system$how stops, saying so (exit $rc)" ||
			not_ok "a build on a full file system$how stops, saying so (exit $rc: $(tail -1 "$TRASH/out"))"
		if command -v sqlite3 >/dev/null 2>&1; then
			expect "  the cache is intact" test "$(sqlite3 "$C" 'pragma integrity_check')" = ok
			expect "  and holds no SHA-1 pack of a build that failed" \
				test "$(sqlite3 "$C" 'select count(*) from packs1')" = 0
		else
			missing_tool "  the cache is intact" "no sqlite3"
		fi
		mount -o remount,size=64m "$TRASH/small"
		expect "  with room, the next build completes" "$XL" -C "$R" --cache "$C" build
		expect "  and verify passes" "$XL" -C "$R" --cache "$C" verify
		umount "$TRASH/small"
	    else
		not_ok "a tmpfs mounts (as root)"
	    fi
	done
fi

# ---- the cache deleted, or garbage, under a mount --------------------------------
for how in deleted garbage; do
	R=$TRASH/cache-$how.git
	mkrepo "$R"
	M=$TRASH/mnt-cache-$how
	if xl_mount "$R" "$M"; then
		git --git-dir="$M/sha1" log --format=%H -1 >/dev/null
		case $how in
		deleted) rm -f "$R"/xlatefs-cache.sqlite* ;;
		# the -shm is written over, not cut short: it is sqlite's
		# shared memory, and a cut one ends the daemon (odb/file.c)
		garbage) for f in "$R"/xlatefs-cache.sqlite "$R"/xlatefs-cache.sqlite-wal; do
				head -c 65536 /dev/urandom >"$f"
			done
			dd if=/dev/urandom of="$R"/xlatefs-cache.sqlite-shm bs=65536 \
			   count=1 conv=notrunc status=none ;;
		esac
		# what comes back is the truth or an error, never a wrong name
		# (git maps packs: a range that fails is SIGBUS to it, and a
		# reader that dies leaves its last line cut short: not counted)
		git --git-dir="$M/sha1" log --format='%H %T' >"$TRASH/log" 2>"$TRASH/err"
		rc=$?
		if [ -n "$(tail -c1 "$TRASH/log")" ]; then
			head -n -1 "$TRASH/log"
		else
			cat "$TRASH/log"
		fi >"$TRASH/whole"
		if grep -vxFf "$TRASH/log1" "$TRASH/whole" | grep -q .; then
			not_ok "the cache $how under a mount: a wrong line was served"
		elif [ $rc = 0 ] && cmp -s "$TRASH/log" "$TRASH/log1"; then
			ok "the cache $how under a mount: log still served, and right"
		else
			ok "the cache $how under a mount: $(wc -l <"$TRASH/whole") of $(wc -l <"$TRASH/log1") lines, all right, then an error (exit $rc)"
		fi
		expect "  the daemon is still there: status reads" cat "$M/status"
		xl_umount "$M"
	else
		not_ok "mount for the cache $how"
	fi
done

# ---- a pack cut short in place under a mount -------------------------------------
# The daemon maps packs; a page past a new end is SIGBUS on the next
# touch, and the daemon must live: the page reads as zeros, which is met
# as damage.  (The cache's -shm is not guarded: see odb/file.c.)
R=$TRASH/cut-pack.git
mkrepo "$R"
M=$TRASH/mnt-cut-pack
if xl_mount "$R" "$M"; then
	git --git-dir="$M/sha1" log --format=%H -1 >/dev/null
	for P in "$R"/objects/pack/*.pack; do
		truncate -s $(($(stat -c %s "$P") / 2)) "$P"
	done
	# git maps what it reads: a range the daemon fails is SIGBUS to it
	(git --git-dir="$M/sha256" cat-file --batch-all-objects --batch >/dev/null 2>&1)
	(git --git-dir="$M/sha1" log --format='%H %T' >/dev/null 2>&1)
	sleep 1.5	# an updater round, to log the faults
	expect "a pack cut in half under a mount: the daemon is still there" cat "$M/status"
	expect "  and its log says what happened" grep -q 'cut off under the mount' "$M.log"
	xl_umount "$M"
else
	not_ok "mount for the pack cut short"
fi

# ---- the repository moved away, or deleted, under a mount ------------------------
for how in moved deleted; do
	R=$TRASH/repo-$how.git
	mkrepo "$R"
	M=$TRASH/mnt-repo-$how
	if xl_mount "$R" "$M"; then
		git --git-dir="$M/sha1" log --format=%H -1 >/dev/null
		case $how in
		moved) mv "$R" "$R.away" ;;
		deleted) rm -rf "$R" ;;
		esac
		sleep 1.5	# an updater round
		ls -R "$M/sha1/refs" >/dev/null 2>&1
		git --git-dir="$M/sha1" log --format=%H >/dev/null 2>&1
		cat "$M/sha256/HEAD" >/dev/null 2>&1
		expect "the repository $how under a mount: the daemon is still there" cat "$M/status"
		xl_umount "$M"
	else
		not_ok "mount for the repository $how"
	fi
done

# ---- kill -9 of the daemon in its build, then a mount again ------------------------
# The background build takes a fraction of a second here, so the daemon is
# slowed as t0210 slows a build: run 1 ms, stopped 300 ms, until some
# names are committed (read from the cache meanwhile), then killed.  Its
# build streams (XLATE_TEST_BULK=0): a first build this big would write
# its names at its end, all or nothing.  It is started here, stopped at
# once, and not by xl_mount: that waits for the mount point, polling
# every 0.1 s, and meanwhile a build this small can end.
R=$TRASH/killed.git
git init -q --bare --object-format=sha256 "$R"
"$XL_TOP/tests/gen-history.sh" --commits 1500 --files 300 | git -C "$R" fast-import --quiet
git -C "$R" symbolic-ref HEAD refs/heads/main
"$XL" -C "$R" --cache "$TRASH/clean.sqlite" build
"$XL" -C "$R" --cache "$TRASH/clean.sqlite" export >"$TRASH/export.clean"
n=$(wc -l <"$TRASH/export.clean")
M=$TRASH/mnt-killed
if ! command -v sqlite3 >/dev/null 2>&1; then
	missing_tool "kill -9 of the daemon mid-build" "no sqlite3 to see how far its build got"
else
	mkdir -p "$M"
	XLATE_TEST_BULK=0 "$XLATEFS" -f -o background "$R" "$M" >>"$M.log" 2>&1 &
	pid=$!
	kill -STOP "$pid"
	echo "$pid" >"$M.pid"
	XL_MOUNTS="$XL_MOUNTS $M"
	got=0 i=0
	while [ $i -lt 1000 ]; do
		i=$((i + 1))
		kill -CONT "$pid"
		sleep 0.001
		kill -STOP "$pid"
		sleep 0.3
		got=$(sqlite3 -readonly "$R/xlatefs-cache.sqlite" 'SELECT
			(SELECT count(*) FROM objects) +
			(SELECT count(*) FROM objects_recent)' 2>/dev/null || echo 0)
		[ "$got" -gt 0 ] && break
	done
	kill -9 "$pid"
	kill -CONT "$pid" 2>/dev/null
	xl_umount "$M" quiet
	[ "$got" -gt 0 ] && [ "$got" -lt "$n" ] &&
		ok "the daemon killed mid-build: $got of $n objects committed" ||
		not_ok "the daemon killed mid-build ($got of $n objects committed)"
	if xl_mount "$R" "$M"; then
		"$XL" -C "$R" export >"$TRASH/export.after"
		same_file "  mounted again: the cache is a clean build's" \
			"$TRASH/export.clean" "$TRASH/export.after"
		expect "  and sha1/ serves its log" git --git-dir="$M/sha1" log --format=%T
		xl_umount "$M"
	else
		not_ok "mount again after kill -9"
	fi
fi

# ---- SIGSTOP and SIGCONT while readers wait --------------------------------------
R=$TRASH/stopped.git
mkrepo "$R"
M=$TRASH/mnt-stopped
if xl_mount "$R" "$M"; then
	pid=$(cat "$M.pid")
	kill -STOP "$pid"
	readers=""
	for i in 1 2 3 4; do
		git --git-dir="$M/sha1" log --format='%H %T' >"$TRASH/stopped.$i" 2>&1 &
		readers="$readers $!"
	done
	sleep 2
	kill -CONT "$pid"
	# shellcheck disable=SC2086 # a list of pids; not the daemon's
	wait $readers
	bad=0
	for i in 1 2 3 4; do
		cmp -s "$TRASH/stopped.$i" "$TRASH/log1" || bad=$((bad + 1))
	done
	[ $bad = 0 ] && ok "SIGSTOP for 2 s under 4 readers, then SIGCONT: every reader gets the whole log" ||
		not_ok "SIGSTOP, SIGCONT: $bad of 4 readers got something else"
	xl_umount "$M"
else
	not_ok "mount for SIGSTOP"
fi

# ---- the cache's write lock held by someone else for 10 s -------------------------
R=$TRASH/locked.git
mkrepo "$R"
M=$TRASH/mnt-locked
if xl_mount "$R" "$M"; then
	python3 - "$R/xlatefs-cache.sqlite" <<'EOF' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute('begin exclusive')
time.sleep(10)
db.execute('rollback')
EOF
	locker=$!
	sleep 1
	s=$(date +%s.%N)
	git --git-dir="$M/sha1" log --format='%H %T' >"$TRASH/locked" 2>&1
	e=$(date +%s.%N)
	took=$(awk "BEGIN { printf \"%.1f\", $e - $s }")
	if cmp -s "$TRASH/locked" "$TRASH/log1" && awk "BEGIN { exit !($took < 8) }"; then
		ok "the write lock held elsewhere: readers served from what is committed (${took} s)"
	else
		not_ok "the write lock held elsewhere: log in ${took} s, $(cmp "$TRASH/locked" "$TRASH/log1" 2>&1)"
	fi
	wait $locker
	expect "  and the daemon goes on after" git --git-dir="$M/sha1" rev-parse --verify HEAD
	xl_umount "$M"
else
	not_ok "mount for the write lock"
fi

test_done
