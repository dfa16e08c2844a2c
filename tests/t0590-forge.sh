#!/bin/bash
# t0590-forge.sh: a whole forge under one mount (xlatefs --root DIR MNT).
#
# 200 small SHA-256 repositories under one directory (bare ones in ten
# team directories, some work trees, a SHA-1 repository and a plain
# directory beside them), each with a SHA-1 twin made from the same
# fast-import stream.  Mounted with -o max_open=8:
#   - listings show every repository, and open none of them; the SHA-1
#     one is its SHA-256 self, mounted the other way round;
#   - 50 repositories picked at random, read in parallel by stock git,
#     are their twins, and the daemon stays within its bound once idle;
#   - a repository put to sleep wakes with what it gained meanwhile,
#     one added under the mount appears, and one deleted is let go of;
#   - git daemon --base-path=MNT serves any of them to a SHA-1 clone.
. "$(dirname "$0")/lib.sh"
require_fuse

N=200
PICK=50
MAX=8
D=$TRASH/forge
T=$TRASH/twins
mkdir -p "$D" "$T"

# stream I: a history of its own for repository I (its names are its own)
stream() {
	i=$1
	for c in 1 2 3; do
		cat <<EOF
commit refs/heads/main
committer C O Mitter <committer@example.com> $((1112354055 + i * 10 + c)) +0200
data <<MSG
repository $i, commit $c
MSG
M 100644 inline README
data <<DATA
repository $i
version $c
DATA
M 100644 inline src/file$c.txt
data <<DATA
$c of $i
DATA

EOF
	done
	echo "tag v$i"
	echo "from refs/heads/main"
	echo "tagger T A Gger <tagger@example.com> $((1112354055 + i)) +0200"
	echo "data <<MSG"
	echo "release of $i"
	echo "MSG"
}

# repo_rel I: where repository I lives under the root
repo_rel() {
	if [ $(($1 % 20)) = 7 ]; then
		echo "team-$(($1 % 10))/work$1"
	else
		echo "team-$(($1 % 10))/r$1.git"
	fi
}

make_all() {
	for i in $(seq $N); do
		rel=$(repo_rel $i)
		case $rel in
		*.git) git init -q --bare --object-format=sha256 "$D/$rel"
		       gd=$D/$rel ;;
		*) git init -q --object-format=sha256 "$D/$rel"
		   gd=$D/$rel/.git ;;
		esac
		git init -q --bare "$T/$i.git"
		stream $i >"$TRASH/s.fi"
		git --git-dir="$gd" fast-import --quiet <"$TRASH/s.fi" &&
		git --git-dir="$T/$i.git" fast-import --quiet <"$TRASH/s.fi" || return 1
		# packed, as a fetch or gc leaves a repository
		git --git-dir="$gd" repack -adq && git --git-dir="$T/$i.git" repack -adq ||
			return 1
	done
	# SHA-1: shown the other way round, as the SHA-256 repository 1 is
	git init -q "$D/team-0/old-sha1" &&
	stream 1 | git --git-dir="$D/team-0/old-sha1/.git" fast-import --quiet ||
		return 1
	mkdir -p "$D/plain/empty" "$D/.hidden.git"
	git init -q --bare --object-format=sha256 "$D/.hidden.git/x.git"
}
expect "make $N repositories and their SHA-1 twins" make_all

expect_fail "--root on a repository is refused (mount it without --root)" \
	"$XLATEFS" -f --root "$D/$(repo_rel 1)" "$TRASH/nowhere"
expect_fail "and so are map= and cache=, which are for one repository" \
	"$XLATEFS" -f -o map=/dev/null --root "$D" "$TRASH/nowhere"

M=$TRASH/mnt
xl_mount "$D" "$M" -o max_open=$MAX --root || { test_done; exit 1; }
pid=$(cat "$M.pid")

status_field() {
	sed -n "s/^$1: \([0-9][0-9]*\).*/\1/p" "$M/.status"
}

# ---- listings ----------------------------------------------------------------
expect "the root lists the teams, the plain directory and .status" \
	test "$(LC_ALL=C ls -A "$M" | tr '\n' ' ')" = \
	".status plain team-0 team-1 team-2 team-3 team-4 team-5 team-6 team-7 team-8 team-9 "
listed() {
	for t in $(seq 0 9); do
		ls "$M/team-$t" | sed "s|^|team-$t/|"
	done | sort
}
expect "every repository is listed, the SHA-1 one too" \
	test "$(listed)" = "$( (for i in $(seq $N); do repo_rel $i; done
				echo team-0/old-sha1) | sort)"
expect "ls -l of every team wakes no repository" \
	ls -l "$M"/team-* "$M/plain"
expect "after the listings: none awake, none woken" \
	test "$(status_field awake)/$(status_field woken)" = "0/0"
expect "no cache was made by listing" \
	test -z "$(find "$D" -name 'xlatefs-cache.sqlite*' | head -1)"
expect "a repository's directory has the single mount's layout" \
	test "$(ls "$M/$(repo_rel 1)" | tr '\n' ' ')" = \
	"README objects-sha1 objects-sha256 sha1 sha256 status "
expect_fail "nor a directory beginning with a dot" ls "$M/.hidden.git"
expect "the SHA-1 repository says it goes the other way round" \
	grep -qx 'direction: sha1 to sha256' "$M/team-0/old-sha1/status"
expect "... and its sha256/ is the SHA-256 repository of the same history" \
	test "$(git --git-dir="$M/team-0/old-sha1/sha256" rev-parse refs/heads/main)" = \
	"$(git --git-dir="$D/$(repo_rel 1)" rev-parse refs/heads/main)"

# ---- 50 at random, in parallel ------------------------------------------------
# check I: repository I's sha1/ is its twin: refs, every object, fsck
check() {
	i=$1
	g=$M/$(repo_rel $i)/sha1
	out=$TRASH/check.$i
	{
		[ "$(git --git-dir="$g" for-each-ref)" = "$(git --git-dir="$T/$i.git" for-each-ref)" ] ||
			{ echo "refs of $i differ"; return 1; }
		git --git-dir="$g" cat-file --batch-all-objects --batch >"$out.m" &&
		git --git-dir="$T/$i.git" cat-file --batch-all-objects --batch >"$out.t" &&
		cmp -s "$out.m" "$out.t" || { echo "objects of $i differ"; return 1; }
		git --git-dir="$g" fsck --full --no-dangling 2>&1 || return 1
	} >"$out.log" 2>&1
}
export -f check repo_rel
export M T TRASH

picks=$(seq $N | shuf -n $PICK --random-source=<(yes))
# shellcheck disable=SC2086
if echo $picks | tr ' ' '\n' | xargs -P 16 -I{} bash -c 'check {}'; then
	ok "$PICK repositories read in parallel are their SHA-1 twins"
else
	not_ok "$PICK repositories read in parallel are their SHA-1 twins"
	cat "$TRASH"/check.*.log | head -20 | sed 's/^/# /'
fi
expect "each was woken once at least ($PICK)" \
	test "$(status_field woken)" -ge $PICK
# a client's requests come one by one: a repository must not be put to
# sleep between two of them and woken for the next
expect "and not woken again for each request ($(status_field woken) wakes)" \
	test "$(status_field woken)" -lt $((2 * PICK))
# busy ones may pass the bound; idle for two seconds, they sleep
back_in_bound() {
	for _ in $(seq 100); do
		[ "$(status_field awake)" -le $MAX ] && return 0
		sleep 0.1
	done
	return 1
}
expect "idle, at most $MAX stay awake" back_in_bound
# (of the last one read: the first must stay asleep for the test below)
expect "a forge's repository takes less memory: its status says how much" \
	grep -qx "memory: memo 4 MiB, sqlite page cache up to 8 MiB for each of 2 readers" \
	"$M/$(repo_rel "$(echo $picks | cut -d' ' -f$PICK)")/status"
expect "the others were put to sleep" \
	test "$(status_field 'put to sleep')" -ge $((PICK - MAX))
# descriptors: the FUSE device, the log, and what $MAX repositories hold
fds=$(ls "/proc/$pid/fd" | wc -l)
expect "descriptors stay bounded ($fds open; $MAX awake)" test "$fds" -le $((MAX * 10 + 16))
sed 's/^/# /' "$M/.status"
grep '^VmRSS\|^RssAnon' "/proc/$pid/status" | sed 's/^/# daemon /'

# ---- asleep, changed, woken ------------------------------------------------------
first=$(echo $picks | cut -d' ' -f1)
rel=$(repo_rel $first)
case $rel in *.git) gd=$D/$rel ;; *) gd=$D/$rel/.git ;; esac
grows() {
	{
		cat <<EOF
commit refs/heads/main
committer C O Mitter <committer@example.com> 1300000000 +0000
data 9
later on
from refs/heads/main^0
M 100644 inline later.txt
data 6
later

EOF
	} >"$TRASH/later.fi"
	git --git-dir="$gd" fast-import --quiet <"$TRASH/later.fi" &&
	git --git-dir="$T/$first.git" fast-import --quiet <"$TRASH/later.fi"
}
expect "a commit lands in repository $first while it sleeps" grows
expect "woken, it shows the new commit at once" check "$first"
expect "its log is the twin's" \
	test "$(git --git-dir="$M/$rel/sha1" log --format=%H main)" = \
	"$(git --git-dir="$T/$first.git" log --format=%H main)"

# ---- added under the mount --------------------------------------------------------
new=$((N + 1))
add_new() {
	git init -q --bare --object-format=sha256 "$D/team-3/late.git" &&
	git init -q --bare "$T/$new.git" &&
	stream $new >"$TRASH/new.fi" &&
	git --git-dir="$D/team-3/late.git" fast-import --quiet <"$TRASH/new.fi" &&
	git --git-dir="$T/$new.git" fast-import --quiet <"$TRASH/new.fi"
}
expect "a repository is added under the root" add_new
sleep 1.1	# the team directory's listing may be kept a second
expect "it is listed" sh -c "ls '$M/team-3' | grep -qx late.git"
expect "its history is the twin's" \
	test "$(git --git-dir="$M/team-3/late.git/sha1" log --format=%H main)" = \
	"$(git --git-dir="$T/$new.git" log --format=%H main)"

# ---- deleted under the mount -------------------------------------------------------
gone=$(echo $picks | cut -d' ' -f2)
grel=$(repo_rel $gone)
expect "repository $gone is read again (and so open)" check "$gone"
expect "it is open" grep -qx "repository awake: $grel" "$M/.status"
rm -rf "${D:?}/$grel"
let_go() {
	for _ in $(seq 50); do
		grep -qx "repository awake: $grel" "$M/.status" || return 0
		sleep 0.1
	done
	return 1
}
expect "deleted, it is let go of within seconds (its packs and cache closed)" let_go
sleep 1.1	# entries live a second
expect_fail "and it is gone from the mount" ls "$M/$grel/sha1"

# ---- git daemon serves the forge ------------------------------------------------------
PY=${PYTHON:-python3}
gport=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
git daemon --base-path="$M" --export-all --reuseaddr --listen=127.0.0.1 \
	--port="$gport" --pid-file="$TRASH/daemon.pid" --detach \
	--informative-errors 2>"$TRASH/daemon.err"
trap 'kill $(cat "$TRASH/daemon.pid" 2>/dev/null) 2>/dev/null; cleanup_trash' EXIT
last=$(echo $picks | cut -d' ' -f$PICK)
url=git://127.0.0.1:$gport/$(repo_rel $last)/sha1
for _ in $(seq 50); do
	git ls-remote "$url" >/dev/null 2>&1 && break
	sleep 0.1
done
expect "git clone --mirror $url" git clone -q --mirror "$url" "$TRASH/clone.git"
expect "the clone is the twin" \
	test "$(git --git-dir="$TRASH/clone.git" for-each-ref)" = \
	"$(git --git-dir="$T/$last.git" for-each-ref)"
kill "$(cat "$TRASH/daemon.pid")" 2>/dev/null

xl_umount "$M"
expect "no error in the daemon's log" sh -c "! grep -i 'error\|warning' '$M.log'"

# ---- memory, as a single mount is told -------------------------------------------
S=$TRASH/single
one=$D/$(repo_rel 2)
xl_mount "$one" "$S" -o memo_mib=1,page_cache_mib=2 || { test_done; exit 1; }
expect "a single mount takes memo_mib= and page_cache_mib=, and says so" \
	grep -qx "memory: memo 1 MiB, sqlite page cache up to 2 MiB for each of [0-9]* readers" "$S/status"
expect "and still serves its repository" \
	test "$(git --git-dir="$S/sha1" for-each-ref)" = "$(git --git-dir="$T/2.git" for-each-ref)"
xl_umount "$S"
expect_fail "memo_mib= past 4096 is refused" \
	"$XLATEFS" -f -o memo_mib=5000 "$one" "$TRASH/nowhere"
test_done
