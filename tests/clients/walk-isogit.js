#!/usr/bin/env node
// walk-isogit.js GITDIR: walk HEAD's history with isomorphic-git.
//
// Prints the format described in walk-git.sh: every commit reachable from
// HEAD, every tree of those commits with its entries, every blob with the
// size of its content (read in full), then trees/blobs/commits counts.
//
// Trees are read with readObject({format: 'content'}) and their entries
// parsed here: isomorphic-git's own tree parser (readTree) throws
// UnsafeFilepathError on names it would not check out (a "\" in a name, as
// in the twins' "odd/back\slash"), and decodes names as UTF-8, which loses
// bytes that are not.  Commits and blobs go through readCommit/readBlob.
// isomorphic-git is installed in tests/clients/node_modules (npm ci).
'use strict';
const fs = require('fs');
const path = require('path');
const git = require(path.join(__dirname, 'node_modules', 'isomorphic-git'));

function quote(name) {
  let s = '';
  for (const b of name) {
    if (b === 0x5c) s += '\\\\';
    else if (b >= 0x20 && b <= 0x7e) s += String.fromCharCode(b);
    else s += '\\x' + b.toString(16).padStart(2, '0');
  }
  return s;
}

function parseTree(buf, hashlen) {
  const entries = [];
  let i = 0;
  while (i < buf.length) {
    const sp = buf.indexOf(0x20, i);
    const nul = buf.indexOf(0, sp + 1);
    if (sp < 0 || nul < 0 || nul + 1 + hashlen > buf.length) throw new Error('bad tree entry at byte ' + i);
    const mode = parseInt(buf.subarray(i, sp).toString('latin1'), 8);
    const name = Buffer.from(buf.subarray(sp + 1, nul));
    const oid = buf.subarray(nul + 1, nul + 1 + hashlen).toString('hex');
    entries.push({ mode, name, oid });
    i = nul + 1 + hashlen;
  }
  return entries;
}

async function main() {
  if (process.argv.length !== 3) {
    process.stderr.write('usage: walk-isogit.js GITDIR\n');
    process.exit(2);
  }
  const gitdir = process.argv[2];
  const cache = {};
  let head = await git.resolveRef({ fs, gitdir, ref: 'HEAD' });
  for (;;) { // peel a tag HEAD
    const o = await git.readObject({ fs, gitdir, oid: head, cache });
    if (o.type === 'commit') break;
    if (o.type !== 'tag') throw new Error('HEAD is a ' + o.type);
    head = o.object.object;
  }

  const commits = new Map(); // hex -> line
  const roots = [];
  const todo = [head];
  while (todo.length) {
    const oid = todo.pop();
    if (commits.has(oid)) continue;
    const { commit } = await git.readCommit({ fs, gitdir, oid, cache });
    const parents = commit.parent || [];
    commits.set(oid, `commit ${oid} tree ${commit.tree} parents ${parents.length ? parents.join(',') : '-'}`);
    roots.push(commit.tree);
    todo.push(...parents);
  }

  const trees = new Map(); // hex -> [lines]
  const blobs = new Map(); // hex -> size
  const ttodo = roots.slice();
  while (ttodo.length) {
    const oid = ttodo.pop();
    if (trees.has(oid)) continue;
    const o = await git.readObject({ fs, gitdir, oid, format: 'content', cache });
    if (o.type !== 'tree') throw new Error(oid + ': not a tree but a ' + o.type);
    const entries = parseTree(Buffer.from(o.object), oid.length / 2);
    entries.sort((a, b) => Buffer.compare(a.name, b.name));
    const lines = [];
    for (const e of entries) {
      let kind;
      if ((e.mode & 0o170000) === 0o040000) {
        kind = 'tree';
        ttodo.push(e.oid);
      } else if ((e.mode & 0o170000) === 0o160000) {
        kind = 'commit';
      } else {
        kind = 'blob';
        if (!blobs.has(e.oid)) {
          const { blob } = await git.readBlob({ fs, gitdir, oid: e.oid, cache });
          blobs.set(e.oid, blob.length);
        }
      }
      lines.push(`  ${e.mode.toString(8).padStart(6, '0')} ${kind} ${e.oid} ${quote(e.name)}`);
    }
    trees.set(oid, lines);
  }

  const byName = (m) => [...m.keys()].sort();
  const out = [];
  for (const h of byName(commits)) out.push(commits.get(h));
  for (const h of byName(trees)) out.push('tree ' + h, ...trees.get(h));
  for (const h of byName(blobs)) out.push(`blob ${h} size ${blobs.get(h)}`);
  out.push('trees ' + trees.size, 'blobs ' + blobs.size, 'commits ' + commits.size);
  process.stdout.write(out.join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write('walk-isogit: ' + (e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
