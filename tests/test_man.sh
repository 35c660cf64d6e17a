#!/bin/sh
# test_man.sh - the manual pages against --help: the pages the build made
# (build/llmsim.1, build/llmsim-fit.1, installed by meson install) are what
# scripts/gen-man makes from the built binaries; every command name of
# `llmsim --help` and every option string of `llmsim --help`, of each
# `llmsim CMD --help` and of each `llmsim CMD SUB --help` (SUB a word after
# `llmsim CMD` on its usage lines) and of `llmsim-fit --help` appears in the
# page, read here by a different route (grep over the --help output, not
# the generator), and the check is shown to catch a page with one option
# missing; man(1) renders the pages without a warning (skipped without
# man-db).
set -u
exe=${LSIM_EXE:-build/llmsim}
src=${LSIM_SOURCE_ROOT:-.}
bld=${LSIM_BUILD_ROOT:-build}
datadir=${LSIM_INSTALL_DATA_DIR:-PREFIX/share/llmsim}
fit=$bld/calibrate/llmsim-fit
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }
unset LLMSIM_DATA_DIR

for page in llmsim llmsim-fit; do
	[ -f "$bld/$page.1" ] || { bad "$bld/$page.1 was not built"; continue; }
	prog=$exe
	[ "$page" = llmsim-fit ] && prog=$fit
	"$src/scripts/gen-man" "$prog" "$tmp/$page.1" --datadir "$datadir" ||
		bad "gen-man $page failed"
	if cmp -s "$tmp/$page.1" "$bld/$page.1"; then
		ok "$page.1 is what gen-man makes from $page --help"
	else
		bad "$page.1 differs from gen-man's output"
	fi
	# the same twice: no date, nothing of the host
	"$src/scripts/gen-man" "$prog" "$tmp/again.1" --datadir "$datadir"
	cmp -s "$tmp/$page.1" "$tmp/again.1" && ok "$page.1 is the same made twice" ||
		bad "$page.1 differs between two runs of gen-man"
done

# every --help text of llmsim, one file each
"$exe" --help > "$tmp/help.main" || bad "llmsim --help exits $?"
cmds=$(awk '/^commands:/ { on = 1; next } on && !NF { exit }
	on && /^  [a-z]/ { print $1 }' "$tmp/help.main" | awk '!seen[$0]++')
n=0
for c in $cmds; do
	n=$((n + 1))
	"$exe" "$c" --help > "$tmp/help.$c" || bad "llmsim $c --help exits $?"
	subs=$(sed -n "s/^\(usage:\)\{0,1\} *llmsim $c \([a-z][a-z]*\).*/\2/p" "$tmp/help.$c" | sort -u)
	for s in $subs; do
		"$exe" "$c" "$s" --help > "$tmp/help.$c.$s" || bad "llmsim $c $s --help exits $?"
	done
done
[ "$n" -ge 11 ] && ok "$n commands in llmsim --help" || bad "only $n commands found in llmsim --help"
[ -s "$tmp/help.profile.import" ] && [ -s "$tmp/help.profile.train" ] &&
	ok "profile's subcommands have their own --help" || bad "profile import/train --help not read"

# option strings: -x or --long-name at a word's start
options() {
	grep -oE -- '(^|[][ (|,=/])--?[a-zA-Z][a-zA-Z0-9-]*' "$@" | sed 's/^[^-]*//' | sort -u
}
# what the page shows, hyphens unescaped
plain() { sed -e 's/\\-/-/g' -e 's/\\(aq/'"'"'/g' -e 's/\\(ga/`/g' -e 's/\\e/\\/g' "$1"; }

# prints each word of file $2 (one a line) missing in page $1
missing() {
	plain "$1" > "$tmp/plain"
	while IFS= read -r w; do
		grep -qF -- "$w" "$tmp/plain" || echo "$w"
	done < "$2"
}
{ options "$tmp"/help.*; echo "$cmds"; } | sort -u > "$tmp/words"
nw=$(wc -l < "$tmp/words")
for w in --data-dir --progress --shard --rate-key --batches --numeric --compare --by -o; do
	grep -qxF -- "$w" "$tmp/words" || bad "option $w not read from the --help texts"
done
miss=$(missing "$bld/llmsim.1" "$tmp/words")
[ -z "$miss" ] && ok "llmsim.1 holds all $nw commands and options of --help" ||
	bad "llmsim.1 lacks: $(echo $miss)"
# the check catches a page without one option
sed 's/\\-\\-rate\\-key/--RATE-KEY/g' "$bld/llmsim.1" > "$tmp/cut.1"
[ "$(missing "$tmp/cut.1" "$tmp/words")" = "--rate-key" ] &&
	ok "a page without --rate-key is caught" || bad "a page without --rate-key passes"
# subcommand sections of their own
for s in run check validate trace profile "profile import" "profile train" sweep report search compare policies keys; do
	grep -qx ".SS $(echo "$s" | sed 's/-/\\\\-/g')" "$bld/llmsim.1" || bad "no section for $s"
done

"$fit" --help > "$tmp/fit.help" || bad "llmsim-fit --help exits $?"
options "$tmp/fit.help" > "$tmp/fit.words"
miss=$(missing "$bld/llmsim-fit.1" "$tmp/fit.words")
[ -z "$miss" ] && ok "llmsim-fit.1 holds the $(wc -l < "$tmp/fit.words") options of its --help" ||
	bad "llmsim-fit.1 lacks: $(echo $miss)"

if command -v man >/dev/null 2>&1; then
	for page in llmsim llmsim-fit; do
		MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$bld/$page.1" > "$tmp/render" 2> "$tmp/warn"
		rc=$?
		if [ $rc -eq 0 ] && [ ! -s "$tmp/warn" ] && grep -q "SYNOPSIS" "$tmp/render"; then
			ok "man -l renders $page.1 without warnings"
		else
			bad "man -l $page.1 (exit $rc): $(head -3 "$tmp/warn")"
		fi
	done
else
	echo "ok - # SKIP man-db is not installed: the pages are not rendered"
fi

[ $fails -eq 0 ] && echo "PASS man" || echo "FAIL man: $fails"
exit $((fails > 0))
