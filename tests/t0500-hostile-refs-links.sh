#!/usr/bin/env bash
# t0500-hostile-refs-links.sh: refs and links that a repository from
# anywhere may hold, and what the mount and git xlate make of them.
#
#   - packed-refs lines whose names Git refuses ("..", a space, a
#     control character): left out of both views, as Git ignores them
#     with a warning; every other ref is served; status lists them, the
#     daemon logs them once (not with every snapshot), report names them;
#     so is a name of 1 MiB, which Git takes but is too long for us
#     (REFNAME_MAX: a stock git could not make a loose ref of it either);
#   - symlinks below refs/ and objects/: followed where they stay inside
#     the repository, as Git follows them; one that leads out is never
#     followed (a mount may be read by other users: -o allow_other), and
#     an object behind such a link is EIO with a log line, the rest
#     served.
. "$(dirname "$0")/lib.sh"

require_fuse

R=$TRASH/r.git
O=$TRASH/other.git
git init -q --bare --object-format=sha256 "$R"
git init -q --bare --object-format=sha256 "$O"
git init -q --object-format=sha256 "$TRASH/w"
git -C "$TRASH/w" commit -q --allow-empty -m one
git -C "$TRASH/w" push -q "$R" HEAD:refs/heads/main
git -C "$R" symbolic-ref HEAD refs/heads/main
main=$(git -C "$R" rev-parse main)

# ---- packed-refs with names Git refuses --------------------------------
{
	printf '# pack-refs with: peeled fully-peeled sorted \n%s refs/heads/a b\n%s refs/heads/a..b\n%s refs/heads/a\001b\n%s refs/heads/main\n%s refs/heads/side\n' \
		"$main" "$main" "$main" "$main" "$main"
	# and one name of 1 MiB, too long to take (REFNAME_MAX)
	printf '%s refs/tags/' "$main"
	head -c 1048576 /dev/zero | tr '\0' x
	printf '\n'
} >"$R/packed-refs"
rm -f "$R/refs/heads/main"
# (stock git lists the 1 MiB name too; we leave it out, as too long)
git -C "$R" for-each-ref --format='%(refname)' 2>"$TRASH/git-err" |
	grep -v '^refs/tags/xxxx' >"$TRASH/git-refs"
expect "(stock git lists the other refs and warns about the broken ones)" \
	grep -q 'ignoring ref with broken name' "$TRASH/git-err"

M=$TRASH/mnt
if xl_mount "$R" "$M"; then
	expect "sha1/packed-refs is served" cat "$M/sha1/packed-refs"
	for v in sha1 sha256; do
		git --git-dir="$M/$v" for-each-ref --format='%(refname)' >"$TRASH/$v-refs" 2>&1
		same_file "$v/: for-each-ref lists what stock git lists" "$TRASH/git-refs" "$TRASH/$v-refs"
	done
	expect "sha1/HEAD reads" git --git-dir="$M/sha1" rev-parse --verify HEAD
	expect "status counts the four as hidden" grep -qx 'hidden_refs: 4' "$M/status"
	expect "status names them" grep -qx 'hidden_ref: refs/heads/a..b' "$M/status"
	expect "status names a control character as '?'" grep -qx 'hidden_ref: refs/heads/a?b' "$M/status"
	# snapshots are made again every second: the log line is not
	sleep 1.1
	cat "$M/sha1/packed-refs" >/dev/null
	sleep 1.1
	cat "$M/sha1/packed-refs" >/dev/null
	n=$(grep -c 'with a name Git refuses' "$M.log")
	[ "$n" = 1 ] && ok "the daemon logs them once" || not_ok "the daemon logs them once (got $n lines)"
	xl_umount "$M"
else
	not_ok "a repository with broken packed refs mounts"
fi
"$XL" -C "$R" report >"$TRASH/report" 2>&1
rc=$?
[ $rc = 0 ] && ok "git xlate report runs" || not_ok "git xlate report runs (exit $rc: $(tail -1 "$TRASH/report"))"
expect "  and names a broken ref" grep -q 'refs/heads/a\.\.b (packed-refs: a name Git refuses' "$TRASH/report"
printf '# pack-refs with: peeled fully-peeled sorted \n%s refs/heads/main\n' "$main" >"$R/packed-refs"

# ---- symlinks -------------------------------------------------------------
# a ref that leads out, to a file that parses (a name the repository has)
echo "$main" >"$TRASH/outside-ref"
ln -s "$TRASH/outside-ref" "$R/refs/heads/out"
# one that stays inside
ln -s main "$R/refs/heads/inside"
echo "$main" >"$R/refs/heads/main"
# a loose object of another repository, linked in
secret=$(echo secret | git -C "$O" hash-object -w --stdin)
mkdir -p "$R/objects/${secret:0:2}"
ln -s "$O/objects/${secret:0:2}/${secret:2}" "$R/objects/${secret:0:2}/${secret:2}"
# a loose object of our own, kept elsewhere in objects/ and linked
mine=$(echo mine | git -C "$R" hash-object -w --stdin)
mkdir -p "$R/objects/keep"
mv "$R/objects/${mine:0:2}/${mine:2}" "$R/objects/keep/$mine"
ln -s "../keep/$mine" "$R/objects/${mine:0:2}/${mine:2}"
mine1=$(echo mine | git hash-object --stdin)

"$XL" -C "$R" build >"$TRASH/out" 2>&1
expect "git xlate build names the link that leads out" \
	grep -q 'a symlink that leads out of .*objects: not followed' "$TRASH/out"
if xl_mount "$R" "$M"; then
	for v in sha1 sha256; do
		git --git-dir="$M/$v" for-each-ref --format='%(refname)' >"$TRASH/$v-refs" 2>&1
		expect "$v/: the ref behind a link that leads out is not served" \
			sh -c "! grep -q refs/heads/out '$TRASH/$v-refs'"
		expect "$v/: the ref behind a link inside is" grep -qx refs/heads/inside "$TRASH/$v-refs"
	done
	expect_fail "sha256/: the object behind a link that leads out is not read" \
		cat "$M/sha256/objects/${secret:0:2}/${secret:2}"
	expect "  and the log says why" grep -q "${secret:2}: a symlink that leads out" "$M.log"
	expect "sha256/: the object behind a link inside reads" \
		git --git-dir="$M/sha256" cat-file -e "$mine"
	expect "sha1/: and has its SHA-1 name" git --git-dir="$M/sha1" cat-file -e "$mine1"
	expect "everything else is served: fsck of sha1/" \
		git --git-dir="$M/sha1" fsck --no-dangling
	xl_umount "$M"
else
	not_ok "a repository with symlinks mounts"
fi

test_done
