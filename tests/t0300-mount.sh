#!/usr/bin/env bash
# t0300-mount.sh: xlatefs on twin repositories.
#
# The SHA-1 twin (the same fast-import stream imported with SHA-1) is the
# oracle: stock git on MNT/sha1 must see exactly what it sees on the twin
# (refs, HEAD, history, objects, fsck, clone --mirror), and MNT/sha256
# what it sees on the repository itself.  Then the object directories:
# every name, every byte, st_size, the user.git.* attributes, and EROFS
# for every kind of write.
. "$(dirname "$0")/lib.sh"

require_fuse

T=$TRASH/tw
twins "$T"

# same_output DESC CMD1 -- CMD2: both succeed with identical stdout.
same_output() {
	desc=$1
	shift
	a=() b=()
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	if ! "${a[@]}" >"$TRASH/.a" 2>"$TRASH/.a.err"; then
		not_ok "$desc (mount side failed)"
		head -5 "$TRASH/.a.err" | sed 's/^/# /'
	elif ! "${b[@]}" >"$TRASH/.b" 2>&1; then
		not_ok "$desc (twin side failed)"
	elif cmp -s "$TRASH/.a" "$TRASH/.b"; then
		ok "$desc"
	else
		not_ok "$desc"
		diff "$TRASH/.a" "$TRASH/.b" | head -10 | sed 's/^/# /'
	fi
}

objects_of() {	# the object names of a git dir, sorted
	git --git-dir="$1" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)'
}

for shape in packed mixed loose; do
	R=$T/sha256-$shape.git
	S1=$T/sha1-$shape.git
	M=$TRASH/m-$shape
	if ! xl_mount "$R" "$M"; then
		not_ok "$shape: mount"
		continue
	fi
	ok "$shape: mount"
	G1=(git --git-dir="$M/sha1")
	G2=(git --git-dir="$M/sha256")
	same_file "$shape: sha1/HEAD is the twin's HEAD" "$M/sha1/HEAD" "$S1/HEAD"
	same_output "$shape: for-each-ref" "${G1[@]}" for-each-ref -- git --git-dir="$S1" for-each-ref
	same_output "$shape: rev-parse HEAD" "${G1[@]}" rev-parse HEAD -- git --git-dir="$S1" rev-parse HEAD
	same_output "$shape: log --all" "${G1[@]}" log --all --format='%H %T %P %an %s' -- \
		git --git-dir="$S1" log --all --format='%H %T %P %an %s'
	same_output "$shape: rev-list --all --objects" "${G1[@]}" rev-list --all --objects -- \
		git --git-dir="$S1" rev-list --all --objects
	expect "$shape: fsck --full --strict on sha1/" "${G1[@]}" fsck --full --strict --no-dangling
	same_output "$shape: every object, by SHA-1 name" objects_of "$M/sha1" -- objects_of "$S1"
	rm -rf "$TRASH/mirror.git"
	if git clone -q --mirror "$M/sha1" "$TRASH/mirror.git" 2>"$TRASH/.err"; then
		same_output "$shape: clone --mirror has the twin's objects" \
			objects_of "$TRASH/mirror.git" -- objects_of "$S1"
		same_output "$shape: clone --mirror has the twin's refs" \
			git --git-dir="$TRASH/mirror.git" for-each-ref -- git --git-dir="$S1" for-each-ref
	else
		not_ok "$shape: clone --mirror"
		sed 's/^/# /' "$TRASH/.err"
	fi
	same_output "$shape: sha256/ for-each-ref" "${G2[@]}" for-each-ref -- git --git-dir="$R" for-each-ref
	same_output "$shape: sha256/ log --all" "${G2[@]}" log --all --format='%H %T %P' -- \
		git --git-dir="$R" log --all --format='%H %T %P'
	expect "$shape: fsck --full --strict on sha256/" "${G2[@]}" fsck --full --strict --no-dangling
	[ $shape = mixed ] && xl_umount "$M"
done

# ---- the object directories ------------------------------------------------
# The raw views list every object, so they are walked on the packed
# mount; a loose view lists only what no listed pack holds, so it is
# walked where every object is loose.
M=$TRASH/m-packed
ML=$TRASH/m-loose
R=$T/sha256-packed.git
"$XL" -C "$R" export >"$TRASH/export.tsv"
git --git-dir="$T/sha1-packed.git" cat-file --batch-all-objects --batch >"$TRASH/want1"
git --git-dir="$R" cat-file --batch-all-objects --batch >"$TRASH/want256"

# One pass over a view in Python: batch output made from the files and
# their attributes, and every st_size, zlib frame and attribute checked.
cat >"$TRASH/walk.py" <<'EOF'
import os, sys, zlib
root, view, export = sys.argv[1], sys.argv[2], sys.argv[3]
pairs = {}
for line in open(export):
    s256, s1, t = line.rstrip('\n').split('\t')
    pairs[s256] = (s1, t)
by1 = {v[0]: k for k, v in pairs.items() if v[0] != '-'}
out = sys.stdout.buffer
bad = 0
def fail(msg):
    global bad
    bad += 1
    print('BAD', msg, file=sys.stderr)
for xx in sorted(os.listdir(root)):
    if len(xx) != 2:
        continue
    for rest in sorted(os.listdir(os.path.join(root, xx))):
        p = os.path.join(root, xx, rest)
        name = xx + rest
        data = open(p, 'rb').read()
        st = os.stat(p)
        if st.st_size != len(data):
            fail('%s: st_size %d, read %d' % (p, st.st_size, len(data)))
        a = {k: os.getxattr(p, k).decode() for k in os.listxattr(p)}
        t, size = a['user.git.type'], int(a['user.git.size'])
        if view in ('loose1', 'loose256'):
            raw = zlib.decompress(data)
            hdr, _, content = raw.partition(b'\0')
            if hdr != ('%s %d' % (t, size)).encode():
                fail('%s: header %r' % (p, hdr))
        else:
            content = data
        if len(content) != size:
            fail('%s: user.git.size %d, content %d' % (p, size, len(content)))
        s256 = a['user.git.sha256']
        if view.endswith('256'):
            if s256 != name:
                fail('%s: user.git.sha256 %s' % (p, s256))
        elif by1.get(name) != s256:
            fail('%s: user.git.sha256 %s, export says %s' % (p, s256, by1.get(name)))
        if a.get('user.git.sha1', '-') != pairs[s256][0] or pairs[s256][1] != t:
            fail('%s: user.git.sha1/type %s %s' % (p, a.get('user.git.sha1'), t))
        out.write(('%s %s %d\n' % (name, t, size)).encode() + content + b'\n')
sys.exit(1 if bad else 0)
EOF
for view in raw1:objects-sha1:want1:$M raw256:objects-sha256:want256:$M \
	    loose1:sha1/objects:want1:$ML loose256:sha256/objects:want256:$ML; do
	IFS=: read -r v dir want mnt <<<"$view"
	if python3 "$TRASH/walk.py" "$mnt/$dir" $v "$TRASH/export.tsv" >"$TRASH/got.$v" 2>"$TRASH/err.$v"; then
		ok "$dir: st_size, framing and user.git.* attributes of every file"
	else
		not_ok "$dir: st_size, framing and user.git.* attributes of every file"
		head -5 "$TRASH/err.$v" | sed 's/^/# /'
	fi
	same_file "$dir: every object's bytes, as git cat-file --batch gives them" \
		"$TRASH/got.$v" "$TRASH/$want"
done

# the fan-out directories listed are those that hold loose objects
want_xx=$(awk -F'\t' '$2 != "-" { print substr($2, 1, 2) }' "$TRASH/export.tsv" | sort -u | tr '\n' ' ')
got_xx=$(ls "$ML/sha1/objects" | grep '^..$' | tr '\n' ' ')
[ -n "$want_xx" ] && [ "$got_xx" = "$want_xx" ] &&
	ok "loose: sha1/objects lists the $(echo $want_xx | wc -w) fan-out directories its objects are in" ||
	not_ok "loose: sha1/objects lists the fan-out directories its objects are in (got $(echo $got_xx | wc -w), want $(echo $want_xx | wc -w))"

xl_umount "$ML"

# on the packed mount, objects live in packs: no loose file is listed,
# nor a fan-out directory (as Git leaves objects/ after gc: a local
# clone walks every one), and one asked for by name is still there
expect "packed: sha1/objects and sha256/objects list no loose object" \
	test -z "$(find "$M/sha1/objects" "$M/sha256/objects" -path '*/objects/??/*' | head -1)"
expect "packed: sha1/objects and sha256/objects list only info and pack" \
	test "$(ls "$M/sha1/objects" | tr '\n' ' ')$(ls "$M/sha256/objects" | tr '\n' ' ')" = "info pack info pack "
c1=$(git --git-dir="$T/sha1-packed.git" rev-parse HEAD)
expect "packed: a loose path by name still reads" \
	sh -c "python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.decompress(open(sys.argv[1], \"rb\").read()))' '$M/sha1/objects/${c1:0:2}/${c1:2}' | grep -q '^commit '"

# an object by both names with plain cat
c1=$(git --git-dir="$T/sha1-packed.git" rev-parse HEAD)
c256=$(git --git-dir="$R" rev-parse HEAD)
git --git-dir="$T/sha1-packed.git" cat-file commit "$c1" >"$TRASH/c1"
same_file "cat objects-sha1/XX/... is the SHA-1 form" "$M/objects-sha1/${c1:0:2}/${c1:2}" "$TRASH/c1"
c256_1=$(awk -F'\t' -v n="$c1" '$2 == n { print $1 }' "$TRASH/export.tsv")
expect "getfattr gives the object's other name" \
	test "$(getfattr --absolute-names --only-values -n user.git.sha256 "$M/objects-sha1/${c1:0:2}/${c1:2}")" = "$c256_1"
expect "getfattr -d lists the four attributes" \
	test "$(getfattr --absolute-names -d "$M/objects-sha256/${c256:0:2}/${c256:2}" | grep -c '^user\.git\.')" = 4
expect "ls lists the object by its SHA-1 name" \
	sh -c "ls '$M/objects-sha1/${c1:0:2}' | grep -qx '${c1:2}'"
expect "ls -l shows its exact size" \
	test "$(ls -l "$M/objects-sha1/${c1:0:2}/${c1:2}" | awk '{ print $5 }')" = "$(wc -c <"$TRASH/c1")"
expect "a name that is not there: ENOENT" test ! -e "$M/objects-sha1/00/0000000000000000000000000000000000000000"
expect "an uppercase name is not an object" test ! -e "$M/objects-sha1/${c1:0:2}/$(echo "${c1:2}" | tr a-f A-F)"

# status and README
grep -q '^state: ready$' "$M/status" && grep -q "^objects: $(wc -l <"$T/sha256.objects")\$" "$M/status" &&
	grep -q "^repository: $R\$" "$M/status" && grep -q '^cache: ' "$M/status" &&
	grep -q '^direction: sha256 to sha1$' "$M/status" &&
	grep -q '^translated: ' "$M/status" && grep -q '^untranslatable: 0$' "$M/status" &&
	grep -q '^pending: 0$' "$M/status" && grep -q '^rate: ' "$M/status" &&
	ok "status: state, objects, translated, untranslatable, pending, rate, cache, repository" ||
	{ not_ok "status keys"; sed 's/^/# /' "$M/status"; }
expect "README names the repository" grep -q "$R" "$M/README"
expect "files belong to the user who mounted" test "$(stat -c %u "$M/sha1/HEAD")" = "$(id -u)"

# every kind of write: EROFS
cat >"$TRASH/writes.py" <<'EOF'
import errno, os, sys
m = sys.argv[1]
obj = sys.argv[2]
tries = [
    ('create', lambda: os.open(m + '/sha1/newfile', os.O_CREAT | os.O_WRONLY, 0o644)),
    ('open for writing', lambda: os.open(obj, os.O_WRONLY)),
    ('truncate', lambda: os.truncate(obj, 0)),
    ('mkdir', lambda: os.mkdir(m + '/sha1/refs/heads/x')),
    ('unlink', lambda: os.unlink(m + '/sha1/HEAD')),
    ('rmdir', lambda: os.rmdir(m + '/sha1/refs/tags')),
    ('rename', lambda: os.rename(m + '/sha1/config', m + '/sha1/config2')),
    ('symlink', lambda: os.symlink('x', m + '/sha1/link')),
    ('chmod', lambda: os.chmod(obj, 0o777)),
    ('utime', lambda: os.utime(obj, (0, 0))),
    ('setxattr', lambda: os.setxattr(obj, 'user.x', b'1')),
    ('removexattr', lambda: os.removexattr(obj, 'user.git.type')),
]
bad = 0
for what, f in tries:
    try:
        f()
        print('%s succeeded' % what); bad += 1
    except OSError as e:
        if e.errno != errno.EROFS:
            print('%s: %s' % (what, e)); bad += 1
sys.exit(bad)
EOF
expect "every write fails with EROFS" python3 "$TRASH/writes.py" "$M" "$M/objects-sha1/${c1:0:2}/${c1:2}"

pid=$(cat "$M.pid")
xl_umount "$M"
expect "unmounted with fusermount3 -u, and the daemon has exited" \
	sh -c "! mountpoint -q '$M' && ! kill -0 $pid 2>/dev/null"

# detached (no -f): mounts, serves, and SIGTERM takes the mount down
mkdir -p "$TRASH/d"
if "$XLATEFS" "$R" "$TRASH/d" 2>"$TRASH/d.err"; then
	same_output "daemon mode: log" git --git-dir="$TRASH/d/sha1" log --format=%H -- \
		git --git-dir="$T/sha1-packed.git" log --format=%H
	pkill -TERM -f "^$XLATEFS $R $TRASH/d\$"
	for _ in $(seq 50); do mountpoint -q "$TRASH/d" || break; sleep 0.1; done
	expect "SIGTERM unmounts" sh -c "! mountpoint -q '$TRASH/d'"
else
	not_ok "daemon mode: mount"
	sed 's/^/# /' "$TRASH/d.err"
fi

test_done
