#!/usr/bin/env bash
# run-tests.sh: run each test program (C unit test or shell script), each
# printing TAP, and add up the results.  The last line is the summary
# CI reads: "N passed, N failed, N skipped".
#
#   tests/run-tests.sh PROGRAM...      (make check passes the list)
#   XL_TEST_TIMEOUT=SECONDS            per-program limit (default 600)

set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export XL_TOP=$top XL_TEST_DATA=$top/tests
passed=0 failed=0 skipped=0 broken=""

for prog in "$@"; do
	name=${prog#"$top"/}
	log=$(mktemp)
	start=$(date +%s)
	timeout "${XL_TEST_TIMEOUT:-600}" "$prog" >"$log" 2>&1
	rc=$?
	p=$(grep -c '^ok ' "$log" | tr -d ' ')
	s=$(grep -c '^ok .*# SKIP' "$log" | tr -d ' ')
	f=$(grep -c '^not ok ' "$log" | tr -d ' ')
	p=$((p - s))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# died, timed out or exited non-zero without saying why
		f=1
		echo "not ok - $name exited with status $rc" >>"$log"
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	printf '%-40s %4d passed %3d failed %3d skipped  (%ds)\n' \
		"$name" "$p" "$f" "$s" $(($(date +%s) - start))
	if [ "$f" -ne 0 ]; then
		broken="$broken $name"
		grep -v '^ok ' "$log" | head -60 | sed 's/^/    /'
	fi
	rm -f "$log"
done
[ -z "$broken" ] || echo "failing:$broken"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
