#!/usr/bin/env python3
"""load.py MNT SECONDS READERS NAMES: readers on every view of a mount.

NAMES holds "<sha256> <sha1> <type>" lines (git xlate export).  READERS
processes run for SECONDS, each doing one of these at random, over and
over, and checking every object it reads against its name (the hash of
"<type> <size>\\0<content>" in that view's algorithm):

  - cat a file of objects-sha256/ or objects-sha1/ (its type from the
    user.git.type attribute);
  - read a loose file of sha256/objects/ or sha1/objects/ and inflate it;
  - stat such a file, and list a fan-out directory or refs/heads;
  - stock git: `cat-file --batch` of 16 names on sha1/ or sha256/, and
    `log -n 50` / `for-each-ref` there.

Prints "reads N errors E" on stdout, and the first errors on stderr.
Exits 0 whatever the counts: the test judges them.
"""
import hashlib
import multiprocessing
import os
import random
import subprocess
import sys
import time
import zlib

ALGO = {'sha1': hashlib.sha1, 'sha256': hashlib.sha256}


def check(algo, name, kind, content):
    h = ALGO[algo](b'%s %d\0' % (kind, len(content)) + content).hexdigest()
    if h != name:
        raise ValueError('%s %s: the bytes hash to %s' % (algo, name, h))


def one(mnt, names, rnd):
    o256, o1, kind = rnd.choice(names)
    algo = rnd.choice(('sha1', 'sha256'))
    name = o1 if algo == 'sha1' else o256
    op = rnd.randrange(7)
    if op == 0:
        p = os.path.join(mnt, 'objects-' + algo, name[:2], name[2:])
        with open(p, 'rb') as f:
            content = f.read()
        t = os.getxattr(p, 'user.git.type')
        check(algo, name, t, content)
    elif op == 1:
        p = os.path.join(mnt, algo, 'objects', name[:2], name[2:])
        with open(p, 'rb') as f:
            raw = zlib.decompress(f.read())
        hdr, _, content = raw.partition(b'\0')
        t, _, size = hdr.partition(b' ')
        if int(size) != len(content):
            raise ValueError('%s: header says %s bytes, has %d' % (p, size, len(content)))
        check(algo, name, t, content)
    elif op == 2:
        for view in ('objects-' + algo, os.path.join(algo, 'objects')):
            os.stat(os.path.join(mnt, view, name[:2], name[2:]))
        os.listdir(os.path.join(mnt, 'objects-' + algo, name[:2]))
        os.listdir(os.path.join(mnt, algo, 'refs', 'heads'))
    elif op in (3, 4):
        batch = [rnd.choice(names) for _ in range(16)]
        want = [(b[1] if algo == 'sha1' else b[0]) for b in batch]
        out = subprocess.run(['git', '--git-dir', os.path.join(mnt, algo),
                              'cat-file', '--batch'],
                             input=''.join(w + '\n' for w in want).encode(),
                             capture_output=True, check=True).stdout
        pos = 0
        for w in want:
            nl = out.index(b'\n', pos)
            oid, t, size = out[pos:nl].split(b' ')
            size = int(size)
            content = out[nl + 1:nl + 1 + size]
            if oid.decode() != w or len(content) != size:
                raise ValueError('cat-file --batch: %r for %s' % (out[pos:nl], w))
            check(algo, w, t, content)
            pos = nl + 1 + size + 1
    elif op == 5:
        subprocess.run(['git', '--git-dir', os.path.join(mnt, algo), 'log',
                        '-n', '50', '--format=%H %T'],
                       capture_output=True, check=True)
    else:
        subprocess.run(['git', '--git-dir', os.path.join(mnt, algo),
                        'for-each-ref'], capture_output=True, check=True)


def worker(args):
    mnt, names, secs, seed = args
    rnd = random.Random(seed)
    end = time.time() + secs
    reads = errors = 0
    first = []
    while time.time() < end:
        try:
            one(mnt, names, rnd)
        except Exception as e:  # every failure is an error to count
            errors += 1
            if len(first) < 3:
                detail = getattr(e, 'stderr', b'') or b''
                first.append('%s %s' % (repr(e)[:300], detail[:200]))
        reads += 1
    return reads, errors, first


def main():
    mnt, secs, readers, names_path = sys.argv[1:5]
    names = []
    with open(names_path) as f:
        for line in f:
            o256, o1, kind = line.split()
            if o1 != '-':
                names.append((o256, o1, kind.encode()))
    jobs = [(mnt, names, float(secs), i) for i in range(int(readers))]
    with multiprocessing.Pool(int(readers)) as pool:
        results = pool.map(worker, jobs)
    reads = sum(r[0] for r in results)
    errors = sum(r[1] for r in results)
    for r in results:
        for line in r[2]:
            print(line, file=sys.stderr)
    print('reads %d errors %d' % (reads, errors))


if __name__ == '__main__':
    main()
