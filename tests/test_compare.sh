#!/usr/bin/env bash
# test_compare.sh - `llmsim compare A B` (sim/cli/compare.c) against a hand
# computation: two runs of examples/quickstart.yaml (least_outstanding and
# random routers: the same 9,754 requests), the pairs' mean latencies
# equal each run's summary, and B - A with its 95% interval equals the
# batch means worked out here with awk from requests.csv (K batches of the
# pairs in arrival order, Student's t with K - 1 degrees of freedom:
# t(0.975, 29) = 2.045230, t(0.975, 9) = 2.262157). Then the refusals:
# runs of different workloads, a folder with no report, a file that is
# not HDF5, a bad --batches.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }

for r in least_outstanding random; do
	"$exe" run "$src/examples/quickstart.yaml" -o "$tmp/$r" --csv --quiet \
		--set "scheduler.router=$r" > /dev/null 2>&1 || { bad "run $r"; exit 1; }
done

# hand K T METRIC: "mean_a mean_b diff half" in ms from the CSVs
hand() {
	awk -F, -v K="$1" -v T="$2" -v W="$3" '
	FNR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; f++; next }
	$h["status"] == 0 {
		if (W == "ttft") x = $h["first_token"] - $h["arrival"]
		else if (W == "e2e") x = $h["finish"] - $h["arrival"]
		else if ($h["output_tokens"] > 1)
			x = ($h["finish"] - $h["first_token"]) / ($h["output_tokens"] - 1)
		else next
		id = $h["id"]
		if (f == 1) { a[id] = x; t[id] = $h["arrival"] } else b[id] = x
	}
	END {
		for (id in a) if (id in b) printf "%.9f %d %.12g %.12g\n", t[id], id, a[id], b[id]
	}' "$tmp/least_outstanding/requests.csv" "$tmp/random/requests.csv" |
	sort -k1,1g -k2,2n |
	awk -v K="$1" -v T="$2" '
	{ A[NR - 1] = $3; B[NR - 1] = $4; sa += $3; sb += $4 }
	END {
		n = NR
		for (j = 0; j < K; j++) {
			lo = int(j * n / K); hi = int((j + 1) * n / K); s = 0
			for (i = lo; i < hi; i++) s += B[i] - A[i]
			m[j] = s / (hi - lo); mm += m[j] / K
		}
		for (j = 0; j < K; j++) v += (m[j] - mm) ^ 2
		printf "%d %.3f %.3f %+.3f %.3f\n", n, 1e3 * sa / n, 1e3 * sb / n,
			1e3 * (sb - sa) / n, 1e3 * T * sqrt(v / (K - 1) / K)
	}'
}

for k in "30 2.045230" "10 2.262157"; do
	set -- $k
	"$exe" compare "$tmp/least_outstanding" "$tmp/random" --batches "$1" > "$tmp/cmp.txt" 2>&1 ||
		{ bad "compare --batches $1 exited $?"; cat "$tmp/cmp.txt"; continue; }
	for w in ttft tpot e2e; do
		want=$(hand "$1" "$2" "$w")
		got=$(awk -v w="${w}_mean" '$1 == w { print $2, $3, $4, $5, $7 }' "$tmp/cmp.txt")
		[ "$got" = "$want" ] && ok "$w, $1 batches: pairs, A, B, B - A, 95% half-width = $got" ||
			bad "$w, $1 batches: printed '$got', by hand '$want'"
	done
done
# the pairs' means are the runs' own summary means
for r in least_outstanding random; do
	col=$([ $r = random ] && echo 4 || echo 3)
	s=$(awk -F, '$1 == "ttft_mean_s" { printf "%.3f", 1e3 * $2 }' "$tmp/$r/summary.csv")
	c=$(awk -v c=$col '$1 == "ttft_mean" { print $c }' "$tmp/cmp.txt")
	[ "$s" = "$c" ] && ok "$r: mean TTFT $c ms as in its summary" ||
		bad "$r: mean TTFT $c ms, summary $s ms"
done
grep -q '^ttft_mean .* B higher' "$tmp/cmp.txt" && ok "random's TTFT is higher" ||
	bad "verdict: $(grep '^ttft_mean' "$tmp/cmp.txt")"
# a run compared with itself: no difference, a zero interval
"$exe" compare "$tmp/random" "$tmp/random/report.h5" > "$tmp/self.txt" 2>&1 &&
	grep -q '^e2e_mean .* +0.000 ± 0.000 .*no difference at 95%' "$tmp/self.txt" &&
	ok "a run against itself: no difference" || bad "self: $(cat "$tmp/self.txt")"

# refuse REASON FRAGMENT ARGS...: exit 2 and FRAGMENT on stderr
refuse() {
	local why=$1 frag=$2
	shift 2
	"$exe" compare "$@" > /dev/null 2> "$tmp/err"
	local rc=$?
	[ "$rc" = 2 ] && grep -qF -- "$frag" "$tmp/err" && ok "refused: $why" ||
		bad "$why: exit $rc, stderr: $(cat "$tmp/err")"
}
"$exe" run "$src/examples/quickstart.yaml" -o "$tmp/other" --quiet --set workload.repeat=2 \
	> /dev/null 2>&1 || bad "run other"
refuse "another workload" "compare needs two runs of one workload" "$tmp/random" "$tmp/other"
mkdir "$tmp/empty"
refuse "a folder with no report" "empty/report.h5: cannot open" "$tmp/random" "$tmp/empty"
refuse "not HDF5" "summary.csv: not an HDF5 file" "$tmp/random" "$tmp/random/summary.csv"
refuse "one batch" "--batches wants a whole number from 2" "$tmp/random" "$tmp/random" --batches 1
refuse "one run" "usage: llmsim compare" "$tmp/random"

echo "$fails failed"
[ "$fails" -eq 0 ]
