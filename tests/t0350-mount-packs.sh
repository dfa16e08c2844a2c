#!/usr/bin/env bash
# t0350-mount-packs.sh: the packs of MNT/sha1/objects/pack and
# MNT/sha256/objects/pack (DESIGN.md §6).
#
# On twins in every storage shape: each SHA-1 pack passes git verify-pack,
# git index-pack (outside any repository) rebuilds its .idx byte for byte,
# objects/info/packs lists the packs, the loose views list exactly the
# repository's loose objects, and cat-file --batch-all-objects on MNT/sha1
# prints what it prints on the twin.  sha256/objects/pack is the
# repository's own files.  Stock git log reads no loose object file.
# Untranslatable objects are in no pack.  A repack under the mount: the
# listing follows, and a reader holding the old pack open keeps reading
# its bytes.  A native pack entry damaged after the layout: EIO on the
# reads that need it, a log line, the rest served.
. "$(dirname "$0")/lib.sh"

# the build's shortcut for large repositories, here too (t0215): the
# stock tools below check the tree deltas its walk makes
export XLATE_TEST_BASE_TABLES=1
require_fuse
T=$TRASH/tw
twins "$T"

# check_packs SHAPE MNT TWIN REPO
check_packs() {
	shape=$1 m=$2 twin=$3 repo=$4
	n1=$(ls "$m/sha1/objects/pack" | grep -c '\.pack$' || true)
	n256=$(ls "$repo/objects/pack" | grep -c '\.pack$' || true)
	expect "$shape: one SHA-1 pack per native pack ($n256)" test "$n1" = "$n256"
	expect "$shape: verify-pack passes, index-pack rebuilds the .idx, info/packs lists them" \
		packs_check "$m/sha1" sha1
	git --git-dir="$twin" cat-file --batch-all-objects --batch >"$TRASH/want"
	git --git-dir="$m/sha1" cat-file --batch-all-objects --batch >"$TRASH/got" 2>"$TRASH/err" ||
		echo "# cat-file failed: $(tail -1 "$TRASH/err")"
	same_file "$shape: cat-file --batch-all-objects --batch is the twin's" "$TRASH/got" "$TRASH/want"
	# loose views: the repository's loose objects, under each view's names
	(cd "$repo/objects" && find . -path './??/*' | sed 's|^\./||; s|/||' | sort) >"$TRASH/loose256"
	(cd "$m/sha256/objects" && find . -path './??/*' | sed 's|^\./||; s|/||' | sort) >"$TRASH/got256"
	same_file "$shape: sha256/objects lists the repository's loose objects" "$TRASH/got256" "$TRASH/loose256"
	"$XL" -C "$repo" map $(cat "$TRASH/loose256") </dev/null 2>/dev/null | sort >"$TRASH/loose1" || true
	(cd "$m/sha1/objects" && find . -path './??/*' | sed 's|^\./||; s|/||' | sort) >"$TRASH/got1"
	same_file "$shape: sha1/objects lists their SHA-1 names" "$TRASH/got1" "$TRASH/loose1"
	ok_all=1
	for p in "$repo"/objects/pack/*.pack "$repo"/objects/pack/*.idx; do
		cmp -s "$p" "$m/sha256/objects/pack/$(basename "$p")" || ok_all=0
	done
	expect "$shape: sha256/objects/pack is the repository's own packs" test $ok_all = 1
}

for shape in packed mixed idx1 largeofs; do
	R=$T/sha256-$shape.git
	M=$TRASH/m-$shape
	if ! xl_mount "$R" "$M"; then
		not_ok "$shape: mount"
		continue
	fi
	check_packs "$shape" "$M" "$T/sha1-$shape.git" "$R"
	if [ $shape = packed ]; then
		if command -v strace >/dev/null 2>&1; then
			strace -f -e trace=openat -o "$TRASH/strace" \
				git --git-dir="$M/sha1" log >/dev/null 2>&1
			expect "packed: git log opens the pack, and no loose object file" \
				sh -c "grep -q 'objects/pack/pack-.*\.pack' '$TRASH/strace' &&
				       ! grep -q 'objects/[0-9a-f][0-9a-f]/[0-9a-f]' '$TRASH/strace'"
		elif [ "${XL_REQUIRE_CLIENTS:-0}" = 1 ]; then
			not_ok "strace is installed"
		else
			skip "git log reads the pack" "no strace"
		fi
	fi
	xl_umount "$M"
done

# ---- untranslatable objects are in no pack --------------------------------
F=$TRASH/fx
mkdir -p "$F"
tar -xzf "$XL_TOP/tests/fixtures/unknown-header.tar.gz" -C "$F"
FR=$F/unknown-header.git
M=$TRASH/m-fx
if xl_mount "$FR" "$M"; then
	"$XL" -C "$FR" export >"$TRASH/fx.tsv"
	for idx in "$FR"/objects/pack/*.idx; do
		git show-index --object-format=sha256 <"$idx" | awk '{ print $2 }'
	done | sort >"$TRASH/fx.native"
	# what the SHA-1 packs must hold: the natively packed, translatable ones
	awk -F'\t' 'NR == FNR { p[$1] = 1; next } ($1 in p) && $2 != "-" { print $2 }' \
		"$TRASH/fx.native" "$TRASH/fx.tsv" | sort >"$TRASH/fx.want"
	bad=$(awk -F'\t' 'NR == FNR { p[$1] = 1; next } ($1 in p) && $2 == "-"' \
		"$TRASH/fx.native" "$TRASH/fx.tsv" | wc -l)
	for idx in "$M"/sha1/objects/pack/*.idx; do
		[ -e "$idx" ] && git show-index <"$idx" | awk '{ print $2 }'
	done | sort >"$TRASH/fx.packed"
	expect "unknown-header: the fixture packs untranslatable objects ($bad)" test "$bad" -gt 0
	same_file "unknown-header: the SHA-1 packs hold every translatable packed object, and nothing else" \
		"$TRASH/fx.packed" "$TRASH/fx.want"
	xl_umount "$M"
else
	not_ok "mount the unknown-header fixture"
fi

# ---- live: a repack under the mount, a reader holding the old pack ---------
L=$TRASH/live.git
cp -a "$T/sha256-mixed.git" "$L"
M=$TRASH/m-live
if xl_mount "$L" "$M"; then
	old=$(ls "$M"/sha1/objects/pack/*.pack | head -1)
	# a reader that opens the old pack, waits, then reads it whole
	python3 - "$old" "$TRASH/held" "$TRASH/go" "$TRASH/opened" <<'EOF' &
import os, sys, time
f = open(sys.argv[1], 'rb')
open(sys.argv[4], 'w').close()
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
open(sys.argv[2], 'wb').write(f.read())
EOF
	holder=$!
	# repack only once it holds the pack open (a loaded machine is slow
	# to start python)
	n=0
	while [ ! -e "$TRASH/opened" ] && kill -0 $holder 2>/dev/null && [ $n -lt 300 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	cp "$old" "$TRASH/old.copy"
	git --git-dir="$L" repack -adq
	git --git-dir="$L" prune-packed
	n=0
	until [ "$(ls "$M/sha1/objects/pack" | grep -c '\.pack$')" = 1 ] &&
	      [ "$(ls "$M/sha1/objects/pack")" != "$(basename "$old" .pack).idx $(basename "$old")" ] &&
	      ! ls "$M/sha1/objects/pack" | grep -q "$(basename "$old")"; do
		n=$((n + 1))
		[ $n -lt 150 ] || break
		sleep 0.1
	done
	expect "repack: within 15 s, sha1/objects/pack lists the one new pack ($((n / 10)) s)" test $n -lt 150
	check_packs "after repack" "$M" "$T/sha1-mixed.git" "$L"
	touch "$TRASH/go"
	wait $holder
	same_file "a reader holding the repacked-away pack read its old bytes" "$TRASH/held" "$TRASH/old.copy"
	xl_umount "$M"
else
	not_ok "mount a repository to repack"
fi

# ---- a native pack entry damaged after the layout ------------------------
C=$TRASH/corrupt.git
cp -a "$T/sha256-packed.git" "$C"
"$XL" -C "$C" build >/dev/null 2>&1
np=$(ls "$C"/objects/pack/*.pack)
# the biggest blob stored whole: its bytes are reused as they are
read -r b256 boff <<<"$(git --git-dir="$C" verify-pack -v "${np%.pack}.idx" |
	awk '$2 == "blob" && NF == 5 { if ($4 > max) { max = $4; l = $1 " " $5 } } END { print l }')"
b1=$("$XL" -C "$C" map "$b256")
chmod u+w "$np"
# a byte in the middle of its zlib stream
printf '\377' | dd of="$np" bs=1 seek=$((boff + 20)) conv=notrunc status=none
M=$TRASH/m-corrupt
if xl_mount "$C" "$M"; then
	sp=$(ls "$M"/sha1/objects/pack/*.pack)
	soff=$(git show-index <"${sp%.pack}.idx" | awk -v n="$b1" '$2 == n { print $1 }')
	size=$(stat -c %s "$sp")
	cat >"$TRASH/pread.py" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
# no read-ahead: the kernel asks for the pages asked for, no more
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
try:
    os.pread(fd, int(sys.argv[3]), int(sys.argv[2]))
except OSError as e:
    print(e.errno)
    sys.exit(1)
EOF
	expect_fail "corrupt entry: a read of it gives EIO" python3 "$TRASH/pread.py" "$sp" "$soff" 64
	expect "corrupt entry: a log line names the damage" grep -q 'have changed since the layout' "$M.log"
	# a page that holds none of its bytes: the first, or the last
	far=0
	[ "$soff" -ge 8192 ] || far=$(((size / 4096 - 1) * 4096))
	expect "corrupt entry: the rest of the pack is served" python3 "$TRASH/pread.py" "$sp" "$far" 4096
	xl_umount "$M"
else
	not_ok "mount the damaged repository"
fi

test_done
