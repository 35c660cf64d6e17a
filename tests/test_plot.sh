#!/usr/bin/env bash
# test_plot.sh - scripts/plot.py under Debian's interpreter: its Student t
# quantiles against printed tables and its 95% interval on a hand-made
# case, its plotted means and intervals against `llmsim report` on a sweep
# (tests/data/sweeps/routers.yaml), one panel per facet value, --filter
# keeping the runs it names, PDF and SVG files that are PDF and SVG, SLO
# lines, integer ticks and no offset, the same bytes twice, and its
# refusals (unknown keys, bad values) with exit status 2 and a message.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
py=/usr/bin/python3
if ! "$py" -c 'import h5py, pandas, matplotlib' 2>/dev/null; then
	echo "1..0 # SKIP Debian's python3-h5py, python3-pandas or python3-matplotlib is not installed"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
plot() { "$py" "$src/scripts/plot.py" "$@"; }

"$exe" sweep "$src/tests/data/sweeps/routers.yaml" -o "$tmp/sw" --jobs 2 --quiet >/dev/null 2>&1 ||
	{ bad "sweep routers"; exit 1; }
run="$tmp/sw/runs/$(ls "$tmp/sw/runs" | head -1)"

# the statistics: t(0.975, n) against printed tables (Abramowitz and
# Stegun table 26.10), and the interval of 1, 2, 3: mean 2, half-width
# t(0.975, 2) * 1 / sqrt(3) = 4.302653 * 0.577350 = 2.484138
out=$(cd "$tmp" && "$py" - "$src/scripts" <<'PY' 2>&1
import importlib.util, math, sys
spec = importlib.util.spec_from_file_location("plot", sys.argv[1] + "/plot.py")
p = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p)
for n, want in ((1, 12.706205), (2, 4.302653), (3, 3.182446), (4, 2.776445), (9, 2.262157),
                (29, 2.045230), (120, 1.979930)):
    assert abs(p.t975(n) - want) < 2e-6, (n, p.t975(n), want)
m, h, n = p.mean_ci([1, 2, 3])
assert n == 3 and m == 2 and abs(h - 2.484138) < 1e-6, (m, h, n)
m, h, n = p.mean_ci([5.0, float("nan")])      # one finite value: no interval
assert (m, n) == (5.0, 1) and math.isnan(h), (m, h, n)
mean, half = p.mean_ci_rows([[0, 1], [0.5, 1], [1, 1]])
assert list(mean) == [0.5, 1.0] and abs(half[0] - 4.302653 * 0.5 / math.sqrt(3)) < 1e-6 and half[1] == 0
print("stats ok")
PY
)
grep -qx "stats ok" <<<"$out" && ok "t quantiles and the 95% interval of 1, 2, 3 (2 ± 2.4841)" || bad "stats: $out"

# metrics against workload.rate per router, one column per facet value:
# the CSV beside the figure equals llmsim report's means and intervals
if plot "$tmp/sw" -o "$tmp/f" --by scheduler.router --x workload.rate --metrics ttft_p99_s,e2e_mean_s \
	--format png,pdf,svg >"$tmp/list" 2>"$tmp/err"; then
	"$exe" report "$tmp/sw" --metrics ttft_p99_s,e2e_mean_s --format csv >"$tmp/rep.csv"
	got=$("$py" - "$tmp/f/metrics_vs_workload_rate.csv" "$tmp/rep.csv" <<'PY' 2>&1
import sys, pandas as pd
mine = pd.read_csv(sys.argv[1])
rep = pd.read_csv(sys.argv[2])
assert len(mine) == 2 * len(rep) == 12, (len(mine), len(rep))
for _, r in rep.iterrows():
    for m in ("ttft_p99_s", "e2e_mean_s"):
        row = mine[(mine["scheduler.router"] == r["scheduler.router"]) &
                   (mine["workload.rate"] == r["workload.rate"]) & (mine["metric"] == m)]
        assert len(row) == 1 and row["runs"].iloc[0] == r["n"] == 3, row
        assert abs(row["mean"].iloc[0] - r[m + "_mean"]) <= 1e-8 * abs(r[m + "_mean"]), (m, row)
        assert abs(row["ci95"].iloc[0] - r[m + "_ci95"]) <= 1e-8 * abs(r[m + "_ci95"]), (m, row)
        assert r[m + "_ci95"] > 0
print("same")
PY
)
	[ "$got" = same ] && ok "metrics_vs_X: means and 95% intervals are llmsim report's" || bad "metrics_vs_X: $got"
	n=0
	for f in latency_by_scheduler_router utilisation_by_scheduler_router queues_by_scheduler_router \
		cost_vs_slo metrics_vs_workload_rate; do
		[ "$(head -c 4 "$tmp/f/$f.pdf")" = "%PDF" ] && n=$((n + 1))
		head -c 200 "$tmp/f/$f.svg" | grep -q '^<?xml' && grep -q '<svg' "$tmp/f/$f.svg" && n=$((n + 1))
		[ "$(head -c 4 "$tmp/f/$f.png" | od -An -c | tr -d ' ')" = "211PNG" ] && n=$((n + 1))
	done
	[ $n = 15 ] && [ "$(grep -c . "$tmp/list")" = 16 ] && ok "--format png,pdf,svg: 5 figures x 3 formats, each its format's magic" ||
		bad "--format: $n of 15 files right; $(cat "$tmp/list")"
	# byte-identical on a second drawing (SVG ids and PDF dates fixed)
	plot "$tmp/sw" -o "$tmp/f2" --by scheduler.router --x workload.rate --metrics ttft_p99_s,e2e_mean_s \
		--format png,pdf,svg >/dev/null 2>&1
	diff -r "$tmp/f" "$tmp/f2" >/dev/null && ok "the same figures, byte for byte, twice" || bad "figures differ between two drawings"
else
	bad "plot --x: $(cat "$tmp/err")"
fi

# facets: one column of panels per workload.rate (2), every latency panel
# with the TTFT SLO line given; filters keep what they name; counts get
# integer ticks; no axis has an offset
out=$(cd "$tmp" && "$py" - "$src/scripts" "$tmp/sw" "$tmp/g" <<'PY' 2>&1
import importlib.util, sys
import matplotlib.pyplot as plt
spec = importlib.util.spec_from_file_location("plot", sys.argv[1] + "/plot.py")
p = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p)
figs = {}
real_save = p.save
def keep(fig, out, name, formats, legend_in=0.0):
    fig.canvas.draw()
    figs[name] = [(ax.get_title(), ax.get_ylabel(), [l.get_label() for l in ax.get_lines()],
                   [t.get_text() for t in ax.get_yticklabels()],
                   [f.get_useOffset() for f in (ax.xaxis.get_major_formatter(), ax.yaxis.get_major_formatter())
                    if hasattr(f, "get_useOffset")])
                  for ax in fig.axes]
    real_save(fig, out, name, formats, legend_in)
p.save = keep
def draw(*args):
    figs.clear()
    sys.argv = ["plot.py", sys.argv_sweep, "-o", sys.argv_out] + list(args)
    p.main()
    return dict(figs)
sys.argv_sweep, sys.argv_out = sys.argv[2], sys.argv[3]
f = draw("--by", "scheduler.router", "--facet", "workload.rate", "--slo", "ttft=0.05")
lat = f["latency_by_scheduler_router_per_workload_rate"]
assert len(lat) == 4, len(lat)                       # 2 rows (TTFT, E2E) x 2 rates
assert sorted(a[0] for a in lat if a[0]) == ["workload.rate = 20", "workload.rate = 40"], lat
ttft = [a for a in lat if a[2] and "TTFT SLO 0.05 s" in a[2]]
assert len(ttft) == 2, [a[2] for a in lat]           # the line in each TTFT panel
curves = [l for l in lat[0][2] if not l.startswith("TTFT")]
assert curves == ["round_robin", "least_outstanding", "power_of_two"], curves
util = f["utilisation_by_scheduler_router_per_workload_rate"]
running = [a for a in util if a[1].startswith("running")]
assert running and all(t.lstrip("−-").isdigit() for a in running for t in a[3] if t), running
offsets = [u for figure in f.values() for a in figure for u in a[4]]
assert offsets and not any(offsets), "an axis that may use an offset"
f = draw("--by", "scheduler.router", "--facet", "workload.rate", "--filter", "workload.rate=40",
         "--filter", "scheduler.router=power_of_two", "--filter", "scheduler.router=round_robin")
lat = f["latency_by_scheduler_router_per_workload_rate"]
assert len(lat) == 2 and lat[0][0] == "workload.rate = 40", [a[0] for a in lat]
assert [l for l in lat[0][2] if not l.startswith("TTFT")] == ["round_robin", "power_of_two"], lat[0][2]
print("facets ok")
PY
)
grep -qx "facets ok" <<<"$out" && ok "--facet: a column per value; --filter keeps what it names; SLO lines; integer ticks; no offset" ||
	bad "facets: $(tail -5 <<<"$out")"

# a run folder: three figures, with the SLO line
plot "$run" -o "$tmp/r" --slo e2e=2 --format svg >/dev/null 2>"$tmp/err" &&
	[ "$(ls "$tmp/r" | tr '\n' ' ')" = "latency.svg queues.svg utilisation.svg " ] &&
	grep -q "E2E SLO 2 s" "$tmp/r/latency.svg" && ok "a run: three SVG figures, the E2E SLO line labelled" ||
	bad "run figures: $(ls "$tmp/r") $(cat "$tmp/err")"

# refusals: exit 2 and a message naming the option and what to write
refuse() {
	local want=$1
	shift
	plot "$@" -o "$tmp/no" >/dev/null 2>"$tmp/err"
	local rc=$?
	[ $rc -eq 2 ] && grep -qF -- "$want" "$tmp/err" && ok "refused: $want" || bad "$*: rc=$rc $(cat "$tmp/err")"
}
refuse "--filter nothing: not a swept key" "$tmp/sw" --filter nothing=1
refuse "--filter workload.rate=30: no run has workload.rate = 30 (values: 20, 40)" "$tmp/sw" --filter workload.rate=30
refuse "--filter workload.rate: write KEY=VALUE" "$tmp/sw" --filter workload.rate
refuse "--facet nothing: not a swept key" "$tmp/sw" --facet nothing
refuse "--facet scheduler.router: --by names the same key" "$tmp/sw" --by scheduler.router --facet scheduler.router
refuse "--x scheduler.router: its values are not numbers" "$tmp/sw" --by workload.rate --x scheduler.router
refuse "--x workload.rate: scheduler.router also varies within a curve" "$tmp/sw" --by seed --x workload.rate
refuse "--metrics ttft_p99: no such metric" "$tmp/sw" --x workload.rate --by scheduler.router --metrics ttft_p99
refuse "--format jpg: not a format" "$tmp/sw" --format png,jpg
refuse "--dpi 5: write a resolution from 20 to 1200" "$tmp/sw" --dpi 5
refuse "--slo ttf=1: write NAME=SECONDS" "$tmp/sw" --slo ttf=1
refuse "--slo ttft=-1: the threshold is a positive number" "$tmp/sw" --slo ttft=-1
refuse "--facet: $run is a run folder" "$run" --facet workload.rate
[ ! -e "$tmp/no/cost_vs_slo.png" ] && ok "a refusal draws nothing" || bad "a refused command drew figures"

[ "$fails" -eq 0 ]
