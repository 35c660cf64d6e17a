#!/bin/sh
# test_pcie_llm.sh - examples/pcie_llm.yaml (docs/validation.md,
# "Contention that serving causes itself"): the chat's latency moves only
# through the flows it shares the PCIe uplink with.
# - with every GPU on its own uplink (network.gpus_per_switch=1) and with
#   the KV class at strict priority over the loads, every chat request
#   gets its first token at the same nanosecond: priority gives the KV
#   copies the whole uplink, as if the loads were not there;
# - with the loads sharing the uplink max-min fairly, chat requests get it
#   later on the whole (the sum of the differences is positive; a few get
#   it earlier, when a delayed reload keeps a request out of a batch and
#   the batch runs faster for the others);
# - the same KV bytes come back in all three (contention moves time, not
#   what is cached).
set -u
exe=${LSIM_EXE:-build/llmsim}
src=${LSIM_SOURCE_ROOT:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; fails=$((fails + 1)); }
cd "$src" || exit 1
for s in shared isolated kv_high; do
	case $s in
	shared) set -- ;;
	isolated) set -- --set network.gpus_per_switch=1 ;;
	kv_high) set -- --set network.link_classes.0.priority=high ;;
	esac
	"$exe" run examples/pcie_llm.yaml -o "$tmp/$s" --csv --quiet "$@" >/dev/null 2>"$tmp/err" ||
		{ bad "run $s: $(cat "$tmp/err")"; echo "1..0"; exit 1; }
done
# chat requests (model 0): id, first_token
chat() { awk -F, 'NR > 1 && $16 == 0 { print $1, $4 }' "$1/requests.csv"; }
chat "$tmp/isolated" > "$tmp/iso.txt"
chat "$tmp/kv_high" > "$tmp/hi.txt"
chat "$tmp/shared" > "$tmp/sh.txt"
n=$(wc -l < "$tmp/iso.txt")
if [ "$n" -gt 100 ] && cmp -s "$tmp/iso.txt" "$tmp/hi.txt"; then
	ok "KV at strict priority: the $n chat requests' first tokens equal those with an uplink per GPU"
else
	bad "KV at strict priority: first tokens differ from an uplink per GPU ($n chat requests)"
fi
cmpr=$(paste -d' ' "$tmp/iso.txt" "$tmp/sh.txt" | awk '$1 != $3 { print "ids"; exit }
	$4 > $2 + 1e-9 { later++ } $4 < $2 - 1e-9 { earlier++ } { s += $4 - $2 }
	END { printf "%d %d %.6f", later, earlier, s }')
set -- $cmpr
if [ "$1" != ids ] && [ "$1" -gt 0 ] && awk -v s="$3" 'BEGIN { exit !(s > 0) }'; then
	ok "max-min sharing: $1 chat requests get their first token later, $2 earlier, $3 s later in all"
else
	bad "max-min sharing: $cmpr (expected chat requests later on the whole)"
fi
r=$(for s in shared isolated kv_high; do
	awk -F, '$1 == "kv_reload_bytes" { print $2 }' "$tmp/$s/summary.csv"; done | sort -u | wc -l)
[ "$r" -eq 1 ] && ok "the same KV bytes reloaded in the three runs" ||
	bad "KV bytes reloaded differ between the runs"
echo "1..3"
[ "$fails" -eq 0 ]
