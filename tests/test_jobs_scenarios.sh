#!/bin/sh
# test_jobs_scenarios.sh - training jobs through `llmsim run`:
#  - the phased workload under static, dynamic and time_packing allocation,
#    fcfs and easy_backfill: prints makespan, mean JCT and utilisation;
#    every job ends exactly once; easy_backfill is never worse than fcfs on
#    makespan;
#  - examples/training.yaml (Alibaba pods) writes the /jobs table;
#  - examples/mixed_fleet.yaml keeps the inference SLO attainment of
#    inference alone (within 1 point) while using the GPUs more.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
val() { grep "^$2," "$tmp/$1/summary.csv" | cut -d, -f2; }

printf '%-14s %-14s %10s %10s %8s %8s\n' allocator scheduler makespan_s jct_mean_s util useful
for a in static dynamic time_packing; do
	for s in fcfs easy_backfill; do
		d="$a-$s"
		"$exe" run "$src/tests/data/scenarios/phased_jobs.yaml" -o "$tmp/$d" --csv --quiet \
			--set jobs.allocator=$a --set jobs.scheduler=$s >/dev/null 2>"$tmp/err" ||
			{ bad "$d: $(cat "$tmp/err")"; continue; }
		awk -v a=$a -v s=$s -v m="$(val $d jobs_makespan_s)" -v j="$(val $d jct_mean_s)" \
			-v u="$(val $d job_gpu_util)" -v w="$(val $d job_useful_util)" \
			'BEGIN { printf "%-14s %-14s %10.0f %10.0f %8.3f %8.3f\n", a, s, m, j, u, w }'
		n=$(($(wc -l < "$tmp/$d/jobs.csv") - 1))
		ended=$(awk -F, 'NR > 1 && ($3 == 0 || $3 == 1)' "$tmp/$d/jobs.csv" | wc -l)
		[ "$n" = "$(val $d jobs)" ] && [ "$ended" = "$n" ] || bad "$d: $ended of $n jobs ended"
	done
	awk -v f="$(val $a-fcfs jobs_makespan_s)" -v e="$(val $a-easy_backfill jobs_makespan_s)" \
		'BEGIN { exit !(e <= f) }' && ok "$a: easy_backfill makespan <= fcfs" || bad "$a: easy_backfill worse than fcfs"
done
awk -v s="$(val static-fcfs jct_mean_s)" -v d="$(val dynamic-fcfs jct_mean_s)" 'BEGIN { exit !(d < s) }' \
	&& ok "dynamic allocation shortens the mean JCT of phased jobs" || bad "dynamic vs static JCT"

# the pool over time: held + lent + free = 32 GPUs at every sample, and the
# fragmented GPUs are free ones
tot=$(awk -F, 'NR > 1 { if ($2 + $3 + $4 != 32 || $6 > $4) bad = 1 } END { print (NR > 1 && !bad) ? "ok" : "bad" }' "$tmp/static-fcfs/job_timeseries.csv")
[ "$tot" = ok ] && ok "job pool conserved at every sample" || bad "job timeseries"
# run-length encoded (docs/output.md): no three rows in a row alike (a
# stretch keeps its first and last), the sample times a whole number of
# periods apart, the last at the last sample before the run ended, and
# fewer rows than samples
rle=$(awk -F, -v end="$(val static-fcfs jobs_makespan_s)" 'NR > 1 { k = $2 "," $3 "," $4 "," $5 "," $6
		if (k == p1 && k == p2) bad = 1; p2 = p1; p1 = k
		if ($1 != int($1)) bad = 1; n++; t = $1 }
	END { print (!bad && t == int(end) && n < t) ? "ok " n " rows, " t " samples" : "bad" }' "$tmp/static-fcfs/job_timeseries.csv")
case "$rle" in ok*) ok "job timeseries run-length encoded: ${rle#ok }" ;; *) bad "job timeseries encoding: $rle" ;; esac
# the timeline: every job of the phased run ends with one "done" (5), after
# having computed (3); resizes show as checkpoint (4) then restart (2)
tl=$(awk -F, 'NR > 1 { last[$2] = $3; if ($3 == 3) ran[$2] = 1; if ($3 == 5) done++ }
	END { for (j in last) if (last[j] != 5 || !ran[j]) bad = 1; print (done == 24 && !bad) ? "ok" : "bad" }' "$tmp/dynamic-fcfs/job_timeline.csv")
[ "$tl" = ok ] && ok "job timeline: 24 jobs computed and ended once" || bad "job timeline"
# jobs drawn from published cluster statistics (Helios), two virtual clusters
printf 'name: stats\ncluster: [{gpu: H100-SXM, count: 4, gpus_per_node: 8}]\njobs: {source: stats, path: %s, stats_cluster: Helios, count: 200, load: 0.9, quotas: "a:16,b:8", scheduler: las}\n' \
	"$src/tests/data/jobs/acme_cluster_summary.csv" > "$tmp/stats.yaml"
"$exe" run "$tmp/stats.yaml" -o "$tmp/st" --csv --quiet >/dev/null 2>"$tmp/err" || bad "stats jobs: $(cat "$tmp/err")"
[ "$(val st jobs_finished)" = 200 ] && [ "$(tail -n +2 "$tmp/st/jobs.csv" | cut -d, -f2 | sort -u | tr '\n' ' ')" = "0 1 " ] \
	&& ok "Helios-statistics jobs under las with two quotas all finish" || bad "stats jobs: $(val st jobs_finished)"
"$exe" run "$src/examples/training.yaml" -o "$tmp/tr" --csv --quiet >/dev/null 2>"$tmp/err" || bad "training example: $(cat "$tmp/err")"
[ "$(($(wc -l < "$tmp/tr/jobs.csv") - 1))" = "$(val tr jobs)" ] && [ "$(val tr jobs)" -gt 500 ] \
	&& ok "training example: $(val tr jobs) Alibaba pods in /jobs" || bad "training example jobs"

"$exe" run "$src/examples/mixed_fleet.yaml" -o "$tmp/mf" --csv --quiet >/dev/null 2>"$tmp/err" || bad "mixed fleet: $(cat "$tmp/err")"
"$exe" run "$src/examples/autoscaling.yaml" -o "$tmp/inf" --csv --quiet >/dev/null 2>&1
fleet() { # GPU-seconds of served batches and of kept job iterations / capacity
	awk -F, 'FNR == 1 { next } FILENAME ~ /instances/ { g += $9 * $4 } FILENAME ~ /jobs/ { g += $16 }
		END { printf "%.4f", g / (16 * 14400) }' "$tmp/$1/instances.csv" $(ls "$tmp/$1/jobs.csv" 2>/dev/null)
}
fm=$(fleet mf); fi=$(fleet inf)
echo "mixed fleet: SLO $(val mf slo_attainment) (inference alone $(val inf slo_attainment)), GPU use $fm (alone $fi)"
awk -v a="$(val mf slo_attainment)" -v b="$(val inf slo_attainment)" -v x="$fm" -v y="$fi" \
	'BEGIN { exit !(a >= b - 0.01 && x > y) }' \
	&& ok "mixed fleet keeps the SLO and uses the GPUs more" || bad "mixed fleet"
echo "jobs scenarios: $fails failure(s)"
[ "$fails" -eq 0 ]
