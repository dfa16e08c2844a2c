#!/usr/bin/env bash
# t0220-build-bad.sh: builds over repositories that are damaged,
# incomplete or odd, and the answers around them.
#
#   - an unreadable (truncated) loose object: the build names everything
#     else, warns and exits 1, stores nothing for the object, refuses
#     what needs it for now; once the file is restored the next build
#     names everything, as a clean build does
#   - a shallow clone: the boundary commit is refused for now, and after
#     `git fetch --unshallow` the next build names it and its history
#   - a --submodule-map pair for a commit the repository has: the
#     repository's own name wins, as upstream's lookup does
#   - blobs are collision-checked like every other object
#   - cat-file by SHA-1 name streams a big blob
#   - the build's object count counts an object in two packs once
#   - the cache's size1 is checked when a SHA-1 form is made; a report
#     of a gitlink without a SHA-1 name; a hex branch name
#   - trees that refer to each other (only a corrupt repository can: a
#     name is a hash) are refused, with what needs them, and the build
#     ends, on one thread and on several

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

have_sqlite=0
command -v sqlite3 >/dev/null && have_sqlite=1

# commit_n REPO N: N more commits on main, each with its own file
commit_n() {
	i=0
	while [ $i -lt "$2" ]; do
		echo "content $i of $(basename "$1") $RANDOM" >"$1/f$i.txt"
		mkdir -p "$1/d$((i % 3))"
		echo "nested $i" >"$1/d$((i % 3))/n$i.txt"
		git -C "$1" add -A
		git -C "$1" commit -qm "commit $i"
		i=$((i + 1))
	done
}

# is_sha1 VALUE: VALUE is a SHA-1 name (40 lower-case hex digits), so
# that two answers that are both empty (both failed) never compare equal
is_sha1() {
	[ ${#1} -eq 40 ] && case $1 in *[!0-9a-f]*) false ;; *) true ;; esac
}

# loose_path REPO OID: the file of a loose object
loose_path() {
	echo "$1/.git/objects/${2:0:2}/${2:2}"
}

# ---- 1. an unreadable loose object ----------------------------------
R=$TRASH/bad
git init -q --object-format=sha256 "$R"
commit_n "$R" 6
# a blob of the first commit: its tree, every commit and the ref need it
victim=$(git -C "$R" rev-parse main~5:f0.txt)
vfile=$(loose_path "$R" "$victim")
cp "$vfile" "$TRASH/victim.save"
chmod u+w "$vfile"
truncate -s 10 "$vfile"
"$XL" -C "$R" build >"$TRASH/out" 2>"$TRASH/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "cannot be read" "$TRASH/err" && grep -q "$victim" "$TRASH/err"; then
	ok "unreadable object: build exits 1 and names it"
else
	not_ok "unreadable object: build exits 1 and names it (exit $rc)"
	sed 's/^/# /' "$TRASH/err"
fi
"$XL" -C "$R" export >"$TRASH/bad.tsv" 2>"$TRASH/err"
rc=$?
ntrans=$(awk -F '\t' '$2 != "-"' "$TRASH/bad.tsv" | wc -l)
[ $rc -eq 0 ] && [ "$ntrans" -gt 10 ] &&
	ok "unreadable object: the build does not fail as a whole ($ntrans named)" ||
	{ not_ok "unreadable object: the build does not fail as a whole (exit $rc, $ntrans named)"; sed 's/^/# /' "$TRASH/err"; }
grep -q "^$victim" "$TRASH/bad.tsv" &&
	not_ok "unreadable object: not stored in the cache" ||
	ok "unreadable object: not stored in the cache"
"$XL" -C "$R" report >"$TRASH/report" 2>&1
tree0=$(git -C "$R" rev-parse main~5^{tree})
if grep -q "$tree0 tree: .*$victim.*cannot read.*retried" "$TRASH/report" &&
   grep -q "$(git -C "$R" rev-parse main) commit: .*retried" "$TRASH/report" &&
   grep -q "refs/heads/main" "$TRASH/report"; then
	ok "unreadable object: report lists what needs it, and why"
else
	not_ok "unreadable object: report lists what needs it, and why"
	sed 's/^/# /' "$TRASH/report"
fi
# a second build with the file still bad: the same answer, no failure
"$XL" -C "$R" build 2>"$TRASH/err"
rc=$?
[ $rc -eq 1 ] && ok "unreadable object: a second build says the same" ||
	not_ok "unreadable object: a second build says the same (exit $rc)"
cp "$TRASH/victim.save" "$vfile"
expect "restored: the build succeeds" "$XL" -C "$R" build
"$XL" -C "$R" export >"$TRASH/fixed.tsv"
"$XL" -C "$R" --cache "$TRASH/clean.sqlite" export >"$TRASH/clean.tsv"
same_file "restored: export is a clean build's" "$TRASH/clean.tsv" "$TRASH/fixed.tsv"
grep -q '	-	' "$TRASH/fixed.tsv" && not_ok "restored: nothing untranslatable" ||
	ok "restored: nothing untranslatable"
expect "restored: verify" "$XL" -C "$R" verify

# the same with the object in a pack: its pack is not marked finished
P=$TRASH/badpack.git
git clone -q --bare "$R" "$P"
git -C "$P" repack -adq
pack=$(ls "$P"/objects/pack/*.pack)
off=$(git -C "$P" show-index <"${pack%.pack}.idx" | awk -v o="$victim" '$2 == o { print $1 }')
cp "$pack" "$TRASH/pack.save"
chmod u+w "$pack"
# spoil the object's compressed bytes (past its header)
printf '\377\377\377\377\377\377\377\377' | dd of="$pack" bs=1 seek=$((off + 4)) conv=notrunc 2>/dev/null
"$XL" -C "$P" build 2>"$TRASH/err"
rc=$?
[ $rc -eq 1 ] && ok "corrupt pack entry: build exits 1" ||
	{ not_ok "corrupt pack entry: build exits 1 (exit $rc)"; sed 's/^/# /' "$TRASH/err"; }
cp "$TRASH/pack.save" "$pack"
expect "corrupt pack entry repaired: the build succeeds" "$XL" -C "$P" build
"$XL" -C "$P" export >"$TRASH/pfixed.tsv"
same_file "corrupt pack entry repaired: export is a clean build's" "$TRASH/clean.tsv" "$TRASH/pfixed.tsv"

# ---- 2. a shallow clone, later unshallowed ---------------------------
S=$TRASH/src
git init -q --object-format=sha256 "$S"
commit_n "$S" 8
git -C "$S" tag -a -m "a tag" v1 main
"$XL" -C "$S" export >"$TRASH/src.tsv"
C=$TRASH/shallow
git clone -q --depth=1 --no-local "file://$S" "$C" 2>"$TRASH/err" ||
	{ not_ok "shallow clone"; sed 's/^/# /' "$TRASH/err"; }
expect "shallow: build" "$XL" -C "$C" build
tip=$(git -C "$C" rev-parse HEAD)
"$XL" -C "$C" report >"$TRASH/report" 2>&1
grep -q "$tip commit: unable to map parent.*retried" "$TRASH/report" &&
	ok "shallow: the boundary commit is refused for now" ||
	{ not_ok "shallow: the boundary commit is refused for now"; sed 's/^/# /' "$TRASH/report"; }
git -C "$C" fetch -q --unshallow 2>"$TRASH/err" || { not_ok "unshallow"; sed 's/^/# /' "$TRASH/err"; }
expect "unshallowed: build" "$XL" -C "$C" build
"$XL" -C "$C" export >"$TRASH/unsh.tsv"
if ! grep -q '	-	' "$TRASH/unsh.tsv" && [ -z "$(comm -23 "$TRASH/unsh.tsv" "$TRASH/src.tsv")" ] &&
   grep -q "^$tip	" "$TRASH/unsh.tsv"; then
	ok "unshallowed: every object named, as in the full repository"
else
	not_ok "unshallowed: every object named, as in the full repository"
	comm -23 "$TRASH/unsh.tsv" "$TRASH/src.tsv" | head | sed 's/^/# /'
fi
got=$("$XL" -C "$C" map HEAD)
want=$("$XL" -C "$S" map main)
is_sha1 "$want" && [ "$got" = "$want" ] &&
	ok "unshallowed: HEAD maps as in the full repository" ||
	not_ok "unshallowed: HEAD maps as in the full repository (got '$got', want '$want')"
expect "unshallowed: verify" "$XL" -C "$C" verify

# ---- 3. a submodule map pair for a commit the repository has ----------
# twins: the same commits in a SHA-1 and a SHA-256 repository; the
# second commit's tree has a gitlink to the first commit
for algo in sha1 sha256; do
	T=$TRASH/sm-$algo
	git init -q --object-format=$algo "$T"
	echo one >"$T/a.txt"
	git -C "$T" add a.txt
	git -C "$T" commit -qm first
	c1=$(git -C "$T" rev-parse HEAD)
	blob=$(git -C "$T" rev-parse HEAD:a.txt)
	tree=$(printf '100644 blob %s\ta.txt\n160000 commit %s\tsub\n' "$blob" "$c1" | git -C "$T" mktree)
	c2=$(echo second | git -C "$T" commit-tree "$tree" -p "$c1")
	git -C "$T" update-ref refs/heads/main "$c2"
done
T=$TRASH/sm-sha256
c1=$(git -C "$T" rev-parse main~1)
want1=$(git -C "$TRASH/sm-sha1" rev-parse main~1)
echo "$c1 1111111111111111111111111111111111111111" >"$TRASH/sm.map"
"$XL" -C "$T" --submodule-map "$TRASH/sm.map" build 2>"$TRASH/err"
got1=$("$XL" -C "$T" --submodule-map "$TRASH/sm.map" map "$c1" 2>&1)
is_sha1 "$want1" && [ "$got1" = "$want1" ] && ok "submodule map: a commit the repository has keeps its own name" ||
	not_ok "submodule map: a commit the repository has keeps its own name (got $got1, want $want1)"
git -C "$TRASH/sm-sha1" cat-file --batch-all-objects --batch-check='%(objectname)' | sort >"$TRASH/sm1.objects"
"$XL" -C "$T" --submodule-map "$TRASH/sm.map" export | cut -f2 | sort >"$TRASH/sm.sha1s"
same_file "submodule map: export names exactly the SHA-1 twin's objects" "$TRASH/sm1.objects" "$TRASH/sm.sha1s"
expect "submodule map: verify" "$XL" -C "$T" --submodule-map "$TRASH/sm.map" verify

# ---- 4. blobs are collision-checked ----------------------------------
if [ $have_sqlite = 1 ]; then
	K=$TRASH/coll
	git init -q --object-format=sha256 "$K"
	commit_n "$K" 2
	"$XL" -C "$K" build
	echo "a new blob" >"$TRASH/nb"
	nb=$(git -C "$K" hash-object -w "$TRASH/nb")
	nb1=$({ printf 'blob %d\0' "$(stat -c %s "$TRASH/nb")"; cat "$TRASH/nb"; } | sha1sum | cut -c1-40)
	# another object already in the cache under the new blob's SHA-1 name
	fake=abababababababababababababababababababababababababababababababab
	sqlite3 "$K/.git/xlatefs-cache.sqlite" \
		"INSERT INTO objects(sha256, sha1, type, size256, size1, reason) VALUES (x'$fake', x'$nb1', 3, 11, 11, NULL)"
	"$XL" -C "$K" build 2>"$TRASH/err"
	"$XL" -C "$K" export >"$TRASH/coll.tsv"
	grep -q "^$nb	-	blob" "$TRASH/coll.tsv" &&
		ok "a blob whose SHA-1 name is taken is refused" ||
		{ not_ok "a blob whose SHA-1 name is taken is refused"; grep "^$nb" "$TRASH/coll.tsv" | sed 's/^/# /'; }
	"$XL" -C "$K" report | grep -q "$nb blob: SHA-1 collision: $nb1 is also the name of $fake" &&
		ok "report names the collision" || not_ok "report names the collision"
else
	missing_tool "a blob whose SHA-1 name is taken is refused" "no sqlite3"
	missing_tool "report names the collision" "no sqlite3"
fi

# ---- 6. cat-file streams a big blob by its SHA-1 name ------------------
B=$TRASH/big
git init -q --object-format=sha256 "$B"
head -c $((40 << 20)) /dev/urandom >"$TRASH/big.bin"
big=$(git -C "$B" hash-object -w "$TRASH/big.bin")
tree=$(printf '100644 blob %s\tbig.bin\n' "$big" | git -C "$B" mktree)
git -C "$B" update-ref refs/heads/main "$(echo big | git -C "$B" commit-tree "$tree")"
"$XL" -C "$B" build
big1=$("$XL" -C "$B" map "$big")
"$XL" -C "$B" cat-file blob "$big1" >"$TRASH/big.out"
same_file "cat-file blob of a big blob by SHA-1 name" "$TRASH/big.bin" "$TRASH/big.out"
{ printf '%s blob %s\n' "$big1" $((40 << 20)); cat "$TRASH/big.bin"; echo; } >"$TRASH/big.batch.want"
echo "$big1" | "$XL" -C "$B" cat-file --batch >"$TRASH/big.batch"
same_file "cat-file --batch of a big blob by SHA-1 name" "$TRASH/big.batch.want" "$TRASH/big.batch"
# streamed: the peak holds the mapped loose file (40 MiB of random
# bytes do not compress), but not a second, inflated copy: under 60 MiB,
# where a whole read needs over 80 (not under ASan, whose shadow memory
# says nothing about ours)
if grep -q 'fsanitize' "$XL_TOP/.build-flags" 2>/dev/null; then
	for mode in blob batch native; do
		skip "cat-file $mode by SHA-1 name streams" "a sanitizer build: its shadow memory says nothing about ours"
	done
elif [ ! -x /usr/bin/time ]; then
	for mode in blob batch native; do
		missing_tool "cat-file $mode by SHA-1 name streams" "no /usr/bin/time"
	done
else
	# (a cat-file that fails at once has a small peak too: its status
	# and its output are checked as well)
	for mode in blob batch native; do
		want=$TRASH/big.bin
		if [ $mode = native ]; then
			/usr/bin/time -f %M -o "$TRASH/rss" "$XL" -C "$B" cat-file blob "$big" >"$TRASH/big.out"
		elif [ $mode = blob ]; then
			/usr/bin/time -f %M -o "$TRASH/rss" "$XL" -C "$B" cat-file blob "$big1" >"$TRASH/big.out"
		else
			want=$TRASH/big.batch.want
			echo "$big1" | /usr/bin/time -f %M -o "$TRASH/rss" "$XL" -C "$B" cat-file --batch >"$TRASH/big.out"
		fi
		rc=$?
		kib=$(tail -1 "$TRASH/rss")
		if [ $rc -eq 0 ] && cmp -s "$want" "$TRASH/big.out" && [ "$kib" -lt $((60 << 10)) ]; then
			ok "cat-file $mode by SHA-1 name streams (peak ${kib} KiB)"
		else
			not_ok "cat-file $mode by SHA-1 name streams (exit $rc, peak ${kib} KiB, output $(cmp -s "$want" "$TRASH/big.out" && echo right || echo wrong))"
		fi
	done
fi

# ---- 7. counts, sizes, gitlinks without a name, hex ref names ----------
D=$TRASH/dup.git
git clone -q --bare "$S" "$D"
git -C "$D" repack -adq
# a second pack holding some of the same objects
git -C "$D" rev-list --objects main~3 | cut -d' ' -f1 |
	git -C "$D" pack-objects -q "$D/objects/pack/pack" >/dev/null
distinct=$(git -C "$D" cat-file --batch-all-objects --batch-check | wc -l | tr -d ' ')
"$XL" -C "$D" build -v 2>"$TRASH/err"
grep -q "^$distinct objects;" "$TRASH/err" &&
	ok "build counts an object in two packs once ($distinct)" ||
	{ not_ok "build counts an object in two packs once (want $distinct)"; sed 's/^/# /' "$TRASH/err"; }
"$XL" -C "$D" build -v 2>"$TRASH/err"
grep -q "^$distinct objects; 0 newly named" "$TRASH/err" &&
	ok "and so does the next build" ||
	{ not_ok "and so does the next build (want $distinct)"; sed 's/^/# /' "$TRASH/err"; }

# a hex branch name that is also an abbreviation: the ref wins, with
# git's warning ("refname ... is ambiguous")
h=$(git -C "$D" rev-parse main~2)
hx=${h:0:8}
git -C "$D" branch "$hx" main
want=$("$XL" -C "$D" map main)
got=$("$XL" -C "$D" map "$hx" 2>"$TRASH/err")
is_sha1 "$want" && [ "$got" = "$want" ] && grep -q "refname '$hx' is ambiguous" "$TRASH/err" &&
	ok "a hex branch name: the ref wins, with a warning" ||
	{ not_ok "a hex branch name: the ref wins, with a warning (got $got, want $want)"; sed 's/^/# /' "$TRASH/err"; }
git -C "$D" branch -D "$hx" >/dev/null

if [ $have_sqlite = 1 ]; then
	db=$D/xlatefs-cache.sqlite
	t256=$(git -C "$D" rev-parse main^{tree})
	t1=$("$XL" -C "$D" map "$t256")
	sqlite3 "$db" "UPDATE objects SET size1 = size1 + 1 WHERE sha256 = x'$t256'"
	"$XL" -C "$D" cat-file -p "$t1" >/dev/null 2>"$TRASH/err"
	rc=$?
	[ $rc -eq 1 ] && grep -q "says the SHA-1 form of $t256 is" "$TRASH/err" &&
		ok "a SHA-1 form whose size is not the cache's is refused" ||
		{ not_ok "a SHA-1 form whose size is not the cache's is refused (exit $rc)"; sed 's/^/# /' "$TRASH/err"; }
	sqlite3 "$db" "UPDATE objects SET size1 = size1 - 1 WHERE sha256 = x'$t256'"
	# verify of a copy of the cache that SQL $1 changed, into $TRASH/tv
	verify_changed() {
		cp "$db" "$TRASH/changed.sqlite"
		sqlite3 "$TRASH/changed.sqlite" "$1"
		"$XL" -C "$D" --cache "$TRASH/changed.sqlite" verify >"$TRASH/tv" 2>&1
	}
	# a wrong SHA-1 name: verify names the row and the tree that refers
	# to it (its memos are filled from the cache, so they hide nothing)
	b256=$(git -C "$D" ls-tree main | awk '$2 == "blob" { print $3; exit }')
	verify_changed "UPDATE objects SET sha1 = x'0123456789012345678901234567890123456789' WHERE sha256 = x'$b256'"
	rc=$?
	[ $rc -ne 0 ] && grep -q "^bad $b256: SHA-1 form hashes to" "$TRASH/tv" &&
		grep -q "^bad $t256: SHA-1 form hashes to" "$TRASH/tv" &&
		ok "verify: a wrong SHA-1 name in the cache, and the tree naming it" ||
		{ not_ok "verify: a wrong SHA-1 name in the cache, and the tree naming it (exit $rc)"; sed 's/^/# /' "$TRASH/tv" | head; }
	# counts that do not match the rows (kept in meta, not scanned)
	verify_changed "UPDATE meta SET value = CAST(value + 1 AS TEXT) WHERE key = 'objects'"
	rc=$?
	[ $rc -ne 0 ] && grep -q "^bad counts: the cache says" "$TRASH/tv" &&
		grep -q "^verify: .* 1 bad" "$TRASH/tv" &&
		ok "verify: counts that are not the rows'" ||
		{ not_ok "verify: counts that are not the rows' (exit $rc)"; sed 's/^/# /' "$TRASH/tv" | tail -3; }
	sqlite3 "$db" "INSERT INTO gitlinks(tree, path, commit256, commit1) VALUES (x'$t256', CAST('lib' AS BLOB), x'$h', NULL)"
	"$XL" -C "$D" report >"$TRASH/report" 2>&1
	rc=$?
	[ $rc -eq 0 ] && grep -q "lib in tree $t256: $h -> (no SHA-1 name)" "$TRASH/report" &&
		ok "report: a gitlink without a SHA-1 name" ||
		{ not_ok "report: a gitlink without a SHA-1 name (exit $rc)"; tail -5 "$TRASH/report" | sed 's/^/# /'; }
else
	missing_tool "a SHA-1 form whose size is not the cache's is refused" "no sqlite3"
	missing_tool "verify: a wrong SHA-1 name in the cache, and the tree naming it" "no sqlite3"
	missing_tool "verify: counts that are not the rows'" "no sqlite3"
	missing_tool "report: a gitlink without a SHA-1 name" "no sqlite3"
fi

# ---- 8. a reference cycle --------------------------------------------
# Two loose trees stored under names that are not their hashes, each
# naming the other as a subdirectory, and a third naming itself; a real
# tree holds all three, a commit holds that tree.
C=$TRASH/cycle
git init -q --bare --object-format=sha256 "$C"
python3 - "$C" <<'PY'
import hashlib, os, sys, zlib
repo = sys.argv[1]
name = lambda s: hashlib.sha256(s.encode()).digest()
a, b, c = name("cycle a"), name("cycle b"), name("cycle self")
def put(oid, entries):
    body = b"".join(b"40000 " + n + b"\0" + o for n, o in entries)
    hx = oid.hex()
    os.makedirs(f"{repo}/objects/{hx[:2]}", exist_ok=True)
    with open(f"{repo}/objects/{hx[:2]}/{hx[2:]}", "wb") as f:
        f.write(zlib.compress(b"tree %d\0" % len(body) + body))
put(a, [(b"b", b)])
put(b, [(b"a", a)])
put(c, [(b"again", c)])
PY
read -r ca cb cc < <(python3 -c 'import hashlib
print(*(hashlib.sha256(s.encode()).hexdigest() for s in ("cycle a", "cycle b", "cycle self")))')
blob=$(echo fine | git -C "$C" hash-object -w --stdin)
top=$(printf '040000 tree %s\tloop\n040000 tree %s\tself\n100644 blob %s\tfine\n' "$ca" "$cc" "$blob" |
	git -C "$C" mktree --missing)
cmt=$(echo cycle | git -C "$C" commit-tree "$top")
git -C "$C" update-ref refs/heads/main "$cmt"
for n in 1 4; do
	rm -f "$C/xlatefs-cache.sqlite"*
	timeout 60 "$XL" -C "$C" build --threads $n >"$TRASH/out" 2>"$TRASH/err"
	rc=$?
	"$XL" -C "$C" report >"$TRASH/report" 2>&1
	bad=0
	for o in "$ca" "$cb" "$cc"; do
		grep -q "$o tree: .*reference cycle" "$TRASH/report" || bad=1
	done
	for o in "$top" "$cmt"; do
		grep -q "$o" "$TRASH/report" || bad=1
	done
	got=$("$XL" -C "$C" map "$blob" 2>/dev/null)
	[ $rc -eq 0 ] && [ $bad = 0 ] && is_sha1 "$got" &&
		ok "a reference cycle is refused with what needs it (--threads $n)" ||
		{ not_ok "a reference cycle is refused with what needs it (--threads $n: exit $rc)"; sed 's/^/# /' "$TRASH/err" "$TRASH/report"; }
done

test_done
