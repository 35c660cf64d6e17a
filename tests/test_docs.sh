#!/usr/bin/env bash
# test_docs.sh - the figures quoted in README.md and docs/ that come from
# running llmsim (tests/docs/*.tsv, one per document, described in
# tests/docs/README.md): for each row, the quoted text must stand in its
# document, and the command written beside it, run now, must give the
# quoted value to its printed precision. One ok/FAIL line per figure.
#
#   test_docs.sh [fast|all]   fast: rows marked fast (the default)
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
which=${1:-fast}
catalogues=${LSIM_FIGURES:-$src/tests/docs/*.tsv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }

# What an extract may call, in the folder of its command's outputs ($OUT,
# with the command's stdout in stdout.txt):
#   summary NAME [SCALE]     a metric of OUT/summary.csv (a run with --csv)
#   column FILE KEY COL      field COL of the CSV row whose first field is KEY
#   stdout TEXT              the first number after TEXT on stdout
#   pick FILE COL [K=V]...   column COL (by its header) of the first row of
#                            the CSV FILE whose columns K equal V
summary() { awk -F, -v k="$1" -v f="${2:-1}" '$1 == k { printf "%.17g\n", $2 * f; exit }' summary.csv; }
column() { awk -F, -v k="$2" -v c="$3" '$1 == k { print $c; exit }' "$1"; }
stdout() {
	grep -m1 -F -- "$1" stdout.txt | awk -v p="$1" '{
		s = substr($0, index($0, p) + length(p))
		if (match(s, /[-+]?[0-9][0-9,]*(\.[0-9]+)?/)) {
			x = substr(s, RSTART, RLENGTH); gsub(",", "", x); print x
		} }'
}

pick() {
	local file=$1 col=$2
	shift 2
	awk -F, -v col="$col" -v conds="$*" '
		NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i
			  n = split(conds, c, " "); next }
		{ m = 1
		  for (j = 1; j <= n; j++) { split(c[j], kv, "="); if ($h[kv[1]] != kv[2]) m = 0 }
		  if (m) { print $h[col]; exit } }' "$file"
}

# runs a command once (rows that share it share its outputs); $1 = key
declare -A done_dir
run_cmd() {
	local cmd=$1 key
	key=$(printf '%s' "$cmd" | cksum | cut -d' ' -f1)
	if [ -z "${done_dir[$key]:-}" ]; then
		local out=$tmp/$key
		mkdir -p "$out"
		(
			cd "$src" || exit 1
			export OUT=$out
			llmsim() { "$exe" "$@"; }
			eval "$cmd" > "$out/stdout.txt" 2> "$out/stderr.txt"
		)
		echo $? > "$out/rc"
		done_dir[$key]=$out
	fi
	dir=${done_dir[$key]}
}

while IFS=$'\t' read -r doc quoted speed value extract cmd; do
	case "$doc" in '' | '#'* | doc) continue ;; esac
	[ "$which" = all ] || [ "$speed" = fast ] || continue
	n=$((n + 1))
	label="$doc: $quoted"
	if ! grep -qF -- "$quoted" "$src/$doc"; then
		bad "$label: not in $doc (update the catalogue with the document)"
		continue
	fi
	case "$value" in *[0-9]*) ;; *) bad "$label: value '$value' is not a number"; continue ;; esac
	if [ "$speed" = historical ]; then
		ok "$label (a historical figure: $cmd)"
		continue
	fi
	run_cmd "$cmd"
	if [ "$(cat "$dir/rc")" != 0 ]; then
		bad "$label: '$cmd' exited $(cat "$dir/rc"): $(head -c 300 "$dir/stderr.txt")"
		continue
	fi
	got=$(cd "$dir" && eval "$extract" 2>/dev/null)
	# the quoted value's precision: its decimals
	dec=0
	case "$value" in *.*) dec=${value#*.}; dec=${#dec} ;; esac
	if [ -z "$got" ] || ! awk -v g="$got" -v v="$value" -v d="$dec" \
		'BEGIN { h = 0.5 * 10 ^ -d; exit !(g + 0 == g && g >= v - h * 1.000001 && g <= v + h * 1.000001) }'; then
		bad "$label: the command now gives '$got', the document says $value"
	else
		ok "$label ($got)"
	fi
done < <(cat $catalogues)

echo "$n figures, $fails failed"
[ "$n" -gt 0 ] && [ "$fails" -eq 0 ]
