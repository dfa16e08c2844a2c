#!/usr/bin/python3
"""walk-pygit2.py GITDIR: walk HEAD's history with pygit2 (libgit2).

Prints the format described in walk-git.sh: every commit reachable from
HEAD, every tree of those commits with its entries, every blob with the
size of its content (read in full), then trees/blobs/commits counts.
"""
import sys

import pygit2
from walkfmt import emit, entry


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
            entries.append(entry(mode, kind, e.id.hex, name))
        trees[oid.hex] = entries

    emit(commits, trees, blobs)


main()
