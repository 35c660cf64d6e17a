#!/usr/bin/python3
"""plot.py - PNG figures from an llmsim run or sweep (Debian's h5py and
matplotlib; run it with /usr/bin/python3).

  scripts/plot.py RUN_DIR -o FIG_DIR
      latency.png      TTFT and end-to-end latency CDFs
      utilisation.png  GPU utilisation (work at peak rates / time: the time series'
                       gpu_util) per instance and active instances over time
      queues.png       waiting requests per instance over time

  scripts/plot.py SWEEP_DIR -o FIG_DIR [--by KEY]
      latency_by_KEY.png      TTFT and end-to-end latency CDFs per value of KEY (runs pooled)
      utilisation_by_KEY.png  mean GPU utilisation and active instances over time per value
      queues_by_KEY.png       mean waiting requests over time per value
      cost_vs_slo.png         cost against SLO attainment, one point per configuration
                              (mean over seeds), the Pareto front drawn (no points
                              when no class declares a target: no SLO declared)

A run folder holds report.h5 (llmsim run -o); a sweep folder holds
results.sqlite and runs/ (llmsim sweep -o). KEY defaults to the first swept
key other than the seed. Exit status 2 on bad input.
"""
import argparse
import os
import sqlite3
import sys

try:
    import h5py
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError as e:  # pragma: no cover
    sys.exit(f"plot.py: {e.name} is missing: apt-get install python3-h5py "
             "python3-matplotlib, and run with /usr/bin/python3")


def fail(msg):
    print(f"plot.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load_run(path):
    """The run's requests (finished ones), time series and instances."""
    h5 = os.path.join(path, "report.h5") if os.path.isdir(path) else path
    if not os.path.exists(h5):
        fail(f"{path}: no report.h5 (an llmsim run folder)")
    try:
        with h5py.File(h5, "r") as f:
            req = f["requests"][:]
            ts = f["timeseries"][:]
            inst = f["instances"][:]
    except (OSError, KeyError) as e:
        fail(f"{h5}: not an llmsim report ({e})")
    done = req[req["status"] == 0]
    return {
        "ttft": np.sort(done["first_token"] - done["arrival"]),
        "e2e": np.sort(done["finish"] - done["arrival"]),
        "ts": ts,
        "inst": inst,
    }


def cdf(ax, x, label):
    if len(x) == 0:
        return
    ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=label)


def series(ts, field, how):
    """Per sample time: sum or mean over instances of field."""
    t = np.unique(ts["t"])
    v = np.array([getattr(np, how)(ts[field][ts["t"] == x]) for x in t]) if len(t) else t
    return t, v


def active(ts):
    t = np.unique(ts["t"])
    return t, np.array([np.sum(ts["t"] == x) for x in t])


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    print(path)


def plot_run(path, out):
    r = load_run(path)
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    cdf(ax[0], r["ttft"], "TTFT")
    cdf(ax[1], r["e2e"], "end to end")
    for a, name in zip(ax, ["time to first token (s)", "end-to-end latency (s)"]):
        a.set_xscale("log")
        a.set_xlabel(name)
        a.set_ylabel("fraction of requests")
        a.grid(alpha=0.3)
    save(fig, out, "latency.png")

    ts = r["ts"]
    fig, ax = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for i in np.unique(ts["instance"]):
        s = ts[ts["instance"] == i]
        ax[0].plot(s["t"], s["gpu_util"], lw=0.8, label=f"instance {i}")
    ax[0].set_ylabel("GPU utilisation\n(work at peak rates / time)")
    ax[0].legend(fontsize=7, ncol=4)
    t, n = active(ts)
    ax[1].step(t, n, where="post")
    ax[1].set_ylabel("active instances")
    ax[1].set_xlabel("time (s)")
    for a in ax:
        a.grid(alpha=0.3)
    save(fig, out, "utilisation.png")

    fig, ax = plt.subplots(figsize=(10, 3.5))
    for i in np.unique(ts["instance"]):
        s = ts[ts["instance"] == i]
        ax.plot(s["t"], s["queue_len"], lw=0.8, label=f"instance {i}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("waiting requests")
    ax.legend(fontsize=7, ncol=4)
    ax.grid(alpha=0.3)
    save(fig, out, "queues.png")


def plot_sweep(path, out, by):
    dbp = os.path.join(path, "results.sqlite")
    try:
        db = sqlite3.connect(f"file:{dbp}?mode=ro", uri=True)
        rows = db.execute("SELECT run_id, dir FROM sweep_runs WHERE status = 'done' ORDER BY run").fetchall()
    except sqlite3.Error as e:
        fail(f"{dbp}: not a sweep's database ({e})")
    if not rows:
        fail(f"{dbp}: no finished runs")
    keys = [k for (k,) in db.execute(
        "SELECT key FROM params WHERE run_id = ? AND key <> 'seed' ORDER BY rowid", (rows[0][0],))]
    if by is None:
        if not keys:
            fail(f"{dbp}: nothing was swept but the seed: give --by seed")
        by = keys[0]
    value = dict(db.execute("SELECT run_id, value FROM params WHERE key = ?", (by,)).fetchall())
    if not value:
        fail(f"--by {by}: not a swept key of {dbp} (keys: {', '.join(keys + ['seed'])})")
    groups = {}
    for run_id, d in rows:
        groups.setdefault(value.get(run_id, ""), []).append(os.path.join(path, d))
    safe = by.replace(".", "_").replace("/", "_")

    # TTFT and end-to-end latency CDFs, runs of a value pooled
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.2))
    runs = {v: [load_run(d) for d in ds] for v, ds in groups.items()}
    for v, rs in runs.items():
        cdf(axs[0], np.sort(np.concatenate([r["ttft"] for r in rs])), f"{by} = {v}")
        cdf(axs[1], np.sort(np.concatenate([r["e2e"] for r in rs])), f"{by} = {v}")
    for ax, name in zip(axs, ["time to first token (s)", "end-to-end latency (s)"]):
        ax.set_xscale("log")
        ax.set_xlabel(name)
        ax.set_ylabel("fraction of requests")
        ax.grid(alpha=0.3)
    axs[0].legend(fontsize=8)
    save(fig, out, f"latency_by_{safe}.png")

    # utilisation, active instances and queues over time: mean over runs
    fig, ax = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    fq, aq = plt.subplots(figsize=(10, 3.5))
    for v, rs in runs.items():
        t0, u = series(rs[0]["ts"], "gpu_util", "mean")
        _, n = active(rs[0]["ts"])
        _, q = series(rs[0]["ts"], "queue_len", "sum")
        m = len(t0)
        for r in rs[1:]:
            t1, u1 = series(r["ts"], "gpu_util", "mean")
            _, n1 = active(r["ts"])
            _, q1 = series(r["ts"], "queue_len", "sum")
            m = min(m, len(t1))
            u, n, q = u[:m] + u1[:m], n[:m] + n1[:m], q[:m] + q1[:m]
        t0 = t0[:m]
        ax[0].plot(t0, u[:m] / len(rs), lw=0.8, label=f"{by} = {v}")
        ax[1].step(t0, n[:m] / len(rs), where="post", label=f"{by} = {v}")
        aq.plot(t0, q[:m] / len(rs), lw=0.8, label=f"{by} = {v}")
    ax[0].set_ylabel("mean GPU utilisation\n(work at peak rates / time)")
    ax[1].set_ylabel("active instances")
    ax[1].set_xlabel("time (s)")
    ax[0].legend(fontsize=8)
    for a in ax:
        a.grid(alpha=0.3)
    save(fig, out, f"utilisation_by_{safe}.png")
    aq.set_xlabel("time (s)")
    aq.set_ylabel("waiting requests (all instances)")
    aq.legend(fontsize=8)
    aq.grid(alpha=0.3)
    save(fq, out, f"queues_by_{safe}.png")

    # cost vs SLO attainment per configuration (all swept keys but the seed)
    conf = {}
    for run_id, _ in rows:
        label = ", ".join(f"{k}={v}" for k, v in db.execute(
            "SELECT key, value FROM params WHERE run_id = ? AND key <> 'seed' ORDER BY rowid", (run_id,)))
        m = dict(db.execute("SELECT name, value FROM metrics WHERE run_id = ? AND name IN "
                            "('cost_usd', 'slo_attainment')", (run_id,)).fetchall())
        # (NULL: not defined, as slo_attainment without a declared SLO)
        num = {k: np.nan if m.get(k) is None else m[k] for k in ("cost_usd", "slo_attainment")}
        conf.setdefault(label, []).append((num["cost_usd"], num["slo_attainment"]))
    pts = [(label, np.mean([c for c, _ in v]), np.mean([s for _, s in v])) for label, v in conf.items()]
    pts = [p for p in pts if not np.isnan(p[2])]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if not pts:
        ax.text(0.5, 0.5, "no SLO declared: no class sets a ttft, tpot or e2e target",
                ha="center", va="center", transform=ax.transAxes)
    ax.scatter([p[1] for p in pts], [p[2] for p in pts], s=18)
    # Pareto front: no other point is cheaper and at least as good
    front = sorted((p for p in pts if not any(
        q[1] <= p[1] and q[2] >= p[2] and (q[1] < p[1] or q[2] > p[2]) for q in pts)), key=lambda p: p[1])
    ax.plot([p[1] for p in front], [p[2] for p in front], "r-", lw=1, label="Pareto front")
    for p in front:
        ax.annotate(p[0], (p[1], p[2]), fontsize=6, xytext=(3, -8), textcoords="offset points")
    ax.set_xlabel("cost (USD, mean over seeds)")
    ax.set_ylabel("SLO attainment (mean over seeds)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save(fig, out, "cost_vs_slo.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path", help="a run folder (report.h5) or a sweep folder (results.sqlite)")
    ap.add_argument("-o", "--out", required=True, help="folder for the PNG files")
    ap.add_argument("--by", help="sweep: the swept key that names the curves")
    a = ap.parse_args()
    if not os.path.exists(a.path):
        fail(f"{a.path}: no such run or sweep folder")
    os.makedirs(a.out, exist_ok=True)
    if os.path.exists(os.path.join(a.path, "results.sqlite")) and \
            os.path.isdir(os.path.join(a.path, "runs")):
        plot_sweep(a.path, a.out, a.by)
    else:
        plot_run(a.path, a.out)


if __name__ == "__main__":
    main()
