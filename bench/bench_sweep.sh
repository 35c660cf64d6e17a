#!/bin/sh
# bench_sweep.sh - a sweep of 200 small runs (bench/sweep_200.yaml) with
# --jobs 1 and with --jobs 2, each into a fresh folder; prints
#   bench sweep runs=200 jobs1_s=X jobs2_s=Y speedup=Z runs_per_s_jobs2=W
# (target on the 2-core machine: speedup >= 1.8).
set -eu
exe=$1
sweep=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t() { date +%s.%N; }
a=$(t)
"$exe" sweep "$sweep" -o "$tmp/j1" --jobs 1 --quiet
b=$(t)
"$exe" sweep "$sweep" -o "$tmp/j2" --jobs 2 --quiet
c=$(t)
n=$(ls "$tmp/j2/runs" | wc -l)
awk -v a="$a" -v b="$b" -v c="$c" -v n="$n" 'BEGIN {
	j1 = b - a; j2 = c - b
	printf "bench sweep runs=%d jobs1_s=%.2f jobs2_s=%.2f speedup=%.2f runs_per_s_jobs2=%.1f\n", n, j1, j2, j1 / j2, n / j2 }'
