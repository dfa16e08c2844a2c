#!/usr/bin/env bash
# t0310-mount-bad.sh: what a mount does when things are not simple.
#
#   - a corrupt object: EIO on its files only, a log line naming it, and
#     everything else still served; repaired, it reads again;
#   - a cache file damaged past what opening reads: the mount comes up,
#     its check finds it while serving (status, log), never a wrong name,
#     and the next mount sets the file aside and rebuilds;
#   - -o background: the mount is there at once while the cache is
#     built; sha1/ never shows a wrong name meanwhile, and ends complete;
#   - mounting through mount(8) and mount.fuse3, as /etc/fstab does;
#   - bad options and bad repositories: a clear message, no mount.
. "$(dirname "$0")/lib.sh"

require_fuse

# one stream, imported with both algorithms (the SHA-1 side is the oracle)
"$XL_TOP/tests/gen-history.sh" --commits 1500 --files 300 >"$TRASH/stream.fi"
for algo in sha1 sha256; do
	git init -q --bare --object-format=$algo "$TRASH/$algo.git"
	git -C "$TRASH/$algo.git" fast-import --quiet <"$TRASH/stream.fi"
	git -C "$TRASH/$algo.git" symbolic-ref HEAD refs/heads/main
done
R=$TRASH/sha256.git
S1=$TRASH/sha1.git

# ---- background ------------------------------------------------------------
M=$TRASH/bg
if xl_mount "$R" "$M" -o background; then
	state=$(sed -n 's/^state: //p' "$M/status")
	ok "-o background mounts at once (state: $state)"
	# while building, every ref shown must already carry its final name
	git --git-dir="$M/sha1" for-each-ref --format='%(objectname) %(refname)' >"$TRASH/early" 2>&1
	git --git-dir="$S1" for-each-ref --format='%(objectname) %(refname)' >"$TRASH/all"
	expect "refs shown during the build have their final SHA-1 names ($(wc -l <"$TRASH/early") of $(wc -l <"$TRASH/all"))" \
		sh -c "! grep -vxFf '$TRASH/all' '$TRASH/early'"
	for _ in $(seq 600); do
		grep -q '^state: ready$' "$M/status" && break
		sleep 0.1
	done
	expect "the background build finishes: state ready" grep -q '^state: ready$' "$M/status"
	expect "then status: pending 0" grep -q '^pending: 0$' "$M/status"
	# ready means the refs are there: no wait for the snapshot to age
	same_file "then sha1/ has every ref of the SHA-1 twin, at once" \
		<(git --git-dir="$M/sha1" for-each-ref) <(git --git-dir="$S1" for-each-ref)
	expect "and its SHA-1 pack is listed, at once" \
		grep -q '^P pack-[0-9a-f]\{40\}\.pack$' "$M/sha1/objects/info/packs"
	expect "and fsck is clean" git --git-dir="$M/sha1" fsck --full --no-dangling
	xl_umount "$M"
else
	not_ok "-o background mounts"
fi

# ---- blobs at the edges of the framing, and big ones that stream ----------------
B=$TRASH/big.git
git init -q --bare --object-format=sha256 "$B"
(
	for n in 0 1 65524 65525 65526 65535 65536 131070 8388608 20971527; do
		head -c $n /dev/urandom >"$TRASH/blob-$n"
		printf '100644 blob %s\tb%s\n' "$(git --git-dir="$B" hash-object -w "$TRASH/blob-$n")" $n
	done
) | git --git-dir="$B" mktree >"$TRASH/big-tree"
c=$(git --git-dir="$B" commit-tree -m big "$(cat "$TRASH/big-tree")")
git --git-dir="$B" update-ref refs/heads/main "$c"
git --git-dir="$B" symbolic-ref HEAD refs/heads/main
git --git-dir="$B" repack -adq
M=$TRASH/mbig
if xl_mount "$B" "$M"; then
	cat >"$TRASH/big.py" <<'EOF'
import hashlib, os, random, sys, zlib
m, trash = sys.argv[1], sys.argv[2]
bad = 0
for name in sorted(os.listdir(trash)):
    if not name.startswith('blob-'):
        continue
    want = open(os.path.join(trash, name), 'rb').read()
    hdr = b'blob %d\0' % len(want)
    for view, algo in (('sha1', hashlib.sha1), ('sha256', hashlib.sha256)):
        h = algo(hdr + want).hexdigest()
        raw = '%s/objects-%s/%s/%s' % (m, view, h[:2], h[2:])
        loose = '%s/%s/objects/%s/%s' % (m, view, h[:2], h[2:])
        # the tail first (the Adler-32 needs the whole stream), then all
        # of it, then reads at random offsets, out of order
        fd = os.open(loose, os.O_RDONLY)
        size = os.fstat(fd).st_size
        tail = os.pread(fd, 4, size - 4)
        whole = b''
        while len(whole) < size:
            whole += os.pread(fd, 1 << 20, len(whole))
        d = zlib.decompressobj()
        out = d.decompress(whole)
        if out != hdr + want or not d.eof or d.unused_data or whole[-4:] != tail:
            print('BAD %s (%d bytes)' % (loose, len(want))); bad += 1
        os.close(fd)
        fd = os.open(raw, os.O_RDONLY)
        rnd = random.Random(len(want))
        for _ in range(40):
            off = rnd.randrange(0, len(want) + 1)
            n = rnd.randrange(0, 300000)
            if os.pread(fd, n, off) != want[off:off + n]:
                print('BAD pread %s at %d+%d' % (raw, off, n)); bad += 1
        os.close(fd)
sys.exit(1 if bad else 0)
EOF
	expect "blobs of 0 B to 20 MiB (stored-block edges, streamed ones): framing, Adler-32 and random reads" \
		python3 "$TRASH/big.py" "$M" "$TRASH"
	xl_umount "$M"
else
	not_ok "mount the big-blob repository"
fi

# ---- a corrupt object --------------------------------------------------------
C=$TRASH/corrupt.git
cp -r "$R" "$C"
rm -f "$C/xlatefs-cache.sqlite"*
# every object loose: unpack-objects skips objects present, so move the pack away first
mkdir -p "$TRASH/packs"
mv "$C"/objects/pack/* "$TRASH/packs/"
git -C "$C" unpack-objects -q <"$(ls "$TRASH"/packs/*.pack)"
read -r _ _ blob path < <(git --git-dir="$C" ls-tree -r HEAD | awk '$2 == "blob"' | head -1)
blob1=$(git --git-dir="$S1" rev-parse "HEAD:$path")
M=$TRASH/bad
if xl_mount "$C" "$M"; then
	f=$C/objects/${blob:0:2}/${blob:2}
	cp "$f" "$TRASH/good-blob"
	chmod u+w "$f"
	head -c "$(stat -c %s "$f")" /dev/urandom >"$f"
	for path in "objects-sha256/${blob:0:2}/${blob:2}" "objects-sha1/${blob1:0:2}/${blob1:2}" \
		    "sha1/objects/${blob1:0:2}/${blob1:2}"; do
		cat "$M/$path" >/dev/null 2>"$TRASH/err"
		expect "corrupt object: $path gives EIO" grep -q 'Input/output error' "$TRASH/err"
	done
	expect "the log names the object" grep -q "$blob" "$M.log"
	expect "everything else is served: log --all" \
		cmp <(git --git-dir="$M/sha1" log --all --format='%H %T') <(git --git-dir="$S1" log --all --format='%H %T')
	other=$(git --git-dir="$S1" rev-parse HEAD~1:)
	expect "everything else is served: another tree" \
		cmp <(cat "$M/objects-sha1/${other:0:2}/${other:2}") <(git --git-dir="$S1" cat-file tree "$other")
	expect "the daemon is still there" kill -0 "$(cat "$M.pid")"
	cp "$TRASH/good-blob" "$f"
	expect "repaired, the object reads again" \
		cmp <(cat "$M/objects-sha1/${blob1:0:2}/${blob1:2}") <(git --git-dir="$S1" cat-file blob "$blob1")
	xl_umount "$M"
else
	not_ok "mount the repository to corrupt"
fi

# ---- a cache file damaged where opening does not read ---------------------------
# Opening checks the header, the schema and the format; the whole file
# (quick_check, growing with it) is checked by the mount once it serves.
wait_check() {
	for _ in $(seq 300); do
		grep -q '^cache_check: [^p]' "$1/status" && break
		sleep 0.1
	done
}
D=$TRASH/damaged.git
cp -r "$R" "$D"
rm -f "$D"/xlatefs-cache.sqlite*
"$XL" -C "$D" build
F=$D/xlatefs-cache.sqlite
M=$TRASH/dmg
if xl_mount "$D" "$M"; then
	wait_check "$M"
	expect "a healthy cache: status says its check passed" \
		grep -q '^cache_check: ok' "$M/status"
	xl_umount "$M"
else
	not_ok "mount the repository whose cache is to be damaged"
fi
test ! -e "$F-wal" || not_ok "the cache was left whole in its main file"
# one page in the middle (objects and their index): no header, no schema
pages=$(($(stat -c %s "$F") / 4096))
head -c 4096 /dev/zero | tr '\0' 'Z' |
	dd of="$F" bs=4096 seek=$((pages / 2)) conv=notrunc status=none
if xl_mount "$D" "$M"; then
	ok "a cache damaged deep inside: the mount comes up"
	wait_check "$M"
	expect "  its check finds the damage: status says so" \
		grep -q '^cache_check: damaged: .*quick_check' "$M/status"
	expect "  and the log" grep -q 'checking the cache: .*damaged' "$M.log"
	# served meanwhile: what comes back is right, or an error
	git --git-dir="$M/sha1" log --all --format='%H %T' >"$TRASH/dlog" 2>/dev/null
	git --git-dir="$S1" log --all --format='%H %T' >"$TRASH/slog"
	if [ -n "$(tail -c1 "$TRASH/dlog")" ]; then
		sed -i '$d' "$TRASH/dlog"	# a reader cut short
	fi
	expect "  never a wrong name served meanwhile ($(wc -l <"$TRASH/dlog") of $(wc -l <"$TRASH/slog") lines)" \
		sh -c "! grep -vxFf '$TRASH/slog' '$TRASH/dlog'"
	expect "  the daemon is still there" kill -0 "$(cat "$M.pid")"
	xl_umount "$M"
else
	not_ok "a cache damaged deep inside: the mount comes up"
fi
if xl_mount "$D" "$M"; then
	expect "the next mount sets the damaged file aside" \
		grep -q "marked damaged.*corrupt" "$M.log"
	expect "  keeping it beside" test -f "$F.corrupt"
	wait_check "$M"
	expect "  the new file passes its check" grep -q '^cache_check: ok' "$M/status"
	same_file "  and sha1/ is whole again" \
		<(git --git-dir="$M/sha1" log --all --format='%H %T') "$TRASH/slog"
	xl_umount "$M"
else
	not_ok "the next mount sets the damaged file aside"
fi

# ---- mount(8), as from /etc/fstab -------------------------------------------------
# mount(8) of a fuse type needs root (or a "user" line in fstab, which
# a test cannot add): not being root is a skip, even under
# XL_REQUIRE_FUSE=1, which promises /dev/fuse and fusermount3, not root.
# As root, mount.fuse3 (package fuse3, as fusermount3 is) must be there
# when XL_REQUIRE_FUSE=1.
mount_fuse3=
for f3 in /sbin/mount.fuse3 /usr/sbin/mount.fuse3; do
	[ -x "$f3" ] && { mount_fuse3=$f3; break; }
done
if [ "$(id -u)" != 0 ]; then
	skip "mount -t fuse PROGRAM#REPO (an fstab line)" "mount(8) needs root"
elif [ -z "$mount_fuse3" ]; then
	if [ "${XL_REQUIRE_FUSE:-0}" = 1 ]; then
		not_ok "mount.fuse3 is installed (XL_REQUIRE_FUSE=1; /sbin and /usr/sbin have none)"
	else
		skip "mount -t fuse PROGRAM#REPO (an fstab line)" "no mount.fuse3"
	fi
else
	mkdir -p "$TRASH/fstab"
	# "REPO MNT fuse.xlatefs ro 0 0" needs xlatefs installed on mount's
	# PATH; "XLATEFS#REPO MNT fuse ro 0 0" names the program itself
	if mount -t fuse -o ro,background "$XLATEFS#$R" "$TRASH/fstab" 2>"$TRASH/err"; then
		expect "mount -t fuse PROGRAM#REPO (an fstab line) mounts" mountpoint -q "$TRASH/fstab"
		expect "and serves sha1/" grep -q '^ref: refs/heads/main$' "$TRASH/fstab/sha1/HEAD"
		expect "umount takes it down" umount "$TRASH/fstab"
	else
		not_ok "mount -t fuse -o ro,background PROGRAM#REPO"
		sed 's/^/# /' "$TRASH/err"
	fi
fi

# ---- refusals ----------------------------------------------------------------------
mkdir -p "$TRASH/x"
expect_fail "not a repository: refused" "$XLATEFS" "$TRASH/stream.fi" "$TRASH/x"
expect "  with a message" grep -q . "$TRASH/.out"
expect_fail "unknown_headers=maybe: refused" "$XLATEFS" -o unknown_headers=maybe "$R" "$TRASH/x"
expect_fail "no mount point: usage" "$XLATEFS" "$R"
expect "nothing was mounted" sh -c "! mountpoint -q '$TRASH/x'"

test_done
