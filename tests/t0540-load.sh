#!/usr/bin/env bash
# t0540-load.sh: 64 readers on all four views for XL_LOAD_SECONDS (60),
# stock git and plain cat, stat and ls (tests/load.py), while the
# repository takes commits, `git gc --prune=now` and `git repack -adf`.
# Every object read is checked against its name.  Zero errors; the
# daemon's RSS and open descriptors, sampled all along, stay bounded:
# 400 MiB (four times that under a sanitizer) and 1,024 descriptors.
. "$(dirname "$0")/lib.sh"

require_fuse

secs=${XL_LOAD_SECONDS:-60}
readers=${XL_LOAD_READERS:-64}
mem_bound=$((400 * 1024))
grep -q 'fsanitize' "$XL_TOP/.build-flags" 2>/dev/null && mem_bound=$((4 * mem_bound))
fd_bound=1024

R=$TRASH/r.git
git init -q --bare --object-format=sha256 "$R"
"$XL_TOP/tests/gen-history.sh" --commits 400 --files 100 | git -C "$R" fast-import --quiet
git -C "$R" symbolic-ref HEAD refs/heads/main
git --git-dir="$R" repack -q -d
git clone -q "$R" "$TRASH/w"
"$XL" -C "$R" build
"$XL" -C "$R" export >"$TRASH/names"

M=$TRASH/mnt
if ! xl_mount "$R" "$M"; then
	not_ok "mount"
	test_done
fi
pid=$(cat "$M.pid")

# the daemon's RSS (KiB) and descriptors, every half second
sample() {
	local rss=0 fds=0 r f
	while [ -f "$TRASH/sampling" ]; do
		r=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null)
		f=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
		[ "${r:-0}" -le "$rss" ] || rss=$r
		[ "$f" -le "$fds" ] || fds=$f
		echo "$rss $fds" >"$TRASH/peaks"
		sleep 0.5
	done
}
touch "$TRASH/sampling"
sample &
sampler=$!

python3 "$XL_TOP/tests/load.py" "$M" "$secs" "$readers" "$TRASH/names" \
	>"$TRASH/load.out" 2>"$TRASH/load.err" &
loader=$!

# the repository changes under them: commits, gc, repack
changes=0 failed_changes=0
end=$(($(date +%s) + secs))
while [ "$(date +%s)" -lt "$end" ]; do
	case $((changes % 3)) in
	0) echo "load $changes" >"$TRASH/w/load.txt" &&
		git -C "$TRASH/w" add load.txt &&
		git -C "$TRASH/w" commit -q -m "load $changes" &&
		git -C "$TRASH/w" push -q origin HEAD:main ;;
	1) git --git-dir="$R" gc -q --prune=now ;;
	2) git --git-dir="$R" repack -q -adf ;;
	esac || failed_changes=$((failed_changes + 1))
	changes=$((changes + 1))
	sleep 2
done
wait $loader
rm -f "$TRASH/sampling"
wait $sampler

read -r reads errors < <(sed -n 's/^reads \([0-9]*\) errors \([0-9]*\)$/\1 \2/p' "$TRASH/load.out")
read -r rss fds <"$TRASH/peaks"
[ "$failed_changes" = 0 ] && ok "the repository took $changes changes (commits, gc --prune=now, repack -adf)" ||
	not_ok "the repository's changes: $failed_changes of $changes failed"
if [ "${errors:-x}" = 0 ] && [ "${reads:-0}" -gt "$readers" ]; then
	ok "$readers readers for $secs s on four views: $reads reads, every object checked against its name, 0 errors"
else
	not_ok "$readers readers for $secs s: ${reads:-?} reads, ${errors:-?} errors"
	head -10 "$TRASH/load.err" | sed 's/^/# /'
	grep -v '^xlatefs: named\|^xlatefs: laid out' "$M.log" | head -10 | sed 's/^/# log: /'
fi
[ "$rss" -le "$mem_bound" ] && ok "the daemon's peak RSS: $((rss / 1024)) MiB (bound $((mem_bound / 1024)))" ||
	not_ok "the daemon's peak RSS: $((rss / 1024)) MiB, over $((mem_bound / 1024))"
[ "$fds" -le "$fd_bound" ] && ok "its open descriptors at most $fds (bound $fd_bound)" ||
	not_ok "its open descriptors reached $fds, over $fd_bound"
expect "the daemon is still there" kill -0 "$pid"
xl_umount "$M"
test_done
