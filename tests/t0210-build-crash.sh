#!/usr/bin/env bash
# t0210-build-crash.sh: kill -9 in the middle of a build, build again,
# and the cache is whole and right: verify passes and the export is the
# one a clean build gives.  "In the middle" is checked, not assumed: the
# killed build had committed some of the objects and not all.  A cache file that is damaged, truncated or
# not ours is set aside with a warning and rebuilt.

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

R=$TRASH/repo.git
git init -q --bare --object-format=sha256 "$R"
"$XL_TOP/tests/gen-history.sh" --commits 1500 --files 200 --big-blob-kib 64 |
	git -C "$R" fast-import --quiet
git -C "$R" repack -adq
n=$(git -C "$R" cat-file --batch-all-objects --batch-check | wc -l | tr -d ' ')
ok "a repository of $n objects"

"$XL" -C "$R" --cache "$TRASH/clean.sqlite" build
"$XL" -C "$R" --cache "$TRASH/clean.sqlite" export >"$TRASH/clean.tsv"

# rows FILE: the objects a cache holds now, as a reader sees them
# (committed batches only, in either table of rows), or "?" when it
# cannot be read
rows() {
	sqlite3 -readonly "$1" 'SELECT (SELECT count(*) FROM objects) +
		(SELECT count(*) FROM objects_recent)' 2>/dev/null || echo "?"
}

# Kill -9 a build once a fifth, half and four fifths of the objects are
# committed, so that the kill lands mid-build: after some batches and
# before the last.  A build commits a batch a second (BATCH_SECONDS), and
# this one takes well under a second on all processors, so it is slowed
# down: run for 1 ms, stopped for 300 ms, and so on, which makes each
# batch a small part of the whole.  How much work a 1 ms slice does
# varies with the machine (a sanitizer's build does a tenth of it, and
# forking sleep(1) may take longer than the slice), so a slice that has
# not brought the aim within reach after a while is doubled (up to 64
# ms), and after AIM_SECONDS the kill lands wherever the build is: the
# assertion (some rows committed, not all) is the same.  The kill may
# land anywhere, a commit included.  Counting committed rows needs
# sqlite3.  A first build this big would write its
# rows at its end, all or nothing (the kill of such a build is the next
# test); XLATE_TEST_BULK=0 makes these stream, as every later build does.
if ! command -v sqlite3 >/dev/null 2>&1; then
	missing_tool "kill -9 mid-build, then rebuild" "no sqlite3 to see how far a build got"
else
	AIM_SECONDS=${AIM_SECONDS:-90}
	for part in 20 50 80; do
	    # the last batch may take the count from under the aim to all of
	    # it between two looks; then the kill found the rows committed:
	    # aim again (three tries), the assertion below is unchanged
	    for try in 1 2 3; do
		rm -f "$TRASH/c.sqlite"*
		XLATE_TEST_BULK=0 "$XL" -C "$R" --cache "$TRASH/c.sqlite" build \
			2>"$TRASH/killed.err" &
		pid=$!
		kill -STOP $pid
		got=0 i=0 slice=1 start=$SECONDS
		# (a zombie takes SIGCONT too: the count ends the loop)
		while [ $((SECONDS - start)) -lt $AIM_SECONDS ] &&
		      kill -CONT $pid 2>/dev/null; do
			i=$((i + 1))
			sleep "0.$(printf %03d $slice)"
			kill -STOP $pid 2>/dev/null
			[ $((i % 40)) -eq 0 ] && [ $slice -lt 64 ] &&
				slice=$((slice * 2))
			sleep 0.3
			got=$(rows "$TRASH/c.sqlite")
			[ "$got" != "?" ] && [ "$got" -ge $((n * part / 100)) ] && break
		done
		kill -9 $pid 2>/dev/null
		rc=0
		wait $pid 2>/dev/null || rc=$?
		got=$(rows "$TRASH/c.sqlite")
		[ "$got" = "$n" ] || break
		echo "# try $try aimed at $part% found all $n objects committed" \
			"after $i slices (the last of $slice ms): again"
	    done
		# 137: died of the SIGKILL, not finished; and some of the
		# objects, not all, were in the cache
		echo "# aimed at $part%: killed after $i slices (the last of $slice ms)" \
			"in $((SECONDS - start)) s"
		if [ $rc -eq 137 ] && [ "$got" != "?" ] && [ "$got" -gt 0 ] && [ "$got" -lt "$n" ]; then
			ok "the kill landed mid-build: $got of $n objects committed (aimed at $part%)"
		else
			not_ok "the kill landed mid-build (aimed at $part%): exit $rc, $got of $n objects committed"
			sed 's/^/# /' "$TRASH/killed.err"
		fi
		"$XL" -C "$R" --cache "$TRASH/c.sqlite" build 2>"$TRASH/err"
		"$XL" -C "$R" --cache "$TRASH/c.sqlite" export >"$TRASH/c.tsv"
		same_file "killed with $got of $n committed, rebuilt: the export of a clean build" \
			"$TRASH/clean.tsv" "$TRASH/c.tsv"
		expect "killed with $got of $n committed, rebuilt: verify" \
			"$XL" -C "$R" --cache "$TRASH/c.sqlite" verify
	done
fi

# A big first build writes its rows only at the end (build.c, "a first
# build"; XLATE_TEST_BULK=1 makes this one such): killed in its walk, it
# has committed nothing, and the next build (streaming this time) is
# whole.  Slowed down as above, and killed a few slices after its cache
# has its tables (the whole build is a few hundred slices; the file is
# there a few slices before its tables, more under a sanitizer).
if command -v sqlite3 >/dev/null 2>&1; then
	rm -f "$TRASH/b.sqlite"*
	XLATE_TEST_BULK=1 "$XL" -C "$R" --cache "$TRASH/b.sqlite" build 2>"$TRASH/killed.err" &
	pid=$!
	kill -STOP $pid
	i=0 after=0
	while [ $i -lt 2000 ] && [ $after -lt 3 ] && kill -CONT $pid 2>/dev/null; do
		i=$((i + 1))
		sleep 0.001
		kill -STOP $pid 2>/dev/null
		sleep 0.05
		[ "$(rows "$TRASH/b.sqlite")" = "?" ] || after=$((after + 1))
	done
	kill -9 $pid 2>/dev/null
	rc=0
	wait $pid 2>/dev/null || rc=$?
	got=$(rows "$TRASH/b.sqlite")
	if [ $rc -eq 137 ] && [ "$got" = 0 ]; then
		ok "a first build writing at the end, killed mid-build: nothing committed"
	else
		not_ok "a first build writing at the end, killed mid-build: exit $rc, $got of $n objects committed"
		sed 's/^/# /' "$TRASH/killed.err"
	fi
	XLATE_TEST_BULK=0 "$XL" -C "$R" --cache "$TRASH/b.sqlite" build 2>"$TRASH/err"
	"$XL" -C "$R" --cache "$TRASH/b.sqlite" export >"$TRASH/b.tsv"
	same_file "... rebuilt: the export of a clean build" "$TRASH/clean.tsv" "$TRASH/b.tsv"
fi

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
