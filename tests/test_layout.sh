#!/usr/bin/env bash
# test_layout.sh - the source layout keeps its shape (sim/README.md):
#   - every #include "..." of the sources points the way the rooms allow:
#     each file is resolved as the compiler finds it (its own folder, then
#     include/, sim/, traces/, policies/, calibrate/), and the room of the
#     includer must be allowed to see the room of the included file;
#   - no source file is longer than 2,000 lines.
# One ok/FAIL line per check, the offending lines named.
set -u
src=${LSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 1
fails=0

# The room of a path: sim/ROOM, calibrate/import, calibrate, traces,
# policies, include (the public headers), or other (tests, bench, ...).
room_of() {
	case $1 in
	sim/*/*) local r=${1#sim/}; echo "${r%%/*}" ;;
	calibrate/import/*) echo import ;;
	calibrate/*) echo calibrate ;;
	traces/*) echo traces ;;
	policies/*) echo policies ;;
	include/*) echo public ;;
	examples/plugins/* | tests/plugins/*) echo plugin ;;
	*) echo other ;;
	esac
}

# What each room may include besides itself and the public headers. A
# room not listed (tests, bench) may include anything.
declare -A may=(
	[public]=''
	[kernel]=''
	[report]='kernel'
	[traces]='kernel'
	[cluster]='kernel traces'
	[serving]='kernel report cluster'
	[jobs]='kernel report cluster traces'
	[learn]='kernel'
	[policies]='learn'
	[plugin]=''
	[run]='kernel report cluster serving jobs learn traces policies'
	[import]='kernel report cluster serving'
	[calibrate]='kernel report cluster serving import'
	[cli]='kernel report cluster serving jobs learn traces policies run import'
)

resolve() { # includer, name -> the file the compiler takes, or nothing
	local dir
	for dir in "$(dirname "$1")" include sim traces policies calibrate calibrate/bench; do
		if [ -f "$dir/$2" ]; then
			realpath -m --relative-to=. "$dir/$2"
			return
		fi
	done
}

# the C and CUDA sources of the tree (patterns: $@)
sources() {
	local args=() p
	for p in "$@"; do args+=(-o -name "$p"); done
	find include sim traces policies calibrate examples tests bench -type f \( "${args[@]:1}" \) | LC_ALL=C sort
}

bad=0 n=0
while IFS= read -r f; do
	from=$(room_of "$f")
	[ -n "${may[$from]+set}" ] || continue
	while IFS=: read -r line name; do
		n=$((n + 1))
		to_file=$(resolve "$f" "$name")
		if [ -z "$to_file" ]; then
			echo "  $f:$line: #include \"$name\" names no file of the tree"
			bad=$((bad + 1))
			continue
		fi
		to=$(room_of "$to_file")
		[ "$to" = "$from" ] || [ "$to" = public ] && continue
		case " ${may[$from]} " in *" $to "*) continue ;; esac
		echo "  $f:$line: #include \"$name\" ($to_file): $from may not include $to"
		bad=$((bad + 1))
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
		sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/')
done < <(sources '*.[ch]')
if [ "$bad" -eq 0 ]; then
	echo "ok - $n includes point the way the rooms allow"
else
	echo "FAIL - $bad of $n includes point the wrong way"
	fails=$((fails + 1))
fi

long=$(sources '*.[ch]' '*.cu' '*.cuh' | xargs wc -l | awk '$2 != "total" && $1 > 2000 { print "  " $2 ": " $1 " lines" }')
if [ -z "$long" ]; then
	echo "ok - no source file is longer than 2,000 lines"
else
	echo "FAIL - source files longer than 2,000 lines:"
	echo "$long"
	fails=$((fails + 1))
fi
exit $((fails > 0))
