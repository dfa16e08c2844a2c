#!/usr/bin/env bash
# run.sh: every benchmark under tests/bench, one after the other (make bench).
# Benchmarks print figures beside stock git's; they never fail on speed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
status=0
for b in "$here"/*.sh; do
	# large.sh is make bench-large, opt-in
	case $(basename "$b") in run.sh | lib.sh | large.sh) continue ;; esac
	"$b" || status=1
done
exit $status
