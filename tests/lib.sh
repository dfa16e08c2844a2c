# lib.sh: helpers for the shell tests, sourced by tests/t*.sh.
#
# Each test script prints TAP lines ("ok N - desc", "not ok N - desc",
# "ok N - desc # SKIP why") and ends with test_done.  It runs in a private
# scratch directory ($TRASH) that is removed on exit unless XL_KEEP=1.
# The project's binaries are found through $XL_TOP (the checkout).

set -u
XL_TOP=${XL_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
XL=$XL_TOP/git-xlate
export XL_TOP XL
TRASH=$(mktemp -d "${TMPDIR:-/tmp}/xlatefs-test.XXXXXX")
test_count=0
test_failed=0

cleanup_trash() {
	xl_umount_all
	if [ "${XL_KEEP:-0}" = 1 ]; then
		echo "# kept $TRASH"
	else
		rm -rf "$TRASH"
	fi
}
trap cleanup_trash EXIT

# Pinned identity and dates: twin repositories must hash alike.
export GIT_AUTHOR_NAME='A U Thor' GIT_AUTHOR_EMAIL='author@example.com'
export GIT_COMMITTER_NAME='C O Mitter' GIT_COMMITTER_EMAIL='committer@example.com'
export GIT_AUTHOR_DATE='1112354055 +0200' GIT_COMMITTER_DATE='1112354055 +0200'
export GIT_CONFIG_NOSYSTEM=1 HOME=$TRASH
git config --global init.defaultBranch main
git config --global gc.auto 0
git config --global safe.directory '*'

ok() {
	test_count=$((test_count + 1))
	echo "ok $test_count - $*"
}

not_ok() {
	test_count=$((test_count + 1))
	test_failed=$((test_failed + 1))
	echo "not ok $test_count - $*"
}

skip() {
	test_count=$((test_count + 1))
	echo "ok $test_count - $1 # SKIP $2"
}

# missing_tool DESC WHY: a test that cannot run for want of a tool
# (sqlite3, /usr/bin/time) is skipped; but under XL_REQUIRE_CLIENTS=1
# (CI: .ci/run sets it once .ci/install-deps has installed every tool and
# client the tests use, those included) it is a failure.
missing_tool() {
	if [ "${XL_REQUIRE_CLIENTS:-0}" = 1 ]; then
		not_ok "$1 ($2; XL_REQUIRE_CLIENTS=1 requires it)"
	else
		skip "$1" "$2"
	fi
}

# expect DESC CMD...: pass when CMD succeeds; on failure show its output.
expect() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		not_ok "$desc"
		printf '%s\n' "$out" | head -20 | sed 's/^/# /'
	fi
}

# expect_soon SECONDS DESC CMD...: expect, for what the mount does in
# the background: CMD is tried every 0.1 s until it succeeds or SECONDS
# have passed.
expect_soon() {
	es_tries=$(($1 * 10))
	shift
	for _ in $(seq "$es_tries"); do
		"${@:2}" >/dev/null 2>&1 && break
		sleep 0.1
	done
	expect "$@"
}

# expect_fail DESC CMD...: pass when CMD fails (but is not killed by a signal).
expect_fail() {
	desc=$1
	shift
	"$@" >"$TRASH/.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -lt 128 ]; then
		ok "$desc"
	else
		not_ok "$desc (exit $rc)"
		head -20 "$TRASH/.out" | sed 's/^/# /'
	fi
}

# same_file DESC A B: the two files are byte-identical.
same_file() {
	if cmp -s "$2" "$3"; then
		ok "$1"
	else
		not_ok "$1"
		cmp "$2" "$3" 2>&1 | sed 's/^/# /'
		diff <(head -c 20000 "$2" | cat -v) <(head -c 20000 "$3" | cat -v) 2>/dev/null |
			head -10 | sed 's/^/# /'
	fi
}

# ---- mounts ----------------------------------------------------------

XLATEFS=$XL_TOP/xlatefs
XL_MOUNTS=""

# fuse_ok: 0 if this machine can mount FUSE file systems.  Where it
# cannot, mount tests skip, except under XL_REQUIRE_FUSE=1 (CI), where
# that is a failure.
fuse_ok() {
	[ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1
}

# require_fuse: end the test here (one skip) where FUSE cannot be used;
# under XL_REQUIRE_FUSE=1 (CI) that is a failure instead.
require_fuse() {
	fuse_ok && return 0
	if [ "${XL_REQUIRE_FUSE:-0}" = 1 ]; then
		not_ok "FUSE is available (/dev/fuse and fusermount3)"
	else
		skip "mount tests" "no FUSE on this machine"
	fi
	test_done
	exit
}

# twins DIR [mk-twins options]: tests/mk-twins.sh, or end the test failing.
twins() {
	if ! "$XL_TOP/tests/mk-twins.sh" "$@" >"$TRASH/twins.log" 2>&1; then
		not_ok "make twin repositories"
		sed 's/^/# /' "$TRASH/twins.log"
		test_done
		exit 1
	fi
}

# packs_check VIEW ALGO: every pack a mount serves in VIEW (one of its
# Git directories) passes git verify-pack, git index-pack
# --object-format=ALGO run outside any repository makes its .idx byte
# for byte, and VIEW/objects/info/packs lists it (DESIGN.md §6).  What
# fails is said; 0 if all hold.
packs_check() {
	pc_view=$1 pc_algo=$2 pc_ok=0
	for idx in "$pc_view"/objects/pack/*.idx; do
		[ -e "$idx" ] || continue
		p=${idx%.idx}.pack
		if ! git --git-dir="$pc_view" verify-pack "$idx" >"$TRASH/.vp" 2>&1; then
			pc_ok=1
			head -5 "$TRASH/.vp"
			continue
		fi
		rm -rf "$TRASH/ip"
		mkdir "$TRASH/ip"
		cp "$p" "$TRASH/ip/x.pack"
		if ! (cd "$TRASH/ip" && git index-pack --object-format="$pc_algo" \
			-o x.idx x.pack >/dev/null 2>&1) || ! cmp -s "$TRASH/ip/x.idx" "$idx"; then
			pc_ok=1
			echo "index-pack does not rebuild $idx"
		fi
		grep -qx "P $(basename "$p")" "$pc_view/objects/info/packs" || {
			pc_ok=1
			echo "info/packs does not list $(basename "$p")"
		}
	done
	return $pc_ok
}

# unpack_fixture TARBALL: one of tests/fixtures, unpacked into
# $TRASH/NAME.  Sets t (NAME), base (the name its .tsv files go by: a
# -loose or -multipack copy shares its original's) and R (the
# repository).
unpack_fixture() {
	t=$(basename "$1" .tar.gz)
	base=${t%-loose}
	base=${base%-multipack}
	mkdir -p "$TRASH/$t"
	tar -xzf "$1" -C "$TRASH/$t"
	R=$(echo "$TRASH/$t"/*.git)
}

# twin_named V OTHER: after twins, `git xlate build` on the twin
# $TW/V.git (one algorithm, one storage form) names exactly the objects
# of the twin of the other algorithm, $TW/OTHER.git: export lists the
# names of OTHER.objects, every ref maps to OTHER's, cat-file --batch by
# OTHER's names prints OTHER's bytes, and verify passes.  Leaves the
# export in $TRASH/V.tsv.
twin_named() {
	tn_r=$TW/$1.git
	tn_t=$([ "$2" = sha1 ] && echo SHA-1 || echo SHA-256)
	if [ ! -f "$TRASH/$2.batch" ]; then
		git -C "$TW/$2.git" cat-file --batch-all-objects --batch >"$TRASH/$2.batch"
		git -C "$TW/$2.git" for-each-ref --format='%(refname) %(objectname)' \
			>"$TRASH/$2.refs"
	fi
	expect "$1: build" "$XL" -C "$tn_r" build
	"$XL" -C "$tn_r" export >"$TRASH/$1.tsv" 2>"$TRASH/err"
	cut -f2 "$TRASH/$1.tsv" | sort >"$TRASH/$1.names"
	same_file "$1: export names exactly the $tn_t twin's objects" \
		"$TW/$2.objects" "$TRASH/$1.names"
	git -C "$tn_r" for-each-ref --format='%(refname)' | while read -r ref; do
		printf '%s %s\n' "$ref" "$("$XL" -C "$tn_r" map "$ref")"
	done >"$TRASH/$1.refs"
	same_file "$1: map of every ref gives the $tn_t twin's ref" \
		"$TRASH/$2.refs" "$TRASH/$1.refs"
	"$XL" -C "$tn_r" cat-file --batch <"$TW/$2.objects" >"$TRASH/$1.batch"
	same_file "$1: cat-file --batch by $tn_t name prints the twin's bytes" \
		"$TRASH/$2.batch" "$TRASH/$1.batch"
	expect "$1: verify" "$XL" -C "$tn_r" verify
}

# xl_mount REPO MNT [xlatefs options...]: mount in the foreground
# process (-f) in the background, its log in MNT.log, and wait until
# the mount is there (up to 120 s: the first mount builds the cache).
xl_mount() {
	repo=$1 mnt=$2
	shift 2
	mkdir -p "$mnt"
	"$XLATEFS" -f "$@" "$repo" "$mnt" >>"$mnt.log" 2>&1 &
	echo $! >"$mnt.pid"
	XL_MOUNTS="$XL_MOUNTS $mnt"
	for _ in $(seq 1200); do
		mountpoint -q "$mnt" && return 0
		kill -0 "$(cat "$mnt.pid")" 2>/dev/null || break
		sleep 0.1
	done
	echo "# mount of $repo failed:" >&2
	sed 's/^/#   /' "$mnt.log" >&2
	return 1
}

# xl_umount MNT: unmount and wait for the daemon to exit; a daemon that
# exits with an error, or whose log has a sanitizer report, fails a test.
xl_umount() {
	fusermount3 -u "$1" 2>/dev/null || fusermount3 -u -z "$1" 2>/dev/null
	[ -f "$1.pid" ] || return 0
	pid=$(cat "$1.pid")
	rm -f "$1.pid"
	rc=0
	wait "$pid" 2>/dev/null || rc=$?
	[ "${2:-}" = quiet ] && return 0
	if [ $rc -ne 0 ] || grep -q 'Sanitizer\|runtime error' "$1.log"; then
		not_ok "xlatefs on $(basename "$1") exited cleanly (exit $rc)"
		grep -A15 'Sanitizer\|runtime error' "$1.log" | head -30 | sed 's/^/# /'
	fi
}

xl_umount_all() {
	for m in $XL_MOUNTS; do
		mountpoint -q "$m" 2>/dev/null && xl_umount "$m" quiet
	done
	XL_MOUNTS=""
}

test_done() {
	echo "1..$test_count"
	[ "$test_failed" -eq 0 ]
}
