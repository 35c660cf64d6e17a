#!/usr/bin/env bash
# test_python.sh - the Python package (python/llmsim) under Debian's
# interpreter: a run of tests/data/scenarios/small.yaml opened as
# DataFrames equals its CSV files (rows, values, decoded strings, units in
# the column names), the package's units agree with docs/output.md's
# tables, a sweep (tests/data/sweeps/routers.yaml) comes back as one row
# per run with its swept keys and metrics, `import llmsim` works from the
# source tree's root and from an install, and bad folders are refused
# with a message.
set -u
exe=${LSIM_EXE:?}
src=${LSIM_SOURCE_ROOT:?}
build=${LSIM_BUILD_ROOT:?}
py=/usr/bin/python3
if ! "$py" -c 'import h5py, pandas' 2>/dev/null; then
	echo "1..0 # SKIP Debian's python3-h5py and python3-pandas are not installed"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }

"$exe" run "$src/tests/data/scenarios/small.yaml" -o "$tmp/run" --csv --quiet >/dev/null 2>&1 ||
	{ bad "run small"; exit 1; }
"$exe" sweep "$src/tests/data/sweeps/routers.yaml" -o "$tmp/sweep" --quiet >/dev/null 2>&1 ||
	{ bad "sweep routers"; exit 1; }

out=$(cd "$tmp" && PYTHONPATH="$src/python" "$py" - "$tmp/run" "$tmp/sweep" "$src/docs/output.md" <<'PY' 2>&1
import re, sys
import numpy as np, pandas as pd
import llmsim
run_dir, sweep_dir, output_md = sys.argv[1:4]
r = llmsim.open_run(run_dir)
csv = pd.read_csv(run_dir + "/requests.csv")
req = r.requests
assert len(req) == len(csv) == r.summary["requests"] == 300, (len(req), len(csv))
assert list(req.columns[:5]) == ["id", "arrival_s", "first_scheduled_s", "first_token_s", "finish_s"], list(req.columns)
assert np.allclose(req["arrival_s"], csv["arrival"], rtol=0, atol=1e-9)
assert np.allclose(req["finish_s"], csv["finish"], rtol=0, atol=1e-9)
assert (req["prompt_tokens"] == csv["prompt_tokens"]).all()
# a request that names no model (-1: any) has no model name
assert set(req["model"]) == {-1} and set(req["model_name"]) == {""}, set(req["model_name"])
assert (req["status_name"] == "finished").sum() == r.summary["completed"]
inst = r.instances
assert isinstance(inst["gpu"][0], str) and inst["gpu"][0] == "H100-SXM", inst["gpu"][0]
assert "start_s" in inst and "energy_j" in inst and "swap_bytes" in inst
summ = pd.read_csv(run_dir + "/summary.csv")
for name, value in zip(summ.iloc[:, 0], summ.iloc[:, 1]):
    if name in r.summary.index and not np.isnan(r.summary[name]):
        assert abs(r.summary[name] - float(value)) <= 1e-6 * max(1, abs(float(value))), name
assert r.summary_units["ttft_p99_s"] == "s"
assert "seed" in r.config and r.provenance["seed"] == 11, r.provenance
assert r.timeseries.columns[0] == "t_s" and "arrival_rate_per_s" in r.timeseries
assert "bw_bytes_per_s" in r.links and isinstance(r.links["kind"][0], str)
print("run ok")

# the units against docs/output.md's tables
doc, cur = {}, None
for line in open(output_md, encoding="utf-8"):
    m = re.match(r"^#+ `/(\w+)`", line)
    if m:
        cur = m.group(1)
        continue
    if line.startswith("| column | type | unit"):
        doc.setdefault(cur, {})
        continue
    m = re.match(r"^\| (`[^|]+`) \| ([^|]*) \| ([^|]*) \|", line)
    if m and cur in doc:
        for c in re.findall(r"`(\w+)`", m.group(1)):
            if m.group(3).strip():
                doc[cur][c] = m.group(3).strip()
for table, units in doc.items():
    mine = llmsim.UNITS.get(table, {})
    assert mine == units, (table, sorted(set(mine.items()) ^ set(units.items())))
assert set(doc) >= {"requests", "instances", "timeseries", "links"}, set(doc)
print("units ok")

s = llmsim.open_sweep(sweep_dir)
t = s.summary
assert len(t) == 18, len(t)
assert set(t["scheduler.router"]) == {"round_robin", "least_outstanding", "power_of_two"}
assert t["workload.rate"].dtype.kind in "if" and set(t["workload.rate"]) == {20, 40}
assert (t["completed"] == 3000).all() and (t["status"] == "done").all()
assert sorted(t["seed"].unique()) == [1, 2, 3], t["seed"].unique()
one = s.run(t["run_id"][5])
assert one.summary["ttft_p99_s"] == t["ttft_p99_s"][5]
means = t.groupby(["scheduler.router", "workload.rate"])["e2e_mean_s"].mean()
assert len(means) == 6
assert llmsim.open(sweep_dir).summary.shape == t.shape
assert isinstance(llmsim.open(run_dir), llmsim.Run)
print("sweep ok")

for path, kind in ((sweep_dir, llmsim.open_run), (run_dir, llmsim.open_sweep)):
    try:
        kind(path + "/nothing")
        raise AssertionError("no error for " + path)
    except FileNotFoundError as e:
        assert "nothing" in str(e)
print("refusals ok")
PY
)
for part in "run ok" "units ok" "sweep ok" "refusals ok"; do
	grep -qx "$part" <<<"$out" && ok "python: ${part% ok}" || bad "python: ${part% ok}: $(tail -5 <<<"$out")"
done

# the example script: its TTFT p99 is the summary's (4 decimals)
want=$(awk -F, '$1 == "ttft_p99_s" { printf "%.4f", $2 }' "$tmp/run/summary.csv")
got=$("$py" "$src/examples/analyze_run.py" "$tmp/run" 2>&1 | awk '$1 == "(any)" { print $4 }')
[ -n "$want" ] && [ "$got" = "$want" ] && ok "examples/analyze_run.py: TTFT p99 $got s" ||
	bad "examples/analyze_run.py: TTFT p99 '$got', summary $want"

# import llmsim from the source tree's root (the issue's one-liner), and
# from an install (DESTDIR) with the source tree out of the path
one=$(cd "$src" && "$py" -c "import llmsim; r = llmsim.open_run('$tmp/run'); print(len(r.requests))" 2>&1)
[ "$one" = 300 ] && ok "import llmsim from the source tree's root" || bad "source root: $one"
DESTDIR="$tmp/inst" meson install -C "$build" --quiet >/dev/null 2>&1 &&
	pkg=$(find "$tmp/inst" -path '*dist-packages/llmsim/__init__.py' | head -1) &&
	[ -n "$pkg" ] &&
	got=$(cd "$tmp" && PYTHONPATH=$(dirname "$(dirname "$pkg")") "$py" -c "import llmsim, sys; assert llmsim.__file__.startswith('$tmp/inst'), llmsim.__file__; print(len(llmsim.open_run('run').requests))" 2>&1) &&
	[ "$got" = 300 ] && ok "import llmsim from an install" || bad "install: ${got:-not installed}"

echo "$((fails == 0 ? 1 : 0)) passed, $fails failed" >/dev/null
[ "$fails" -eq 0 ]
