#!/usr/bin/env bash
# t0520-hostile-objects.sh: objects, packs and alternates of hostile
# shapes.  Each case ends in a clear refusal, or EIO on the one object
# concerned, with time and memory inside a bound written here; the daemon
# stays up and serves everything else.
#
#   - a loose object that declares 2^40 bytes, and one that declares 5
#     and inflates to 100 MiB;
#   - a tree 100,000 levels deep, a commit with 100,000 parents, a chain
#     of 100,000 tags: named (nothing recurses on their depth), and named
#     right: tests/hostile.py works the SHA-1 names out on its own;
#   - alternates that loop or name what is not an object directory;
#   - an .idx whose fanout goes down, an .idx offset past the end of its
#     pack, a pack header that claims 2^32 - 1 objects, and an
#     objects/info/packs that lies.
#
# Bounds: a build at most 120 s and 400 MiB (peak RSS), the daemon at
# most 400 MiB, refusals within 10 s; four times the memory under a
# sanitizer, whose shadow memory is not ours.
. "$(dirname "$0")/lib.sh"

require_fuse

mem_bound=$((400 * 1024))	# KiB
grep -q 'fsanitize' "$XL_TOP/.build-flags" 2>/dev/null && mem_bound=$((4 * mem_bound))
HOSTILE=$XL_TOP/tests/hostile.py

# a repository with one commit on main
new_repo() {
	git init -q --bare --object-format=sha256 "$1"
	git --git-dir="$1" symbolic-ref HEAD refs/heads/main
	git -C "$TRASH/w" push -q "$1" HEAD:refs/heads/main
}
git init -q --object-format=sha256 "$TRASH/w"
echo one >"$TRASH/w/f"
git -C "$TRASH/w" add f
git -C "$TRASH/w" commit -q -m one

# bounded DESC SECONDS CMD...: CMD (its exit status does not matter) ends
# within SECONDS and within mem_bound
bounded() {
	desc=$1 secs=$2
	shift 2
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %M' -o "$TRASH/time" "$@" >"$TRASH/out" 2>&1
		# "Command exited with non-zero status N" may come first
		read -r e m < <(tail -1 "$TRASH/time") || true
		e=${e:-999} m=${m:-999999999}
		if awk "BEGIN { exit !($e <= $secs && $m <= $mem_bound) }"; then
			ok "$desc ($e s, $((m / 1024)) MiB)"
		else
			not_ok "$desc ($e s of $secs, $((m / 1024)) MiB of $((mem_bound / 1024)))"
		fi
	else
		"$@" >"$TRASH/out" 2>&1
		missing_tool "$desc: time and memory" "no /usr/bin/time"
	fi
}

# daemon_hwm MNT: the daemon's peak RSS (KiB) is inside the bound
daemon_hwm() {
	hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$(cat "$1.pid")/status" 2>/dev/null)
	[ -n "$hwm" ] && [ "$hwm" -le $mem_bound ] &&
		ok "  the daemon's peak RSS: $((hwm / 1024)) MiB" ||
		not_ok "  the daemon's peak RSS: ${hwm:-?} KiB, bound $mem_bound"
}

# ---- loose objects that lie about their size ----------------------------------
R=$TRASH/loose.git
new_repo "$R"
huge=$(python3 "$HOSTILE" loose-huge "$R")
bomb=$(python3 "$HOSTILE" loose-bomb "$R")
bounded "a build refuses a loose object declaring 2^40 bytes and a 5-byte one inflating to 100 MiB" 10 \
	"$XL" -C "$R" build
expect "  naming the first as unreadable" grep -q "$huge.*declares 1099511627776 bytes" "$TRASH/out"
expect "  and the build ends with both unreadable" grep -q '2 objects cannot be read' "$TRASH/out"
M=$TRASH/mnt-loose
if xl_mount "$R" "$M"; then
	for o in "$huge" "$bomb"; do
		expect_fail "  sha256/objects: $o is EIO" cat "$M/sha256/objects/${o:0:2}/${o:2}"
		expect "  a log line names it" grep -q "$o" "$M.log"
	done
	expect "  the rest is served: git log on sha1/" git --git-dir="$M/sha1" log --oneline
	daemon_hwm "$M"
	xl_umount "$M"
else
	not_ok "a repository with lying loose objects mounts"
fi

# ---- depth: a deep tree, a wide merge, a long tag chain ------------------------
for kind in deep-tree wide-merge tag-chain; do
	R=$TRASH/$kind.git
	new_repo "$R"
	read -r o256 o1 < <(python3 "$HOSTILE" "$kind" 100000 "$R")
	case $kind in
	tag-chain) git --git-dir="$R" update-ref refs/tags/deep "$o256" ;;
	*) git --git-dir="$R" update-ref refs/heads/main "$o256" ;;
	esac
	bounded "$kind of 100,000: the build names it" 120 "$XL" -C "$R" build
	got=$("$XL" -C "$R" map "$o256" 2>&1)
	[ "$got" = "$o1" ] && ok "  with the SHA-1 name worked out independently" ||
		not_ok "  with the SHA-1 name worked out independently (got $got, want $o1)"
	M=$TRASH/mnt-$kind
	if xl_mount "$R" "$M"; then
		case $kind in
		deep-tree)
			expect "  sha1/: HEAD is that commit" \
				test "$(git --git-dir="$M/sha1" rev-parse HEAD)" = "$o1"
			expect "  sha1/: its top tree reads" git --git-dir="$M/sha1" cat-file -p 'HEAD^{tree}'
			;;
		wide-merge)
			expect "  sha1/: HEAD is that commit" \
				test "$(git --git-dir="$M/sha1" rev-parse HEAD)" = "$o1"
			n=$(git --git-dir="$M/sha1" cat-file -p HEAD | grep -c '^parent ')
			[ "$n" = 100000 ] && ok "  sha1/: with 100,000 parents" ||
				not_ok "  sha1/: with 100,000 parents (got $n)"
			;;
		tag-chain)
			expect "  sha1/: the top tag reads by its SHA-1 name" \
				test "$(git --git-dir="$M/sha1" cat-file -t "$o1")" = tag
			expect "  sha1/: main is served" git --git-dir="$M/sha1" rev-parse --verify main
			;;
		esac
		daemon_hwm "$M"
		xl_umount "$M"
	else
		not_ok "$kind: mounts"
	fi
	rm -rf "$R"
done

# ---- alternates that loop, or name what is no object directory -----------------
A=$TRASH/alt-a.git B=$TRASH/alt-b.git
new_repo "$A"
new_repo "$B"
git -C "$TRASH/w" commit -q --allow-empty -m two
git -C "$TRASH/w" push -q "$B" HEAD:refs/heads/two
printf '%s\n%s\n%s\n%s\n' "$A/objects" "$B/objects" /etc "$TRASH/nowhere" >"$A/objects/info/alternates"
printf '%s\n' "$A/objects" >"$B/objects/info/alternates"
git --git-dir="$A" update-ref refs/heads/two "$(git -C "$TRASH/w" rev-parse HEAD)" 2>/dev/null
bounded "alternates that loop and name /etc: the build goes on" 10 "$XL" -C "$A" build
M=$TRASH/mnt-alt
if xl_mount "$A" "$M"; then
	expect "  sha1/: a commit found through the alternate reads" \
		git --git-dir="$M/sha1" log --oneline two
	xl_umount "$M"
else
	not_ok "a repository with looping alternates mounts"
fi

# ---- packs that lie ------------------------------------------------------------
R=$TRASH/packs.git
new_repo "$R"
git --git-dir="$R" repack -q -a -d
good=$(ls "$R"/objects/pack/pack-*.pack)
# a second pack holding one blob found nowhere else, whose .idx points
# past the end of the pack
lost=$(echo lost | git --git-dir="$R" hash-object -w --stdin)
echo "$lost" | git --git-dir="$R" pack-objects -q "$R/objects/pack/pack" >/dev/null
rm -f "$R/objects/${lost:0:2}/${lost:2}"
lostidx=$(ls "$R"/objects/pack/pack-*.idx | grep -v "$(basename "${good%.pack}")")
python3 - "$lostidx" <<'EOF'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
n = struct.unpack('>I', b[8 + 255 * 4:8 + 256 * 4])[0]
off = 8 + 1024 + n * (32 + 4)
b[off:off + 4] = struct.pack('>I', 0x7fffff00)   # far past the end
open(p, 'wb').write(bytes(b))
EOF
# a copy of the good pack whose .idx fanout goes down
cp "$good" "$R/objects/pack/pack-$(printf 'a%.0s' $(seq 64)).pack"
python3 - "${good%.pack}.idx" "$R/objects/pack/pack-$(printf 'a%.0s' $(seq 64)).idx" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[8 + 100 * 4:8 + 101 * 4] = struct.pack('>I', 0xffffffff)  # then down again
open(sys.argv[2], 'wb').write(bytes(b))
EOF
# a copy whose pack header claims 2^32 - 1 objects
cp "$good" "$R/objects/pack/pack-$(printf 'b%.0s' $(seq 64)).pack"
cp "${good%.pack}.idx" "$R/objects/pack/pack-$(printf 'b%.0s' $(seq 64)).idx"
printf '\377\377\377\377' | dd of="$R/objects/pack/pack-$(printf 'b%.0s' $(seq 64)).pack" \
	bs=1 seek=8 conv=notrunc 2>/dev/null
# and a listing that names packs that are not there
mkdir -p "$R/objects/info"
printf 'P pack-%s.pack\nP ../../../etc/passwd\n\n' "$(printf 'c%.0s' $(seq 64))" >"$R/objects/info/packs"
bounded "packs that lie: the build goes on" 10 "$XL" -C "$R" build
expect "  and says which object it cannot read" grep -q "$lost" "$TRASH/out"
expect "  and that two packs cannot be read" grep -q '2 packs cannot be read and are skipped' "$TRASH/out"
M=$TRASH/mnt-packs
if xl_mount "$R" "$M"; then
	expect "  sha1/: the good pack's history reads" git --git-dir="$M/sha1" log --oneline main
	sleep 2.5	# a few rounds of the updater
	n=$(grep -c 'packs cannot be read' "$M.log")
	[ "$n" = 1 ] && ok "  the daemon logs the unreadable packs once" ||
		not_ok "  the daemon logs the unreadable packs once (got $n lines)"
	expect_fail "  git xlate cat-file: the object whose offset lies is not read" \
		"$XL" -C "$R" cat-file -p "$lost"
	expect "  and says why" grep -q 'offset' "$TRASH/.out"
	n=$(grep -c '^P ' "$M/sha1/objects/info/packs")
	[ "$n" -ge 1 ] && ! grep -q 'passwd\|cccc' "$M/sha1/objects/info/packs" &&
		ok "  sha1/objects/info/packs lists only packs that are there ($n)" ||
		not_ok "  sha1/objects/info/packs lists only packs that are there"
	daemon_hwm "$M"
	xl_umount "$M"
else
	not_ok "a repository with lying packs mounts"
fi

test_done
