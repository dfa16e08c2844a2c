#!/usr/bin/env python3
"""hostile.py: objects of hostile shapes for the t05xx tests.

    hostile.py deep-tree N REPO     a commit whose tree is N levels deep
    hostile.py wide-merge N REPO    a commit with N parents (N commits)
    hostile.py tag-chain N REPO     a tag of a tag of ... (N tags) of a commit
    hostile.py loose-huge REPO      a loose blob declaring 2^40 bytes
    hostile.py loose-bomb REPO      a loose blob declaring 5 bytes that
                                    inflates to 100 MiB

The pack kinds write one pack of the objects into REPO (a bare SHA-256
repository) with `git index-pack`, and print two names: the SHA-256 name
of the object a ref should point at, and the SHA-1 name upstream Git
gives it, worked out here from the SHA-1 forms (a second computation of
the same names, independent of xlatefs).  The loose kinds print the
SHA-256 name of the file they wrote.
"""
import hashlib
import os
import struct
import subprocess
import sys
import zlib

TYPES = {b'commit': 1, b'tree': 2, b'blob': 3, b'tag': 4}
IDENT = b'A U Thor <author@example.com> 1112354055 +0200'


def name(algo, kind, body):
    return algo(b'%s %d\0' % (kind, len(body)) + body).digest()


def stored(body):
    """A zlib stream of stored blocks: zlib.compress() sets up a deflate
    state for each call, which costs seconds over 100,000 objects."""
    out = [b'\x78\x01']
    for i in range(0, max(len(body), 1), 65535):
        part = body[i:i + 65535]
        last = 1 if i + 65535 >= len(body) else 0
        out.append(bytes([last]) + struct.pack('<HH', len(part), len(part) ^ 0xffff) + part)
    out.append(struct.pack('>I', zlib.adler32(body)))
    return b''.join(out)


class Objects:
    """Objects in both forms: SHA-256 for the pack, SHA-1 for the oracle."""

    def __init__(self):
        self.entries = []

    def add(self, kind, make):
        """make(hexname) gives the body with names in one algorithm's hex."""
        b256 = make(256)
        b1 = make(1)
        o256 = name(hashlib.sha256, kind, b256)
        o1 = name(hashlib.sha1, kind, b1)
        self.entries.append((kind, b256))
        return o256, o1

    def write_pack(self, repo):
        out = [b'PACK', struct.pack('>II', 2, len(self.entries))]
        for kind, body in self.entries:
            size = len(body)
            c = TYPES[kind] << 4 | (size & 15)
            size >>= 4
            hdr = bytearray()
            while size:
                hdr.append(c | 0x80)
                c = size & 0x7f
                size >>= 7
            hdr.append(c)
            out.append(bytes(hdr) + stored(body))
        data = b''.join(out)
        data += hashlib.sha256(data).digest()
        path = os.path.abspath(os.path.join(repo, 'objects', 'pack',
                                            'tmp-hostile.pack'))
        with open(path, 'wb') as f:
            f.write(data)
        # outside any repository: inside one, index-pack looks every
        # object up first (its collision check), which takes minutes here
        env = dict(os.environ)
        env.pop('GIT_DIR', None)
        subprocess.run(['git', 'index-pack', '--object-format=sha256', path],
                       check=True, stdout=subprocess.DEVNULL, cwd='/', env=env)
        # a pack is named by its trailer
        for ext in ('pack', 'idx'):
            os.rename(os.path.join(repo, 'objects', 'pack', 'tmp-hostile.' + ext),
                      os.path.join(repo, 'objects', 'pack',
                                   'pack-%s.%s' % (data[-32:].hex(), ext)))


def blob_tree(objs):
    blob = objs.add(b'blob', lambda a: b'leaf\n')
    return objs.add(b'tree', lambda a: b'100644 f\0' +
                    (blob[0] if a == 256 else blob[1]))


def commit(objs, tree, parents, msg):
    def make(a):
        pick = (lambda p: p[0].hex()) if a == 256 else (lambda p: p[1].hex())
        lines = [b'tree ' + pick(tree).encode()]
        lines += [b'parent ' + pick(p).encode() for p in parents]
        lines += [b'author ' + IDENT, b'committer ' + IDENT, b'', msg]
        return b'\n'.join(lines) + b'\n'
    return objs.add(b'commit', make)


def deep_tree(n, objs):
    t = blob_tree(objs)
    for _ in range(n):
        t = objs.add(b'tree', lambda a, t=t: b'40000 d\0' +
                     (t[0] if a == 256 else t[1]))
    return commit(objs, t, [], b'deep')


def wide_merge(n, objs):
    t = blob_tree(objs)
    parents = [commit(objs, t, [], b'p%d' % i) for i in range(n)]
    return commit(objs, t, parents, b'octopus')


def tag_chain(n, objs):
    target = commit(objs, blob_tree(objs), [], b'tagged')
    kind = b'commit'
    for i in range(n):
        def make(a, target=target, kind=kind, i=i):
            t = target[0].hex() if a == 256 else target[1].hex()
            return (b'object %s\ntype %s\ntag t%d\ntagger %s\n\nt%d\n' %
                    (t.encode(), kind, i, IDENT, i))
        target = objs.add(b'tag', make)
        kind = b'tag'
    return target


def loose(repo, kind, declared, content):
    raw = b'%s %d\0' % (kind, declared) + content
    z = zlib.compress(raw, 9)
    o = hashlib.sha256(b'hostile %d %d' % (declared, len(content))).hexdigest()
    d = os.path.join(repo, 'objects', o[:2])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, o[2:]), 'wb') as f:
        f.write(z)
    return o


def main():
    kind = sys.argv[1]
    if kind == 'loose-huge':
        print(loose(sys.argv[2], b'blob', 1 << 40, b'abc'))
        return
    if kind == 'loose-bomb':
        print(loose(sys.argv[2], b'blob', 5, bytes(100 << 20)))
        return
    n, repo = int(sys.argv[2]), sys.argv[3]
    objs = Objects()
    top = {'deep-tree': deep_tree, 'wide-merge': wide_merge,
           'tag-chain': tag_chain}[kind](n, objs)
    objs.write_pack(repo)
    print(top[0].hex(), top[1].hex())


if __name__ == '__main__':
    main()
