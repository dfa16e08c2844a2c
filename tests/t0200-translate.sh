#!/usr/bin/env bash
# t0200-translate.sh: the SHA-1 translation against real SHA-1 twins and
# against upstream Git's own answers.
#
# Twins: one fast-import stream imported into a SHA-1 and a SHA-256
# repository.  After `git xlate build` on the SHA-256 twin (in every
# storage form), its export must name exactly the SHA-1 twin's objects,
# every ref must map to the twin's ref, and `cat-file --batch` by the
# twin's SHA-1 names must print the twin's exact bytes.
#
# Fixtures (tests/fixtures, made by upstream's compat mode): export must
# list every object with exactly upstream's SHA-1 name, or "-" where
# upstream refuses it, and verify must pass.

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

TW=$TRASH/twins
# shellcheck disable=SC2086
twins "$TW" ${XL_TWIN_OPTS:-}

for v in sha256 sha256-packed sha256-loose sha256-mixed sha256-idx1; do
	twin_named "$v" sha1
done

# The walk and the layout run on many threads: the cache must not depend
# on how many, or on how the threads met (rows in their table's order).
if command -v sqlite3 >/dev/null 2>&1; then
	dump_cache() {
		for t in objects packs gitlinks packs1 pack1_chunks pack1_idx ref_names; do
			echo "== $t"
			sqlite3 -readonly "$1" "SELECT * FROM $t" | sort
		done
	}
	for v in sha256-mixed sha256-packed; do
		R=$TW/$v.git
		for n in 1 2 5; do
			"$XL" -C "$R" --cache "$TRASH/threads-$n.sqlite" build --threads $n &&
				dump_cache "$TRASH/threads-$n.sqlite" >"$TRASH/threads-$n.dump" ||
				echo "build --threads $n failed" >"$TRASH/threads-$n.dump"
			rm -f "$TRASH/threads-$n.sqlite"*
		done
		grep -q '^== pack1_idx' "$TRASH/threads-1.dump" &&
			[ "$(grep -c . "$TRASH/threads-1.dump")" -gt 100 ] ||
			not_ok "$v: build --threads 1 makes a cache (got: $(head -1 "$TRASH/threads-1.dump"))"
		same_file "$v: build --threads 2 stores what --threads 1 does" \
			"$TRASH/threads-1.dump" "$TRASH/threads-2.dump"
		same_file "$v: build --threads 5 stores what --threads 1 does" \
			"$TRASH/threads-1.dump" "$TRASH/threads-5.dump"
	done
else
	missing_tool "build --threads N stores what --threads 1 does" "no sqlite3"
fi
"$XL" -C "$TW/sha256-packed.git" --cache "$TRASH/t0.sqlite" build --threads 0 2>"$TRASH/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'from 1 to 64' "$TRASH/err" && ok "build --threads 0 is a usage error" ||
	not_ok "build --threads 0 is a usage error (exit $rc)"
# A build after new objects leaves their rows in the table of recent
# rows until they pass an eighth of the big one; --fold moves them now,
# and nothing a reader sees changes.  (A first build into an empty big
# table always folds: the -v test below.)
if command -v sqlite3 >/dev/null 2>&1; then
	F=$TRASH/fold.git
	cp -R "$TW/sha256-packed.git" "$F"
	"$XL" -C "$F" --cache "$TRASH/f.sqlite" build
	recent() { sqlite3 -readonly "$TRASH/f.sqlite" 'SELECT count(*) FROM objects_recent'; }
	big=$(sqlite3 -readonly "$TRASH/f.sqlite" 'SELECT count(*) FROM objects')
	tree=$(git -C "$F" rev-parse main^{tree})
	c=$(echo "one more" | git -C "$F" commit-tree "$tree" -p main) &&
		git -C "$F" update-ref refs/heads/main "$c"
	"$XL" -C "$F" --cache "$TRASH/f.sqlite" build -v 2>"$TRASH/err"
	"$XL" -C "$F" --cache "$TRASH/f.sqlite" export >"$TRASH/f1.tsv"
	[ "$big" -gt 8 ] && [ "$(recent)" = 1 ] && ! grep -q "folded" "$TRASH/err" &&
		ok "a build of one new object among $big: its row waits in the recent table" ||
		not_ok "a build of one new object among $big: its row waits in the recent table ($(recent) recent)"
	"$XL" -C "$F" --cache "$TRASH/f.sqlite" build -v --fold 2>"$TRASH/err"
	"$XL" -C "$F" --cache "$TRASH/f.sqlite" export >"$TRASH/f2.tsv"
	[ "$(recent)" = 0 ] && grep -q '^recent rows: 1 folded into the big table$' "$TRASH/err" &&
		ok "build --fold moves it into the big table" ||
		{ not_ok "build --fold moves it into the big table ($(recent) recent)"; sed 's/^/# /' "$TRASH/err"; }
	same_file "... and the export is the same" "$TRASH/f1.tsv" "$TRASH/f2.tsv"
	grep -q "^$c	" "$TRASH/f2.tsv" &&
		ok "... and names the new commit" || not_ok "... and names the new commit"
else
	missing_tool "build --fold" "no sqlite3"
fi
"$XL" -C "$TW/sha256-packed.git" --cache "$TRASH/tv.sqlite" build -v 2>"$TRASH/err" &&
	grep -Eq '^seconds: gather [0-9.]+, classify [0-9.]+, blobs [0-9.]+, trees/commits/tags [0-9.]+, store [0-9.]+, layout [0-9.]+, fold [0-9.]+$' "$TRASH/err" &&
	grep -Eq '^recent rows: [1-9][0-9]* folded into the big table$' "$TRASH/err" &&
	ok "build -v says where its time went" ||
	not_ok "build -v says where its time went (got: $(tail -1 "$TRASH/err"))"

# the ref names a fresh mount reads first: every ref's object and peeled
# tag, each once, with the twin's name for it
R=$TW/sha256-packed.git
if command -v sqlite3 >/dev/null 2>&1; then
	refpairs() {
		git -C "$TW/sha256-packed.git" for-each-ref --format="%(refname) %($1objectname)" |
			sort >"$TRASH/rn.256"
		git -C "$TW/sha1.git" for-each-ref --format="%(refname) %($1objectname)" |
			sort >"$TRASH/rn.1"
		join "$TRASH/rn.256" "$TRASH/rn.1" | awk 'NF == 3 { print $2, $3 }'
	}
	{ refpairs ""; refpairs "*"; } | sort -u >"$TRASH/rn.want"
	sqlite3 -readonly "$R/xlatefs-cache.sqlite" \
		"SELECT lower(hex(sha256)) || ' ' || lower(hex(sha1)) FROM ref_names" |
		sort >"$TRASH/rn.got"
	if [ -s "$TRASH/rn.want" ] && grep -q . "$TRASH/rn.got"; then
		same_file "build records every ref's names for a fresh mount" \
			"$TRASH/rn.want" "$TRASH/rn.got"
	else
		not_ok "build records every ref's names for a fresh mount (none: $(wc -l <"$TRASH/rn.want") wanted)"
	fi
	# refs moved, none new named: the build keeps the rows it can and
	# looks up only what is new to them, but the rows follow the refs
	C=$TRASH/rn-moved.git
	cp -r "$R" "$C"
	first=$(git -C "$C" for-each-ref --format='%(refname)' refs/heads | head -1)
	git -C "$C" for-each-ref --format='%(refname)' refs/heads | tail -n +2 |
		while read -r ref; do git -C "$C" update-ref -d "$ref"; done
	git -C "$C" tag -d $(git -C "$C" tag) >/dev/null 2>&1
	old=$(git -C "$C" rev-parse "$first~3")
	git -C "$C" update-ref "$first" "$old"
	"$XL" -C "$C" build
	want="$(echo "$old" | tr A-F a-f) $(git -C "$TW/sha1.git" rev-parse "$first~3")"
	sqlite3 -readonly "$C/xlatefs-cache.sqlite" \
		"SELECT lower(hex(sha256)) || ' ' || lower(hex(sha1)) FROM ref_names" >"$TRASH/rn.moved"
	expect "a build with refs moved and nothing new: the ref names follow" \
		test "$(cat "$TRASH/rn.moved")" = "$want"
else
	missing_tool "build records every ref's names for a fresh mount" "no sqlite3"
	missing_tool "a build with refs moved and nothing new: the ref names follow" "no sqlite3"
fi

# map, both ways and in every spelling
h256=$(git -C "$R" rev-parse HEAD)
h1=$(git -C "$TW/sha1.git" rev-parse HEAD)
check_map() {
	got=$("$XL" -C "$R" map "$1" 2>&1)
	if [ "$got" = "$2" ]; then ok "map $1"; else not_ok "map $1: got '$got', want '$2'"; fi
}
check_map "$h256" "$h1"
check_map "$h1" "$h256"
check_map HEAD "$h1"
check_map "${h1:0:12}" "$h256"
check_map "${h256:0:16}" "$h1"
check_map "$h1^{sha1}" "$h256"
check_map "HEAD^{sha256}" "$h1"
check_map "HEAD~1" "$(git -C "$TW/sha1.git" rev-parse HEAD~1)"
"$XL" -C "$R" map 0000000000000000000000000000000000000001 >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] && ok "map of an unknown name exits 1" || not_ok "map of an unknown name exits 1 (got $rc)"
# an abbreviation that is a prefix of both a SHA-256 and a SHA-1 name
amb=$(for p in $(cut -c1-4 "$TW/sha256.objects" | sort -u); do
	grep -q "^$p" "$TW/sha1.objects" && { echo "$p"; break; }
done)
if [ -n "$amb" ]; then
	"$XL" -C "$R" map "$amb" >/dev/null 2>"$TRASH/err"
	rc=$?
	[ $rc -eq 1 ] && grep -q ambiguous "$TRASH/err" && ok "map of an abbreviation of both kinds is ambiguous" ||
		not_ok "map of an abbreviation of both kinds is ambiguous (rc $rc)"
else
	skip "map of an abbreviation of both kinds is ambiguous" "no shared 4-digit prefix"
fi

# single-object cat-file in SHA-1 form
for n in HEAD HEAD^{tree} v1.0; do
	n1=$(git -C "$TW/sha1.git" rev-parse "$n")
	for opt in -t -s -p; do
		git -C "$TW/sha1.git" cat-file $opt "$n1" >"$TRASH/exp"
		"$XL" -C "$R" cat-file $opt "$n1" >"$TRASH/act" 2>&1
		same_file "cat-file $opt of $n by its SHA-1 name" "$TRASH/exp" "$TRASH/act"
	done
done

# incremental: a new commit costs only itself
git clone -q --bare "$R" "$TRASH/grow.git" 2>/dev/null
"$XL" -C "$TRASH/grow.git" build
before=$("$XL" -C "$TRASH/grow.git" export | wc -l)
blob=$(echo "new content" | git -C "$TRASH/grow.git" hash-object -w --stdin)
tree=$(printf '100644 blob %s\tnew.txt\n' "$blob" | git -C "$TRASH/grow.git" mktree)
commit=$(echo "one more" | git -C "$TRASH/grow.git" commit-tree "$tree" -p HEAD)
git -C "$TRASH/grow.git" update-ref refs/heads/main "$commit"
"$XL" -C "$TRASH/grow.git" build
after=$("$XL" -C "$TRASH/grow.git" export | wc -l)
[ $((after - before)) -eq 3 ] && ok "a build after one new commit adds its 3 objects" ||
	not_ok "a build after one new commit adds its 3 objects ($before -> $after)"
expect "verify after an incremental build" "$XL" -C "$TRASH/grow.git" verify
git -C "$TRASH/grow.git" repack -adq
"$XL" -C "$TRASH/grow.git" build
after2=$("$XL" -C "$TRASH/grow.git" export | wc -l)
[ "$after2" -eq "$after" ] && ok "after a repack, the same objects and no new ones" ||
	not_ok "after a repack, the same objects and no new ones ($after -> $after2)"
expect "verify after a repack" "$XL" -C "$TRASH/grow.git" verify

# export as upstream's loose-object-idx: header, then "sha256 sha1" for
# every translatable object but the built-in empty tree and blob pairs
"$XL" -C "$TRASH/grow.git" export --format=loose-object-idx >"$TRASH/idx"
{
	echo "# loose-object-idx"
	"$XL" -C "$TRASH/grow.git" export | awk -F '\t' '$2 != "-" &&
		$1 != "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321" &&
		$1 != "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813" { print $1 " " $2 }'
} >"$TRASH/idx.want"
same_file "export --format=loose-object-idx" "$TRASH/idx.want" "$TRASH/idx"

# ---- upstream's fixtures ----
for f in history history-loose history-multipack history-reftable odd-objects \
	 signed submodule unknown-header large; do
	tar -xzf "$XL_TOP/tests/fixtures/$f.tar.gz" -C "$TRASH"
	R=$TRASH/$f.git
	args=()
	[ -f "$XL_TOP/tests/fixtures/$f.submodule-map.tsv" ] &&
		args=(--submodule-map "$XL_TOP/tests/fixtures/$f.submodule-map.tsv")
	"$XL" -C "$R" "${args[@]}" export >"$TRASH/$f.tsv" 2>"$TRASH/err"
	sed 's/\tUNTRANSLATABLE\t/\t-\t/' "$XL_TOP/tests/fixtures/$f.objects.tsv" >"$TRASH/$f.want"
	same_file "fixture $f: every object gets upstream's SHA-1 name" \
		"$TRASH/$f.want" "$TRASH/$f.tsv"
	expect "fixture $f: verify" "$XL" -C "$R" "${args[@]}" verify
done

# the unknown-header fixture: report names the refused objects and the ref
R=$TRASH/unknown-header.git
"$XL" -C "$R" report >"$TRASH/report" 2>&1
if grep -q "2c9c8241ef0dede98409e0294a45e2035bc179337da9f69c7e2663eca912ae78 commit: unknown commit header 'change-id'" "$TRASH/report" &&
   grep -q "fd3d72a70026b0eed6f451ca526fd4465fbf782ce6eac7e29b2c7f0861055066 commit: unable to map parent" "$TRASH/report" &&
   grep -q "refs/heads/review/feature-flag" "$TRASH/report"; then
	ok "report: reasons for both refused commits and the ref they hide"
else
	not_ok "report: reasons for both refused commits and the ref they hide"
	sed 's/^/# /' "$TRASH/report"
fi
"$XL" -C "$R" --unknown-headers=copy export >"$TRASH/copy.tsv"
grep -q "^2c9c8241ef0dede98409e0294a45e2035bc179337da9f69c7e2663eca912ae78	[0-9a-f]\{40\}	commit" "$TRASH/copy.tsv" &&
	ok "--unknown-headers=copy converts the change-id commit" ||
	not_ok "--unknown-headers=copy converts the change-id commit"

# the submodule fixture: without the map the gitlink's trees are refused
mkdir -p "$TRASH/nomap"
tar -xzf "$XL_TOP/tests/fixtures/submodule.tar.gz" -C "$TRASH/nomap"
"$XL" -C "$TRASH/nomap/submodule.git" export >"$TRASH/nomap.tsv"
grep -q "^8e07860712b6354582f6383048c236d39e770cc6292e56856c1e3526bfa0ff30	-	tree" "$TRASH/nomap.tsv" &&
	ok "without a submodule map the gitlink's tree is untranslatable" ||
	not_ok "without a submodule map the gitlink's tree is untranslatable"
"$XL" -C "$TRASH/submodule.git" --submodule-map "$XL_TOP/tests/fixtures/submodule.submodule-map.tsv" report >"$TRASH/report" 2>&1
grep -q "widget in tree 8e07860712b6354582f6383048c236d39e770cc6292e56856c1e3526bfa0ff30: aa5d7fe84f1a4c960a5b22ce99972bf7519677352aeb3807a391a508f5933009 -> 4bafaa2826a9219c02a876b70af8520ca0ed931b" "$TRASH/report" &&
	ok "report lists the gitlink and its mapping" ||
	{ not_ok "report lists the gitlink and its mapping"; sed 's/^/# /' "$TRASH/report"; }

# show explains a signed tag's signature swap
R=$TRASH/signed.git
tag=$(git -C "$R" for-each-ref --format='%(objectname) %(objecttype)' refs/tags | awk '$2 == "tag" { print $1; exit }')
"$XL" -C "$R" show "$tag" >"$TRASH/show" 2>&1
grep -q "^tag $tag" "$TRASH/show" && grep -q "moves into a" "$TRASH/show" && grep -q "^+ object " "$TRASH/show" &&
	ok "show: a signed tag's names and signature moves" ||
	{ not_ok "show: a signed tag's names and signature moves"; head -30 "$TRASH/show" | sed 's/^/# /'; }

test_done
