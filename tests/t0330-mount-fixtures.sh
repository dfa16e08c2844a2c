#!/usr/bin/env bash
# t0330-mount-fixtures.sh: every upstream fixture (tests/fixtures, names
# made by upstream Git's compat mode) mounted, with its submodule map:
# MNT/sha1 holds exactly the translatable refs, under upstream's SHA-1
# names, HEAD as upstream has it, and git fsck finds nothing wrong.
. "$(dirname "$0")/lib.sh"

require_fuse

F=$XL_TOP/tests/fixtures
for tarball in "$F"/*.tar.gz; do
	unpack_fixture "$tarball"
	M=$TRASH/m-$t
	opts=()
	[ -f "$F/$base.submodule-map.tsv" ] && opts=(-o "submodule_map=$F/$base.submodule-map.tsv")
	if ! xl_mount "$R" "$M" "${opts[@]}"; then
		not_ok "$t: mount"
		continue
	fi
	# refs.tsv: HEAD first (symref=...), then refs; REF^{} lines are peels
	awk -F'\t' 'NR > 1 && $1 !~ /\^\{\}$/ && $3 != "UNTRANSLATABLE" { print $3 " " $1 }' \
		"$F/$base.refs.tsv" >"$TRASH/want"
	git --git-dir="$M/sha1" for-each-ref --format='%(objectname) %(refname)' >"$TRASH/got" 2>&1
	same_file "$t: translatable refs under upstream's SHA-1 names" "$TRASH/got" "$TRASH/want"
	awk -F'\t' 'NR > 1 && $1 ~ /\^\{\}$/ && $3 != "UNTRANSLATABLE" { sub(/\^\{\}$/, "", $1); print $3 " " $1 "^{}" }' \
		"$F/$base.refs.tsv" >"$TRASH/want-peeled"
	git --git-dir="$M/sha1" show-ref -d | grep '\^{}$' >"$TRASH/got-peeled"
	same_file "$t: peeled tags" "$TRASH/got-peeled" "$TRASH/want-peeled"
	head_target=$(awk -F'\t' 'NR == 1 { sub(/^symref=/, "", $4); print $4 }' "$F/$base.refs.tsv")
	expect "$t: HEAD is ref: $head_target" test "$(cat "$M/sha1/HEAD")" = "ref: $head_target"
	# clean, or (odd-objects is odd on purpose) the same complaints as
	# fsck makes of the repository itself, by kind and object type
	fsck_kinds() {
		git --git-dir="$1" fsck --full --strict --no-dangling 2>&1
		echo "exit $?"
	}
	fsck_kinds "$M/sha1" | sed -E 's/ [0-9a-f]{40,64}:/:/' | sort >"$TRASH/fsck1"
	fsck_kinds "$M/sha256" | sed -E 's/ [0-9a-f]{40,64}:/:/' | sort >"$TRASH/fsck256"
	same_file "$t: fsck --full --strict on sha1/ says what it says of sha256/ ($(grep -c . "$TRASH/fsck256") lines)" \
		"$TRASH/fsck1" "$TRASH/fsck256"
	[ "$base" = odd-objects ] ||
		expect "$t: fsck is clean" test "$(cat "$TRASH/fsck1")" = "exit 0"
	hidden=$(awk -F'\t' 'NR > 1 && $1 !~ /\^\{\}$/ && $3 == "UNTRANSLATABLE"' "$F/$base.refs.tsv" | wc -l)
	expect "$t: status counts $hidden hidden refs" grep -q "^hidden_refs: $hidden\$" "$M/status"
	awk -F'\t' 'NR > 1 && $1 !~ /\^\{\}$/ && $3 == "UNTRANSLATABLE" { print "hidden_ref: " $1 }' \
		"$F/$base.refs.tsv" >"$TRASH/want-hidden"
	grep '^hidden_ref: ' "$M/status" >"$TRASH/got-hidden"
	same_file "$t: status names the hidden refs" "$TRASH/got-hidden" "$TRASH/want-hidden"
	xl_umount "$M"
done

# The submodule map edited under the mount: the next build empties the
# cache and names the gitlinks' trees (and all that holds them) anew; no
# name remembered from before may leak into the new objects.
mkdir -p "$TRASH/edit"
tar -xzf "$F/submodule.tar.gz" -C "$TRASH/edit"
cp "$F/submodule.submodule-map.tsv" "$TRASH/edit/map"
M=$TRASH/m-edit
if xl_mount "$TRASH/edit/submodule.git" "$M" -o submodule_map="$TRASH/edit/map"; then
	before=$(git --git-dir="$M/sha1" rev-parse HEAD)
	git --git-dir="$M/sha1" rev-list --objects HEAD >/dev/null	# read every tree once
	awk '/^#/ || NF < 2 { print; next } { print $1, "0123456789abcdef0123456789abcdef01234567" }' \
		"$F/submodule.submodule-map.tsv" >"$TRASH/edit/map"
	for _ in $(seq 100); do
		after=$(git --git-dir="$M/sha1" rev-parse HEAD 2>/dev/null)
		[ -n "$after" ] && [ "$after" != "$before" ] && break
		sleep 0.1
	done
	expect "a new submodule map renames HEAD ($before -> $after)" \
		test -n "$after" -a "$after" != "$before"
	expect "and every object under the new names hashes to its name (fsck)" \
		git --git-dir="$M/sha1" fsck --full --strict --no-dangling
	xl_umount "$M"
else
	not_ok "mount the submodule fixture with a map to edit"
fi

test_done
