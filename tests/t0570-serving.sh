#!/usr/bin/env bash
# t0570-serving.sh: serving SHA-1-only clients from the mount, by the
# recipes in the README ("Serving SHA-1 clients").
#
#   - git daemon --base-path=MNT: stock git and dulwich clone
#     git://host/sha1, and fetch a new commit once the mount names it;
#   - smart HTTP: git http-backend behind lighttpd (a Debian web server,
#     started here): the same over http://host/git/sha1;
#   - git push --mirror from MNT/sha1 to a SHA-1 bare repository (a
#     mirror on a SHA-1-only forge), twice: the second push sends only
#     the new commit's objects.
#
# The oracle is the SHA-1 twin: the same fast-import stream imported into
# a SHA-1 repository.  Every clone must hold exactly its refs and objects.
. "$(dirname "$0")/lib.sh"

require_fuse

PY=${XL_PYTHON:-/usr/bin/python3}
have_dulwich=0
"$PY" -c 'import dulwich' 2>/dev/null && have_dulwich=1
have_lighttpd=0
command -v lighttpd >/dev/null 2>&1 && have_lighttpd=1
backend=$(git --exec-path)/git-http-backend

# a port nobody listens on (the kernel's choice, let go at once)
free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

R=$TRASH/r.git
T=$TRASH/twin.git
git init -q --bare --object-format=sha256 "$R"
git init -q --bare "$T"
"$XL_TOP/tests/gen-history.sh" --commits 200 --files 30 >"$TRASH/stream.fi"
git -C "$R" fast-import --quiet <"$TRASH/stream.fi"
git -C "$T" fast-import --quiet <"$TRASH/stream.fi"
git -C "$R" repack -adq
for g in "$R" "$T"; do
	git -C "$g" symbolic-ref HEAD refs/heads/main
done

# what a clone of the twin holds: its refs and every object
snapshot() {
	git -C "$1" for-each-ref --format='%(objectname) %(refname)' >"$2.refs"
	git -C "$1" cat-file --batch-all-objects --batch-check >"$2.objects"
}
snapshot "$T" "$TRASH/twin"

# same_clone DESC GITDIR: holds the twin's refs and objects, and fsck passes
same_clone() {
	snapshot "$2" "$TRASH/got"
	same_file "$1: the twin's refs" "$TRASH/twin.refs" "$TRASH/got.refs"
	same_file "$1: the twin's objects" "$TRASH/twin.objects" "$TRASH/got.objects"
	expect "$1: git fsck --full" git -C "$2" fsck --full --no-progress
}

# dulwich_mirror URL GITDIR: fetch every ref of URL into GITDIR (a bare
# repository, made if need be) under its own name, as a mirror holds it
dulwich_mirror() {
	"$PY" - "$1" "$2" <<-'EOF'
	import os, sys
	from dulwich.client import get_transport_and_path
	from dulwich.repo import Repo
	url, path = sys.argv[1], sys.argv[2]
	r = Repo(path) if os.path.isdir(path) else Repo.init_bare(path, mkdir=True)
	client, where = get_transport_and_path(url)
	res = client.fetch(where, r)
	for name, sha in res.refs.items():
	    if name.startswith(b"refs/") and not name.endswith(b"^{}") and sha:
	        r.refs[name] = sha
	for name, target in (res.symrefs or {}).items():
	    if name == b"HEAD":
	        r.refs.set_symbolic_ref(b"HEAD", target)
	EOF
}

# one more commit in both: a file at the top (a blob, a tree, a commit)
commit_more() {
	for g in "$R" "$T"; do
		blob=$(echo "more $1" | git -C "$g" hash-object -w --stdin)
		tree=$( (git -C "$g" ls-tree main | grep -v '	more.txt$'
			 printf '100644 blob %s\tmore.txt\n' "$blob") | git -C "$g" mktree)
		c=$(echo "more $1" | git -C "$g" commit-tree "$tree" -p main)
		git -C "$g" update-ref refs/heads/main "$c"
	done
	snapshot "$T" "$TRASH/twin"
	want=$(git -C "$T" rev-parse main)
	# the mount names it within seconds (the updater polls every second)
	for _ in $(seq 100); do
		[ "$(git --git-dir="$M/sha1" rev-parse main 2>/dev/null)" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

M=$TRASH/mnt
xl_mount "$R" "$M" || { test_done; exit 1; }
same_clone "the mount itself (sha1/)" "$M/sha1"

# ---- git daemon ---------------------------------------------------------------
gport=$(free_port)
git daemon --base-path="$M" --export-all --reuseaddr --listen=127.0.0.1 \
	--port="$gport" --pid-file="$TRASH/daemon.pid" --detach \
	--informative-errors 2>"$TRASH/daemon.err"
for _ in $(seq 50); do
	git ls-remote "git://127.0.0.1:$gport/sha1" >/dev/null 2>&1 && break
	sleep 0.1
done
trap 'kill $(cat "$TRASH/daemon.pid" 2>/dev/null) $(cat "$TRASH/lighttpd.pid" 2>/dev/null) 2>/dev/null; cleanup_trash' EXIT

# clone_both HOW URL GIT DULWICH: stock git and dulwich mirror URL into
# the repositories GIT and DULWICH, which must then be the twin
clone_both() {
	expect "git clone --mirror $2" git clone -q --mirror "$2" "$3"
	same_clone "$1, stock git" "$3"
	if [ $have_dulwich = 1 ]; then
		expect "dulwich mirrors $2" dulwich_mirror "$2" "$4"
		same_clone "$1, dulwich" "$4"
	else
		missing_tool "dulwich mirrors $2" "no dulwich for $PY (Debian: python3-dulwich)"
	fi
}

clone_both git:// "git://127.0.0.1:$gport/sha1" "$TRASH/g1.git" "$TRASH/d1.git"

# ---- smart HTTP: git http-backend behind lighttpd -----------------------------
if [ $have_lighttpd = 1 ]; then
	hport=$(free_port)
	mkdir -p "$TRASH/www"
	cat >"$TRASH/lighttpd.conf" <<-EOF
	server.modules = ("mod_alias", "mod_cgi", "mod_setenv")
	server.port = $hport
	server.bind = "127.0.0.1"
	server.document-root = "$TRASH/www"
	server.errorlog = "$TRASH/lighttpd.err"
	server.pid-file = "$TRASH/lighttpd.pid"
	alias.url = ("/git/" => "$backend/")
	\$HTTP["url"] =~ "^/git/" {
		cgi.assign = ("" => "")
		setenv.add-environment = ("GIT_PROJECT_ROOT" => "$M", "GIT_HTTP_EXPORT_ALL" => "1")
	}
	EOF
	expect "lighttpd starts" lighttpd -f "$TRASH/lighttpd.conf"
	for _ in $(seq 50); do
		git ls-remote "http://127.0.0.1:$hport/git/sha1" >/dev/null 2>&1 && break
		sleep 0.1
	done
	clone_both "smart HTTP" "http://127.0.0.1:$hport/git/sha1" \
		"$TRASH/h1.git" "$TRASH/d2.git"
else
	missing_tool "smart HTTP through lighttpd" "no lighttpd (Debian: lighttpd)"
fi

# ---- push --mirror to a SHA-1 forge's repository --------------------------------
F=$TRASH/forge.git
git init -q --bare "$F"
expect "git push --mirror from sha1/ to a SHA-1 repository" \
	git --git-dir="$M/sha1" push -q --mirror "$F"
same_clone "the mirror after the first push" "$F"

# ---- a new commit: fetched incrementally, pushed alone ---------------------------
expect "the mount names a new commit within seconds" commit_more 1
expect "git fetch over git:// brings it" \
	git -C "$TRASH/g1.git" fetch -q origin
same_clone "git://, after the fetch" "$TRASH/g1.git"
if [ $have_lighttpd = 1 ]; then
	expect "git fetch over HTTP brings it" git -C "$TRASH/h1.git" fetch -q origin
	same_clone "smart HTTP, after the fetch" "$TRASH/h1.git"
fi
if [ $have_dulwich = 1 ]; then
	expect "dulwich fetches it over git://" dulwich_mirror \
		"git://127.0.0.1:$gport/sha1" "$TRASH/d1.git"
	same_clone "git://, dulwich, after the fetch" "$TRASH/d1.git"
fi
git --git-dir="$M/sha1" push --mirror --progress "$F" 2>"$TRASH/push2.err"
expect "the second push succeeds" test $? -eq 0
expect "and sends only the new commit's 3 objects ($(grep -o 'Total [0-9]*' "$TRASH/push2.err"))" \
	grep -q 'Total 3 ' "$TRASH/push2.err"
same_clone "the mirror after the second push" "$F"

xl_umount "$M"
test_done
