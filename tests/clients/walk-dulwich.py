#!/usr/bin/python3
"""walk-dulwich.py GITDIR: walk HEAD's history with dulwich.

Prints the format described in walk-git.sh: every commit reachable from
HEAD, every tree of those commits with its entries, every blob with the
size of its content (read in full), then trees/blobs/commits counts.
"""
import stat
import sys

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo
from walkfmt import emit, entry


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: walk-dulwich.py GITDIR")
    repo = Repo(sys.argv[1])
    store = repo.object_store
    head = repo.refs[b"HEAD"]  # follows the symbolic ref, packed-refs too
    obj = store[head]
    while obj.type_name == b"tag":
        obj = store[obj.object[1]]
    if not isinstance(obj, Commit):
        raise SystemExit("HEAD is not a commit")

    commits = {}  # hex -> (tree hex, [parent hex])
    todo = [obj.id]
    while todo:
        sha = todo.pop()
        if sha in commits:
            continue
        c = store[sha]
        if not isinstance(c, Commit):
            raise SystemExit("%s: not a commit" % sha.decode())
        commits[sha] = (c.tree, list(c.parents))
        todo.extend(c.parents)

    trees = {}  # hex -> [(raw name, line)]
    blobs = {}  # hex -> size
    todo = [t for t, _ in commits.values()]
    while todo:
        sha = todo.pop()
        if sha in trees:
            continue
        t = store[sha]
        if not isinstance(t, Tree):
            raise SystemExit("%s: not a tree" % sha.decode())
        entries = []
        for name, mode, hexsha in t.iteritems():
            if stat.S_ISDIR(mode):
                kind = "tree"
                todo.append(hexsha)
            elif mode & 0o170000 == 0o160000:
                kind = "commit"
            else:
                kind = "blob"
                if hexsha not in blobs:
                    b = store[hexsha]
                    if not isinstance(b, Blob):
                        raise SystemExit("%s: not a blob" % hexsha.decode())
                    blobs[hexsha] = len(b.as_raw_string())
            entries.append(entry(mode, kind, hexsha.decode(), name))
        trees[sha] = entries

    emit({h.decode(): (t.decode(), [p.decode() for p in ps]) for h, (t, ps) in commits.items()},
         {h.decode(): e for h, e in trees.items()},
         {h.decode(): n for h, n in blobs.items()})


main()
