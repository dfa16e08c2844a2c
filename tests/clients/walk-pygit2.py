#!/usr/bin/python3
"""walk-pygit2.py GITDIR: walk HEAD's history with pygit2 (libgit2).

Prints the format described in walk-git.sh: every commit reachable from
HEAD, every tree of those commits with its entries, every blob with the
size of its content (read in full), then trees/blobs/commits counts.
"""
import sys

import pygit2


def quote(name):
    out = []
    for b in name:
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b <= 0x7E:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: walk-pygit2.py GITDIR")
    repo = pygit2.Repository(sys.argv[1])
    head = repo.revparse_single("HEAD").peel(pygit2.Commit)

    commits = {}  # hex -> (tree hex, [parent hex])
    todo = [head.id]
    while todo:
        oid = todo.pop()
        if oid.hex in commits:
            continue
        c = repo[oid]
        if c.type != pygit2.GIT_OBJ_COMMIT:
            raise SystemExit("%s: not a commit" % oid.hex)
        commits[oid.hex] = (c.tree_id.hex, [p.hex for p in c.parent_ids])
        todo.extend(c.parent_ids)

    trees = {}  # hex -> [(raw name, line)]
    blobs = {}  # hex -> size
    todo = [pygit2.Oid(hex=t) for t, _ in commits.values()]
    while todo:
        oid = todo.pop()
        if oid.hex in trees:
            continue
        t = repo[oid]
        if t.type != pygit2.GIT_OBJ_TREE:
            raise SystemExit("%s: not a tree" % oid.hex)
        entries = []
        for e in t:
            mode = e.filemode
            if mode == pygit2.GIT_FILEMODE_COMMIT:
                kind = "commit"
            elif mode == pygit2.GIT_FILEMODE_TREE:
                kind = "tree"
                todo.append(e.id)
            else:
                kind = "blob"
                if e.id.hex not in blobs:
                    blobs[e.id.hex] = len(repo[e.id].data)
            name = e.raw_name
            entries.append((name, "  %06o %s %s %s" % (mode, kind, e.id.hex, quote(name))))
        trees[oid.hex] = sorted(entries)

    out = []
    for h in sorted(commits):
        tree, parents = commits[h]
        out.append("commit %s tree %s parents %s" % (h, tree, ",".join(parents) or "-"))
    for h in sorted(trees):
        out.append("tree " + h)
        out.extend(line for _, line in trees[h])
    for h in sorted(blobs):
        out.append("blob %s size %d" % (h, blobs[h]))
    out.append("trees %d" % len(trees))
    out.append("blobs %d" % len(blobs))
    out.append("commits %d" % len(commits))
    sys.stdout.write("\n".join(out) + "\n")


main()
