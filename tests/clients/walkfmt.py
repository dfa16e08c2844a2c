"""walkfmt.py: the output format both Python walkers print (see walk-git.sh).

commits: hex -> (tree hex, [parent hex]); trees: hex -> [(raw name,
entry line)]; blobs: hex -> size.  Names are str here, whatever the
client's own type.
"""
import sys


def quote(name):
    """A raw tree entry name as walk-git.sh prints it: ASCII, \\ doubled."""
    out = []
    for b in name:
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b <= 0x7E:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def entry(mode, kind, hexname, name):
    """One tree entry: (sort key, line)."""
    return (name, "  %06o %s %s %s" % (mode, kind, hexname, quote(name)))


def emit(commits, trees, blobs):
    out = []
    for h in sorted(commits):
        tree, parents = commits[h]
        out.append("commit %s tree %s parents %s" % (h, tree, ",".join(parents) or "-"))
    for h in sorted(trees):
        out.append("tree " + h)
        out.extend(line for _, line in sorted(trees[h]))
    for h in sorted(blobs):
        out.append("blob %s size %d" % (h, blobs[h]))
    out.append("trees %d" % len(trees))
    out.append("blobs %d" % len(blobs))
    out.append("commits %d" % len(commits))
    sys.stdout.write("\n".join(out) + "\n")
