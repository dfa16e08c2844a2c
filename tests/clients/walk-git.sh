#!/bin/sh
# walk-git.sh: the reference walk, made with stock git.
#
#   tests/clients/walk-git.sh GITDIR
#
# GITDIR is a Git directory (a bare repository such as MNT/sha1).  Every
# walker in this directory prints the same thing for the same repository,
# so the output of a client on the mount can be compared with this one on
# the SHA-1 twin.  The format (all of it sorted, so no walk order shows):
#
#   commit <hex> tree <hex> parents <hex>,<hex>|-   every commit reachable
#                                    from HEAD through all parents, by name;
#                                    parents in the commit's own order
#   tree <hex>                       every tree of those commits, recursively,
#                                    each once, by name, followed by
#     <mode> <type> <hex> <name>     its entries, by name (bytewise); mode as
#                                    6 octal digits (040000, 100644, 100755,
#                                    120000, 160000); type blob, tree or
#                                    commit (a gitlink: not read)
#   blob <hex> size <N>              every blob of those trees, by name; the
#                                    other walkers read the whole content
#   trees <N>
#   blobs <N>
#   commits <N>                      always the last line
#
# Names are printed with "\" as "\\" and every byte outside 0x20-0x7e as
# \xNN (lowercase hex), so the output is ASCII and one entry is one line.
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 GITDIR" >&2
	exit 2
fi
GIT_DIR=$1
GIT_NO_REPLACE_OBJECTS=1
LC_ALL=C
export GIT_DIR GIT_NO_REPLACE_OBJECTS LC_ALL
unset GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_COMMON_DIR 2>/dev/null || true

tmp=$(mktemp -d "${TMPDIR:-/tmp}/walk-git.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

git rev-list --no-commit-header --format='%H %T %P' HEAD >"$tmp/commits"
sort "$tmp/commits" | awk '{
	p = ""
	for (i = 3; i <= NF; i++) p = p (i > 3 ? "," : "") $i
	print "commit " $1 " tree " $2 " parents " (p == "" ? "-" : p)
}'

# every object reachable from HEAD (rev-list does not follow gitlinks)
git rev-list --objects HEAD >"$tmp/reachable"
cut -d' ' -f1 "$tmp/reachable" |
	git cat-file --batch-check='%(objecttype) %(objectname) %(objectsize)' >"$tmp/types"
if grep -q ' missing$' "$tmp/types"; then
	echo "walk-git.sh: missing objects: $(grep ' missing$' "$tmp/types" | head -3 | tr '\n' ' ')" >&2
	exit 1
fi
sort -k2,2 "$tmp/types" >"$tmp/objects"

# every tree's entries, from one cat-file (a process per tree is slow)
awk '$1 == "tree" { print $2 }' "$tmp/objects" |
	git cat-file --batch | perl -e '
		binmode STDIN;
		while (defined(my $hdr = <STDIN>)) {
			my ($hex, $type, $size) = $hdr =~ /\A(\S+) (\S+) (\d+)\n\z/
				or die "cat-file: $hdr";
			$type eq "tree" or die "$hex: not a tree but a $type\n";
			read(STDIN, my $c, $size + 1) == $size + 1 or die "$hex: short read\n";
			my $hl = length($hex) / 2;
			my @e;
			while ($c =~ /\G([0-7]+) ([^\0]*)\0(.{$hl})/gcs) {
				my ($mode, $name, $id) = (oct($1), $2, unpack("H*", $3));
				my $kind = ($mode & 0170000) == 0040000 ? "tree"
					: ($mode & 0170000) == 0160000 ? "commit" : "blob";
				(my $q = $name) =~ s/\\/\\\\/g;
				$q =~ s/([^\x20-\x7e\\])/sprintf("\\x%02x", ord($1))/ge;
				push @e, [$name, sprintf("  %06o %s %s %s\n", $mode, $kind, $id, $q)];
			}
			(pos($c) // 0) == $size or die "$hex: bad tree\n";
			print "tree $hex\n", map { $_->[1] } sort { $a->[0] cmp $b->[0] } @e;
		}'
awk '$1 == "blob" { print "blob " $2 " size " $3 }' "$tmp/objects"
echo "trees $(awk '$1 == "tree"' "$tmp/objects" | wc -l | tr -d ' ')"
echo "blobs $(awk '$1 == "blob"' "$tmp/objects" | wc -l | tr -d ' ')"
echo "commits $(wc -l <"$tmp/commits" | tr -d ' ')"
