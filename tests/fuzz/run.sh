#!/usr/bin/env bash
# run.sh DIR SECONDS TARGET...: run each libFuzzer target built in DIR
# (make fuzz) for SECONDS seconds, from the seeds (seed.sh, made once
# into DIR/seeds), the corpus it grew before (DIR/corpus/TARGET) and
# every input that ever found a bug (tests/fuzz/regress/TARGET), with
# its dictionary (tests/fuzz/TARGET.dict).  SECONDS 0 runs each input
# once.  Prints one line per target (executions, rate, corpus, crashes)
# and exits 1 if any target crashed; a crashing input is left in
# DIR/crashes/TARGET/, to be copied into tests/fuzz/regress/TARGET/ once
# fixed.
set -u

dir=$1 secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$dir/seeds" ] || "$here/seed.sh" "$dir/seeds" >/dev/null || exit 2
export XL_FUZZ_REPO=$dir/seeds/repo.git	# fuzz-resolve's repository
failed=0 total=0
printf '%-20s %12s %10s %8s %s\n' target executions "exec/s" corpus result
for t in "$@"; do
	mkdir -p "$dir/corpus/$t" "$dir/crashes/$t"
	args=(-print_final_stats=1 -artifact_prefix="$dir/crashes/$t/" -rss_limit_mb=2048
	      -timeout=10 -max_len=1048576)
	[ -f "$here/$t.dict" ] && args+=(-dict="$here/$t.dict")
	if [ "$secs" -gt 0 ]; then
		args+=(-max_total_time="$secs")
	else
		args+=(-runs=0)
	fi
	dirs=("$dir/corpus/$t" "$dir/seeds/$t")
	[ -d "$here/regress/$t" ] && dirs+=("$here/regress/$t")
	"$dir/$t" "${args[@]}" "${dirs[@]}" >"$dir/$t.log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/$t.log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/$t.log" | tail -1)
	corpus=$(ls "$dir/corpus/$t" | wc -l)
	total=$((total + ${execs:-0}))
	if [ $rc -eq 0 ]; then
		result=ok
	else
		result="CRASH (exit $rc): see $dir/$t.log and $dir/crashes/$t/"
		failed=$((failed + 1))
	fi
	printf '%-20s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
done
echo "fuzz: $# targets, $total executions, $failed crashed"
[ $failed -eq 0 ]
