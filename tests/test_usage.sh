#!/bin/sh
# test_usage.sh - the command line's own contract, for every command of
# `llmsim --help` and every subcommand its usage names (trace stats,
# profile import ..., sweep status ...), and for llmsim-fit: --help prints
# the command's usage to stdout (nothing on stderr) and exits 0; an unknown
# option prints a line naming it and the usage to stderr (nothing on
# stdout) and exits 2; --version prints "llmsim X.Y.Z" to stdout and exits
# 0; a word too many after policies KIND or keys is refused the same way.
set -u
exe=${LSIM_EXE:-build/llmsim}
bld=${LSIM_BUILD_ROOT:-build}
fit=$bld/calibrate/llmsim-fit
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }

# check_help PROG WORDS...: PROG WORDS --help
check_help() {
	prog=$1; shift
	"$prog" "$@" --help > "$tmp/out" 2> "$tmp/err"; rc=$?
	name=$(basename "$prog")
	if [ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && head -1 "$tmp/out" | grep -q "^usage: $name ${1:-}"; then
		ok "$name $* --help"
	else
		bad "$name $* --help: exit $rc, stdout '$(head -1 "$tmp/out")', stderr '$(head -1 "$tmp/err")'"
	fi
}
# check_bad PROG ARG WORDS...: PROG WORDS ARG, ARG refused by name
check_bad() {
	prog=$1 arg=$2; shift 2
	"$prog" "$@" "$arg" > "$tmp/out" 2> "$tmp/err"; rc=$?
	name=$(basename "$prog")
	if [ $rc -eq 2 ] && [ ! -s "$tmp/out" ] && grep -qF -- "'$arg'" "$tmp/err" &&
		grep -q "^usage: $name" "$tmp/err"; then
		ok "$name $* $arg: refused naming it, with the usage"
	else
		bad "$name $* $arg: exit $rc, stdout '$(head -1 "$tmp/out")', stderr '$(head -2 "$tmp/err")'"
	fi
}

v=$("$exe" --version 2>"$tmp/err"); rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && echo "$v" | grep -qx 'llmsim [0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*' &&
	ok "--version: $v" || bad "--version: exit $rc '$v'"
"$exe" --help > "$tmp/main" 2> "$tmp/err" && [ ! -s "$tmp/err" ] && grep -q '^usage: llmsim' "$tmp/main" &&
	ok "llmsim --help" || bad "llmsim --help"
"$exe" > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q '^usage: llmsim' "$tmp/err" &&
	ok "llmsim alone: usage on stderr, exit 2" || bad "llmsim alone: exit $rc"
check_bad "$exe" --bogus-opt

cmds=$(awk '/^commands:/ { on = 1; next } on && !NF { exit }
	on && /^  [a-z]/ { print $1 }' "$tmp/main" | awk '!seen[$0]++')
n=0
for c in $cmds; do
	n=$((n + 1))
	check_help "$exe" "$c"
	check_bad "$exe" --bogus-opt "$c"
	"$exe" "$c" --help > "$tmp/help" 2>/dev/null
	for s in $(sed -n "s/^\(usage:\)\{0,1\} *llmsim $c \([a-z][a-z]*\).*/\2/p" "$tmp/help" | sort -u); do
		check_help "$exe" "$c" "$s"
		check_bad "$exe" --bogus-opt "$c" "$s"
	done
done
[ "$n" -ge 11 ] && ok "$n commands" || bad "only $n commands in llmsim --help"
check_bad "$exe" bogus trace
check_bad "$exe" extra policies scheduler
check_bad "$exe" extra keys
"$exe" policies scheduler | grep -q '^scheduler:' && ok "policies scheduler still lists" ||
	bad "policies scheduler"

check_help "$fit"
check_bad "$fit" --bogus-opt

[ $fails -eq 0 ] && echo "PASS usage" || echo "FAIL usage: $fails"
exit $((fails > 0))
