#!/usr/bin/env bash
# t0600-reverse.sh: the other direction, a SHA-1 repository named in
# SHA-256 (issue 12), by `git xlate`.
#
# Twins: `git xlate build` on the SHA-1 twin (in every storage form) must
# name exactly the SHA-256 twin's objects, map every ref to the twin's,
# and print the twin's exact bytes for its SHA-256 names.
#
# Mounted: the SHA-1 twin mounted the other way round shows, in sha256/,
# exactly the SHA-256 twin (refs, objects, fsck, clone), and in sha1/
# itself.
#
# Round trip: every fixture (a SHA-256 repository) is mounted, and its
# sha1/ mounted the other way round in its turn: that sha256/ must hold
# the fixture's objects byte for byte (signatures and mergetags
# included) and its refs.  The same sha1/, copied out as a plain SHA-1
# repository, is built the other way round by `git xlate`, with the same
# result.

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

TW=$TRASH/twins
# shellcheck disable=SC2086
twins "$TW" ${XL_TWIN_OPTS:-}

for v in sha1 sha1-packed sha1-loose sha1-mixed sha1-idx1; do
	twin_named "$v" sha256
	cut -f1 "$TRASH/$v.tsv" | sort >"$TRASH/$v.own"
	same_file "$v: ... each beside its own SHA-1 name" \
		"$TW/sha1.objects" "$TRASH/$v.own"
done

# a first build stores its rows at its end (bulk_store()): the same names
R=$TW/sha1-mixed.git
rm -f "$R/xlatefs-cache.sqlite"*
expect "a bulk build the other way round" env XLATE_TEST_BULK=1 "$XL" -C "$R" build
"$XL" -C "$R" export >"$TRASH/bulk.tsv"
same_file "... names what a streaming build names" "$TRASH/sha1-mixed.tsv" "$TRASH/bulk.tsv"

# A SHA-1 store made before the other direction (git xlate made one,
# then refused to build it) has CHECKs that refuse SHA-256 names: it is
# set aside, not used.
if command -v sqlite3 >/dev/null 2>&1; then
	R=$TW/sha1-loose.git
	sqlite3 "$R/xlatefs-cache.sqlite" "PRAGMA writable_schema = 1;
		UPDATE sqlite_schema SET sql = replace(sql,
			'length(sha1) + length(sha256) = 52', 'length(sha1) = 20')
		WHERE name = 'objects';" 2>"$TRASH/err"
	expect "an old SHA-1 store's CHECK is back (set up)" sh -c \
		"sqlite3 '$R/xlatefs-cache.sqlite' \"SELECT sql FROM sqlite_schema WHERE name = 'objects'\" |
		 grep -q 'length(sha1) = 20'"
	"$XL" -C "$R" build >"$TRASH/out" 2>&1
	expect "an old SHA-1 store is set aside, and the build goes on" sh -c \
		"grep -q 'from before the other direction' '$TRASH/out' &&
		 test -f '$R/xlatefs-cache.sqlite.corrupt' &&
		 test \"\$('$XL' -C '$R' map HEAD)\" = '$(git -C "$TW/sha256.git" rev-parse HEAD)'"
else
	missing_tool "an old SHA-1 store set aside" "sqlite3"
fi

R=$TW/sha1-packed.git
# names of either algorithm, both ways round
head256=$(git -C "$TW/sha256.git" rev-parse HEAD)
head1=$(git -C "$R" rev-parse HEAD)
expect "map of a SHA-256 name gives the SHA-1 one" \
	test "$("$XL" -C "$R" map "$head256")" = "$head1"
expect "map of HEAD gives the SHA-256 name" \
	test "$("$XL" -C "$R" map "HEAD")" = "$head256"
# NAME^{ALGO} says which algorithm NAME is in; map prints the other
expect "map of HEAD^{sha1} gives the SHA-256 name" \
	test "$("$XL" -C "$R" map "HEAD^{sha1}")" = "$head256"
expect "map of the SHA-256 name, ^{sha256}, gives the SHA-1 one" \
	test "$("$XL" -C "$R" map "$head256^{sha256}")" = "$head1"
expect "cat-file -p by an abbreviated SHA-256 name (12 digits)" \
	test "$("$XL" -C "$R" cat-file -p "${head256:0:12}" | head -1)" = \
	"$(git -C "$TW/sha256.git" cat-file -p HEAD | head -1)"
expect "cat-file -t by a 50-digit prefix, too long for a SHA-1 name" \
	test "$("$XL" -C "$R" cat-file -t "${head256:0:50}")" = commit
expect "cat-file -p HEAD^{sha256} prints the SHA-256 form" \
	test "$("$XL" -C "$R" cat-file -p 'HEAD^{sha256}' | head -1)" = \
	"$(git -C "$TW/sha256.git" cat-file -p HEAD | head -1)"
expect "cat-file -p HEAD prints the repository's own (SHA-1) form" \
	test "$("$XL" -C "$R" cat-file -p HEAD | head -1)" = \
	"$(git -C "$R" cat-file -p HEAD | head -1)"
tree256=$(git -C "$TW/sha256.git" rev-parse 'HEAD^{tree}')
"$XL" -C "$R" cat-file -p "$tree256" >"$TRASH/ls-tree.got"
git -C "$TW/sha256.git" cat-file -p "$tree256" >"$TRASH/ls-tree.want"
same_file "cat-file -p of a SHA-256 tree lists SHA-256 names" \
	"$TRASH/ls-tree.want" "$TRASH/ls-tree.got"
expect "show names both forms" sh -c \
	"'$XL' -C '$R' show HEAD | grep -q '^  sha256 $head256\$'"

# upstream's compat map, as a SHA-1 repository with compatObjectFormat =
# sha256 would have it: its own name first
"$XL" -C "$R" export --format=loose-object-idx >"$TRASH/loi"
expect "export --format=loose-object-idx: a header, then <sha1> <sha256>" \
	sh -c "head -1 '$TRASH/loi' | grep -qx '# loose-object-idx' || exit 1
	       tail -n +2 '$TRASH/loi' | grep -Evqx '[0-9a-f]{40} [0-9a-f]{64}' && exit 1
	       grep -q '^$head1 $head256\$' '$TRASH/loi'"
"$XL" -C "$TW/sha256.git" build && "$XL" -C "$TW/sha256.git" export >"$TRASH/fwd.tsv"
awk -F'\t' '{ print $2 "\t" $1 "\t" $3 }' "$TRASH/fwd.tsv" | sort >"$TRASH/fwd.swapped"
sort "$TRASH/sha1-packed.tsv" >"$TRASH/rev.sorted"
same_file "the reverse export is the forward one, columns swapped" \
	"$TRASH/fwd.swapped" "$TRASH/rev.sorted"

# a map names objects the repository lacks, in either order
git init -q --bare --object-format=sha1 "$TRASH/lacks.git"
blob1=$(printf 'x\n' | git -C "$TRASH/lacks.git" hash-object -w --stdin)
gl1=1111111111111111111111111111111111111111
gl256=2222222222222222222222222222222222222222222222222222222222222222
tree1=$(printf '160000 commit %s\tsub\n100644 blob %s\tx\n' "$gl1" "$blob1" |
	git -C "$TRASH/lacks.git" mktree)
git -C "$TRASH/lacks.git" update-ref refs/tags/t "$tree1"
expect_fail "a gitlink without a map: the tree is refused" \
	"$XL" -C "$TRASH/lacks.git" map "$tree1"
for order in 256-first 1-first; do
	if [ $order = 256-first ]; then
		printf '%s %s\n' "$gl256" "$gl1" >"$TRASH/map"
	else
		printf '# loose-object-idx\n%s %s\n' "$gl1" "$gl256" >"$TRASH/map"
	fi
	rm -f "$TRASH/lacks.git/xlatefs-cache.sqlite"*
	got=$("$XL" -C "$TRASH/lacks.git" --map "$TRASH/map" cat-file -p "$("$XL" -C "$TRASH/lacks.git" --map "$TRASH/map" map "$tree1")" 2>&1)
	expect "with a map ($order), the gitlink takes the map's SHA-256 name" \
		sh -c "printf '%s\n' \"\$1\" | grep -q '^160000 commit $gl256	sub\$'" - "$got"
done

# ---- mounted the other way round --------------------------------------

require_fuse

# check_packs256 NAME MNT REPO: sha256/objects/pack holds a SHA-256 pack
# per native pack (DESIGN.md §6, the other way round), which git takes
# as its own: verify-pack, index-pack (outside any repository) making
# the served .idx byte for byte, objects/info/packs; the packs hold the
# SHA-256 name of every packed object, and the loose view the rest.
check_packs256() {
	v=$1 m=$2 repo=$3
	n256=$(ls "$m/sha256/objects/pack" | grep -c '\.pack$' || true)
	n1=$(ls "$repo/objects/pack" | grep -c '\.pack$' || true)
	expect "$v: one SHA-256 pack per native pack ($n1)" test "$n256" = "$n1"
	expect "$v: verify-pack passes, index-pack rebuilds the .idx, info/packs lists them" \
		packs_check "$m/sha256" sha256
	for idx in "$repo"/objects/pack/*.idx; do
		[ -e "$idx" ] && git show-index <"$idx" | awk '{ print $2 }'
	done | sort -u >"$TRASH/packed1"
	if [ -s "$TRASH/packed1" ]; then
		"$XL" -C "$repo" map $(cat "$TRASH/packed1") </dev/null | sort
	fi >"$TRASH/want"
	for idx in "$m"/sha256/objects/pack/*.idx; do
		[ -e "$idx" ] && git show-index --object-format=sha256 <"$idx" | awk '{ print $2 }'
	done | sort -u >"$TRASH/got"
	same_file "$v: the SHA-256 packs hold every packed object, by its SHA-256 name" \
		"$TRASH/want" "$TRASH/got"
	(cd "$repo/objects" && find . -path './??/*' | sed 's|^\./||; s|/||' | sort) >"$TRASH/loose1"
	if [ -s "$TRASH/loose1" ]; then
		"$XL" -C "$repo" map $(cat "$TRASH/loose1") </dev/null | sort
	fi >"$TRASH/want"
	(cd "$m/sha256/objects" && find . -path './??/*' | sed 's|^\./||; s|/||' | sort) >"$TRASH/got"
	same_file "$v: sha256/objects lists the loose objects, by their SHA-256 names" \
		"$TRASH/want" "$TRASH/got"
}

T256=$TW/sha256.git
for v in sha1-packed sha1-loose sha1-mixed sha1-idx1 sha1-largeofs; do
	R=$TW/$v.git
	M=$TRASH/m-$v
	if ! xl_mount "$R" "$M"; then
		not_ok "$v: mounts the other way round"
		continue
	fi
	check_packs256 "$v" "$M" "$R"
	if [ $v = sha1-packed ] && command -v strace >/dev/null 2>&1; then
		strace -f -e trace=openat -o "$TRASH/strace" \
			git --git-dir="$M/sha256" log >/dev/null 2>&1
		expect "$v: git log on sha256/ opens the pack, and no loose object file" \
			sh -c "grep -q 'objects/pack/pack-.*\.pack' '$TRASH/strace' &&
			       ! grep -q 'objects/[0-9a-f][0-9a-f]/[0-9a-f]' '$TRASH/strace'"
	fi
	expect "$v: status says which way" grep -qx 'direction: sha1 to sha256' "$M/status"
	expect "$v: README too" grep -q 'as the SHA-256 repository it will become' "$M/README"
	git --git-dir="$M/sha256" for-each-ref >"$TRASH/got"
	git --git-dir="$T256" for-each-ref >"$TRASH/want"
	same_file "$v: sha256/ has the SHA-256 twin's refs" "$TRASH/want" "$TRASH/got"
	expect "$v: sha256/HEAD is the twin's" \
		test "$(cat "$M/sha256/HEAD")" = "$(cat "$T256/HEAD")"
	expect "$v: git fsck --full --strict on sha256/" \
		git --git-dir="$M/sha256" fsck --full --strict --no-dangling
	git --git-dir="$M/sha256" cat-file --batch-all-objects --batch >"$TRASH/got"
	same_file "$v: cat-file --batch-all-objects --batch on sha256/ is the twin's" \
		"$TRASH/sha256.batch" "$TRASH/got"
	rm -rf "$TRASH/clone.git"
	expect "$v: clone --mirror of sha256/" \
		git clone -q --mirror "$M/sha256" "$TRASH/clone.git"
	git -C "$TRASH/clone.git" for-each-ref >"$TRASH/got"
	git --git-dir="$T256" for-each-ref >"$TRASH/want"
	same_file "$v: ... with the twin's refs" "$TRASH/want" "$TRASH/got"
	git --git-dir="$M/sha1" cat-file --batch-all-objects --batch >"$TRASH/got"
	git --git-dir="$R" cat-file --batch-all-objects --batch >"$TRASH/want"
	same_file "$v: sha1/ is the repository itself" "$TRASH/want" "$TRASH/got"
	ls "$R/objects/pack" | grep -E '\.(pack|idx)$' | sort >"$TRASH/want"
	ls "$M/sha1/objects/pack" | sort >"$TRASH/got"
	same_file "$v: sha1/objects/pack holds the repository's own packs" \
		"$TRASH/want" "$TRASH/got"
	h256=$(git --git-dir="$T256" rev-parse HEAD)
	h1=$(git --git-dir="$R" rev-parse HEAD)
	f=$M/sha256/objects/${h256:0:2}/${h256:2}
	expect "$v: an object of sha256/ has both names as xattrs" sh -c \
		"getfattr --only-values -n user.git.sha1 '$f' | grep -qx '$h1' &&
		 getfattr --only-values -n user.git.sha256 '$f' | grep -qx '$h256'"
	expect "$v: objects-sha256/ holds the raw SHA-256 form" \
		cmp "$M/objects-sha256/${h256:0:2}/${h256:2}" \
		<(git --git-dir="$T256" cat-file commit "$h256")
	expect "$v: objects-sha1/ the repository's own" \
		cmp "$M/objects-sha1/${h1:0:2}/${h1:2}" \
		<(git --git-dir="$R" cat-file commit "$h1")
	xl_umount "$M"
done

# A pack as a fetch leaves it: thin, completed by index-pack --fix-thin
# with the bases it lacked appended, so that deltas come before their
# bases.  The SHA-256 pack says those as REF_DELTA against 32-byte names.
cp -r "$TW/sha1-packed.git" "$TRASH/thin.git"
printf 'HEAD\n^HEAD~4\n' |
	git --git-dir="$TW/sha1-packed.git" pack-objects --thin --stdout --revs -q |
	(cd "$TRASH/thin.git" && git index-pack --fix-thin --stdin >/dev/null)
# deltas_before_base PACK.idx [GIT_DIR]: how many deltas precede their base
deltas_before_base() {
	git ${2:+--git-dir="$2"} verify-pack -v "$1" | awk '
		NF == 7 { off[$1] = $5; n++; d[n] = $1; base[n] = $7 }
		NF == 5 && $2 != "chain" { off[$1] = $5 }
		END { c = 0; for (i = 1; i <= n; i++) if (off[base[i]] > off[d[i]]) c++; print c }'
}
M=$TRASH/m-thin
if xl_mount "$TRASH/thin.git" "$M"; then
	check_packs256 thin "$M" "$TRASH/thin.git"
	n1=0 n256=0
	for idx in "$TRASH"/thin.git/objects/pack/*.idx; do
		n1=$((n1 + $(deltas_before_base "$idx")))
	done
	for idx in "$M"/sha256/objects/pack/*.idx; do
		n256=$((n256 + $(deltas_before_base "$idx" "$M/sha256")))
	done
	expect "thin: the SHA-256 pack keeps the deltas made before their base ($n1 > 0)" \
		test "$n1" -gt 0 -a "$n256" = "$n1"
	expect "thin: fsck --full on sha256/" \
		git --git-dir="$M/sha256" fsck --full --no-dangling
	xl_umount "$M"
else
	not_ok "thin: mount a repository with a fixed thin pack"
fi

# Live: a commit made in the SHA-1 repository under the mount shows in
# sha256/ within seconds, under the name the SHA-256 twin gives the same
# commit.
cp -r "$TW/sha1-packed.git" "$TRASH/live1.git"
cp -r "$T256" "$TRASH/live256.git"
M=$TRASH/m-live
if xl_mount "$TRASH/live1.git" "$M"; then
	for d in live1 live256; do
		G=$TRASH/$d.git
		blob=$(printf 'live\n' | git --git-dir="$G" hash-object -w --stdin)
		tree=$( (git --git-dir="$G" ls-tree HEAD
			 printf '100644 blob %s\tlive.txt\n' "$blob") |
			git --git-dir="$G" mktree)
		c=$(GIT_AUTHOR_NAME=L GIT_AUTHOR_EMAIL=l@example GIT_AUTHOR_DATE='1700000000 +0000' \
		    GIT_COMMITTER_NAME=L GIT_COMMITTER_EMAIL=l@example \
		    GIT_COMMITTER_DATE='1700000000 +0000' \
		    git --git-dir="$G" commit-tree "$tree" -p HEAD -m live)
		git --git-dir="$G" update-ref refs/heads/live "$c"
	done
	want=$(git --git-dir="$TRASH/live256.git" rev-parse refs/heads/live)
	expect_soon 15 "live: a new commit shows in sha256/ under the twin's name ($want)" \
		sh -c '[ "$(git --git-dir="$1" rev-parse -q --verify refs/heads/live)" = "$2" ]' \
		- "$M/sha256" "$want"
	expect "live: and reads back as the twin's bytes" \
		cmp <(git --git-dir="$M/sha256" cat-file commit "$want") \
		<(git --git-dir="$TRASH/live256.git" cat-file commit "$want")
	xl_umount "$M"
else
	not_ok "live: mount a copy of the SHA-1 twin"
fi

# The first open fixes which way a mount goes: a repository replaced by
# one of the other format under it is refused when the updater opens it
# again (after its packs went), said in the log, and the mount stays.
cp -r "$TW/sha1-packed.git" "$TRASH/swap.git"
M=$TRASH/m-swap
if xl_mount "$TRASH/swap.git" "$M"; then
	rm -rf "$TRASH/swap.git"/*
	cp -r "$TW/sha256-packed.git"/. "$TRASH/swap.git"
	expect_soon 10 "a repository of the other format under the mount is refused, and logged" \
		grep -q 'is now a sha256 repository; it was mounted as a sha1 one' "$M.log"
	expect "the mount goes on with what it had" \
		grep -qx 'direction: sha1 to sha256' "$M/status"
	xl_umount "$M"
else
	not_ok "swap: mount a copy of the SHA-1 twin"
fi

# ---- the round trip: SHA-256, its SHA-1 view, that view reversed -----

F=$XL_TOP/tests/fixtures

# check_signatures SHA1-GITDIR SHA256-GITDIR: the signed fixture's
# signatures, verified by stock git in its SHA-1 form (what a SHA-1
# repository holds) and in the SHA-256 form made of that the other way
# round.  The exit codes the spec's table gives (fixtures/signed.md,
# upstream 2.55 in SHA-256, 2.39 in SHA-1): a commit with only a gpgsig
# header has no SHA-256 signature, and a tag with only an in-body
# signature, which upstream takes for the SHA-256 one, is unsigned in
# SHA-1.
check_signatures() {
	if ! command -v gpg >/dev/null 2>&1 || ! command -v ssh-keygen >/dev/null 2>&1; then
		missing_tool "verify-commit and verify-tag of the signed fixture" "gpg and ssh-keygen"
		return
	fi
	GNUPGHOME=$TRASH/gnupg
	export GNUPGHOME
	mkdir -p -m 700 "$GNUPGHOME"
	gpg --batch --quiet --import "$F/keys/gpg-public.asc" 2>/dev/null
	while read -r label kind n256 rc1 rc256; do
		n1=$(awk -F'\t' -v n="$n256" '$1 == n { print $2 }' "$F/signed.objects.tsv")
		git -c gpg.ssh.allowedSignersFile="$F/keys/allowed_signers" \
			--git-dir="$1" "verify-$kind" "$n1" >/dev/null 2>&1
		got1=$?
		git -c gpg.ssh.allowedSignersFile="$F/keys/allowed_signers" \
			--git-dir="$2" "verify-$kind" "$n256" >/dev/null 2>&1
		got256=$?
		expect "signed: verify-$kind $label: $rc1 in SHA-1 form (got $got1), $rc256 once made SHA-256 (got $got256)" \
			test "$got1 $got256" = "$rc1 $rc256"
	done <<-EOF
	ssh-commit commit f82fb9f735c35ae820e3607b471c29b9187f016430da8c94035a78c7092e2b16 0 0
	gpg-commit commit ba6366c107e67a0bd45a1349912d1e06d4c999e1944b29c72fdbf91f228146f0 0 0
	sha1-only-commit commit decfa52e10c31e5a84d16dae186ab78f2d52c202726e0c049a21d143c40e0bfd 0 1
	ssh-tag tag e9817911758795255cf793d6b1419f60312e93ad2047c542f2d16141ee968eeb 0 0
	gpg-tag tag 4ab041f41eb964104f912115490d4088417ab479bab6b190a3c5e3e69ac0b2ec 0 0
	inbody-only-tag tag 68e9ea7ca166f83df8396b882d6821e84576dea4b45eb4ac856bbb7da1cc2738 1 0
	EOF
}

for tarball in "$F"/*.tar.gz; do
	unpack_fixture "$tarball"
	M=$TRASH/m-$t
	opts=() map=()
	if [ -f "$F/$base.submodule-map.tsv" ]; then
		opts=(-o "map=$F/$base.submodule-map.tsv")
		map=(--map "$F/$base.submodule-map.tsv")
	fi
	if ! xl_mount "$R" "$M" "${opts[@]}"; then
		not_ok "$t: mount"
		continue
	fi
	# the SHA-1 view, mounted the other way round in its turn
	M2=$TRASH/m2-$t
	if xl_mount "$M/sha1" "$M2" -o cache="$TRASH/$t.m2.sqlite" "${opts[@]}"; then
		awk -F'\t' '$2 != "UNTRANSLATABLE" { print $1 }' "$F/$base.objects.tsv" >"$TRASH/names"
		"$XL" -C "$R" cat-file --batch <"$TRASH/names" >"$TRASH/want"
		git --git-dir="$M2/sha256" cat-file --batch <"$TRASH/names" >"$TRASH/got"
		same_file "$t: mounted twice, sha256/ holds the fixture's objects byte for byte" \
			"$TRASH/want" "$TRASH/got"
		git --git-dir="$M2/sha256" cat-file --batch-all-objects --batch-check='%(objectname)' |
			sort >"$TRASH/got"
		sort "$TRASH/names" >"$TRASH/want"
		same_file "$t: ... and no other" "$TRASH/want" "$TRASH/got"
		awk -F'\t' 'NR > 1 && $1 !~ /\^\{\}$/ && $3 != "UNTRANSLATABLE" { print $2 " " $1 }' \
			"$F/$base.refs.tsv" >"$TRASH/want"
		git --git-dir="$M2/sha256" for-each-ref --format='%(objectname) %(refname)' >"$TRASH/got"
		same_file "$t: ... and its translatable refs" "$TRASH/want" "$TRASH/got"
		[ "$t" = signed ] && check_signatures "$M/sha1" "$M2/sha256"
		xl_umount "$M2"
	else
		not_ok "$t: its sha1/ mounts the other way round"
	fi
	C=$TRASH/$t.sha1.git
	cp -r "$M/sha1" "$C"
	xl_umount "$M"
	expect "$t: its SHA-1 view builds the other way round" \
		"$XL" -C "$C" "${map[@]}" build
	# the fixture's translatable objects, by their SHA-256 names
	awk -F'\t' '$2 != "UNTRANSLATABLE" { print $1 }' "$F/$base.objects.tsv" >"$TRASH/names"
	# read natively by git-xlate: git 2.39 cannot open a reftable fixture
	"$XL" -C "$R" cat-file --batch <"$TRASH/names" >"$TRASH/want"
	"$XL" -C "$C" "${map[@]}" cat-file --batch <"$TRASH/names" >"$TRASH/got"
	same_file "$t: round trip gives back every object byte for byte ($(grep -c . "$TRASH/names") objects)" \
		"$TRASH/want" "$TRASH/got"
	awk -F'\t' '$2 != "UNTRANSLATABLE" { print $2 "\t" $1 }' "$F/$base.objects.tsv" | sort >"$TRASH/pairs.want"
	"$XL" -C "$C" "${map[@]}" export | cut -f1,2 | sort >"$TRASH/pairs.got"
	same_file "$t: and upstream's pairs of names" "$TRASH/pairs.want" "$TRASH/pairs.got"
	awk -F'\t' 'NR > 1 && $1 !~ /\^\{\}$/ && $3 != "UNTRANSLATABLE" { print $1 " " $2 }' \
		"$F/$base.refs.tsv" | sort >"$TRASH/refs.want"
	git --git-dir="$C" for-each-ref --format='%(refname)' | while read -r ref; do
		printf '%s %s\n' "$ref" "$("$XL" -C "$C" "${map[@]}" map "$ref")"
	done | sort >"$TRASH/refs.got"
	same_file "$t: and the fixture's refs" "$TRASH/refs.want" "$TRASH/refs.got"
	expect "$t: verify the other way round" "$XL" -C "$C" "${map[@]}" verify
done

test_done
