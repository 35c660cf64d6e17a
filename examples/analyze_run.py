#!/usr/bin/python3
"""analyze_run.py - a run's results with the llmsim Python package: latency
percentiles per model and the busiest instances, from a folder written by
`llmsim run`. Usage (from the source tree's root, Debian's interpreter):

    build/llmsim run examples/quickstart.yaml -o out/quickstart --force
    /usr/bin/python3 examples/analyze_run.py out/quickstart
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import llmsim  # noqa: E402 - after the path to the source tree's package

if len(sys.argv) != 2:
    sys.exit("usage: analyze_run.py RUN_DIR")
run = llmsim.open_run(sys.argv[1])
req = run.requests
done = req[req.status_name == "finished"].copy()
done["ttft_s"] = done.first_token_s - done.arrival_s
done["e2e_s"] = done.finish_s - done.arrival_s
done["model_name"] = done.model_name.replace("", "(any)")
print(f"run {run.provenance['run_id']}: {len(done)} of {len(req)} requests finished")
table = done.groupby("model_name")[["ttft_s", "e2e_s"]].quantile([0.5, 0.9, 0.99]).unstack()
print(table.round(4).to_string())
inst = run.instances.sort_values("busy_s", ascending=False).head(5)
print(inst[["id", "gpu", "model", "busy_s", "tokens", "energy_j"]].to_string(index=False))
