#!/bin/sh
# run.sh: run one client's history walker on a Git directory.
#
#   tests/clients/run.sh CLIENT GITDIR
#   tests/clients/run.sh --list          the clients, one a line
#
# CLIENT is git (the reference, walk-git.sh), pygit2, dulwich, jgit or
# isogit.  Every walker prints the format described in walk-git.sh on
# standard output, so outputs compare with cmp.  Exit status: the
# walker's (0 on success), or 77 when the client is not installed here,
# with one line on stderr saying what is missing (.ci/install-deps
# installs them all).
#
# jgit: Walk.java is compiled against Debian's libjgit-java on first use,
# into $XL_CLIENTS_BUILD (default tests/clients/.build), and again only
# when Walk.java or the class path changes.  XL_JGIT_CLASSPATH overrides
# the jars; XL_PYTHON the interpreter for pygit2 and dulwich (default
# /usr/bin/python3, Debian's, which has the python3-* modules).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
clients="git pygit2 dulwich jgit isogit"

usage() {
	echo "usage: $0 CLIENT GITDIR   (CLIENT: $clients)" >&2
	exit 2
}

missing() {
	echo "run.sh: $client is not installed: $*" >&2
	exit 77
}

if [ "${1:-}" = --list ]; then
	for c in $clients; do echo "$c"; done
	exit 0
fi
[ $# -eq 2 ] || usage
client=$1
gitdir=$2
[ -d "$gitdir" ] || { echo "run.sh: not a directory: $gitdir" >&2; exit 2; }

python=${XL_PYTHON:-/usr/bin/python3}

case $client in
git)
	command -v git >/dev/null 2>&1 || missing "no git"
	command -v perl >/dev/null 2>&1 || missing "no perl"
	exec "$here/walk-git.sh" "$gitdir"
	;;
pygit2 | dulwich)
	[ -x "$python" ] || missing "no $python"
	"$python" -c "import $client" 2>/dev/null || missing "$python cannot import $client (Debian: python3-$client)"
	exec "$python" "$here/walk-$client.py" "$gitdir"
	;;
jgit)
	command -v java >/dev/null 2>&1 || missing "no java (Debian: default-jdk-headless)"
	command -v javac >/dev/null 2>&1 || missing "no javac (Debian: default-jdk-headless)"
	# org.eclipse.jgit.jar's manifest names JavaEWAH.jar, but Debian
	# ships javaewah.jar: list the jars ourselves.  slf4j-nop keeps
	# SLF4J's "no binding" warning off stderr.
	j=/usr/share/java
	cp=${XL_JGIT_CLASSPATH:-$j/org.eclipse.jgit.jar:$j/slf4j-api.jar:$j/slf4j-nop.jar:$j/javaewah.jar}
	old_ifs=$IFS
	IFS=:
	for jar in $cp; do
		[ -f "$jar" ] || { IFS=$old_ifs; missing "no $jar (Debian: libjgit-java)"; }
	done
	IFS=$old_ifs
	build=${XL_CLIENTS_BUILD:-$here/.build}/jgit
	stamp="$(cksum <"$here/Walk.java") $cp $(javac -version 2>&1)"
	if [ ! -f "$build/Walk.class" ] || [ "$(cat "$build/stamp" 2>/dev/null)" != "$stamp" ]; then
		mkdir -p "$build"
		# compile aside and rename, so that parallel runs never see a
		# half-written class
		tmp=$(mktemp -d "$build/tmp.XXXXXX")
		if ! javac -nowarn -encoding UTF-8 -d "$tmp" -cp "$cp" "$here/Walk.java" >&2; then
			rm -rf "$tmp"
			echo "run.sh: javac failed" >&2
			exit 1
		fi
		printf '%s\n' "$stamp" >"$tmp/stamp"
		for f in "$tmp"/*.class; do mv -f "$f" "$build/"; done
		mv -f "$tmp/stamp" "$build/stamp"
		rm -rf "$tmp"
	fi
	exec java -Xshare:auto -cp "$build:$cp" Walk "$gitdir"
	;;
isogit)
	command -v node >/dev/null 2>&1 || missing "no node (Debian: nodejs)"
	[ -f "$here/node_modules/isomorphic-git/package.json" ] ||
		missing "no tests/clients/node_modules (npm ci --prefix tests/clients)"
	exec node "$here/walk-isogit.js" "$gitdir"
	;;
*)
	usage
	;;
esac
