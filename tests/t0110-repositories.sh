#!/usr/bin/env bash
# t0110-repositories.sh: finding and opening repositories as Git does:
# work trees, subdirectories, .git files, bare repositories, linked
# worktrees, alternates (relative, absolute, nested), GIT_DIR, and the
# repository-format rules that make Git refuse a repository.

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

cd "$TRASH" || exit 1

# compare NAME ARGS...: git-xlate and git, given ARGS, exit with the
# same status and print the same thing.  On an empty repository the
# output is empty whether or not the repository was accepted: only the
# status tells them apart.
compare() {
	desc=$1
	shift
	git "$@" >expect 2>expect.err
	grc=$?
	"$XL" "$@" >actual 2>err
	xrc=$?
	if [ $grc -ne $xrc ]; then
		not_ok "$desc (git exits $grc, git-xlate $xrc)"
		sed 's/^/# git-xlate: /' err
		sed 's/^/# git: /' expect.err
		return
	fi
	same_file "$desc" expect actual
}

# prints DESC WANT CMD...: CMD exits 0 and prints exactly the line WANT
prints() {
	desc=$1 want=$2
	shift 2
	printf '%s\n' "$want" >expect
	"$@" >actual 2>err
	rc=$?
	if [ $rc -ne 0 ]; then
		not_ok "$desc (exit $rc)"
		sed 's/^/# /' err
		return
	fi
	same_file "$desc" expect actual
}

# refused DESC PATTERN CMD...: CMD refuses: exits 1, git-xlate's status
# for a refusal (not 0, and not a crash or a signal, which exit >= 128,
# nor a usage error), and says PATTERN (grep -E, on stderr with its
# lines joined by spaces)
refused() {
	desc=$1 pat=$2
	shift 2
	"$@" >out 2>err
	rc=$?
	if [ $rc -eq 1 ] && tr '\n' ' ' <err | grep -Eq "$pat"; then
		ok "$desc"
	else
		not_ok "$desc (exit $rc, want 1 and /$pat/)"
		sed 's/^/# /' err
	fi
}

git init -q --object-format=sha256 work
(
	cd work &&
	mkdir -p sub/dir &&
	echo one >sub/dir/file &&
	git add . && git commit -q -m one &&
	echo two >>sub/dir/file && git commit -q -a -m two
) || exit 1

compare "a work tree" -C work cat-file -p HEAD
compare "a subdirectory of a work tree" -C work/sub/dir cat-file -p HEAD:sub/dir/file
compare "a .git directory" -C work/.git cat-file -p 'HEAD^{tree}'
prints "the current directory, searching upwards" commit \
	sh -c 'cd work/sub && exec "$XL" cat-file -t HEAD'
prints "GIT_DIR" commit env GIT_DIR="$TRASH/work/.git" "$XL" cat-file -t HEAD~1

git clone -q --bare work bare.git
compare "a bare repository" -C bare.git cat-file --batch-all-objects --batch

mkdir gitfile && echo "gitdir: ../work/.git" >gitfile/.git
compare "a .git file with a relative gitdir" -C gitfile cat-file -p HEAD
prints "a .git file named directly" "$(git -C gitfile cat-file -p HEAD)" \
	"$XL" -C gitfile/.git cat-file -p HEAD

git -C work worktree add -q ../wt -b side 2>/dev/null
(cd wt && echo three >new && git add new && git commit -q -m three) || exit 1
compare "a linked worktree: its own HEAD" -C wt cat-file -p HEAD
compare "a linked worktree: shared objects and refs" -C wt cat-file -p main:sub/dir/file
compare "the main worktree still sees its HEAD" -C work cat-file -p HEAD

# alternates: relative, absolute and nested
git init -q --bare --object-format=sha256 alt1.git
git init -q --bare --object-format=sha256 alt2.git
git -C work repack -adq
cp work/.git/objects/pack/* alt2.git/objects/pack/
echo "$TRASH/alt2.git/objects" >alt1.git/objects/info/alternates
git init -q --bare --object-format=sha256 borrower.git
echo "../../alt1.git/objects" >borrower.git/objects/info/alternates
head=$(git -C work rev-parse main)
git -C borrower.git update-ref refs/heads/main "$head"
compare "nested alternates (relative, then absolute)" -C borrower.git cat-file --batch-all-objects --batch
compare "objects found through alternates by name" -C borrower.git cat-file -p main~1:sub/dir/file

# repository format rules (Git's setup.c)
git init -q --bare --object-format=sha256 fmt.git
git -C fmt.git config extensions.worktreeConfig true
compare "a known extension is accepted" -C fmt.git cat-file --batch-all-objects --batch-check
git config -f fmt.git/config extensions.somethingNew true
refused "an unknown extension in a version-1 repository is refused" \
	"unknown repository extension.*somethingnew" \
	"$XL" -C fmt.git cat-file --batch-all-objects --batch-check
git init -q --bare v0.git
git config -f v0.git/config core.repositoryformatversion 0
git config -f v0.git/config extensions.somethingNew true
compare "an unknown extension in a version-0 repository is ignored" -C v0.git cat-file --batch-all-objects --batch-check
git config -f v0.git/config extensions.objectFormat sha1
refused "a v1-only extension in a version-0 repository is refused" "v1-only extension" \
	"$XL" -C v0.git cat-file --batch-all-objects --batch-check
git config -f fmt.git/config --unset extensions.somethingNew
git config -f fmt.git/config core.repositoryformatversion 2
refused "a repository version above 1 is refused" "Expected git repo version <= 1, found 2" \
	"$XL" -C fmt.git cat-file -t HEAD

mkdir notrepo
refused "outside any repository: exit 1 and a clear message" "not a git repository" \
	"$XL" -C notrepo cat-file -t HEAD

# core.quotePath=false prints non-ASCII names as they are
(cd work && echo x >"café" && git add "café" && git commit -q -m accent) || exit 1
compare "core.quotePath (default): non-ASCII names quoted" -C work cat-file -p 'HEAD^{tree}'
git -C work config core.quotePath false
compare "core.quotePath=false: non-ASCII names as they are" -C work cat-file -p 'HEAD^{tree}'
git -C work config --unset core.quotePath

# refs that would lead outside the repository are never followed
echo "ref: refs/heads/../../../../../../../../tmp/xl-evil-$$" >work/.git/refs/heads/evil
git -C work rev-parse HEAD >"/tmp/xl-evil-$$"
refused "a symbolic ref pointing outside the repository is not followed" \
	"not a valid object name evil" "$XL" -C work cat-file -t evil
rm -f "/tmp/xl-evil-$$" work/.git/refs/heads/evil
refused "names with .. are not refs (../HEAD)" "not a valid object name \.\./HEAD" \
	"$XL" -C work cat-file -t ../HEAD
refused "names with .. are not refs (heads/../../HEAD)" "not a valid object name heads/\.\./\.\./HEAD" \
	"$XL" -C work cat-file -t heads/../../HEAD
mkfifo work/.git/refs/heads/fifo
timeout 10 "$XL" -C work cat-file --batch-check <<<"fifo" >out 2>&1
rc=$?
[ $rc -ne 124 ] && ok "a FIFO among the refs does not hang a reader" ||
	not_ok "a FIFO among the refs does not hang a reader"
rm -f work/.git/refs/heads/fifo

# a broken ref is skipped, as Git skips it, and the next rule is tried
git -C work branch foo main~1
echo "garbage" >work/.git/refs/tags/foo
compare "a broken refs/tags/foo does not hide refs/heads/foo" -C work cat-file -p foo
rm -f work/.git/refs/tags/foo
git -C work update-ref CHERRY_PICK_HEAD main~1
compare "root refs such as CHERRY_PICK_HEAD resolve" -C work cat-file -t CHERRY_PICK_HEAD

# symlinked directories among the refs are not walked (no blow-up)
mkdir -p work/.git/refs/x
ln -s . work/.git/refs/x/a
ln -s . work/.git/refs/x/b
timeout 20 "$XL" -C work cat-file -p 'HEAD~1' >out 2>&1
[ $? -ne 124 ] && ok "symlink loops among the refs do not blow up" ||
	not_ok "symlink loops among the refs do not blow up"
rm -rf work/.git/refs/x

# a new pack appearing while a reader runs is picked up on a miss
git init -q --bare --object-format=sha256 live.git
git -C work push -q "$TRASH/live.git" main 2>/dev/null
new=$(cd work && echo four >>sub/dir/file && git commit -q -a -m four && git rev-parse HEAD)
{
	echo main
	sleep 1
	echo "$new"
} | {
	read -r line && echo "$line"
	git -C work push -q "$TRASH/live.git" main 2>/dev/null
	cat
} | "$XL" -C live.git cat-file --batch-check >actual
printf '%s commit\n' "$(git -C work rev-parse HEAD~1)" >expect
printf '%s commit\n' "$new" >>expect
cut -d' ' -f1,2 actual >actual2
same_file "a pack pushed while cat-file runs is found" expect actual2

test_done
