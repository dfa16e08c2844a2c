#!/usr/bin/env bash
# t0215-base-tables.sh: the build's shortcuts change nothing it stores.
#
# The build converts a tree against a version of its directory named a
# moment before, found along the pack's delta chains, copying what the
# two share from that version's SHA-1 form (xlate/tree_merge.c); when
# that version is the tree's delta base, the same walk gives the SHA-1
# pack's tree delta (build.c, struct formcache).  It is on by default;
# XLATE_TEST_BASE_TABLES=0 turns it off, =small keeps 1 MiB of recent
# forms, which they leave all the time; XLATE_TEST_BULK=1 makes the
# first build write its rows at the end, in name order, with the index
# by SHA-1 name made again afterwards (build.c, "a first build"), which
# the others do not (=0).  Whatever the references, the
# walk makes the other tree deltas from the two trees' native forms
# (build.c, native_delta()); XLATE_TEST_WALK_DELTAS=0 turns that off,
# and then the layout makes every delta from the two SHA-1 forms, as
# readers of the pack do: the way the others must agree with ("layout"
# below).  On generated histories (pack-objects' delta chains and
# fast-import's, which run the other way), twins in every storage
# shape, and fixtures, all five ways give the same names, the same
# refusals, and the same SHA-1 packs to the byte (layout, .idx,
# trailer); and the walk did take the shortcuts (so the test cannot
# pass by their never being taken).
. "$(dirname "$0")/lib.sh"

# A first build that writes its rows at the end lays the SHA-1 packs
# out on a thread of its own while they go in, holding its own rows
# until the build's are committed (build.c, struct early_layout):
# XLATE_TEST_ROWS_DELAY_MS=300 holds the build's commit back, so that
# the layout is surely made before it ("bulk" below), and
# XLATE_TEST_LAYOUT_HOLD=256 makes it hold so little that it waits
# ("held").

# dump CACHE: what a build stored, as text (rows from either table)
dump() {
	sqlite3 "$1" "SELECT hex(sha256), hex(sha1), type, size256, size1, reason FROM objects
		UNION ALL SELECT hex(sha256), hex(sha1), type, size256, size1, reason FROM objects_recent ORDER BY 1;
		SELECT native, hex(checksum), objects, pack_size, idx_size FROM packs1 ORDER BY native;
		SELECT key, hex(entries) FROM pack1_chunks ORDER BY key;
		SELECT key, hex(data) FROM pack1_idx ORDER BY key;
		SELECT hex(tree), path, hex(commit256), hex(commit1) FROM gitlinks ORDER BY tree, path;"
}

# same NAME REPO [git-xlate options]
same() {
	name=$1 repo=$2
	shift 2
	for v in layout 0 1 small bulk held; do
		rm -f "$TRASH/c$v.sqlite"*
		rc=0
		walk=1 tables=$v bulk=0 hold= delay= threads=
		[ $v != layout ] || walk=0 tables=0
		# (two threads even on one processor: the layout needs one)
		[ $v != bulk ] || tables=1 bulk=1 delay=300 threads="--threads 2"
		[ $v != held ] || tables=1 bulk=1 hold=256 threads="--threads 2"
		# shellcheck disable=SC2086
		XLATE_TEST_BASE_TABLES=$tables XLATE_TEST_WALK_DELTAS=$walk \
		XLATE_TEST_BULK=$bulk XLATE_TEST_LAYOUT_HOLD=$hold \
		XLATE_TEST_ROWS_DELAY_MS=$delay \
			"$XL" -C "$repo" --cache "$TRASH/c$v.sqlite" "$@" build -v $threads \
			>"$TRASH/build$v" 2>&1 || rc=$?
		# (a sanitizer's report makes it exit non-zero too)
		expect "$name: the build exits 0 (base tables $v)" test $rc = 0
		[ $rc = 0 ] || sed 's/^/# /' "$TRASH/build$v" | head -20
		dump "$TRASH/c$v.sqlite" >"$TRASH/dump$v"
	done
	case $name in
	*loose) ;;	# no pack, no layout
	*) expect "$name: (the layouts are there)" grep -q "^[0-9a-f]*|[0-9A-F]\{40\}|" "$TRASH/dump1" ;;
	esac
	same_file "$name: deltas from native forms: the same names, refusals and SHA-1 packs, byte for byte" \
		"$TRASH/dumplayout" "$TRASH/dump0"
	same_file "$name: the same with base tables" \
		"$TRASH/dumplayout" "$TRASH/dump1"
	same_file "$name: the same with 1 MiB of recent forms (they leave it all the time)" \
		"$TRASH/dumplayout" "$TRASH/dumpsmall"
	same_file "$name: the same when the rows are written at the end, in name order" \
		"$TRASH/dumplayout" "$TRASH/dumpbulk"
	same_file "$name: the same when the layout beside them holds 256 bytes and waits" \
		"$TRASH/dumplayout" "$TRASH/dumpheld"
	case $name in
	*loose) ;;
	*)	packs=$(ls "$repo/objects/pack" | grep -c '\.pack$')
		# the rows held back 300 ms: the layout (of the first pack, at
		# least: it waits there with it) was made meanwhile
		expect "$name: (that build laid its $packs packs out while the rows went in)" \
			grep -q "^SHA-1 packs: $packs laid out while the rows went in, [1-9][0-9]* of them ready before" \
			"$TRASH/buildbulk"
		expect "$name: (and the other held all it may, and waited)" \
			grep -q "^SHA-1 packs: $packs laid out while the rows went in, .*, [1-9][0-9]* of them holding all" \
			"$TRASH/buildheld"
		expect "$name: (builds that stream lay out after their rows)" \
			sh -c "! grep -q 'laid out while the rows' '$TRASH/build1'" ;;
	esac
	sqlite3 "$TRASH/cbulk.sqlite" "SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name" \
		>"$TRASH/indexes"
	expect "$name: (that build did write its rows at the end)" \
		grep -q "^rows: stored at the end" "$TRASH/buildbulk"
	expect "$name: (and the others while naming)" \
		grep -q "^rows: stored while naming" "$TRASH/build1"
	expect "$name: ... and the index by SHA-1 name is made again" \
		grep -qx objects_sha1 "$TRASH/indexes"
	sha1=$(sqlite3 "$TRASH/cbulk.sqlite" "SELECT lower(hex(sha1)) FROM objects WHERE sha1 IS NOT NULL LIMIT 1")
	expect "$name: ... and names are found by it" \
		"$XL" -C "$repo" --cache "$TRASH/cbulk.sqlite" "$@" map "$sha1"
}

# a history with many versions of each directory, so that trees are deltas
G=$TRASH/gen.git
git init -q --bare --object-format=sha256 "$G"
"$XL_TOP/tests/gen-history.sh" --commits 400 --files 60 | git -C "$G" fast-import --quiet
# git's own delta bases (-f): fast-import's deltify each version against
# the one before, the other way round from pack-objects and from the walk
git -C "$G" repack -adfq --depth=50 --window=10
same "generated history" "$G"
rm -f "$TRASH/t1.sqlite"*
XLATE_TEST_BULK=1 "$XL" -C "$G" --cache "$TRASH/t1.sqlite" build -v --threads 1 >"$TRASH/build-t1" 2>&1
expect "a first build asked for one thread lays its packs out after its rows, on it" \
	sh -c "grep -q '^rows: stored at the end' '$TRASH/build-t1' &&
	       ! grep -q 'laid out while the rows' '$TRASH/build-t1'"
dump "$TRASH/t1.sqlite" >"$TRASH/dump-t1"
same_file "... and the same SHA-1 packs" "$TRASH/dumplayout" "$TRASH/dump-t1"
# made V: "deltas made-while-naming" as build V said
made() {
	sed -n 's/.*SHA-1 packs: \([0-9]*\) tree deltas, \([0-9]*\) of them made while naming/\1 \2/p' "$TRASH/build$1"
}
# against V: "trees converted against a version named before" as build V said
against() {
	sed -n 's/^trees: \([0-9]*\) converted, \([0-9]*\) of them against.*/\1 \2/p' "$TRASH/build$1"
}
t=$(against 1)
expect "with base tables, over half of the trees were converted against another (${t#* } of ${t% *})" \
	test "$((${t#* } * 2))" -gt "${t% *}"
t=$(against 0)
expect "without, none (${t#* } of ${t% *})" test "${t#* }" = 0
made=$(made 1)
expect "(the SHA-1 pack has tree deltas: ${made% *})" test "${made% *}" -gt 300
expect "with base tables, the walk made most of them itself (${made#* } of ${made% *})" \
	test "$((${made#* } * 10))" -ge "$((${made% *} * 7))"
made=$(made 0)
expect "without, from the native forms, all of them (${made#* } of ${made% *})" \
	test "${made#* }" = "${made% *}"
made=$(made layout)
expect "with neither, none (${made#* })" test "${made#* }" = 0

# fast-import's own pack: each version a delta against the one before,
# so the walk meets every base after the tree, and finds the version
# deltified against it instead
F=$TRASH/fi.git
git init -q --bare --object-format=sha256 "$F"
"$XL_TOP/tests/gen-history.sh" --commits 300 --files 40 | git -C "$F" fast-import --quiet
same "fast-import's pack" "$F"
t=$(against 1)
expect "with base tables, the trees were converted against the next version (${t#* } of ${t% *})" \
	test "$((${t#* } * 5))" -gt "$((${t% *} * 2))"
made=$(made 0)
expect "(fast-import's pack has tree deltas: ${made% *})" test "${made% *}" -gt 100
expect "from the native forms, the walk made all of them (${made#* } of ${made% *})" \
	test "${made#* }" = "${made% *}"

T=$TRASH/tw
twins "$T"
for shape in packed mixed loose idx1 largeofs; do
	same "twins, sha256-$shape" "$T/sha256-$shape.git"
done

for f in history history-multipack large; do
	tar -xzf "$XL_TOP/tests/fixtures/$f.tar.gz" -C "$TRASH"
	same "fixture $f" "$TRASH/$f.git"
done
tar -xzf "$XL_TOP/tests/fixtures/submodule.tar.gz" -C "$TRASH"
same "fixture submodule, with its map" "$TRASH/submodule.git" \
	--map "$XL_TOP/tests/fixtures/submodule.submodule-map.tsv"

test_done
