#!/bin/sh
# gen-history.sh: write a deterministic `git fast-import` stream to stdout.
#
#   tests/gen-history.sh [--commits N] [--files N] [--big-blob-kib K] [--seed S]
#
# The same options give the same bytes on every machine (portable sh + any
# POSIX awk; the pseudo-random generator is an LCG computed in awk, not
# awk's rand(), whose sequence differs between awk implementations).
#
# The history, imported into a SHA-1 and a SHA-256 repository, gives twin
# repositories (tests/mk-twins.sh).  It contains:
#   - a linear history on refs/heads/main, files in nested directories (up
#     to 4 levels), a few modified per commit so that packing makes deltas;
#   - topic branches (refs/heads/topic/N) merged back with 2-parent merges,
#     octopus merges (4 or 5 parents; one brings in an unrelated root,
#     refs/heads/orphan, whose first commit has the empty tree);
#   - annotated tags of commits (v0.N, v1.0), of a tree (tree-tag), of a
#     blob (blob-tag), a tag of a tag (v1.0-outer), lightweight tags
#     (light/N, light-head, a non-ASCII one); an unmerged branch (side).
#     No notes: a notes tree is named by object names, so the SHA-1 and
#     SHA-256 imports of one stream would not be conversions of each other;
#   - a symlink (120000, also a dangling one), executables (100755), a mode
#     change without content change, an empty file, a deleted file and a
#     deleted directory, a rename;
#   - big blobs of K KiB of pseudo-random bytes (all 256 byte values), one
#     of them later modified in a few bytes (a delta against a big base);
#   - commit messages in UTF-8, one with "encoding ISO-8859-1" and Latin-1
#     bytes, an empty one, one without a final newline, one with CRLF;
#     non-ASCII author names; a few non-zero time zones;
#   - file names with spaces, a tab, a newline, a double quote, a backslash,
#     non-ASCII (UTF-8) bytes, and names that test tree sort order
#     ("foo", "foo.c", "foo-bar", "foo/").
# Sizes: the default makes about 570 objects (1 s); "--commits 10000
# --files 1000" about 130k (fast-import 10 s); "--commits 20000" 250k.
# fast-import cannot point a lightweight ref at a tree or a blob, nor write
# gpgsig or mergetag headers; tests/mk-twins.sh adds the refs.

set -eu

commits=36
files=24
bigkib=192
seed=1

usage() {
	echo "usage: $0 [--commits N] [--files N] [--big-blob-kib K] [--seed S]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--commits) [ $# -ge 2 ] || usage; commits=$2; shift 2 ;;
	--commits=*) commits=${1#*=}; shift ;;
	--files) [ $# -ge 2 ] || usage; files=$2; shift 2 ;;
	--files=*) files=${1#*=}; shift ;;
	--big-blob-kib) [ $# -ge 2 ] || usage; bigkib=$2; shift 2 ;;
	--big-blob-kib=*) bigkib=${1#*=}; shift ;;
	--seed) [ $# -ge 2 ] || usage; seed=$2; shift 2 ;;
	--seed=*) seed=${1#*=}; shift ;;
	-h|--help) usage ;;
	*) usage ;;
	esac
done
for v in "$commits" "$files" "$bigkib" "$seed"; do
	case $v in
	''|*[!0-9]*) echo "$0: not a non-negative integer: $v" >&2; exit 2 ;;
	esac
done
[ "$commits" -ge 12 ] || { echo "$0: --commits must be at least 12" >&2; exit 2; }
[ "$files" -ge 4 ] || { echo "$0: --files must be at least 4" >&2; exit 2; }

# Byte semantics everywhere: length() counts bytes, %c prints one byte.
LC_ALL=C
export LC_ALL

exec awk -v C="$commits" -v F="$files" -v K="$bigkib" -v SEED="$seed" '
# ---- pseudo-random numbers: 32-bit LCG (exact in doubles) ----
function rnd32() {
	rng = (1664525 * rng + 1013904223) % 4294967296
	return rng
}
function rnd(n) { return int(rnd32() / 65536) % n }

# ---- output helpers ----
function data(s) { printf "data %d\n%s\n", length(s), s }
function q(p,   r, i, c) {
	# C-style quoted path for fast-import (a loop: backslashes in gsub
	# replacements differ between awk implementations)
	r = ""
	for (i = 1; i <= length(p); i++) {
		c = substr(p, i, 1)
		if (c == "\\") c = "\\\\"
		else if (c == "\"") c = "\\\""
		else if (c == "\t") c = "\\t"
		else if (c == "\n") c = "\\n"
		r = r c
	}
	return "\"" r "\""
}
function tick() { now += 60 + rnd(3000); return now }
function tz() { return "+0000" }
function ident(who, tzs) {
	return who " " now " " tzs
}
function blob(s) {
	mark++
	printf "blob\nmark :%d\n", mark
	data(s)
	return mark
}
function bigblob(size, bseed, flip,   i, x, b) {
	# size bytes of LCG output; with flip, every 50000th byte is changed
	mark++
	printf "blob\nmark :%d\ndata %d\n", mark, size
	x = bseed
	for (i = 0; i < size; i++) {
		x = (1664525 * x + 1013904223) % 4294967296
		b = int(x / 16777216)
		if (flip && i % 50000 == 4321)
			b = (b + 1) % 256
		printf "%c", b
	}
	printf "\n"
	return mark
}

# ---- file contents ----
function word() { return W[rnd(NW)] }
function mkline(f,   s, n, j) {
	serial++
	s = "L" serial " " f ":"
	n = 3 + rnd(6)
	for (j = 0; j < n; j++)
		s = s " " word()
	return s
}
function initial(f,   s, n, j) {
	n = 12 + rnd(30)
	s = ""
	for (j = 0; j < n; j++)
		s = s mkline(f) "\n"
	return s
}
function modify(s, f,   n, a, k, j, r, out, op) {
	n = split(s, a, "\n")	# last element is empty (final newline)
	n--
	op = rnd(10)
	k = 1 + rnd(n > 0 ? n : 1)
	out = ""
	for (j = 1; j <= n; j++) {
		if (j == k) {
			if (op < 6) {		# replace a line
				out = out mkline(f) "\n"
				continue
			} else if (op < 9) {	# insert a line
				out = out mkline(f) "\n"
			} else if (n > 8) {	# delete a line
				continue
			}
		}
		out = out a[j] "\n"
	}
	if (n == 0 || (op == 9 && n <= 8))
		out = out mkline(f) "\n"
	if (n > 120)	# keep files from growing without bound
		out = substr(out, index(out, "\n") + 1)
	return out
}

function mkpath(i,   d, p) {
	d = 1 + i % 4
	p = "src" (i % 7)
	if (d >= 2) p = p "/mod" (int(i / 7) % 5)
	if (d >= 3) p = p "/part" (int(i / 35) % 4)
	if (d >= 4) p = p "/deep" (int(i / 140) % 3)
	return p "/file" i (i % 9 == 0 ? ".c" : ".txt")
}

# ---- commits ----
# commit(ref, msg, from, merges, body): body is the file-change lines.
function commit(ref, msg, from, merges, body, enc, author,   m) {
	tick()
	mark++
	m = mark
	printf "commit %s\nmark :%d\n", ref, m
	if (author != "")
		printf "author %s\n", ident(author, tz())
	printf "committer %s\n", ident(COMMITTER, ctz != "" ? ctz : tz())
	if (enc != "")
		printf "encoding %s\n", enc
	data(msg)
	if (from != "")
		printf "from %s\n", from
	if (merges != "")
		printf "%s", merges
	printf "%s\n", body
	ctz = ""
	return m
}

function message(i,   n, s) {
	n = rnd(8)
	s = "Change " i ": " word() " " word()
	if (n == 0)
		s = s " \342\200\224 na\303\257ve caf\303\251 \342\234\223"
	if (n == 1)
		s = s " \346\227\245\346\234\254\350\252\236"
	s = s "\n"
	if (n >= 5)
		s = s "\nBody of change " i ".\n" word() " " word() " " word() "\n"
	return s
}

# Modify a few of the base files on main; returns the M lines.
# (A file is changed at most once per commit: a blob written but not
# used would be unreachable, and repack would drop it.)
function main_changes(   n, j, f, b, mk, seen) {
	n = 1 + rnd(3)
	b = ""
	seen = " "
	for (j = 0; j < n; j++) {
		f = rnd(F)
		if (index(seen, " " f " ")) continue
		seen = seen f " "
		cont[f] = modify(cont[f], f)
		mk = blob(cont[f])
		fmark[f] = mk
		b = b "M " fmode[f] " :" mk " " q(path[f]) "\n"
	}
	return b
}

# A topic branch forked from main head.  Its file versions are kept in
# tcont/tmark and listed in tlist, applied to main by apply_topic().
function topic(nm, ncommits,   ref, c, j, n, f, s, mk, b, from, key, seen) {
	ref = "refs/heads/topic/" nm
	from = ":" head
	tlist[nm] = ""
	for (c = 0; c < ncommits; c++) {
		b = ""
		n = 1 + rnd(2)
		seen = " "
		for (j = 0; j < n; j++) {
			f = rnd(F)
			if (index(seen, " " f " ")) continue
			seen = seen f " "
			key = nm SUBSEP f
			s = (key in tcont) ? tcont[key] : cont[f]
			s = modify(s, f)
			tcont[key] = s
			mk = blob(s)
			tmark[key] = mk
			tlist[nm] = tlist[nm] " " f
			b = b "M " fmode[f] " :" mk " " q(path[f]) "\n"
		}
		if (c == 0) {
			s = "Topic " nm " notes\n" word() " " word() "\n"
			mk = blob(s)
			b = b "M 100644 :" mk " " q("topics/t" nm "/NOTES.md") "\n"
			tfiles[nm] = "M 100644 :" mk " " q("topics/t" nm "/NOTES.md") "\n"
		}
		tlast[nm] = commit(ref, "Topic " nm " step " c "\n", from, "", b)
		from = ""
	}
	return tlast[nm]
}

# Main takes the topic version of each file the topic touched; returns the
# M lines for the merge commit.
function apply_topic(nm,   n, a, j, key, b) {
	b = tfiles[nm]
	n = split(tlist[nm], a, " ")
	for (j = 1; j <= n; j++) {
		key = nm SUBSEP a[j]
		if (!(key in tcont))
			continue	# listed twice, already applied
		cont[a[j]] = tcont[key]
		fmark[a[j]] = tmark[key]
		b = b "M " fmode[a[j]] " :" tmark[key] " " q(path[a[j]]) "\n"
		delete tcont[key]
		delete tmark[key]
	}
	delete tlist[nm]
	delete tfiles[nm]
	return b
}

BEGIN {
	rng = SEED + 0
	now = 1112911993
	mark = 0
	serial = 0
	COMMITTER = "C O Mitter <committer@example.com>"
	NW = split("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega fix add remove refactor parse buffer index pack tree blob commit tag object name hash table cache mount read write", W, " ")
	# W[1..NW]; make rnd(NW) index 0..NW-1 valid
	W[0] = "zero"

	big = K * 1024

	# ---- root commit: base files plus the special ones ----
	b = ""
	for (f = 0; f < F; f++) {
		path[f] = mkpath(f)
		fmode[f] = (f % 11 == 5) ? "100755" : "100644"
		cont[f] = initial(f)
		fmark[f] = blob(cont[f])
		b = b "M " fmode[f] " :" fmark[f] " " q(path[f]) "\n"
	}
	b = b "M 100644 :" blob("# Test repository\n\nGenerated by gen-history.sh.\n") " README.md\n"
	b = b "M 120000 :" blob(path[0]) " " q("link-to-file0") "\n"
	b = b "M 120000 :" blob("src0") " " q("link-to-dir") "\n"
	b = b "M 120000 :" blob("no/such/target") " " q("dangling link") "\n"
	b = b "M 100755 :" blob("#!/bin/sh\necho hello\n") " " q("bin/run.sh") "\n"
	b = b "M 100644 :" blob("") " " q("empty") "\n"
	b = b "M 100644 :" blob("x\n") " " q("empty-dir-sibling/.keep") "\n"
	b = b "M 100644 :" blob("spaces\n") " " q("name with spaces.txt") "\n"
	b = b "M 100644 :" blob("tab\n") " " q("odd/tab\there") "\n"
	b = b "M 100644 :" blob("newline\n") " " q("odd/new\nline") "\n"
	b = b "M 100644 :" blob("quote\n") " " q("odd/quote\"d") "\n"
	b = b "M 100644 :" blob("backslash\n") " " q("odd/back\\slash") "\n"
	b = b "M 100644 :" blob("caf\303\251\n") " " q("unicode/caf\303\251.txt") "\n"
	b = b "M 100644 :" blob("nihongo\n") " " q("unicode/\346\227\245\346\234\254\350\252\236/\343\203\225\343\202\241\343\202\244\343\203\253.txt") "\n"
	b = b "M 100644 :" blob("sort foo\n") " " q("sort/foo.c") "\n"
	b = b "M 100644 :" blob("sort foo-bar\n") " " q("sort/foo-bar") "\n"
	b = b "M 100644 :" blob("sort foo dir\n") " " q("sort/foo/x") "\n"
	b = b "M 100644 :" blob("sort foo0\n") " " q("sort/foo0") "\n"
	b = b "M 100644 :" blob("doomed\n") " " q("to-be-deleted.txt") "\n"
	b = b "M 100644 :" blob("doomed dir\n") " " q("doomed-dir/a/b.txt") "\n"
	b = b "M 100644 :" blob("rename me\n") " " q("old name.txt") "\n"
	bigmark1 = bigblob(big, SEED + 101, 0)
	b = b "M 100644 :" bigmark1 " " q("big/random1.bin") "\n"
	head = commit("refs/heads/main", "Initial commit\n\nWith UTF-8: \303\274ber, \316\273, \360\237\230\200.\n", "", "", b, "", "J\303\266rg D\305\223 <jorg@example.com>")
	first = head

	# ---- orphan root: empty tree, then one file ----
	orphan = commit("refs/heads/orphan", "Orphan root with the empty tree\n", "", "", "deleteall\n")
	orphan = commit("refs/heads/orphan", "Orphan file\n", "", "", "M 100644 :" blob("orphan\n") " orphan.txt\n")

	ntopic = 0
	octo = 0
	for (i = 2; i <= C; i++) {
		b = main_changes()
		msg = message(i)
		enc = ""
		author = ""
		merges = ""
		if (i == 3) {
			enc = "ISO-8859-1"
			msg = "Caf\351 cr\350me br\373l\351e (Latin-1)\n\nGr\374\337e aus M\374nchen.\n"
			author = "Fran\347ois M\374ller <fm@example.com>"
		}
		if (i == 4) msg = ""
		if (i == 5) msg = "No final newline"
		if (i == 6) msg = "CRLF message\r\n\r\nbody line\r\n"
		if (i == 7) ctz = "+0530"
		if (i == 8) ctz = "-0800"
		if (i == 9) author = "Lee \345\276\220 <lee@example.com>"
		if (i == int(C * 0.3)) {
			b = b "D " q("to-be-deleted.txt") "\n"
			b = b "D doomed-dir\n"
			b = b "R " q("old name.txt") " " q("new name.txt") "\n"
		}
		if (i == int(C * 0.4)) {
			# mode change only: same blob, 100644 -> 100755
			fmode[1] = "100755"
			b = b "M 100755 :" fmark[1] " " q(path[1]) "\n"
		}
		if (i == int(C * 0.5)) {
			bigmark2 = bigblob(big / 2 + 333, SEED + 202, 0)
			b = b "M 100644 :" bigmark2 " " q("big/random2.bin") "\n"
		}
		if (i == int(C * 0.7)) {
			bigmark3 = bigblob(big, SEED + 101, 1)
			b = b "M 100644 :" bigmark3 " " q("big/random1.bin") "\n"
		}
		# merges: every 8th commit merges topic branches made just before
		if (i % 8 == 0) {
			ntopic++
			nb = 1
			if (ntopic % 3 == 0) nb = 3
			base = head
			for (k = 0; k < nb; k++) {
				tn[k] = ntopic "" (nb > 1 ? "-" k : "")
				merges = merges "merge :" topic(tn[k], 1 + rnd(3)) "\n"
			}
			# advance main so that the merge has a real fork point
			head = commit("refs/heads/main", message(i), "", "", b)
			b = ""
			for (k = 0; k < nb; k++)
				b = b apply_topic(tn[k])
			if (nb > 1 && octo == 0) {
				# the first octopus also merges the unrelated orphan root
				octo = 1
				merges = merges "merge :" orphan "\n"
				b = b "M 100644 :" blob("orphan\n") " orphan.txt\n"
			}
			msg = "Merge " (nb > 1 ? "octopus " : "") "topic " ntopic "\n"
		}
		head = commit("refs/heads/main", msg, merges != "" ? ":" head : "", merges, b, enc, author)
		main[i] = head
		if (i % 50 == 0) {
			tick()
			mark++
			printf "tag v0.%d\nmark :%d\nfrom :%d\ntagger %s\n", i / 50, mark, head, ident(COMMITTER, tz())
			data("Release 0." (i / 50) "\n")
		}
		if (i % 25 == 0)
			printf "reset refs/tags/light/%d\nfrom :%d\n\n", i, head
	}

	# ---- tags ----
	tick()
	v10 = ++mark
	printf "tag v1.0\nmark :%d\nfrom :%d\ntagger %s\n", v10, main[C - 2], ident("T \303\204gger <tagger@example.com>", tz())
	data("Version 1.0 \342\234\250\n\nAnnotated tag of a commit.\n")
	tick()
	printf "tag v1.0-outer\nmark :%d\nfrom :%d\ntagger %s\n", ++mark, v10, ident(COMMITTER, tz())
	data("A tag of the tag v1.0\n")
	tick()
	printf "tag blob-tag\nmark :%d\nfrom :%d\ntagger %s\n", ++mark, bigmark1, ident(COMMITTER, tz())
	data("A tag of a blob (big/random1.bin)\n")
	printf "reset refs/tags/light-head\nfrom :%d\n\n", head
	printf "reset refs/tags/l\303\244cht\nfrom :%d\n\n", main[C - 1]

	# unmerged side branch
	head = main[C - 3]
	b = main_changes()
	commit("refs/heads/side", "Side work, never merged\n", ":" main[C - 3], "", b "M 100644 :" blob("side\n") " side.txt\n")

	# A tag of a tree: fast-import has no marks for trees, so write the
	# refs out (checkpoint) and name the tree through a revision expression.
	printf "checkpoint\n\n"
	tick()
	printf "tag tree-tag\nfrom refs/heads/main^{tree}\ntagger %s\n", ident(COMMITTER, tz())
	data("A tag of a tree\n")
	printf "done\n"
}' </dev/null
