#!/usr/bin/env bash
# test_timeseries_cap.sh - output.timeseries_rows on real runs: the same run
# (examples/pcie_llm.yaml: instances, 778 of them over the run, and links;
# examples/quickstart.yaml: 4 instances; examples/training.yaml: the job
# pool) with no cap, the default cap and small caps. Every table keeps
# at most its cap, notes its period (period_s, a power of two times
# sample_period); each coarse row equals what the uncapped rows give for its
# period (averaged columns their mean, a missing row 0; point columns the
# last present sample's), so the time-integrals of gpu_busy, power_w and
# link util are conserved to 1e-9; the summary and /requests never change;
# the default and 0 give the same tables, byte for byte.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
py=/usr/bin/python3
if ! "$py" -c 'import h5py, numpy' 2>/dev/null; then
	echo "1..0 # SKIP Debian's python3-h5py or python3-numpy is not installed"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
run() { # NAME EXAMPLE CAP
	"$exe" run "$src/examples/$2.yaml" -o "$tmp/$1" --quiet \
		${3:+--set output.timeseries_rows=$3} >/dev/null 2>&1 ||
		{ echo "FAIL - run $1"; fails=$((fails + 1)); }
}
run llm0 pcie_llm 0
run llmdef pcie_llm ""
run llm1200 pcie_llm 1200
run quick0 quickstart 0
run quick50 quickstart 50
run job0 training 0
run job20 training 20

"$py" - "$tmp" <<'PY' || fails=$((fails + 1))
import sys, h5py, numpy as np
tmp = sys.argv[1]
fails = 0
def check(ok, what):
    global fails
    print(("ok - " if ok else "FAIL - ") + what)
    fails += not ok
def f(name): return h5py.File(f"{tmp}/{name}/report.h5", "r")

def grid_values(d, P, keycol, rle, t_last):
    """A table decoded onto its grid P, 2P, ... up to t_last (the last
    period may be shorter): for each grid time, {key: row}; run-length
    encoded, the rows at the first stored time at or after it, else the
    rows stored at it."""
    ts, starts = np.unique(d["t"], return_index=True)
    ends = np.append(starts[1:], len(d))
    groups = {}
    out = []
    for j in range(1, int(np.ceil(t_last / P - 1e-9)) + 1):
        g = min(j * P, t_last)
        i = int(np.searchsorted(ts, g - 1e-9 * g))
        if i == len(ts) or (not rle and abs(ts[i] - g) > 1e-9 * g):
            out.append({}); continue
        if i not in groups:
            groups[i] = {int(r[keycol]): r for r in d[starts[i]:ends[i]]}
        out.append(groups[i])
    return out

def compare(fine, coarse, P, keycol, avg, point, rle, what):
    d0, d1 = fine[()], coarse[()]
    K = coarse.attrs["period_s"]
    k = int(round(K / P))
    check(k >= 1 and k & (k - 1) == 0 and abs(K - k * P) < 1e-9 * K,
          f"{what}: period_s {K} a power of two times {P}")
    t_last = max(d0["t"].max(), d1["t"].max()) if len(d0) else 0
    grid = grid_values(d0, P, keycol, rle, t_last)
    ts1, starts = np.unique(d1["t"], return_index=True)
    ends = np.append(starts[1:], len(d1))
    worst, pt_ok = 0.0, True
    for t, lo, hi in zip(ts1, starts, ends):
        j1 = int(round(t / P))                   # the period's last fine sample
        j0 = (int(np.ceil(t / K - 1e-9)) - 1) * k  # the fine samples before it
        span = grid[j0:j1]
        for r in d1[lo:hi]:
            key = int(r[keycol])
            present = [s[key] for s in span if key in s]
            for c in avg:
                want = sum(float(p[c]) for p in present) / len(span)
                worst = max(worst, abs(float(r[c]) - want) / max(abs(want), 1e-12))
            for c in point:
                pt_ok &= bool(present) and r[c] == present[-1][c]
    # the integrals: the uncapped series over its samples, the capped one
    # over its periods (the last up to the last sample)
    integ0 = {c: sum(sum(float(r[c]) for r in s.values()) for s in grid) * P for c in avg}
    integ1 = {c: 0.0 for c in avg}
    for j, s in enumerate(grid_values(d1, K, keycol, rle, t_last) if len(d1) else []):
        for c in avg:
            integ1[c] += sum(float(r[c]) for r in s.values()) * (min((j + 1) * K, t_last) - j * K)
    check(worst < 1e-9, f"{what}: each coarse row the mean of its fine periods (worst {worst:.3g})")
    check(pt_ok, f"{what}: point columns the last present sample's")
    for c in avg:
        a, b = integ0[c], integ1[c]
        check(a > 0 and abs(a - b) <= 1e-9 * a, f"{what}: integral of {c} {a:.9g} conserved ({b:.9g})")

P = f("llm0")["timeseries"].attrs["period_s"]
INST = ("timeseries", "instance", ["gpu_busy", "power_w", "arrival_rate", "gpu_util"],
        ["kv_util", "queue_len", "running"], True)
LINK = ("link_timeseries", "link", ["util"], [], False)
for run, cap, tables in (("llm", 1200, (INST, LINK)), ("quick", 50, (INST,))):
    for t, key, avg, point, rle in tables:
        c = f(f"{run}{cap}")[t]
        check(0 < len(c) <= cap, f"{run} {t} under cap {cap}: {len(c)} rows")
        compare(f(f"{run}0")[t], c, P, key, avg, point, rle, f"{run} {t} cap {cap}")
j = f("job20")["job_timeseries"]
check(0 < len(j) <= 20, f"job_timeseries under cap 20: {len(j)} rows")
compare(f("job0")["job_timeseries"], j, f("job0")["job_timeseries"].attrs["period_s"],
        "held", [], ["held", "lent", "free", "pending", "fragmented"], True, "job_timeseries cap 20")
check(len(f("job0")["job_timeseries"]) > 20 and len(f("llm0")["timeseries"]) > 1200
      and len(f("llm0")["link_timeseries"]) > 1200 and len(f("quick0")["timeseries"]) > 50,
      "the uncapped tables pass the caps")
for t in ("timeseries", "link_timeseries", "job_timeseries"):
    a, b = f("llm0")[t], f("llmdef")[t]
    check(a[()].tobytes() == b[()].tobytes() and a.attrs["period_s"] == b.attrs["period_s"] == P,
          f"{t}: the default cap and 0 give the same bytes")
for name in ("llmdef", "llm1200"):
    for t in ("summary", "requests", "instances", "links"):
        check(f("llm0")[t][()].tobytes() == f(name)[t][()].tobytes(), f"/{t} of {name} as uncapped")
for a, b in (("job0", "job20"), ("quick0", "quick50")):
    check(f(a)["summary"][()].tobytes() == f(b)["summary"][()].tobytes(), f"/summary of {b} as uncapped")
sys.exit(1 if fails else 0)
PY
exit $((fails > 0))
