#!/usr/bin/env bash
# t0510-fuzz-replay.sh: every fuzz target (tests/fuzz/fuzz-*.c), built
# without libFuzzer (driver.c), over seeds made from the fixtures and
# over every input that once found a bug (tests/fuzz/regress/TARGET/).
# Each target checks its invariants on each input (a conversion that
# round-trips, a file that parses again as it was read...), so this runs
# them on real repositories' bytes in every make check, and keeps the
# bugs fuzzing found from coming back.  Fuzzing itself is make fuzz.
. "$(dirname "$0")/lib.sh"

seeds=$TRASH/seeds
if ! "$XL_TOP/tests/fuzz/seed.sh" "$seeds" >"$TRASH/seed.out" 2>&1; then
	not_ok "seeds are made from the fixtures ($(tail -1 "$TRASH/seed.out"))"
	test_done
fi
export XL_FUZZ_REPO=$seeds/repo.git	# fuzz-resolve's repository
for src in "$XL_TOP"/tests/fuzz/fuzz-*.c; do
	t=$(basename "$src" .c)
	bin=$XL_TOP/tests/fuzz/$t-replay
	dirs=("$seeds/$t")
	[ -d "$XL_TOP/tests/fuzz/regress/$t" ] && dirs+=("$XL_TOP/tests/fuzz/regress/$t")
	n=$(find "${dirs[@]}" -type f | wc -l)
	if [ ! -x "$bin" ]; then
		not_ok "$t: built ($bin)"
	elif [ "$n" -eq 0 ]; then
		not_ok "$t: has inputs to replay"
	elif "$bin" "${dirs[@]}" >"$TRASH/$t.out" 2>&1; then
		ok "$t: $n inputs, every invariant held"
	else
		not_ok "$t: replay of $n inputs"
		tail -5 "$TRASH/$t.out" | sed 's/^/# /'
	fi
done
test_done
