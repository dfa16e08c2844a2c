#!/usr/bin/env bash
# t0400-clients-twin.sh: the client walkers (tests/clients) against stock
# git on real SHA-1 repositories.
#
# Every walker (pygit2, dulwich, JGit, isomorphic-git) must print exactly
# what tests/clients/walk-git.sh prints for the same Git directory: every
# commit reachable from HEAD, every tree entry, every blob's size.  The
# mount tests then run the same walkers on MNT/sha1 against the SHA-1 twin;
# this test keeps the walkers themselves honest, on
#   - the twins' sha1-packed.git and sha1-loose.git (tests/mk-twins.sh);
#   - a copy shaped like MNT/sha1: loose objects only, each a zlib stream
#     of stored (uncompressed) blocks, read-only files; every ref in
#     packed-refs with peeled lines; HEAD "ref: refs/heads/main"; a config
#     with only repositoryformatversion = 0 and bare = true; no hooks,
#     info, description; empty objects/info, objects/pack and refs/;
#   - a small repository with a gitlink (160000), read as a .git directory.
# A client that is not installed is skipped, unless XL_REQUIRE_CLIENTS=1
# (CI sets it: there every client must be there).

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

RUN=$XL_TOP/tests/clients/run.sh
TW=$TRASH/twins
# small and quick: the walkers are what is tested, not the history
# shellcheck disable=SC2086
if ! "$XL_TOP/tests/mk-twins.sh" "$TW" ${XL_TWIN_OPTS:---commits 24 --files 12 --big-blob-kib 80} \
	2>"$TRASH/mk.err"; then
	not_ok "mk-twins.sh builds the twin repositories"
	sed 's/^/# /' "$TRASH/mk.err"
	test_done
	exit 1
fi

# the MNT/sha1 look-alike
M=$TW/sha1-mountlike.git
mkdir -p "$M/objects/info" "$M/objects/pack" "$M/refs/heads" "$M/refs/tags"
printf 'ref: refs/heads/main\n' >"$M/HEAD"
printf '[core]\n\trepositoryformatversion = 0\n\tbare = true\n' >"$M/config"
cp "$TW/sha1-packed.git/packed-refs" "$M/packed-refs"
git -C "$TW/sha1-packed.git" cat-file --batch <"$TW/sha1.objects" | perl -MCompress::Zlib -e '
	my $dir = shift;
	binmode STDIN;
	while (defined(my $hdr = <STDIN>)) {
		my ($hex, $type, $size) = $hdr =~ /\A([0-9a-f]+) (\S+) (\d+)\n\z/ or die "cat-file: $hdr";
		read(STDIN, my $c, $size + 1) == $size + 1 or die "short read\n";
		chop $c;
		mkdir "$dir/" . substr($hex, 0, 2);
		my $f = "$dir/" . substr($hex, 0, 2) . "/" . substr($hex, 2);
		open(my $out, ">:raw", $f) or die "$f: $!\n";
		print $out compress("$type $size\0$c", 0);    # level 0: stored blocks
		close($out) or die "$f: $!\n";
	}' "$M/objects"
find "$M" -type f -exec chmod a-w {} +
if git -C "$M" fsck --strict --no-dangling --no-progress >"$TRASH/fsck.out" 2>&1 &&
	[ "$(git -C "$M" cat-file --batch-all-objects --batch-check='%(objectname)' | sort)" = "$(cat "$TW/sha1.objects")" ] &&
	[ "$(git -C "$M" rev-parse HEAD)" = "$(git -C "$TW/sha1.git" rev-parse HEAD)" ]; then
	ok "the mount look-alike holds the twin's objects, refs and HEAD"
else
	not_ok "the mount look-alike holds the twin's objects, refs and HEAD"
	sed 's/^/# /' "$TRASH/fsck.out" | head -10
fi

# a gitlink, read through a work tree's .git directory
G=$TRASH/gitlink
git init -q "$G"
(
	cd "$G" || exit 1
	echo one >a
	git add a
	git commit -q -m one
	git update-index --add --cacheinfo 160000,"$(git -C "$TW/sha1.git" rev-parse HEAD)",sub
	mkdir -p d
	echo two >d/b
	git add d/b
	git commit -q -m 'gitlink'
) >"$TRASH/gitlink.out" 2>&1 || sed 's/^/# /' "$TRASH/gitlink.out"

repos="$TW/sha1-packed.git $TW/sha1-loose.git $M $G/.git"

for r in $repos; do
	n=${r#"$TRASH"/}
	n=${n#twins/}
	if "$RUN" git "$r" >"$TRASH/expect" 2>"$TRASH/err"; then
		ok "git: walk $n"
	else
		not_ok "git: walk $n"
		sed 's/^/# /' "$TRASH/err" | head -10
	fi
	cp "$TRASH/expect" "$TRASH/expect.$(basename "$r")"
done

# the reference itself: complete, and it saw the gitlink
want=$(git -C "$TW/sha1.git" rev-list --count HEAD)
got=$(tail -1 "$TRASH/expect.sha1-packed.git")
if [ "$got" = "commits $want" ] && grep -q '^  160000 commit [0-9a-f]\{40\} sub$' "$TRASH/expect..git"; then
	ok "git: the reference lists every commit and the gitlink"
else
	not_ok "git: the reference lists every commit and the gitlink (last line '$got', want 'commits $want')"
fi

for client in pygit2 dulwich jgit isogit; do
	for r in $repos; do
		n=${r#"$TRASH"/}
		n=${n#twins/}
		"$RUN" "$client" "$r" >"$TRASH/out" 2>"$TRASH/err"
		rc=$?
		if [ $rc -eq 77 ]; then
			why=$(head -1 "$TRASH/err")
			if [ "${XL_REQUIRE_CLIENTS:-0}" = 1 ]; then
				not_ok "$client: installed ($why)"
			else
				skip "$client: every walk equals git's" "$why"
			fi
			break
		elif [ $rc -eq 0 ]; then
			same_file "$client: walk $n equals git's" "$TRASH/expect.$(basename "$r")" "$TRASH/out"
		else
			not_ok "$client: walk $n (exit $rc)"
			sed 's/^/# /' "$TRASH/err" | head -10
		fi
	done
done

test_done
