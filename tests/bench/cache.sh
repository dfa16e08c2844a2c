#!/usr/bin/env bash
# cache.sh: the cache's own speed, XL_BENCH_RUNS runs.
#
#   tests/bench/cache.sh
#
# Runs the unit test t-cache batch_130k (130,000 objects put in one
# batch and committed, 100,000 lookups by each name, a reopen with its
# quick_check; every answer checked) and prints the median of each time
# it reports.  These were assertions in the unit test (a commit under
# 5 s, a lookup under 100 us): speed is not correctness, and limits like
# those fail under sanitizers, so they live here, as figures.  There is
# no stock-git side: sqlite is the cache's own.  Needs tests/unit/t-cache
# (make check builds it); exits 0 with a note when it is not there, and
# non-zero when the test fails.

set -eu

. "$(dirname "$0")/lib.sh"

prog=$top/tests/unit/t-cache
if [ ! -x "$prog" ]; then
	echo "cache: no $prog (make check builds it): skipped"
	exit 0
fi
if grep -q fsanitize "$top/.build-flags" 2>/dev/null; then
	echo "cache: note: a sanitizer build; these figures are not the real ones"
fi
case $runs in ''|*[!0-9]*|0) die "XL_BENCH_RUNS must be a positive integer" ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xl-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export XL_TEST_DATA=$top/tests
i=0
while [ $i -lt "$runs" ]; do
	"$prog" batch_130k >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; die "t-cache batch_130k failed"; }
	grep -q '^ok 1 - batch_130k' "$tmp/out" || die "t-cache batch_130k did not pass"
	# "# 130000 puts in one batch: 528 ms (4.06 us/put), with commit 599 ms"
	sed -n 's/^# .* puts in one batch: \([0-9.]*\) ms .*with commit \([0-9.]*\) ms$/\1 \2/p' "$tmp/out" >>"$tmp/put"
	# "# lookups: by sha256 3.71 us, by sha1 5.80 us"
	sed -n 's/^# lookups: by sha256 \([0-9.]*\) us, by sha1 \([0-9.]*\) us$/\1 \2/p' "$tmp/out" >>"$tmp/get"
	# "# reopen of a 130000-object cache (quick_check): 138 ms"
	sed -n 's/^# reopen of .*: \([0-9.]*\) ms$/\1/p' "$tmp/out" >>"$tmp/reopen"
	i=$((i + 1))
done
[ "$(wc -l <"$tmp/put")" -eq "$runs" ] && [ "$(wc -l <"$tmp/get")" -eq "$runs" ] &&
	[ "$(wc -l <"$tmp/reopen")" -eq "$runs" ] || die "t-cache batch_130k printed no figures"

col() {
	cut -d' ' -f"$2" "$1" >"$tmp/col"
	median "$tmp/col"
}
echo "cache: 130,000 objects in one sqlite batch, 100,000 lookups by each name  ($runs runs, medians)"
echo "  puts              $(col "$tmp/put" 1) ms;  with the commit $(col "$tmp/put" 2) ms"
echo "  lookup by SHA-256 $(col "$tmp/get" 1) us;  by SHA-1 $(col "$tmp/get" 2) us"
echo "  reopen (quick_check over the file) $(col "$tmp/reopen" 1) ms"
