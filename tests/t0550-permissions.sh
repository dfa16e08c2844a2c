#!/usr/bin/env bash
# t0550-permissions.sh: who may read a mount (xlatefs(1), SECURITY).
#
#   - by default only the user who mounted it: another user (nobody) is
#     refused even the README;
#   - with -o allow_other, every user reads both views, stock git
#     included;
#   - extended attributes are read-only: setting or removing one fails.
# Needs root (to mount for allow_other without user_allow_other, and to
# become nobody), as CI is.
. "$(dirname "$0")/lib.sh"

require_fuse
if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1; then
	skip "permissions" "needs root, a user nobody and setpriv"
	test_done
	exit
fi

# nobody must be able to reach the mount point to be refused by it
chmod 755 "$TRASH"
R=$TRASH/r.git
git init -q --bare --object-format=sha256 "$R"
git init -q --object-format=sha256 "$TRASH/w"
echo hello >"$TRASH/w/f"
git -C "$TRASH/w" add f
git -C "$TRASH/w" commit -q -m one
git -C "$TRASH/w" push -q "$R" HEAD:refs/heads/main
git --git-dir="$R" symbolic-ref HEAD refs/heads/main
blob=$(git -C "$TRASH/w" rev-parse HEAD:f)

as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/ "$@"
}

M=$TRASH/mnt
if xl_mount "$R" "$M"; then
	expect_fail "without allow_other, another user cannot read the README" \
		as_nobody cat "$M/README"
	expect "  (refused: permission denied)" grep -qi 'permission denied' "$TRASH/.out"
	expect_fail "  nor sha1/HEAD" as_nobody cat "$M/sha1/HEAD"
	expect "the mounting user can" cat "$M/sha1/HEAD"
	f=$M/objects-sha256/${blob:0:2}/${blob:2}
	expect "extended attributes read" getfattr -n user.git.sha1 "$f"
	expect_fail "  setting one fails" setfattr -n user.git.sha1 -v 0 "$f"
	expect_fail "  setting a new one fails" setfattr -n user.other -v 1 "$f"
	expect_fail "  removing one fails" setfattr -x user.git.type "$f"
	xl_umount "$M"
else
	not_ok "mount"
fi

if xl_mount "$R" "$M" -o allow_other; then
	expect "with allow_other, another user reads the README" as_nobody cat "$M/README"
	expect "  and sha1/ with stock git" \
		as_nobody git -c safe.directory='*' --git-dir="$M/sha1" log --oneline
	expect "  and sha256/" \
		as_nobody git -c safe.directory='*' --git-dir="$M/sha256" cat-file -p "$blob"
	expect_fail "  but writes nothing" as_nobody touch "$M/sha1/new"
	xl_umount "$M"
else
	not_ok "mount -o allow_other"
fi

test_done
