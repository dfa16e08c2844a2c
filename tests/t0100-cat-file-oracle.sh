#!/usr/bin/env bash
# t0100-cat-file-oracle.sh: `git xlate cat-file` against `git cat-file`,
# byte for byte, on twin SHA-1 / SHA-256 repositories in every storage
# form tests/mk-twins.sh makes (packed, loose, mixed REF/OFS deltas +
# loose, idx v1, idx v2 with 64-bit offsets).
#
#   XL_TWIN_OPTS="--commits 200"   options for tests/gen-history.sh

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

TW=$TRASH/twins
# shellcheck disable=SC2086
if "$XL_TOP/tests/mk-twins.sh" "$TW" ${XL_TWIN_OPTS:-} 2>"$TRASH/mk.err"; then
	ok "mk-twins.sh: $(wc -l <"$TW/sha256.objects" | tr -d ' ') objects per repository"
else
	not_ok "mk-twins.sh builds the twin repositories"
	sed 's/^/# /' "$TRASH/mk.err"
	test_done
	exit 1
fi
if [ ! -x "$XL" ]; then
	not_ok "git-xlate is built ($XL)"
	test_done
	exit 1
fi

tab=$(printf '\t')

# ---- inputs, per algorithm (object names are the same in every variant) ----

# names.in: every object, abbreviations (unique and ambiguous), unknown
# full names, garbage lines.
mk_names() { # mk_names ALGO
	local algo=$1 objs=$TW/$1.objects len
	len=$(head -1 "$objs" | tr -d '\n' | wc -c)
	{
		cat "$objs"
		awk 'NR % 9 == 1 { print substr($0, 1, 7); print substr($0, 1, 12) }' "$objs"
		awk 'NR % 50 == 7' "$objs" | tr a-f A-F
		# 4-hex prefixes: ambiguous ones and unique ones
		cut -c1-4 "$objs" | uniq -d | head -3
		cut -c1-4 "$objs" | uniq -u | head -3
		# unknown full names: all zeros, and existing names with the last
		# digit changed (checked to be unknown)
		head -c "$len" /dev/zero | tr '\0' 0
		echo
		awk 'NR % 60 == 3' "$objs" | sed 's/.$/x/' | while read -r n; do
			for d in 0 1 2 3; do
				m=${n%x}$d
				grep -qx "$m" "$objs" || { echo "$m"; break; }
			done
		done
		# an unknown abbreviation, garbage
		echo 00000000
		echo
		echo '   '
		echo 'not a name'
		echo 'zzzz'
		echo "${len}xyz"
	}
}

# refs.in: revision expressions
mk_refs() {
	cat <<-'EOF'
	HEAD
	main
	refs/heads/main
	side
	orphan
	topic/1
	refs/heads/topic/3-1
	v1.0
	refs/tags/v1.0
	v1.0^{}
	v1.0-outer
	v1.0-outer^{}
	tree-tag
	tree-tag^{}
	blob-tag
	blob-tag^{}
	light-head
	light/25
	light-tree
	light-blob
	lächt
	refs/notes/commits
	HEAD^{tree}
	HEAD^{commit}
	HEAD~2
	HEAD^
	main~5
	v1.0^{commit}
	v1.0^{tree}
	HEAD:
	HEAD:README.md
	HEAD:src3/mod0/part0/deep0/file3.txt
	HEAD:src3/mod0
	HEAD:big/random1.bin
	HEAD:name with spaces.txt
	HEAD:unicode/café.txt
	HEAD:odd
	HEAD:sort/foo
	HEAD:link-to-file0
	v1.0:README.md
	HEAD:no/such/file
	nosuchref
	refs/heads/nosuch
	main~9999
	EOF
}

# single.list: one cat-file invocation per line, "EXPECT<TAB>ARG<TAB>ARG...".
# EXPECT: same (both exit 0, identical stdout), unknown (git 128, ours 1,
# no stdout, a message on stderr), fail (both non-zero, no stdout).
mk_single() { # mk_single REPO ALGO
	local r=$1 objs=$TW/$2.objects n t x
	{
		for n in HEAD 'HEAD^{tree}' HEAD:README.md v1.0 v1.0-outer tree-tag blob-tag \
			HEAD: HEAD:odd HEAD:unicode HEAD:sort HEAD:empty HEAD:link-to-file0 \
			HEAD:big/random1.bin HEAD:big/random2.bin 'main~3' light-blob \
			"$(git -C "$r" rev-list -1 --min-parents=3 main)" \
			$(git -C "$r" rev-list --reverse main | head -8) \
			$(git -C "$r" rev-parse HEAD:odd HEAD:big/random1.bin v1.0 'HEAD^{tree}')
		do
			t=$(git -C "$r" cat-file -t "$n")
			for x in -t -s -p "$t"; do
				printf 'same\t%s\t%s\n' "$x" "$n"
			done
		done
		# peeling to the requested type
		printf 'same\t%s\t%s\n' commit v1.0 tree HEAD tree v1.0 tree v1.0-outer \
			commit v1.0-outer tag v1.0-outer blob blob-tag tree tree-tag \
			tree "$(git -C "$r" rev-parse HEAD)" commit "$(git -C "$r" rev-parse v1.0)" \
			tree "$(git -C "$r" rev-parse v1.0-outer)"
		# abbreviated names
		printf 'same\t-p\t%s\n' "$(head -1 "$objs" | cut -c1-10)" "$(tail -1 "$objs" | cut -c1-7)"
		# unknown and ambiguous names
		printf 'unknown\t%s\t%s\n' -t nosuchref -s nosuchref -p nosuchref \
			-t "$(head -c 40 /dev/zero | tr '\0' 0)" \
			-p "$(head -c 64 /dev/zero | tr '\0' 0)" \
			blob "$(head -1 "$objs" | tr 0-9a-f 1-9a-f0)" \
			-t "HEAD:no/such/file" \
			-t "$(cut -c1-4 "$objs" | uniq -d | head -1)" \
			-p "$(cut -c1-4 "$objs" | uniq -d | tail -1)"
		# an object that cannot be peeled to the type asked for
		printf 'fail\t%s\t%s\n' blob HEAD commit 'HEAD^{tree}' tag HEAD
	}
}

# check_single REPO LIST: run every line of LIST with both; print mismatches
check_single() {
	local r=$1 list=$2 line expect grc xrc nerr
	local -a args
	while IFS= read -r line; do
		expect=${line%%"$tab"*}
		IFS=$tab read -r -a args <<<"${line#*"$tab"}"
		git -C "$r" cat-file "${args[@]}" </dev/null >"$TRASH/g.out" 2>"$TRASH/g.err"
		grc=$?
		"$XL" -C "$r" cat-file "${args[@]}" </dev/null >"$TRASH/x.out" 2>"$TRASH/x.err"
		xrc=$?
		nerr=$(wc -l <"$TRASH/x.err" | tr -d ' ')
		case $expect in
		same)
			if [ $grc -ne 0 ]; then
				echo "git failed: cat-file ${args[*]}"
			elif [ $xrc -ne 0 ]; then
				echo "exit $xrc: cat-file ${args[*]}: $(head -1 "$TRASH/x.err")"
			elif ! cmp -s "$TRASH/g.out" "$TRASH/x.out"; then
				echo "output differs: cat-file ${args[*]} ($(wc -c <"$TRASH/g.out") vs $(wc -c <"$TRASH/x.out") bytes)"
			fi
			;;
		unknown)
			if [ $grc -ne 128 ]; then
				echo "git exit $grc, not 128: cat-file ${args[*]}"
			elif [ $xrc -ne 1 ]; then
				echo "exit $xrc, not 1: cat-file ${args[*]}"
			elif [ -s "$TRASH/x.out" ]; then
				echo "output on stdout: cat-file ${args[*]}"
			elif [ "$nerr" -ne 1 ]; then
				echo "$nerr lines on stderr, not 1: cat-file ${args[*]}"
			fi
			;;
		fail)
			if [ $grc -eq 0 ]; then
				echo "git succeeded: cat-file ${args[*]}"
			elif [ $xrc -eq 0 ] || [ $xrc -ge 128 ]; then
				echo "exit $xrc: cat-file ${args[*]}"
			elif [ -s "$TRASH/x.out" ]; then
				echo "output on stdout: cat-file ${args[*]}"
			elif [ "$nerr" -lt 1 ]; then
				echo "no message on stderr: cat-file ${args[*]}"
			fi
			;;
		esac
	done <"$list"
}

# batch_cmp DESC REPO INPUT ARGS...: compare both outputs and exit codes
batch_cmp() {
	local desc=$1 r=$2 in=$3 grc xrc
	shift 3
	git -C "$r" cat-file "$@" <"$in" >"$TRASH/g.out" 2>"$TRASH/g.err"
	grc=$?
	"$XL" -C "$r" cat-file "$@" <"$in" >"$TRASH/x.out" 2>"$TRASH/x.err"
	xrc=$?
	if [ $grc -ne 0 ]; then
		not_ok "$desc (git exit $grc)"
		sed 's/^/# /' "$TRASH/g.err" | head -5
	elif [ $xrc -ne 0 ]; then
		not_ok "$desc (exit $xrc)"
		sed 's/^/# /' "$TRASH/x.err" | head -5
	else
		same_file "$desc" "$TRASH/g.out" "$TRASH/x.out"
	fi
}

for algo in sha1 sha256; do
	mk_names "$algo" >"$TRASH/$algo.names"
	mk_refs >"$TRASH/$algo.refs.in"
	mk_single "$TW/$algo.git" "$algo" >"$TRASH/$algo.single"

	for form in packed loose mixed idx1 largeofs; do
		v=$algo-$form
		r=$TW/$v.git
		batch_cmp "$v: --batch-all-objects --batch" "$r" /dev/null --batch-all-objects --batch
		batch_cmp "$v: --batch-all-objects --batch-check" "$r" /dev/null --batch-all-objects --batch-check
		batch_cmp "$v: --batch < every name, abbreviations, unknown, garbage" \
			"$r" "$TRASH/$algo.names" --batch
		batch_cmp "$v: --batch-check < every name, abbreviations, unknown, garbage" \
			"$r" "$TRASH/$algo.names" --batch-check
		batch_cmp "$v: --batch < revision expressions" "$r" "$TRASH/$algo.refs.in" --batch
		batch_cmp "$v: --batch-check < revision expressions" "$r" "$TRASH/$algo.refs.in" --batch-check

		check_single "$r" "$TRASH/$algo.single" >"$TRASH/single.out"
		if [ -s "$TRASH/single.out" ]; then
			not_ok "$v: -t/-s/-p/TYPE, peeling, unknown and ambiguous names ($(wc -l <"$TRASH/single.out" | tr -d ' ') of $(wc -l <"$TRASH/$algo.single" | tr -d ' ') differ)"
			head -20 "$TRASH/single.out" | sed 's/^/# /'
		else
			ok "$v: -t/-s/-p/TYPE, peeling, unknown and ambiguous names ($(wc -l <"$TRASH/$algo.single" | tr -d ' ') invocations)"
		fi
	done

	# usage errors exit 2 with a message (the contract; git says 129)
	r=$TW/$algo-packed.git
	for args in "-t" "-p" "--no-such-option HEAD" "-t HEAD HEAD"; do
		# shellcheck disable=SC2086
		"$XL" -C "$r" cat-file $args >"$TRASH/x.out" 2>"$TRASH/x.err"
		xrc=$?
		if [ $xrc -eq 2 ] && [ -s "$TRASH/x.err" ] && [ ! -s "$TRASH/x.out" ]; then
			ok "$algo: cat-file $args: usage error, exit 2"
		else
			not_ok "$algo: cat-file $args: exit $xrc, not 2 (or no message, or output)"
			head -3 "$TRASH/x.err" | sed 's/^/# /'
		fi
	done
done

test_done
