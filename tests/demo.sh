#!/usr/bin/env bash
# demo.sh: the built-in example behind `make demo`.
#
# Makes a small SHA-256 repository from the test history generator,
# mounts it with xlatefs, and shows stock git reading the SHA-1 view, one
# object by both of its names, and git xlate map.  The repository and the
# mount stay in .demo/ for you to explore; the last lines say how to
# unmount.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
demo=$top/.demo
mnt=$demo/mnt
export PATH=$top:$PATH	# git xlate finds ./git-xlate, as after make install
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

# a previous demo's mount first
mountpoint -q "$mnt" 2>/dev/null && fusermount3 -u "$mnt"
rm -rf "$demo"
mkdir -p "$demo" "$mnt"
git init -q --bare --object-format=sha256 "$demo/repo.git"
"$top/tests/gen-history.sh" --commits 12 --files 8 --big-blob-kib 16 |
	git -C "$demo/repo.git" fast-import --quiet
git -C "$demo/repo.git" symbolic-ref HEAD refs/heads/main
git -C "$demo/repo.git" repack -adq

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; "$@"; }

cd "$demo"
run git -C repo.git rev-parse --show-object-format
run git -C repo.git log --oneline -3
run xlatefs repo.git mnt
run ls mnt mnt/sha1
run git --git-dir=mnt/sha1 rev-parse --show-object-format
run git --git-dir=mnt/sha1 log --oneline
h1=$(git --git-dir=mnt/sha1 rev-parse HEAD)
h256=$(git -C repo.git rev-parse HEAD)
run cat "mnt/objects-sha1/${h1:0:2}/${h1:2}"
run cat "mnt/objects-sha256/${h256:0:2}/${h256:2}"
run getfattr -d "mnt/objects-sha1/${h1:0:2}/${h1:2}"
run git xlate -C repo.git map HEAD "$h1" "${h1:0:10}"
run cat mnt/status
say "git clone -q --mirror mnt/sha1 sha1-copy.git && git -C sha1-copy.git fsck"
git clone -q --mirror mnt/sha1 sha1-copy.git && git -C sha1-copy.git fsck && echo "fsck: clean"
printf '\nThe repository is %s/repo.git, mounted at %s.\n' "$demo" "$mnt"
printf 'Unmount with:  fusermount3 -u %s\n' "$mnt"
