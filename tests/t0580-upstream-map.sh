#!/usr/bin/env bash
# t0580-upstream-map.sh: maps that upstream Git's compat mode can use,
# both ways.
#
#   - `export --format=loose-object-idx` on the submodule fixture and on
#     twins with gitlinks: gitformat-loose(5)'s header and lines; the
#     pairs are the tsv export's (without the built-in pairs) plus the
#     gitlink targets' from the map; every entry of every tree and every
#     reference of every commit and tag it names is in it too, as
#     upstream needs to convert them (it converts an object only when it
#     can map everything the object names), and the names are the SHA-1
#     twin's;
#   - a repository running compat mode with its own loose-object-idx,
#     one line wrong and one for a pruned object: build warns, report
#     names the wrong line and counts the stale one, verify exits 1, the
#     mount's status says it, and a line for a gitlink tree refused for
#     want of a map is said, not counted as bad;
#   - `export | head` and `cat-file --batch | head` end quietly.
. "$(dirname "$0")/lib.sh"

EMPTY_TREE=6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321
EMPTY_BLOB=473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813

# check_idx NAME FILE: gitformat-loose(5): the header, then "<sha256> <sha1>"
check_idx() {
	expect "$1: the header line" test "$(head -1 "$2")" = "# loose-object-idx"
	expect "$1: every other line a pair of lower-case names" \
		test "$(tail -n +2 "$2" | grep -cvE '^[0-9a-f]{64} [0-9a-f]{40}$')" = 0
	expect "$1: no pair twice, no name twice" \
		test "$(tail -n +2 "$2" | sort -u | wc -l)" = "$(tail -n +2 "$2" | cut -c1-64 | sort -u | wc -l)"
	expect "$1: the built-in pairs left out" \
		test "$(grep -c "^$EMPTY_TREE \|^$EMPTY_BLOB " "$2")" = 0
}

# closed REPO NAME: every tree, commit and tag the idx names refers only
# to what the idx names (or the built-ins), as upstream needs to convert it
closed() {
	repo=$1 idx=$2
	tail -n +2 "$idx" | cut -c1-64 | sort >"$TRASH/keys"
	tail -n +2 "$idx" | cut -c1-64 |
		git -C "$repo" cat-file --batch-check='%(objectname) %(objecttype)' |
		awk '$2 != "blob" { print $1 }' >"$TRASH/named"
	: >"$TRASH/refs"
	while read -r o; do
		case $(git -C "$repo" cat-file -t "$o") in
		tree) git -C "$repo" ls-tree "$o" | awk '{ print $3 }' ;;
		commit) git -C "$repo" cat-file commit "$o" | sed -n '/^$/q; s/^\(tree\|parent\) //p' ;;
		tag) git -C "$repo" cat-file tag "$o" | sed -n '1s/^object //p' ;;
		esac
	done <"$TRASH/named" | sort -u | grep -v "^$EMPTY_TREE$\|^$EMPTY_BLOB$" >"$TRASH/refs" || true
	comm -23 "$TRASH/refs" "$TRASH/keys" >"$TRASH/unmapped"
	test -s "$TRASH/refs" && ! test -s "$TRASH/unmapped"
}

# ---- the submodule fixture ------------------------------------------------
tar -xzf "$XL_TOP/tests/fixtures/submodule.tar.gz" -C "$TRASH"
SUB=$TRASH/submodule.git
SUBMAP=$XL_TOP/tests/fixtures/submodule.submodule-map.tsv
"$XL" -C "$SUB" --map "$SUBMAP" export --format=loose-object-idx >"$TRASH/sub.idx"
"$XL" -C "$SUB" --map "$SUBMAP" export >"$TRASH/sub.tsv"
check_idx "submodule fixture" "$TRASH/sub.idx"
gl=$(git -C "$SUB" ls-tree -r HEAD | awk '$1 == "160000" { print $3 }' | sort -u)
expect "(the fixture has a gitlink)" test -n "$gl"
for c in $gl; do
	m=$(awk -v c="$c" '$1 == c { print $2 }' "$SUBMAP")
	expect "gitlink target ${c:0:12} is in the file with its mapped name" \
		grep -qx "$c $m" "$TRASH/sub.idx"
done
{ awk -F'\t' '$2 != "-" { print $1 " " $2 }' "$TRASH/sub.tsv" |
	grep -v "^$EMPTY_TREE \|^$EMPTY_BLOB "
  awk '{ print $1 " " $2 }' "$SUBMAP"; } | sort >"$TRASH/want"
tail -n +2 "$TRASH/sub.idx" | sort >"$TRASH/got"
same_file "the pairs are the tsv export's plus the gitlink pairs" "$TRASH/want" "$TRASH/got"
expect "upstream could convert every object it names (every reference mapped)" \
	closed "$SUB" "$TRASH/sub.idx"
# without the gitlink pairs (what export wrote before): the tree is not
grep -v "^$gl " "$TRASH/sub.idx" >"$TRASH/sub-old.idx"
expect_fail "(without the gitlink pair a tree names what the file lacks)" \
	closed "$SUB" "$TRASH/sub-old.idx"

# ---- twins with gitlinks --------------------------------------------------
# A submodule and a superproject made twice, once in each object format,
# from one stream; the superproject's gitlinks name the submodule's
# commits in the format of each.
substream() {
	for i in 1 2 3 4 5; do
		printf 'commit refs/heads/main\nmark :%d\n' "$i"
		printf 'committer S <s@example.org> %d +0000\ndata 4\nsub%d\n' $((1700000000 + i)) "$i"
		[ "$i" = 1 ] || printf 'from :%d\n' $((i - 1))
		printf 'M 100644 inline lib.c\ndata %d\nint v%d;\n\n' $((${#i} + 7)) "$i"
	done
}
superstream() {	# the submodule's commit names, oldest first, on stdin
	i=0
	while read -r sc; do
		i=$((i + 1))
		printf 'commit refs/heads/main\nmark :%d\n' "$i"
		printf 'committer P <p@example.org> %d +0000\ndata 6\nsuper%d\n' $((1700001000 + i)) "$i"
		[ "$i" = 1 ] || printf 'from :%d\n' $((i - 1))
		printf 'M 160000 %s deps/lib\n' "$sc"
		[ $((i % 2)) = 0 ] && printf 'M 160000 %s vendor/nested/lib\n' "$sc"
		printf 'M 100644 inline README\ndata %d\nv%d of the superproject\n\n' $((${#i} + 21)) "$i"
	done
	printf 'tag v1\nfrom :%d\ntagger P <p@example.org> 1700002000 +0000\ndata 3\nv1\n' "$i"
}
for a in sha1 sha256; do
	git init -q --bare --object-format=$a "$TRASH/sub-$a.git"
	substream | git -C "$TRASH/sub-$a.git" fast-import --quiet
	git init -q --bare --object-format=$a "$TRASH/super-$a.git"
	git -C "$TRASH/sub-$a.git" rev-list --reverse main |
		superstream | git -C "$TRASH/super-$a.git" fast-import --quiet
done
paste -d' ' <(git -C "$TRASH/sub-sha256.git" rev-list --reverse main) \
	<(git -C "$TRASH/sub-sha1.git" rev-list --reverse main) >"$TRASH/twin.map"
T=$TRASH/super-sha256.git
"$XL" -C "$T" --map "$TRASH/twin.map" export --format=loose-object-idx >"$TRASH/twin.idx"
check_idx "twins" "$TRASH/twin.idx"
tail -n +2 "$TRASH/twin.idx" | cut -d' ' -f2 | sort >"$TRASH/twin-sha1"
{ git -C "$TRASH/super-sha1.git" cat-file --batch-all-objects --batch-check='%(objectname)'
  cut -d' ' -f2 "$TRASH/twin.map"; } | sort -u >"$TRASH/twin-want"
same_file "twins: every SHA-1 name is the SHA-1 twin's, gitlink targets included" \
	"$TRASH/twin-want" "$TRASH/twin-sha1"
git -C "$T" rev-list --objects --all | cut -c1-64 |
	git -C "$T" cat-file --batch-check='%(objectname) %(objecttype)' |
	awk '$2 == "tree" { print $1 }' | while read -r t; do
		git -C "$T" ls-tree "$t" | awk '$1 == "160000" { print $3 }'
	done | sort -u >"$TRASH/twin-gitlinks"
expect "(the twins' trees hold 5 gitlink targets)" test "$(wc -l <"$TRASH/twin-gitlinks")" = 5
expect "twins: every gitlink target is in the file" \
	test -z "$(comm -23 "$TRASH/twin-gitlinks" <(tail -n +2 "$TRASH/twin.idx" | cut -c1-64 | sort))"
expect "twins: upstream could convert every object it names" closed "$T" "$TRASH/twin.idx"

# ---- a repository running compat mode --------------------------------------
tar -xzf "$XL_TOP/tests/fixtures/history.tar.gz" -C "$TRASH"
H=$TRASH/history.git
git -C "$H" config extensions.compatObjectFormat sha1
"$XL" -C "$H" export --format=loose-object-idx >"$TRASH/h.idx"
"$XL" -C "$H" export >"$TRASH/h.tsv"
rm -f "$H/xlatefs-cache.sqlite"*
# line 4 (the third pair) made wrong; a last line for an object pruned since
wrong=$(sed -n 4p "$TRASH/h.idx")
bad1=$(echo "$wrong" | cut -d' ' -f2 | sed 's/.$/0/')
[ "$bad1" != "$(echo "$wrong" | cut -d' ' -f2)" ] || bad1=$(echo "$wrong" | cut -d' ' -f2 | sed 's/.$/1/')
stale=$(printf 'pruned since\n' | git hash-object --stdin)	# a SHA-1 name: any would do
pruned=$(printf 'pruned since' | sha256sum | cut -c1-64)
{ sed -n 1,3p "$TRASH/h.idx"
  echo "$(echo "$wrong" | cut -d' ' -f1) $bad1"
  tail -n +5 "$TRASH/h.idx"
  echo "$pruned $stale"; } >"$H/objects/loose-object-idx"
n=$(($(wc -l <"$H/objects/loose-object-idx") - 1))

"$XL" -C "$H" build >"$TRASH/h-build" 2>&1
expect "build warns that upstream's map disagrees" \
	grep -q "warning: objects/loose-object-idx (upstream's map): $n lines, $((n - 2)) agree, 1 DISAGREE, 1 for objects not in the repository" "$TRASH/h-build"
"$XL" -C "$H" report >"$TRASH/h-report" 2>&1
expect "report names the wrong line, with its number and our name" \
	grep -qx "  line 4: $(echo "$wrong" | cut -d' ' -f1) $bad1: named $(echo "$wrong" | cut -d' ' -f2) here" "$TRASH/h-report"
expect "report counts the stale line" \
	grep -q "^  objects/loose-object-idx (upstream's map): $n lines, $((n - 2)) agree, 1 DISAGREE, 1 for objects not in the repository" "$TRASH/h-report"
expect_fail "report does not list the stale line" grep -q "$pruned" "$TRASH/h-report"
rc=0
"$XL" -C "$H" verify >"$TRASH/h-verify" 2>&1 || rc=$?
expect "verify exits 1" test $rc = 1
expect "verify names the wrong line" \
	grep -q "^bad loose-object-idx line 4: .*: named $(echo "$wrong" | cut -d' ' -f2) here" "$TRASH/h-verify"
expect "verify: every object itself is good" grep -q "^verify: [0-9]* ok, 0 bad" "$TRASH/h-verify"

# the wrong line put right: all agree, verify passes
cp "$H/objects/loose-object-idx" "$TRASH/h-wrong.idx"
sed -i "4s/ .*/ $(echo "$wrong" | cut -d' ' -f2)/" "$H/objects/loose-object-idx"
"$XL" -C "$H" build -v >"$TRASH/h-build2" 2>&1
expect "build sees the file changed: all agree" \
	grep -q "^git xlate: objects/loose-object-idx (upstream's map): $n lines, $((n - 1)) agree, 1 for objects" "$TRASH/h-build2"
expect "verify passes once the line is right" "$XL" -C "$H" verify
# a line that is no pair, and a file without its header
echo "not a pair" >>"$H/objects/loose-object-idx"
"$XL" -C "$H" report >"$TRASH/h-report3" 2>&1
expect "a line that is no pair is named" grep -qx "  line $((n + 2)): not a pair: not a pair of names" "$TRASH/h-report3"
expect_fail "and fails verify" "$XL" -C "$H" verify
sed -i '1d' "$H/objects/loose-object-idx"
"$XL" -C "$H" report >"$TRASH/h-report4" 2>&1
expect "a file without its header is named" grep -q "^  line 1: .*the first line is not \"# loose-object-idx\"" "$TRASH/h-report4"
cp "$TRASH/h-wrong.idx" "$H/objects/loose-object-idx"

# a gitlink tree upstream named with its own pair, refused here without a map
cp -r "$SUB" "$TRASH/sub-compat.git"
SC=$TRASH/sub-compat.git
rm -f "$SC/xlatefs-cache.sqlite"*
git -C "$SC" config extensions.compatObjectFormat sha1
cp "$TRASH/sub.idx" "$SC/objects/loose-object-idx"
"$XL" -C "$SC" report >"$TRASH/sc-report" 2>&1
expect "a line for an object refused here is said, with the reason" \
	grep -q "^  line [0-9]*: [0-9a-f]* [0-9a-f]*: no SHA-1 name here: failed to map tree entry for $gl" "$TRASH/sc-report"
expect "and the way to lend upstream's pairs" \
	grep -q "named there and refused here.*; --map objects/loose-object-idx lends upstream's pairs" "$TRASH/sc-report"
"$XL" -C "$SC" verify >"$TRASH/sc-verify" 2>&1
expect "but is not a bad line: verify passes" grep -q "^verify: loose-object-idx: [0-9]* agree, 0 bad, [1-9][0-9]* refused here" "$TRASH/sc-verify"
expect "with the map, the gitlink lines agree" \
	sh -c "'$XL' -C '$SC' --map '$SUBMAP' verify | grep -q '^verify: loose-object-idx: 15 agree, 0 bad, 0 refused here, 0 not named yet, 0 stale'"
expect "and so with upstream's own file as the map" \
	sh -c "'$XL' -C '$SC' --map '$SC/objects/loose-object-idx' verify | grep -q '^verify: loose-object-idx: 15 agree, 0 bad, 0 refused here'"

# ---- closed pipes ------------------------------------------------------------
tar -xzf "$XL_TOP/tests/fixtures/large.tar.gz" -C "$TRASH"
L=$TRASH/large.git
"$XL" -C "$L" build 2>/dev/null
# the reader gone before the first write: EPIPE every time, whatever the size
closed_pipe() {
	python3 - "$@" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
with open(os.environ["TRASH"] + "/pipe.err", "wb") as err:
    p = subprocess.run(sys.argv[1:], stdout=w, stderr=err)
os.close(w)
print(-p.returncode if p.returncode < 0 else p.returncode)
PY
}
export TRASH
for cmd in "export" "export --format=loose-object-idx" "cat-file --batch-all-objects --batch"; do
	sig=$(closed_pipe "$XL" -C "$L" $cmd)
	expect "\`$cmd\` into a closed pipe says nothing" test ! -s "$TRASH/pipe.err"
	expect "\`$cmd\` into a closed pipe ends by SIGPIPE, as git does" test "$sig" = 13
done
{ "$XL" -C "$L" cat-file --batch-all-objects --batch 2>"$TRASH/pipe.err"; echo $? >"$TRASH/pipe.rc"; } | head -c 100 >/dev/null
expect "\`cat-file --batch | head\`: quiet, SIGPIPE" \
	test ! -s "$TRASH/pipe.err" -a "$(cat "$TRASH/pipe.rc")" = 141

# ---- mounted: status and log ---------------------------------------------------
require_fuse
M=$TRASH/mnt
rm -f "$H/xlatefs-cache.sqlite"*
xl_mount "$H" "$M"
expect "status says upstream's map disagrees" \
	grep -q "^upstream_map: objects/loose-object-idx (upstream's map): $n lines, $((n - 2)) agree, 1 DISAGREE" "$M/status"
expect "the log says it" grep -q "objects/loose-object-idx (upstream's map): $n lines, $((n - 2)) agree, 1 DISAGREE" "$M.log"
# put right while mounted: status follows within seconds
sed -i "4s/ .*/ $(echo "$wrong" | cut -d' ' -f2)/" "$H/objects/loose-object-idx"
for _ in $(seq 50); do
	grep -q "^upstream_map: .* $((n - 1)) agree" "$M/status" && break
	sleep 0.1
done
expect "a live mount sees the file put right" grep -q "^upstream_map: .*: $n lines, $((n - 1)) agree, 1 for objects" "$M/status"
expect_fail "and no longer says DISAGREE" grep -q "DISAGREE" "$M/status"
xl_umount "$M"

test_done
