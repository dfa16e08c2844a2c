#!/usr/bin/env bash
# t0560-partial-shallow.sh: partial and shallow clones, as people have
# them.
#
#   - a blob:none partial clone: the build counts the blobs it lacks
#     (git rev-list --missing=print is the oracle), and `git xlate
#     report`, `build`, the mount's log and `status` say so, naming the
#     promisor remote and the commands that fetch them;
#   - the refusals are walked again only when the repository gains
#     objects: a second build leaves them alone, and an idle mount uses
#     next to no processor time (it used to walk them all every second);
#   - the remedy the message names works: after it the mount names
#     every object within seconds, with no restart, and says nothing is
#     missing any more;
#   - a shallow clone: its boundary commits counted from `shallow`, the
#     parents it lacks, and `git fetch --unshallow`;
#   - a map from the full copy (--map, in each format it takes) names
#     what the clones lack: both translate completely, to the full
#     copy's names; a map line that contradicts an object the clone has
#     is reported and ignored; mounted, sha1/ is a partial clone (its
#     promisor remote, .promisor packs) or a shallow one (shallow, by
#     SHA-1 names) as the repository is, and stock git fsck passes;
#   - a repository that simply lost a blob is not called a partial clone.
. "$(dirname "$0")/lib.sh"

S=$TRASH/src.git
git init -q --bare --object-format=sha256 "$S"
"$XL_TOP/tests/gen-history.sh" --commits 1000 --files 40 | git -C "$S" fast-import --quiet
git -C "$S" repack -adq
git -C "$S" symbolic-ref HEAD refs/heads/main
git -C "$S" config uploadpack.allowFilter true
git -C "$S" config uploadpack.allowAnySHA1InWant true

# ---- a partial clone ------------------------------------------------------
P=$TRASH/partial.git
git clone -q --bare --filter=blob:none "file://$S" "$P"
# fetch as a mirror would (a bare clone alone fetches HEAD's history)
git -C "$P" config remote.origin.fetch '+refs/*:refs/*'
# what stock git itself says is missing
git -C "$P" rev-list --objects --all --missing=print | sed -n 's/^?//p' | sort >"$TRASH/git-missing"
n=$(wc -l <"$TRASH/git-missing")
expect "(the partial clone lacks blobs: $n)" test "$n" -gt 100

"$XL" -C "$P" build -v >"$TRASH/build.out" 2>&1
expect "build says the blobs are missing, and why" \
	grep -q "warning: $n blobs missing (partial clone; promisor remote origin)" "$TRASH/build.out"
expect "build names the remedies" \
	grep -q "backfill\` (Git 2.49 and later), or all at once with \`git -C $P config --unset remote.origin.partialclonefilter && git -C $P fetch --refetch origin\`" "$TRASH/build.out"
"$XL" -C "$P" report >"$TRASH/report" 2>&1
expect "report says it first" grep -q "^  $n blobs missing (partial clone; promisor remote origin)" "$TRASH/report"
"$XL" -C "$P" build -v >"$TRASH/build2.out" 2>&1
expect "a second build leaves the refusals alone" \
	grep -q "^refusals for now: left alone" "$TRASH/build2.out"
expect "and still says what is missing" grep -q "warning: $n blobs missing" "$TRASH/build2.out"
"$XL" -C "$P" report >"$TRASH/report2" 2>&1
same_file "the second build changed nothing" "$TRASH/report" "$TRASH/report2"

# ---- mounted: said at once, idle while nothing changes, then fixed ----------
require_fuse
M=$TRASH/mnt
rm -f "$P"/xlatefs-cache.sqlite*
if xl_mount "$P" "$M"; then
	expect "the mount's log says what is missing" \
		grep -q "xlatefs: $n blobs missing (partial clone; promisor remote origin)" "$M.log"
	expect "status says it" grep -q "^missing: $n blobs missing (partial clone; promisor remote origin): fetch them" "$M/status"
	# an idle mount: builds every second find nothing new, and must not
	# walk the thousands of refusals again each time (that took 1.2 s
	# in 5 s; now 0.02-0.04 s, 0.11 s under ThreadSanitizer)
	pid=$(cat "$M.pid")
	ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
	sleep 1
	t0=$(ticks "$pid")
	sleep 5
	t1=$(ticks "$pid")
	hz=$(getconf CLK_TCK)
	used=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
	echo "# idle daemon: $used s of processor time in 5 s"
	expect "an idle mount uses under 0.5 s of processor time in 5 s ($used s)" \
		awk -v u="$used" 'BEGIN { exit !(u < 0.5) }'

	# the remedy the message gives, for Git before 2.49
	git -C "$P" config --unset remote.origin.partialclonefilter
	git -C "$P" fetch -q --refetch origin 2>/dev/null
	expect_soon 30 "after the refetch every object is named, without a restart" \
		grep -q '^untranslatable: 0$' "$M/status"
	expect_fail "and status says nothing is missing" grep -q '^missing:' "$M/status"
	git -C "$S" log --format=%s --all >"$TRASH/src-log"
	git --git-dir="$M/sha1" log --format=%s --all >"$TRASH/sha1-log" 2>&1
	same_file "sha1/ has the whole history" "$TRASH/src-log" "$TRASH/sha1-log"
	expect "git fsck --full on sha1/" git --git-dir="$M/sha1" fsck --full --no-progress
	xl_umount "$M"
fi

# ---- a shallow clone ---------------------------------------------------------
H=$TRASH/shallow.git
git clone -q --bare --depth 3 "file://$S" "$H"
b=$(wc -l <"$H/shallow")
# the parents the boundary commits name and the clone lacks
while read -r c; do
	git -C "$H" cat-file -p "$c" | sed -n 's/^parent //p'
done <"$H/shallow" | sort -u | while read -r p; do
	git -C "$H" cat-file -e "$p" 2>/dev/null || echo "$p"
done >"$TRASH/lost-parents"
np=$(wc -l <"$TRASH/lost-parents")
expect "(the shallow clone lacks $np parents of $b boundary commits)" test "$np" -gt 0
"$XL" -C "$H" report >"$TRASH/sreport" 2>&1
c=commits
[ "$np" = 1 ] && c=commit
bc="boundary commits"
[ "$b" = 1 ] && bc="boundary commit"
expect "report counts the boundary and what it lacks" \
	grep -q "^  $np $c missing (shallow clone: $b $bc): fetch the history with \`git -C $H fetch --unshallow\`" "$TRASH/sreport"
git -C "$H" fetch -q --unshallow origin
"$XL" -C "$H" build -v >"$TRASH/sbuild" 2>&1
expect "after --unshallow the refusals are walked again" grep -q '^refusals for now: walked again' "$TRASH/sbuild"
"$XL" -C "$H" report >"$TRASH/sreport2" 2>&1
expect "and nothing is untranslatable" grep -q '^objects: [0-9]*, translated: [0-9]*, untranslatable: 0$' "$TRASH/sreport2"
expect_fail "nor missing" grep -q 'missing from the repository' "$TRASH/sreport2"

# ---- known pairs: a map from the full copy -----------------------------------
# the full repository's names, in each format the map takes
"$XL" -C "$S" build
"$XL" -C "$S" export >"$TRASH/full.tsv"
"$XL" -C "$S" export --format=loose-object-idx >"$TRASH/full.idx"
sed -n 's/^\([0-9a-f]*\)\t\([0-9a-f]*\)\t.*/\1 \2/p' "$TRASH/full.tsv" >"$TRASH/full.pairs"
git -C "$S" for-each-ref --format='%(objectname)' >"$TRASH/tips"
"$XL" -C "$S" map $(cat "$TRASH/tips") >"$TRASH/full-tips"
P2=$TRASH/partial2.git
i=0
for m in full.tsv full.idx full.pairs; do
	i=$((i + 1))
	rm -rf "$P2"
	git clone -q --bare --filter=blob:none "file://$S" "$P2"
	"$XL" -C "$P2" --map "$TRASH/$m" build >"$TRASH/mbuild$i" 2>&1
	"$XL" -C "$P2" --map "$TRASH/$m" report >"$TRASH/mreport$i" 2>&1
	expect "with a map ($m) the partial clone translates completely" \
		grep -q '^objects: [0-9]*, translated: [0-9]*, untranslatable: 0$' "$TRASH/mreport$i"
	"$XL" -C "$P2" --map "$TRASH/$m" map $(cat "$TRASH/tips") >"$TRASH/tips$i" 2>&1
	same_file "to the full copy's names ($m)" "$TRASH/full-tips" "$TRASH/tips$i"
done
# verify converts every object back, the map's names included
expect "git xlate verify passes on the partial clone translated with a map" \
	"$XL" -C "$P2" --map "$TRASH/full.pairs" verify
expect "--submodule-map is the map's other name" \
	"$XL" -C "$P2" --submodule-map "$TRASH/full.pairs" map $(head -1 "$TRASH/tips")

# a line for an object the clone has, saying otherwise: reported, ignored
t=$(head -1 "$TRASH/tips")
t1=$(head -1 "$TRASH/full-tips")
{ grep -v "^$t" "$TRASH/full.pairs"; echo "$t 0123456789abcdef0123456789abcdef01234567"; } >"$TRASH/lying.pairs"
rm -rf "$P2"
git clone -q --bare --filter=blob:none "file://$S" "$P2"
"$XL" -C "$P2" --map "$TRASH/lying.pairs" build >"$TRASH/lbuild" 2>&1
expect "a map line for an object the repository has is reported" \
	grep -q "warning: 1 line of the map names an object the repository has otherwise; ignored.*first: $t: the map says 0123456789abcdef0123456789abcdef01234567, its conversion $t1" "$TRASH/lbuild"
expect "and the object keeps its own name" \
	test "$("$XL" -C "$P2" --map "$TRASH/lying.pairs" map "$t")" = "$t1"

# mounted with the map: both views are the partial clone it is
if fuse_ok; then
	M2=$TRASH/mnt2
	rm -rf "$P2"
	git clone -q --bare --filter=blob:none "file://$S" "$P2"
	if xl_mount "$P2" "$M2" -o map="$TRASH/full.tsv"; then
		expect "sha1/config names the promisor remote" \
			grep -q '^\[remote "origin"\]' "$M2/sha1/config"
		ls "$M2/sha1/objects/pack" >"$TRASH/p1"
		expect "sha1/'s pack is a promisor pack" grep -q '\.promisor$' "$TRASH/p1"
		ls "$M2/sha256/objects/pack" >"$TRASH/p256"
		same_file "sha256/objects/pack shows the repository's" \
			<(ls "$P2/objects/pack") "$TRASH/p256"
		for v in sha1 sha256; do
			expect "git fsck --full on $v/ (promised blobs are not missing)" \
				git --git-dir="$M2/$v" fsck --full --no-progress
		done
		git --git-dir="$M2/sha1" for-each-ref --format='%(objectname)' >"$TRASH/m-tips"
		sort "$TRASH/full-tips" >"$TRASH/full-tips.s"
		sort "$TRASH/m-tips" >"$TRASH/m-tips.s"
		same_file "sha1/ refs are the full copy's" "$TRASH/full-tips.s" "$TRASH/m-tips.s"
		expect_fail "no shallow file in a clone that is not shallow" test -e "$M2/sha1/shallow"
		xl_umount "$M2"
	fi

	H2=$TRASH/shallow2.git
	git clone -q --bare --depth 3 "file://$S" "$H2"
	if xl_mount "$H2" "$M2" -o map="$TRASH/full.idx"; then
		expect "sha256/shallow is the repository's" cmp "$H2/shallow" "$M2/sha256/shallow"
		"$XL" -C "$S" map $(cat "$H2/shallow") | sort >"$TRASH/boundary1"
		sort "$M2/sha1/shallow" >"$TRASH/m-boundary1"
		same_file "sha1/shallow names the boundary by SHA-1" "$TRASH/boundary1" "$TRASH/m-boundary1"
		git -C "$H2" log --format=%s --all >"$TRASH/h-log"
		git --git-dir="$M2/sha1" log --format=%s --all >"$TRASH/h1-log" 2>&1
		same_file "git log on sha1/ stops at the boundary, as in the clone" \
			"$TRASH/h-log" "$TRASH/h1-log"
		for v in sha1 sha256; do
			expect "git fsck --full on $v/ of the shallow clone" \
				git --git-dir="$M2/$v" fsck --full --no-progress
		done
		xl_umount "$M2"
		expect "git xlate verify passes on the shallow clone with a map" \
			"$XL" -C "$H2" --map "$TRASH/full.idx" verify
	fi
fi

# ---- a blob lost, in no partial clone ----------------------------------------
L=$TRASH/lost.git
git init -q --bare --object-format=sha256 "$L"
blob=$(echo lost | git -C "$L" hash-object -w --stdin)
tree=$(printf '100644 blob %s\tf\n' "$blob" | git -C "$L" mktree)
commit=$(echo one | git -C "$L" commit-tree "$tree")
git -C "$L" update-ref refs/heads/main "$commit"
rm -f "$L/objects/${blob:0:2}/${blob:2}"
"$XL" -C "$L" report >"$TRASH/lreport" 2>&1
expect "a lost blob is not blamed on a partial clone" \
	grep -q "^  1 blob missing, and this is no partial clone" "$TRASH/lreport"

test_done
