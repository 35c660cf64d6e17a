#!/bin/sh
# bench_simpy.sh - llmsim beside SimPy on one M/M/c queue (c = 4, arrivals
# 3.6/s, service 1/s, rho = 0.9): runs `llmsim run` on bench/mmc.yaml with
# workload.count=N_LLMSIM and bench/simpy_mmc.py under /usr/bin/python3
# (Debian's python3-simpy, SimPy 2) with N_SIMPY customers, checks each
# mean wait against Erlang C within 3%, and prints
#   bench simpy_ratio model=mmc ratio=X llmsim_customers_per_s=...
#     simpy_customers_per_s=... llmsim_wait_s=... simpy_wait_s=...
#     erlang_c_wait_s=... (then the counts and times behind them)
# ratio = llmsim customers/s / SimPy customers/s. Both rates are over the
# event loop alone: llmsim's host time of the simulation (runs.wall_s, as
# `llmsim run` prints it) and SimPy's simulate() call; the process's whole
# wall time (loading, summary, HDF5 and SQLite reports) is printed as
# llmsim_process_s. Exits 77 (skipped) when /usr/bin/python3 cannot import
# SimPy. Usage: bench_simpy.sh LLMSIM MMC.YAML SIMPY_MMC.PY N_LLMSIM N_SIMPY
set -eu
exe=$1
scenario=$2
model=$3
n_llmsim=$4
n_simpy=$5
py=/usr/bin/python3
if ! [ -x "$py" ] || ! "$py" -c 'import SimPy.Simulation' 2>/dev/null; then
	echo "bench simpy_ratio skipped: $py cannot import SimPy (apt-get install python3-simpy)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t() { date +%s.%N; }
a=$(t)
"$exe" run "$scenario" -o "$tmp/out" --quiet --set "workload.count=$n_llmsim" >/dev/null
b=$(t)
db=$tmp/out/results.sqlite
sim_s=$(sqlite3 "$db" 'SELECT wall_s FROM runs')
metric() { sqlite3 "$db" "SELECT value FROM metrics WHERE name = '$1'"; }
done_l=$(metric completed)
wait_l=$(metric queue_wait_mean_s)
# simpy version=V customers=N wall_s=W wait_s=M
set -- $("$py" "$model" "$n_simpy")
[ "${1:-}" = simpy ] || { echo "bench_simpy: unexpected output from $model" >&2; exit 1; }
ver=${2#version=}
done_s=${3#customers=}
wall_s=${4#wall_s=}
wait_s=${5#wait_s=}
awk -v a="$a" -v b="$b" -v sim_s="$sim_s" -v nl="$n_llmsim" -v done_l="$done_l" \
	-v wl="$wait_l" -v ns="$n_simpy" -v done_s="$done_s" -v ws="$wall_s" \
	-v wsy="$wait_s" -v ver="$ver" 'BEGIN {
	# Erlang C, c = 4, offered load a = lambda / mu = 3.6
	c = 4; ld = 3.6; term = 1; sum = 1
	for (k = 1; k < c; k++) { term *= ld / k; sum += term }
	pc = term * ld / c / (1 - ld / c)
	w = pc / (sum + pc) / (c - ld)
	rl = nl / sim_s; rs = ns / ws
	printf "bench simpy_ratio model=mmc ratio=%.1f llmsim_customers_per_s=%.0f " \
	       "simpy_customers_per_s=%.0f llmsim_wait_s=%.4f simpy_wait_s=%.4f " \
	       "erlang_c_wait_s=%.4f llmsim_customers=%d llmsim_wall_s=%.3f " \
	       "llmsim_process_s=%.2f simpy_customers=%d simpy_wall_s=%.3f simpy_version=%s\n",
	       rl / rs, rl, rs, wl, wsy, w, nl, sim_s, b - a, ns, ws, ver
	bad = 0
	if (done_l != nl || done_s != ns) {
		print "bench_simpy: not every customer was served" > "/dev/stderr"; bad = 1 }
	if ((wl - w) / w > 0.03 || (w - wl) / w > 0.03) {
		printf "bench_simpy: llmsim mean wait %.4f s is more than 3%% off Erlang C %.4f s\n", wl, w > "/dev/stderr"; bad = 1 }
	if ((wsy - w) / w > 0.03 || (w - wsy) / w > 0.03) {
		printf "bench_simpy: SimPy mean wait %.4f s is more than 3%% off Erlang C %.4f s\n", wsy, w > "/dev/stderr"; bad = 1 }
	exit bad }'
