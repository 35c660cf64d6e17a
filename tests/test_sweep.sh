#!/bin/sh
# test_sweep.sh - `llmsim sweep` on tests/data/sweeps/routers.yaml (18 runs):
#  - the process pool (--jobs 2), one process, and two shards merged give
#    the same recorded results (metrics, params, runs rows, sweep rows);
#  - kill -9 of the whole sweep at three points, and at six random moments
#    in a second folder, then the same command:
#    the database passes PRAGMA integrity_check, holds every run exactly
#    once and the same results; no half-written run folder is left, and
#    every run folder holds an HDF5 report;
#  - a run leaving requests unfinished gets one warning line;
#  - bad sweep files and arguments get a message and exit 2.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
sweep="$src/tests/data/sweeps/routers.yaml"
# what must not depend on the executor (runs.wall_s is host time)
q="SELECT run_id, name, value FROM metrics ORDER BY 1, 2;
SELECT * FROM params ORDER BY 1, 2;
SELECT * FROM sweep_runs ORDER BY 1;
SELECT run_id, scenario, seed, config_yaml, status FROM runs ORDER BY 1;"
digest() { sqlite3 "$1/results.sqlite" "$q" | md5sum | cut -d' ' -f1; }

"$exe" sweep "$sweep" -o "$tmp/one" --quiet || bad "sweep, one process"
"$exe" sweep "$sweep" -o "$tmp/two" --jobs 2 --quiet || bad "sweep, --jobs 2"
"$exe" sweep "$sweep" -o "$tmp/s1" --shard 1/2 --jobs 2 --quiet || bad "shard 1/2"
"$exe" sweep "$sweep" -o "$tmp/s2" --shard 2/2 --quiet || bad "shard 2/2"
"$exe" sweep merge -o "$tmp/merged" "$tmp/s1" "$tmp/s2" >/dev/null || bad "merge"
ref=$(digest "$tmp/one")
n=$(sqlite3 "$tmp/one/results.sqlite" "SELECT count(*) FROM runs; SELECT count(DISTINCT value) FROM params WHERE key = 'scheduler.router';" | tr '\n' ' ')
[ "$n" = "18 3 " ] && [ "$(digest "$tmp/two")" = "$ref" ] && [ "$(digest "$tmp/merged")" = "$ref" ] \
	&& [ "$(ls "$tmp/merged/runs" | wc -l)" = 18 ] \
	&& ok "18 runs; --jobs 2, one process and two merged shards record the same results" \
	|| bad "executors differ: $n $(digest "$tmp/two") $(digest "$tmp/merged") vs $ref"
# MPI task farm (when this build has MPI and mpirun exists): rank 0 and
# two workers record the same results as the local executor. Open MPI
# keeps allocations past MPI_Finalize, so leak checking (under ASan) is
# off for this one command.
if "$exe" sweep --help | grep -q "Under mpirun" && command -v mpirun >/dev/null 2>&1; then
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		mpirun --oversubscribe -n 3 "$exe" sweep "$sweep" -o "$tmp/mpi" > "$tmp/mpi.out" 2>&1 \
		|| bad "mpirun sweep: $(tail -5 "$tmp/mpi.out")"
	grep -q "18 to run on 2 MPI workers" "$tmp/mpi.out" && [ "$(digest "$tmp/mpi")" = "$ref" ] \
		&& ok "mpirun -n 3: two workers record the same results as the local executor" \
		|| bad "mpi: $(tail -3 "$tmp/mpi.out") $(digest "$tmp/mpi")"
else
	echo "skip - MPI task farm: this build has no MPI or mpirun is missing"
fi
"$exe" sweep "$sweep" -o "$tmp/one" | grep -q "18 runs, 18 already done, 0 to run" \
	&& ok "a finished sweep runs nothing again" || bad "rerun of a finished sweep"
"$exe" sweep status "$sweep" -o "$tmp/s1" | grep -q "18 runs, 9 done, 9 to run" \
	&& ok "status counts what is left" || bad "status: $("$exe" sweep status "$sweep" -o "$tmp/s1")"

# kill -9 of the sweep and its runs, three times: as soon as 3, 8 and 13
# runs are recorded (runs are then in flight), or after 20 s
recorded() { sqlite3 "$tmp/k/results.sqlite" "SELECT count(*) FROM sweep_runs;" 2>/dev/null || echo 0; }
partial=""
for k in 3 8 13; do
	# a session of its own (setsid may fork): its process group id is
	# the pid it writes, and kill -9 of the group takes its runs too
	rm -f "$tmp/pgid"
	setsid sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$tmp/pgid" \
		"$exe" sweep "$sweep" -o "$tmp/k" --jobs 2 --quiet >/dev/null 2>&1 &
	i=0
	while [ ! -s "$tmp/pgid" ] && [ $i -lt 100 ]; do sleep 0.01; i=$((i + 1)); done
	pg=$(cat "$tmp/pgid")
	i=0
	while [ "$(recorded)" -lt $k ] && [ $i -lt 400 ] && kill -0 "$pg" 2>/dev/null; do
		sleep 0.02
		i=$((i + 1))
	done
	kill -KILL -"$pg" 2>/dev/null
	wait
	partial="$partial $(recorded)"
done
"$exe" sweep "$sweep" -o "$tmp/k" --jobs 2 --quiet || bad "resume after kill -9"
integ=$(sqlite3 "$tmp/k/results.sqlite" "PRAGMA integrity_check;")
dups=$(sqlite3 "$tmp/k/results.sqlite" "SELECT count(*) - count(DISTINCT run_id) FROM metrics WHERE name = 'completed';")
h5=0
for d in "$tmp/k/runs"/*; do
	[ "$(head -c 4 "$d/report.h5" | od -An -c | tr -d ' ')" = "211HDF" ] && h5=$((h5 + 1))
done
[ "$integ" = ok ] && [ "$dups" = 0 ] && [ "$(digest "$tmp/k")" = "$ref" ] && [ "$h5" = 18 ] \
	&& [ -z "$(ls "$tmp/k/runs" | grep '\.tmp$')" ] \
	&& ok "killed three times (runs recorded:$partial), resumed: integrity ok, 18 runs once each, same results" \
	|| bad "resume: integrity $integ, duplicates $dups, HDF5 $h5, digest $(digest "$tmp/k")"

# kill -9 at random moments, six times over (delays drawn with a fixed
# seed between 0.05 s and 1.05 s, so anywhere from loading the sweep to
# recording runs), then resume: the same checks, and every report.h5 opens
kill_at() { # $1 = dir, $2 = seconds
	rm -f "$tmp/pgid"
	setsid sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$tmp/pgid" \
		"$exe" sweep "$sweep" -o "$1" --jobs 2 --quiet >/dev/null 2>&1 &
	i=0
	while [ ! -s "$tmp/pgid" ] && [ $i -lt 100 ]; do sleep 0.01; i=$((i + 1)); done
	sleep "$2"
	kill -KILL -"$(cat "$tmp/pgid")" 2>/dev/null
	wait
}
delays=$(awk 'BEGIN { srand(20261123); for (i = 0; i < 6; i++) printf "%.2f ", 0.05 + 1.0 * rand() }')
for t in $delays; do
	kill_at "$tmp/r" "$t"
done
rec=$(sqlite3 "$tmp/r/results.sqlite" "SELECT count(*) FROM sweep_runs;" 2>/dev/null || echo 0)
"$exe" sweep "$sweep" -o "$tmp/r" --jobs 2 --quiet || bad "resume after random kills"
integ=$(sqlite3 "$tmp/r/results.sqlite" "PRAGMA integrity_check;")
dups=$(sqlite3 "$tmp/r/results.sqlite" "SELECT count(*) - count(DISTINCT run_id) FROM metrics WHERE name = 'completed';")
nruns=$(sqlite3 "$tmp/r/results.sqlite" "SELECT count(DISTINCT run_id) FROM metrics WHERE name = 'completed';")
opened=18
if /usr/bin/python3 -c "import h5py" 2>/dev/null; then
	opened=$(/usr/bin/python3 - "$tmp/r/runs" <<'PY'
import glob, sys, h5py
n = 0
for f in sorted(glob.glob(sys.argv[1] + "/*/report.h5")):
    with h5py.File(f, "r") as h:
        if "summary" in h and "requests" in h:
            n += 1
print(n)
PY
)
fi
[ "$integ" = ok ] && [ "$dups" = 0 ] && [ "$nruns" = 18 ] && [ "$opened" = 18 ] \
	&& [ "$(digest "$tmp/r")" = "$ref" ] && [ -z "$(ls "$tmp/r/runs" | grep '\.tmp$')" ] \
	&& ok "killed at $delays s ($rec runs recorded before resuming): integrity ok, 18 runs once each, every report.h5 opens, same results" \
	|| bad "random kills ($delays): integrity $integ, duplicates $dups, runs $nruns, opened $opened, digest $(digest "$tmp/r")"

# llmsim report: per configuration, the mean and the 95% CI half-width
# (t(0.975, 2) = 4.302652729912 x sd / sqrt(3)) across the three seeds,
# checked against the metrics table for power_of_two at rate 40
"$exe" report "$tmp/one" --format csv > "$tmp/rep.csv" || bad "report"
got=$(awk -F, '$2 == "power_of_two" && $3 == 40 { print $4, $9, $10 }' "$tmp/rep.csv")
want=$(sqlite3 -separator ' ' "$tmp/one/results.sqlite" "SELECT m.value FROM metrics m
	JOIN params a ON a.run_id = m.run_id AND a.key = 'scheduler.router' AND a.value = 'power_of_two'
	JOIN params b ON b.run_id = m.run_id AND b.key = 'workload.rate' AND b.value = '40'
	WHERE m.name = 'e2e_mean_s';" | awk '{ x[NR] = $1; s += $1 } END {
	m = s / NR; for (i = 1; i <= NR; i++) v += (x[i] - m) ^ 2; sd = sqrt(v / (NR - 1))
	printf "%d %.10g %.10g\n", NR, m, 4.302652729912 * sd / sqrt(NR) }')
echo "$got $want" | awk '{ d1 = $2 - $5; d2 = $3 - $6; if (d1 < 0) d1 = -d1; if (d2 < 0) d2 = -d2
	exit !($1 == 3 && $4 == 3 && d1 <= 1e-9 * $5 && d2 <= 1e-6 * $6 + 1e-15 && $6 > 0) }' \
	&& [ "$(wc -l < "$tmp/rep.csv")" = 7 ] \
	&& ok "report: 6 configurations; mean and 95% CI across seeds match a hand computation" \
	|| bad "report: got '$got' want '$want'"
"$exe" report "$tmp/one" --group-by scheduler.router --metrics e2e_mean_s --format markdown | grep -q "^| round_robin | 6 | " \
	&& ok "report --group-by pools the other axes" || bad "report --group-by"
# small.yaml declares no SLO: its slo_attainment is NULL, reported n/a
nulls=$(sqlite3 "$tmp/one/results.sqlite" "SELECT count(*) FROM metrics WHERE name = 'slo_attainment' AND value IS NULL;")
"$exe" report "$tmp/one" --metrics slo_attainment,e2e_mean_s > "$tmp/rep.txt" || bad "report slo_attainment"
[ "$nulls" = 18 ] && [ "$(grep -c '  n/a  ' "$tmp/rep.txt")" = 6 ] \
	&& ok "report: slo_attainment without a declared SLO is NULL and reported n/a" \
	|| bad "report n/a: $nulls NULL, $(cat "$tmp/rep.txt")"
"$exe" report "$tmp/one" --metrics e2e_mean >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no metric 'e2e_mean'" "$tmp/err" && ok "report: unknown metric" || bad "report unknown metric: rc=$rc"

# scripts/plot.py (Debian's python3-h5py and python3-matplotlib): the
# sweep's four figures and a run's three, each a PNG
png() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = "211PNG" ]; }
if /usr/bin/python3 "$src/scripts/plot.py" "$tmp/one" -o "$tmp/figs" --by scheduler.router >/dev/null 2>"$tmp/err" &&
	/usr/bin/python3 "$src/scripts/plot.py" "$tmp/one/runs/$(ls "$tmp/one/runs" | head -1)" -o "$tmp/figs/run" >/dev/null 2>>"$tmp/err"; then
	n=0
	for f in latency_by_scheduler_router utilisation_by_scheduler_router queues_by_scheduler_router cost_vs_slo \
		run/latency run/utilisation run/queues; do
		png "$tmp/figs/$f.png" && n=$((n + 1))
	done
	[ $n = 7 ] && ok "plot.py draws the sweep's 4 figures and a run's 3" || bad "plot.py: $n of 7 figures"
else
	bad "plot.py: $(cat "$tmp/err")"
fi
/usr/bin/python3 "$src/scripts/plot.py" "$tmp/one" -o "$tmp/figs" --by nothing >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "by nothing: not a swept key" "$tmp/err" && ok "plot.py: unknown --by" || bad "plot.py --by nothing: rc=$rc $(cat "$tmp/err")"

# capacity search (llmsim search): a bisection per seed (3 seeds of 20,000
# requests) for a mean response time <= 2 s, judged after the warm-up:
# M/M/1 0.5 and M/M/2 sqrt(2) in closed form (tests/data/sweeps/mmc_search.yaml).
# The seeds' mean is within 2% and 3% of it; the capacity printed (the
# lower 95% bound) is at most that, and runs 10 x longer confirm it.
"$exe" search "$src/tests/data/sweeps/mmc_search.yaml" --slo 'e2e_mean_s<=2' --lo 0.1 --hi 1.95 --csv \
	> "$tmp/search.csv" 2>"$tmp/err" || bad "search: $(cat "$tmp/err")"
col() { awk -F, -v c="$1" -v k="$2" '$1 == c { print $k }' "$tmp/search.csv"; }
c1=$(col instances.0.max_num_seqs=1 2) m1=$(col instances.0.max_num_seqs=1 3) v1=$(col instances.0.max_num_seqs=1 9)
c2=$(col instances.0.max_num_seqs=2 2) m2=$(col instances.0.max_num_seqs=2 3) v2=$(col instances.0.max_num_seqs=2 9)
awk -v a="$m1" -v b="$m2" -v ca="$c1" -v cb="$c2" 'BEGIN { exit !(a > 0.49 && a < 0.51 &&
	b > 1.372 && b < 1.457 && ca <= 0.5 && cb <= 1.41421 && ca > 0.45 && cb > 1.3) }' &&
	[ "$v1 $v2" = "yes yes" ] \
	&& ok "search: M/M/1 $m1 (0.5), M/M/2 $m2 (1.41421) for a mean response time <= 2 s; capacities $c1, $c2 confirmed" \
	|| bad "search: $(cat "$tmp/search.csv")"
# an unstable run fails whatever its mean says: M/M/1 with a bound no
# finite run reaches stops below the stability limit 1 (the whole-run mean
# of 20,000 requests at 1.5 is far below 10^9 s)
"$exe" search "$src/tests/data/scenarios/mm1_search.yaml" --slo 'e2e_mean_s<=1e9' --lo 0.5 --hi 1.5 \
	--verify 0 --csv > "$tmp/search.csv" 2>"$tmp/err" || bad "search unstable: $(cat "$tmp/err")"
m=$(awk -F, 'NR == 2 { print $3 }' "$tmp/search.csv")
awk -v a="$m" 'BEGIN { exit !(a > 0.8 && a <= 1.0) }' &&
	ok "search: an unbounded backlog is refused: M/M/1 capacity $m, below 1" ||
	bad "search unstable: $(cat "$tmp/search.csv")"
# a rate axis in the sweep file is the search's own: refused
printf 'scenario: %s\naxes:\n  workload.rate: [1, 2]\n' "$src/tests/data/scenarios/mm1_search.yaml" > "$tmp/rate_axis.yaml"
"$exe" search "$tmp/rate_axis.yaml" --slo 'e2e_mean_s<=2' >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "axes.workload.rate: the search sets this key itself" "$tmp/err" &&
	ok "search: a rate axis is refused" || bad "search rate axis: rc=$rc $(cat "$tmp/err")"
"$exe" search "$src/tests/data/scenarios/mm1_search.yaml" --slo 'e2e_mean_s<=2' --lo 0.6 --hi 0.9 --seeds 1 \
	| grep -q "below --lo" && ok "search: infeasible at --lo is reported" || bad "search below --lo"
"$exe" search "$src/tests/data/scenarios/mm1_search.yaml" --slo 'e2e_mean<=2' >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no summary metric 'e2e_mean'" "$tmp/err" && ok "search: unknown metric" || bad "search unknown metric: rc=$rc"
# slo_attainment is not defined without a declared SLO (the M/M/1
# scenario has no classes): a constraint on it is refused, naming it
"$exe" search "$src/tests/data/scenarios/mm1_search.yaml" --slo 'e2e_mean_s<=2,slo_attainment>=0.9' \
	>"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "slo_attainment: no SLO declared in .*mm1_search.yaml" "$tmp/err" && [ ! -s "$tmp/out" ] \
	&& ok "search: slo_attainment without a declared SLO is refused" || bad "search without SLO: rc=$rc $(cat "$tmp/err")"

# bad input
expect_bad() { # name, expected message part, sweep file text
	printf '%s\n' "$3" > "$tmp/bad.yaml"
	"$exe" sweep "$tmp/bad.yaml" -o "$tmp/bad" --quiet >/dev/null 2>"$tmp/err"; rc=$?
	[ $rc -eq 2 ] && grep -q -- "$2" "$tmp/err" && ok "bad sweep: $1" || bad "bad sweep $1: rc=$rc $(cat "$tmp/err")"
}
cp "$src/examples/quickstart.yaml" "$tmp/quickstart.yaml"
expect_bad "no axes" "bad.yaml:1:1: axes: a sweep needs axes" "scenario: quickstart.yaml"
expect_bad "unknown key" "bad.yaml:2: axis: unknown key (did you mean 'axes'?)" "scenario: quickstart.yaml
axis: {seed: [1]}"
expect_bad "zip lengths" "axes.workload.rate_scale: zip takes the i-th value of every axis: 1 values here, 2 on axes.scheduler.router" "scenario: quickstart.yaml
mode: zip
axes:
  scheduler.router: [round_robin, least_outstanding]
  workload.rate_scale: [1]"
expect_bad "a bad value" "run 2: scheduler.router=fastest" "scenario: quickstart.yaml
axes: {scheduler.router: [round_robin, fastest]}"
expect_bad "same configuration twice" "runs 1 and 2 have the same configuration" "scenario: quickstart.yaml
axes: {workload.rate_scale: [2, 2.0]}"
expect_bad "range outside random" "a range {min, max} needs mode: random" "scenario: quickstart.yaml
axes: {workload.rate_scale: {min: 1, max: 2}}"
"$exe" sweep "$sweep" --jobs 0 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "jobs: '0' is not a number of processes" "$tmp/err" && ok "bad --jobs" || bad "--jobs 0: rc=$rc"

# a run that leaves requests unfinished (small.yaml stopped at 5 s: 44 of
# its 99 arrived requests in flight) is recorded, and the sweep says so in
# one warning line naming the run; the full run next to it says nothing
printf 'scenario: %s\naxes:\n  duration: [5s, 0]\n' "$src/tests/data/scenarios/small.yaml" > "$tmp/cut.yaml"
"$exe" sweep "$tmp/cut.yaml" -o "$tmp/cut" --quiet >/dev/null 2>"$tmp/err"; rc=$?
w=$(grep -c . "$tmp/err")
[ $rc -eq 0 ] && [ "$w" = 1 ] \
	&& grep -q '^llmsim: warning: run [0-9a-f]\{16\}: 44 of 99 requests unfinished at the end of the run (it stopped at duration 5s' "$tmp/err" \
	&& [ "$(sqlite3 "$tmp/cut/results.sqlite" "SELECT group_concat(value) FROM (SELECT value FROM metrics WHERE name = 'unfinished' ORDER BY value)")" = "0.0,44.0" ] \
	&& ok "a run with unfinished requests: one warning line, recorded with unfinished 44" \
	|| bad "sweep unfinished warning: rc=$rc lines $w: $(cat "$tmp/err")"

# random sampling: the draws depend on sample_seed only
printf 'scenario: quickstart.yaml\nmode: random\nsamples: 3\naxes:\n  workload.rate_scale: {min: 0.5, max: 2, log: true}\n  scheduler.router: [round_robin, least_outstanding]\n' > "$tmp/rand.yaml"
a=$("$exe" sweep status "$tmp/rand.yaml" -o "$tmp/r" | grep -c "to run:")
b=$("$exe" sweep status "$tmp/rand.yaml" -o "$tmp/r" | md5sum)
c=$("$exe" sweep status "$tmp/rand.yaml" -o "$tmp/r" | md5sum)
[ "$a" = 3 ] && [ "$b" = "$c" ] && ok "random mode draws the same 3 points every time" || bad "random: $a"

# --set on a sweep: applied to every run before its axes (an axis on the
# same key wins), recorded in params, and part of the run ids (status sees
# the same runs only with the same --set)
printf 'scenario: %s\naxes:\n  scheduler.router: [round_robin, least_outstanding]\n  workload.count: [50]\n' \
	"$src/tests/data/scenarios/small.yaml" > "$tmp/setsw.yaml"
"$exe" sweep "$tmp/setsw.yaml" -o "$tmp/ss" --quiet --set adaptor=static --set workload.count=7 \
	--set scheduler.queue=sjf >/dev/null 2>&1
left=$("$exe" sweep status "$tmp/setsw.yaml" -o "$tmp/ss" --set adaptor=static --set workload.count=7 \
	--set scheduler.queue=sjf | grep "runs,")
other=$("$exe" sweep status "$tmp/setsw.yaml" -o "$tmp/ss" | grep "runs,")
p=$(sqlite3 "$tmp/ss/results.sqlite" "SELECT group_concat(key || '=' || value, ' ') FROM (SELECT DISTINCT key, value FROM params ORDER BY key, value);")
n=$(sqlite3 "$tmp/ss/results.sqlite" "SELECT min(value), max(value) FROM metrics WHERE name = 'requests';")
[ "$p" = "adaptor=static scheduler.queue=sjf scheduler.router=least_outstanding scheduler.router=round_robin workload.count=50" ] \
	&& [ "$n" = "50.0|50.0" ] && echo "$left" | grep -q "2 done, 0 to run" && echo "$other" | grep -q "0 done, 2 to run" \
	&& ok "sweep --set: every run, axes win, recorded in params and run ids" \
	|| bad "sweep --set: params [$p] requests [$n] status [$left] [$other]"

[ $fails -eq 0 ] && echo "all sweep tests passed" || echo "$fails sweep tests failed"
exit $((fails > 0))
