#!/usr/bin/env bash
# t0340-mount-clients.sh: stock SHA-1 clients read MNT/sha1 unmodified.
#
# Each client walker (tests/clients: pygit2/libgit2, dulwich, JGit,
# isomorphic-git; see t0400 for the walkers checked against stock git)
# opens MNT/sha1, walks HEAD's whole history and reads every tree and
# blob; its output must equal stock git's walk of the SHA-1 twin.  The
# submodule fixture (a gitlink, mounted with its submodule map) has no
# twin: there each client must agree with stock git on the mount.
. "$(dirname "$0")/lib.sh"

RUN=$XL_TOP/tests/clients/run.sh
require_fuse

T=$TRASH/tw
twins "$T"
tar -xzf "$XL_TOP/tests/fixtures/submodule.tar.gz" -C "$TRASH"

M=$TRASH/m
S=$TRASH/ms
xl_mount "$T/sha256-mixed.git" "$M" && ok "mount the twin" || not_ok "mount the twin"
xl_mount "$TRASH/submodule.git" "$S" \
	-o submodule_map="$XL_TOP/tests/fixtures/submodule.submodule-map.tsv" &&
	ok "mount the submodule fixture" || not_ok "mount the submodule fixture"

"$RUN" git "$T/sha1-mixed.git" >"$TRASH/want" 2>"$TRASH/want.err" ||
	not_ok "stock git walks the twin"
"$RUN" git "$S/sha1" >"$TRASH/want-sub" 2>"$TRASH/want-sub.err" ||
	not_ok "stock git walks the submodule fixture's sha1/"
grep -q ' 160000 commit ' "$TRASH/want-sub" && ok "the fixture's walk has its gitlink" ||
	not_ok "the fixture's walk has its gitlink"

for client in pygit2 dulwich jgit isogit; do
	for case in twin:"$M/sha1":want sub:"$S/sha1":want-sub; do
		IFS=: read -r name dir want <<<"$case"
		"$RUN" "$client" "$dir" >"$TRASH/got" 2>"$TRASH/err"
		rc=$?
		if [ $rc = 77 ] && [ "${XL_REQUIRE_CLIENTS:-0}" != 1 ]; then
			skip "$client on MNT/sha1 ($name)" "$client is not installed"
		elif [ $rc != 0 ]; then
			not_ok "$client on MNT/sha1 ($name): exit $rc"
			head -5 "$TRASH/err" | sed 's/^/# /'
		else
			same_file "$client on MNT/sha1 ($name) sees what git sees on the SHA-1 twin" \
				"$TRASH/got" "$TRASH/$want"
		fi
	done
done
xl_umount "$M"
xl_umount "$S"
expect "the twin walk saw every commit" grep -q "^commits $(git --git-dir="$T/sha1-mixed.git" rev-list HEAD | wc -l)\$" "$TRASH/want"

test_done
