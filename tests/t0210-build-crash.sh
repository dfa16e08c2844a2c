#!/usr/bin/env bash
# t0210-build-crash.sh: kill -9 in the middle of a build, build again,
# and the cache is whole and right: verify passes and the export is the
# one a clean build gives.  A cache file that is damaged, truncated or
# not ours is set aside with a warning and rebuilt.

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

R=$TRASH/repo.git
git init -q --bare --object-format=sha256 "$R"
"$XL_TOP/tests/gen-history.sh" --commits 1500 --files 200 --big-blob-kib 64 |
	git -C "$R" fast-import --quiet
git -C "$R" repack -adq
n=$(git -C "$R" cat-file --batch-all-objects --batch-check | wc -l)
ok "a repository of $n objects"

t0=$(date +%s%N)
"$XL" -C "$R" --cache "$TRASH/clean.sqlite" build
t1=$(date +%s%N)
"$XL" -C "$R" --cache "$TRASH/clean.sqlite" export >"$TRASH/clean.tsv"

# kill the build at a fifth, half and four fifths of a clean build's time
for part in 20 50 80; do
	delay=$(awk -v ns=$((t1 - t0)) -v p=$part 'BEGIN { printf "%.3f", ns / 1e9 * p / 100 }')
	rm -f "$TRASH/c.sqlite"*
	"$XL" -C "$R" --cache "$TRASH/c.sqlite" build &
	pid=$!
	sleep "$delay"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	"$XL" -C "$R" --cache "$TRASH/c.sqlite" build 2>"$TRASH/err"
	"$XL" -C "$R" --cache "$TRASH/c.sqlite" export >"$TRASH/c.tsv"
	same_file "killed after ${delay}s, rebuilt: the export of a clean build" \
		"$TRASH/clean.tsv" "$TRASH/c.tsv"
	expect "killed after ${delay}s, rebuilt: verify" \
		"$XL" -C "$R" --cache "$TRASH/c.sqlite" verify
done

# a damaged cache is never trusted
for how in garbage truncated foreign; do
	cp "$TRASH/clean.sqlite" "$TRASH/d.sqlite"
	rm -f "$TRASH/d.sqlite-wal" "$TRASH/d.sqlite-shm"
	case $how in
	garbage) head -c 20000 /dev/urandom >"$TRASH/d.sqlite" ;;
	truncated) truncate -s $(($(stat -c %s "$TRASH/d.sqlite") / 2)) "$TRASH/d.sqlite" ;;
	foreign) rm -f "$TRASH/d.sqlite"
		 printf 'create table t(x); insert into t values (1);' |
			 { command -v sqlite3 >/dev/null && sqlite3 "$TRASH/d.sqlite"; } ||
			 head -c 4096 "$TRASH/clean.sqlite" >"$TRASH/d.sqlite" ;;
	esac
	"$XL" -C "$R" --cache "$TRASH/d.sqlite" export >"$TRASH/d.tsv" 2>"$TRASH/err"
	if cmp -s "$TRASH/clean.tsv" "$TRASH/d.tsv" && grep -qi "warning" "$TRASH/err"; then
		ok "a $how cache file is set aside with a warning and rebuilt"
	else
		not_ok "a $how cache file is set aside with a warning and rebuilt"
		sed 's/^/# /' "$TRASH/err"
	fi
done

test_done
