#!/usr/bin/python3
"""plot.py - figures from an llmsim run or sweep, fit for a paper (Debian's
h5py, matplotlib, numpy and pandas; run it with /usr/bin/python3).

  scripts/plot.py RUN_DIR -o FIG_DIR [--slo NAME=SECONDS]... [--format png,pdf,svg]
      latency      TTFT and end-to-end latency CDFs, SLO thresholds as lines
      utilisation  GPU utilisation (the time series' gpu_util: work at peak
                   rates / time) and running requests per instance, mean over
                   the instances with their range shaded; active instances
                   when their number changes
      queues       waiting requests per instance over time

  scripts/plot.py SWEEP_DIR -o FIG_DIR [--by KEY] [--facet KEY] [--filter KEY=VALUE]...
                  [--x KEY] [--metrics NAME,...] [--slo NAME=SECONDS]... [--format ...]
      latency_by_BY[_per_FACET]      TTFT and end-to-end CDFs, one curve per value
                                     of BY, one column of panels per value of FACET
      utilisation_by_BY[_per_FACET]  the run's utilisation panels, mean over runs
      queues_by_BY[_per_FACET]       waiting requests (all instances), mean over runs
      cost_vs_slo                    cost against SLO attainment per configuration
                                     (mean ± 95% CI over seeds), the Pareto front
      metrics_vs_X[_per_FACET]       with --x: each metric of --metrics (default
                                     ttft_p50_s,ttft_p99_s,e2e_p99_s) against the
                                     numeric swept key X, one curve per value of BY,
                                     mean ± 95% CI over seeds; the points drawn are
                                     written beside it as metrics_vs_X[...].csv

Across seeds: a curve is the mean over the runs that differ only in their
seed, and the band (error bars in cost_vs_slo) its 95% confidence interval,
Student t with n - 1 degrees of freedom: t(0.975, n-1) * sd / sqrt(n), as
`llmsim report` computes it. A CDF's band is that interval of the runs'
CDFs at each latency. With one seed there is no band, and the legend says
so. When another swept key varies within a curve of the CDF or time
figures its runs are pooled and the legend says over which key (give
--facet or --filter to separate them); metrics_vs_X refuses to pool.

--by KEY names the curves (default: the first swept key other than the
seed); --facet KEY draws one column of panels per value of KEY (e.g. the
load level); --filter KEY=VALUE keeps the runs whose swept KEY has that
value (repeat it: different keys all hold, one key given twice keeps
either value). --slo NAME=SECONDS (NAME: ttft, tpot or e2e) draws a
threshold line on the latency axes; without it the targets the classes
declare (the report's /classes) are drawn. --format is a comma list of
png, pdf and svg (default png); every figure is written in each, PNGs
at --dpi dots per inch (default 100; 300 for print).

Colours are the Okabe-Ito palette (safe for colour-blind readers), each
curve with its own line style and marker; counts get integer ticks and no
axis uses an offset. A run folder holds report.h5 (llmsim run -o); a sweep
folder holds results.sqlite and runs/ (llmsim sweep -o). Exit status 2 on
bad input, with a message naming the option.
"""
import argparse
import math
import os
import sqlite3
import sys

try:
    import h5py
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    import numpy as np
    import pandas as pd
except ImportError as e:  # pragma: no cover
    sys.exit(f"plot.py: {e.name} is missing: apt-get install python3-h5py "
             "python3-matplotlib python3-pandas, and run with /usr/bin/python3")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import llmsim  # noqa: E402 - the source tree's package, found through the line above

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every
# common colour-vision deficiency. Yellow last: faint on white.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9",
           "#000000", "#F0E442"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)),
              (0, (1, 1)), (0, (8, 2))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
FORMATS = ("png", "pdf", "svg")
SLO_NAMES = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E"}

plt.rcParams.update({
    "axes.formatter.useoffset": False,   # no "+1.006e1" above an axis
    "axes.grid": True, "grid.alpha": 0.3,
    "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9,
    "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8,
    "pdf.fonttype": 42,                  # TrueType in PDFs (no Type 3 fonts)
    "svg.fonttype": "none",              # text stays text in SVGs
    "svg.hashsalt": "llmsim",            # the same ids on every run
})


def fail(msg):
    print(f"plot.py: {msg}", file=sys.stderr)
    sys.exit(2)


def style(i):
    return {"color": PALETTE[i % len(PALETTE)], "linestyle": LINESTYLES[i % len(LINESTYLES)],
            "marker": MARKERS[i % len(MARKERS)]}


# --- statistics ---------------------------------------------------------

def _t_two_sided(t, n):
    """P(|T| < t) for Student's t with n degrees of freedom (Abramowitz and
    Stegun 26.7.3 and 26.7.4: a finite sum for an integer n)."""
    th = math.atan(t / math.sqrt(n))
    c2 = math.cos(th) ** 2
    if n % 2:
        term = total = math.cos(th) if n > 1 else 0.0
        for k in range(3, n - 1, 2):
            term *= (k - 1) / k * c2
            total += term
        return 2 / math.pi * (th + math.sin(th) * total)
    term = total = 1.0
    for k in range(2, n - 1, 2):
        term *= (k - 1) / k * c2
        total += term
    return math.sin(th) * total


def t975(n):
    """The 0.975 quantile of Student's t with n >= 1 degrees of freedom."""
    lo, hi = 0.0, 1000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_two_sided(mid, n) < 0.95:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mean_ci(values):
    """(mean, 95% half-width, n) over the finite values; half-width NaN for n < 2."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    if n == 1:
        return float(v[0]), math.nan, 1
    return float(np.mean(v)), t975(n - 1) * float(np.std(v, ddof=1)) / math.sqrt(n), n


def mean_ci_rows(m):
    """Column-wise mean and half-width of a (runs x points) array."""
    m = np.asarray(m, dtype=float)
    mean = m.mean(axis=0)
    if m.shape[0] < 2:
        return mean, None
    return mean, t975(m.shape[0] - 1) * m.std(axis=0, ddof=1) / math.sqrt(m.shape[0])


# --- reading ------------------------------------------------------------

def load_run(path):
    """The run's finished requests' latencies, its time series and its SLOs."""
    try:
        r = llmsim.open_run(path)
        req = r.requests
        ts = r.timeseries
        classes = r.classes if "classes" in r.tables() else None
    except (OSError, KeyError) as e:
        fail(f"{path}: not an llmsim report ({e})")
    done = req[req["status"] == 0]
    slo = []
    if classes is not None:
        for _, c in classes.iterrows():
            for k in SLO_NAMES:
                v = c.get(f"{k}_target_s", math.nan)
                if np.isfinite(v) and v > 0:
                    slo.append((k, float(v), c["name"]))
    return {
        "ttft": np.sort((done["first_token_s"] - done["arrival_s"]).to_numpy()),
        "e2e": np.sort((done["finish_s"] - done["arrival_s"]).to_numpy()),
        "ts": ts,
        "slo": slo,
    }


def per_time(ts):
    """Per sample time: mean utilisation and running requests over the
    instances present, their minima and maxima, the active instances and
    the waiting requests of all instances."""
    g = ts.groupby("t_s", sort=True)
    out = pd.DataFrame({
        "util": g["gpu_util"].mean(), "util_lo": g["gpu_util"].min(),
        "util_hi": g["gpu_util"].max(),
        "running": g["running"].mean(), "running_lo": g["running"].min(),
        "running_hi": g["running"].max(),
        "active": g.size(), "queue": g["queue_len"].sum()})
    return out


def slo_lines(cli, runs):
    """The thresholds to draw: --slo's, or the classes' declared targets."""
    if cli:
        return [(k, v, "") for k, v in cli]
    seen, out = set(), []
    for r in runs:
        for k, v, name in r["slo"]:
            if (k, v) not in seen:
                seen.add((k, v))
                out.append((k, v, name))
    return out


def draw_slo(ax, lines, kind, vertical):
    for j, (k, v, name) in enumerate(x for x in lines if x[0] == kind):
        label = f"{SLO_NAMES[k]} SLO {v:g} s" + (f" ({name})" if name else "")
        f = ax.axvline if vertical else ax.axhline
        dash = {"ttft": (1, 2), "tpot": (3, 2, 1, 2), "e2e": (4, 2)}[k]
        f(v, color="#000000", lw=1, linestyle=(0, dash[:1] + (dash[1] + j,) + dash[2:]),
          label=label, zorder=1)


# --- saving -------------------------------------------------------------

META = {"png": {"Software": None}, "pdf": {"Creator": None, "Producer": None,
        "CreationDate": None}, "svg": {"Creator": None, "Date": None}}


def save(fig, out, name, formats, legend_in=0.0):
    """Writes the figure in each format (pairs of a format and the PNG
    resolution); legend_in inches kept at the bottom."""
    h = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, legend_in / h, 1, 1))
    for fmt, dpi in formats:
        path = os.path.join(out, f"{name}.{fmt}")
        fig.savefig(path, dpi=dpi, metadata=META[fmt])
        print(path)
    plt.close(fig)


def bottom_legend(fig, handles, labels, title):
    """One legend for the figure, below the panels (it covers no data)."""
    fit = max(1, int(fig.get_size_inches()[0] / 1.6))   # entries a row holds
    ncol = min(len(labels), fit)
    rows = math.ceil(len(labels) / ncol) + (title.count("\n") + 1 if title else 0)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, title=title,
               bbox_to_anchor=(0.5, 0.0), frameon=False, title_fontsize=8)
    return 0.12 + 0.2 * rows


def width(ncol):
    return max(3.3 * ncol + 0.8, 5.0)


def metric_label(m):
    """ttft_p99_s -> TTFT p99 (s); slo_attainment -> SLO attainment."""
    unit = " (s)" if m.endswith("_s") else ""
    words = (m[:-2] if unit else m).split("_")
    up = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E", "slo": "SLO", "rps": "(1/s)",
          "usd": "(USD)", "gpu": "GPU", "mfu": "MFU", "mbu": "MBU"}
    return " ".join(up.get(w, w) for w in words) + unit


def integer_ticks(ax):
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


# --- a run --------------------------------------------------------------

def cdf_grid(samples):
    pos = np.concatenate([s[s > 0] for s in samples if len(s)]) if samples else np.array([])
    if len(pos) == 0:
        return np.array([1e-3, 1.0])
    lo, hi = pos.min(), pos.max()
    return np.logspace(math.log10(lo), math.log10(hi * 1.0001), 400)


def ecdf(sorted_x, grid):
    return np.searchsorted(sorted_x, grid, side="right") / max(len(sorted_x), 1)


LAT = (("ttft", "time to first token (s)"), ("e2e", "end-to-end latency (s)"))


def plot_run(path, out, cli_slo, formats):
    r = load_run(path)
    slo = slo_lines(cli_slo, [r])
    fig, axs = plt.subplots(1, 2, figsize=(7.5, 3.0))
    for ax, (k, name) in zip(axs, LAT):
        if len(r[k]):
            ax.plot(r[k], np.arange(1, len(r[k]) + 1) / len(r[k]), color=PALETTE[0])
        draw_slo(ax, slo, k, True)
        ax.set_xscale("log")
        ax.set_xlabel(name)
        ax.set_ylabel("fraction of requests")
        ax.set_ylim(0, 1.02)
        if any(s[0] == k for s in slo):
            ax.legend(loc="lower right")
    save(fig, out, "latency", formats)

    p = per_time(r["ts"])
    changes = p["active"].nunique() > 1
    fig, axs = plt.subplots(3 if changes else 2, 1, figsize=(7.5, 6.0 if changes else 4.4),
                            sharex=True)
    t = p.index.to_numpy()
    for ax, col, label in ((axs[0], "util", "GPU utilisation\n(work at peak rates / time)"),
                           (axs[1], "running", "running requests\nper instance")):
        ax.fill_between(t, p[f"{col}_lo"], p[f"{col}_hi"], color=PALETTE[0], alpha=0.35,
                        lw=0, label="range over instances")
        ax.plot(t, p[col], color=PALETTE[0], lw=0.8, label="mean over instances")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    axs[0].set_ylim(0, 1)
    integer_ticks(axs[1])
    axs[0].legend(loc="lower right", ncol=2)
    if changes:
        axs[2].step(t, p["active"], where="post", color=PALETTE[0])
        axs[2].set_ylabel("active instances")
        axs[2].set_ylim(0, p["active"].max() + 1)
        integer_ticks(axs[2])
    else:
        axs[0].set_title(f"{int(p['active'].iloc[0])} instances throughout")
    axs[-1].set_xlabel("time (s)")
    save(fig, out, "utilisation", formats)

    fig, ax = plt.subplots(figsize=(7.5, 3.1))
    ts = r["ts"]
    inst = np.unique(ts["instance"])
    if len(inst) <= len(PALETTE):
        for i, n in enumerate(inst):
            s = ts[ts["instance"] == n]
            ax.plot(s["t_s"], s["queue_len"], lw=0.8, color=PALETTE[i],
                    linestyle=LINESTYLES[i], label=f"instance {n}")
        ax.set_ylabel("waiting requests")
    else:
        ax.plot(t, p["queue"], lw=0.8, color=PALETTE[0])
        ax.set_ylabel("waiting requests\n(all instances)")
    ax.set_ylim(bottom=0)
    integer_ticks(ax)
    ax.set_xlabel("time (s)")
    h, l = ax.get_legend_handles_labels()
    save(fig, out, "queues", formats, bottom_legend(fig, h, l, "") if l else 0.0)


# --- a sweep ------------------------------------------------------------

def swept_keys(db):
    """The swept keys in the sweep file's order (the seed left out)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        first = con.execute("SELECT run_id FROM sweep_runs ORDER BY run LIMIT 1").fetchone()
        keys = [k for (k,) in con.execute(
            "SELECT key FROM params WHERE run_id = ? AND key <> 'seed' ORDER BY rowid",
            (first[0],))] if first else []
        con.close()
    except sqlite3.Error as e:
        fail(f"{db}: not a sweep's database ({e})")
    return keys


def ordered(values):
    """The distinct values: numbers ascending, anything else in sweep order."""
    u = list(dict.fromkeys(values))
    if all(isinstance(v, (int, float, np.integer, np.floating)) for v in u):
        return sorted(u)
    return u


def fmt(v):
    return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


def apply_filters(t, filters, keys, db):
    by_key = {}
    for f in filters:
        if "=" not in f:
            fail(f"--filter {f}: write KEY=VALUE (e.g. --filter scheduler.router=round_robin)")
        k, v = f.split("=", 1)
        if k not in keys and k != "seed":
            fail(f"--filter {k}: not a swept key of {db} (keys: {', '.join(keys + ['seed'])})")
        col = t[k]
        if col.dtype.kind in "if":
            try:
                want = float(v)
            except ValueError:
                fail(f"--filter {k}={v}: {k} takes numbers (values: "
                     f"{', '.join(fmt(x) for x in ordered(col))})")
            hit = col.astype(float) == want
        else:
            hit = col.astype(str) == v
        if not hit.any():
            fail(f"--filter {k}={v}: no run has {k} = {v} (values: "
                 f"{', '.join(fmt(x) for x in ordered(col))})")
        by_key[k] = by_key[k] | hit if k in by_key else hit
    keep = pd.Series(True, index=t.index)
    for hit in by_key.values():
        keep &= hit
    return t[keep]


def check_key(option, key, keys, db):
    if key is not None and key not in keys and key != "seed":
        fail(f"{option} {key}: not a swept key of {db} (keys: {', '.join(keys + ['seed'])})")


def safe(key):
    return key.replace(".", "_").replace("/", "_")


def cells(t, by, facet):
    fvals = ordered(t[facet]) if facet else [None]
    bvals = ordered(t[by])
    for fi, f in enumerate(fvals):
        for bi, b in enumerate(bvals):
            rows = t[(t[by] == b) & ((t[facet] == f) if facet else True)]
            yield fi, f, bi, b, rows


def band_note(t, by, facet, x, keys):
    """The legend's title: what a curve is and what its band is."""
    fixed = {by, facet, x}
    pooled = [k for k in keys if k not in fixed and t[k].nunique() > 1]
    seeds = t.groupby([k for k in keys if k in t] or ["seed"])["seed"].nunique()
    n = int(seeds.min()) if len(seeds) else 0
    if pooled:
        return (f"{by}: runs pooled over {', '.join(pooled)} (no band; give --facet "
                f"or --filter)"), False
    if n < 2:
        return f"{by}: one seed (no band)", False
    return f"{by}: mean of {n} seeds, band 95% CI (Student t)", True


def plot_sweep(path, out, a, formats):
    db = os.path.join(path, "results.sqlite")
    keys = swept_keys(db)
    try:
        s = llmsim.open_sweep(path)
    except (OSError, ValueError, sqlite3.Error, pd.errors.DatabaseError) as e:
        fail(f"{db}: not a sweep's database ({e})")
    t = s.summary[s.summary["status"] == "done"]
    if t.empty:
        fail(f"{db}: no finished runs")
    by = a.by
    if by is None:
        if not keys:
            fail(f"{db}: nothing was swept but the seed: give --by seed")
        by = keys[0]
    check_key("--by", by, keys, db)
    check_key("--facet", a.facet, keys, db)
    check_key("--x", a.x, keys, db)
    if a.facet is not None and a.facet == by:
        fail(f"--facet {a.facet}: --by names the same key; facet by another")
    t = apply_filters(t, a.filter, keys, db)
    facet = a.facet
    if a.x is not None:
        check_x(t, keys, by, facet, a)
    suffix = f"by_{safe(by)}" + (f"_per_{safe(facet)}" if facet else "")
    fvals = ordered(t[facet]) if facet else [None]
    ncol = len(fvals)
    bvals = ordered(t[by])
    note, band = band_note(t, by, facet, None, keys)
    runs = {rid: load_run(s.run(rid).path) for rid in t["run_id"]}
    slo = slo_lines(a.slo, runs.values())

    def title(ax, f):
        if facet:
            ax.set_title(f"{facet} = {fmt(f)}")

    # latency CDFs: the mean of the runs' CDFs, the band their 95% CI
    grids = {k: cdf_grid([r[k] for r in runs.values()]) for k, _ in LAT}
    fig, axs = plt.subplots(2, ncol, figsize=(width(ncol), 5.2), squeeze=False,
                            sharey=True)
    for fi, f, bi, b, rows in cells(t, by, facet):
        for ri, (k, name) in enumerate(LAT):
            ax = axs[ri][fi]
            if rows.empty:
                continue
            m = [ecdf(runs[rid][k], grids[k]) for rid in rows["run_id"]]
            mean, half = mean_ci_rows(m)
            st = style(bi)
            ax.plot(grids[k], mean, color=st["color"], linestyle=st["linestyle"],
                    marker=st["marker"], markevery=(bi * 9, 50), ms=4, lw=1.2, label=fmt(b))
            if band and half is not None:
                ax.fill_between(grids[k], np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1),
                                color=st["color"], alpha=0.2, lw=0)
    for fi, f in enumerate(fvals):
        for ri, (k, name) in enumerate(LAT):
            ax = axs[ri][fi]
            draw_slo(ax, slo, k, True)
            ax.set_xscale("log")
            ax.set_xlabel(name)
            ax.set_ylim(0, 1.02)
            if fi == 0:
                ax.set_ylabel("fraction of requests")
        title(axs[0][fi], f)
    handles, labels = axs[0][0].get_legend_handles_labels()
    for ax in axs[1]:   # the E2E SLO line's entry
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    save(fig, out, f"latency_{suffix}", formats, bottom_legend(fig, handles, labels, note))

    # utilisation, running requests, active instances and queues over time
    series = {rid: per_time(r["ts"]) for rid, r in runs.items()}
    changes = any(p["active"].nunique() > 1 for p in series.values()) or \
        len({int(p["active"].iloc[0]) for p in series.values() if len(p)}) > 1
    rows_u = [("util", "GPU utilisation\n(work at peak rates / time)"),
              ("running", "running requests\nper instance")] + \
        ([("active", "active instances")] if changes else [])
    fig, axs = plt.subplots(len(rows_u), ncol, figsize=(width(ncol), 1.9 * len(rows_u) + 0.4),
                            squeeze=False, sharex=True)
    fq, aq = plt.subplots(1, ncol, figsize=(width(ncol), 2.8), squeeze=False)
    for fi, f, bi, b, rows in cells(t, by, facet):
        if rows.empty:
            continue
        ps = [series[rid] for rid in rows["run_id"]]
        m = min(len(p) for p in ps)
        tt = ps[0].index.to_numpy()[:m]
        st = style(bi)
        targets = [(axs[ri][fi], col) for ri, (col, _) in enumerate(rows_u)] + [(aq[0][fi], "queue")]
        for ax, col in targets:
            mean, half = mean_ci_rows([p[col].to_numpy()[:m] for p in ps])
            draw = ax.step if col == "active" else ax.plot
            kw = {"where": "post"} if col == "active" else {}
            draw(tt, mean, color=st["color"], linestyle=st["linestyle"], lw=0.9, label=fmt(b), **kw)
            if band and half is not None and col != "active":
                ax.fill_between(tt, np.maximum(mean - half, 0), mean + half, color=st["color"],
                                alpha=0.2, lw=0)
    for fi, f in enumerate(fvals):
        for ri, (col, label) in enumerate(rows_u):
            ax = axs[ri][fi]
            ax.set_ylim(bottom=0)
            if col == "util":
                ax.set_ylim(0, 1)
            else:
                integer_ticks(ax)
            if fi == 0:
                ax.set_ylabel(label)
        axs[-1][fi].set_xlabel("time (s)")
        title(axs[0][fi], f)
        ax = aq[0][fi]
        ax.set_ylim(bottom=0)
        integer_ticks(ax)
        ax.set_xlabel("time (s)")
        if fi == 0:
            ax.set_ylabel("waiting requests\n(all instances)")
        title(ax, f)
    if not changes:
        n = {int(p["active"].iloc[0]) for p in series.values() if len(p)}
        fig.suptitle(f"{n.pop()} instances throughout" if len(n) == 1 else "", fontsize=9)
    h, l = axs[0][0].get_legend_handles_labels()
    save(fig, out, f"utilisation_{suffix}", formats, bottom_legend(fig, h, l, note))
    h, l = aq[0][0].get_legend_handles_labels()
    save(fq, out, f"queues_{suffix}", formats, bottom_legend(fq, h, l, note))

    cost_vs_slo(t, keys, out, formats)
    if a.x is not None:
        metrics_vs(t, keys, by, facet, a, slo, out, formats)


def cost_vs_slo(t, keys, out, formats):
    """Cost against SLO attainment per configuration (all swept keys but
    the seed), mean ± 95% CI over seeds, the Pareto front drawn."""
    conf = [k for k in keys if k in t]
    pts = []
    for label, rows in (t.groupby(conf, sort=False) if conf else [("", t)]):
        label = label if isinstance(label, tuple) else (label,)
        c = mean_ci(rows.get("cost_usd", pd.Series(dtype=float)).astype(float))
        sl = mean_ci(rows.get("slo_attainment", pd.Series(dtype=float)).astype(float))
        if np.isfinite(sl[0]):
            pts.append((", ".join(f"{k}={fmt(v)}" for k, v in zip(conf, label)), c, sl))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    if not pts:
        ax.text(0.5, 0.5, "no SLO declared: no class sets a ttft, tpot or e2e target",
                ha="center", va="center", transform=ax.transAxes)
    for p in pts:
        ax.errorbar(p[1][0], p[2][0], xerr=0 if math.isnan(p[1][1]) else p[1][1],
                    yerr=0 if math.isnan(p[2][1]) else p[2][1], fmt="o", ms=4,
                    color=PALETTE[0], ecolor=PALETTE[5], capsize=2)
    front = sorted((p for p in pts if not any(
        q[1][0] <= p[1][0] and q[2][0] >= p[2][0] and (q[1][0] < p[1][0] or q[2][0] > p[2][0])
        for q in pts)), key=lambda p: p[1][0])
    if front:
        ax.plot([p[1][0] for p in front], [p[2][0] for p in front], color=PALETTE[1],
                linestyle="--", lw=1, label="Pareto front")
        for p in front:
            ax.annotate(p[0], (p[1][0], p[2][0]), fontsize=6, xytext=(3, -8),
                        textcoords="offset points")
        ax.legend(loc="lower right")
    ax.set_xlabel("cost (USD, mean ± 95% CI over seeds)")
    ax.set_ylabel("SLO attainment (mean ± 95% CI over seeds)")
    save(fig, out, "cost_vs_slo", formats)


def check_x(t, keys, by, facet, a):
    """Refuses a --x figure that cannot be drawn, before any is drawn."""
    x = a.x
    if x in (by, facet):
        fail(f"--x {x}: --by or --facet names the same key; give each a different key")
    if t[x].dtype.kind not in "if":
        fail(f"--x {x}: its values are not numbers ({', '.join(map(str, ordered(t[x])))}); "
             f"give it as --by or --facet")
    metrics = a.metrics.split(",") if a.metrics else ["ttft_p50_s", "ttft_p99_s", "e2e_p99_s"]
    for m in metrics:
        if m not in t:
            fail(f"--metrics {m}: no such metric in the sweep (metrics: "
                 f"{', '.join(c for c in t.columns if c not in keys and c not in ('run_id', 'run', 'point', 'seed', 'status'))})")
    pooled = [k for k in keys if k not in (by, facet, x) and t[k].nunique() > 1]
    if pooled:
        fail(f"--x {x}: {', '.join(pooled)} also varies within a curve; give it as --facet "
             f"or keep one value with --filter KEY=VALUE")


def metrics_vs(t, keys, by, facet, a, slo, out, formats):
    x = a.x
    metrics = a.metrics.split(",") if a.metrics else ["ttft_p50_s", "ttft_p99_s", "e2e_p99_s"]
    fvals = ordered(t[facet]) if facet else [None]
    ncol = len(fvals)
    fig, axs = plt.subplots(len(metrics), ncol, figsize=(width(ncol), 2.3 * len(metrics) + 0.3),
                            squeeze=False, sharex=True)
    table = []
    seeds = set()
    for fi, f, bi, b, rows in cells(t, by, facet):
        xs = ordered(rows[x])
        st = style(bi)
        for mi, m in enumerate(metrics):
            pts = [(xv, *mean_ci(rows[rows[x] == xv][m].astype(float))) for xv in xs]
            for xv, mean, half, n in pts:
                seeds.add(n)
                table.append((fmt(f) if facet else "", fmt(b), xv, m, n, mean,
                              0.0 if math.isnan(half) else half))
            ax = axs[mi][fi]
            xv = np.array([p[0] for p in pts], dtype=float)
            mean = np.array([p[1] for p in pts])
            half = np.array([p[2] for p in pts])
            ax.plot(xv, mean, color=st["color"], linestyle=st["linestyle"], marker=st["marker"],
                    ms=4, lw=1.2, label=fmt(b))
            if np.isfinite(half).any():
                ax.fill_between(xv, mean - np.nan_to_num(half), mean + np.nan_to_num(half),
                                color=st["color"], alpha=0.2, lw=0)
    for fi, f in enumerate(fvals):
        for mi, m in enumerate(metrics):
            ax = axs[mi][fi]
            kind = m.split("_")[0]
            if kind in SLO_NAMES and m.endswith("_s"):
                draw_slo(ax, slo, kind, False)
            vals = t[m].astype(float)
            if np.all(np.isfinite(vals)) and np.all(vals == np.round(vals)):
                integer_ticks(ax)
            if fi == 0:
                ax.set_ylabel(metric_label(m))
            if len(ordered(t[x])) <= 8:
                ax.set_xticks(ordered(t[x]))
            if mi == len(metrics) - 1:
                ax.set_xlabel(x)
        if facet:
            axs[0][fi].set_title(f"{facet} = {fmt(f)}")
    n = min(seeds) if seeds else 0
    note = (f"{by}: mean of {n} seeds, band 95% CI (Student t)" if n > 1
            else f"{by}: one seed (no band)")
    handles, labels = [], []
    for ax in axs.flat:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    name = f"metrics_vs_{safe(x)}" + (f"_per_{safe(facet)}" if facet else "")
    save(fig, out, name, formats, bottom_legend(fig, handles, labels, note))
    csv = os.path.join(out, name + ".csv")
    with open(csv, "w", encoding="utf-8") as fh:
        fh.write(f"{facet or ''},{by},{x},metric,runs,mean,ci95\n")
        for row in table:
            fh.write(",".join(f"{v:.10g}" if isinstance(v, float) else str(v) for v in row) + "\n")
    print(csv)


def parse_slo(items):
    out = []
    for s in items:
        name, _, v = s.partition("=")
        if name not in SLO_NAMES:
            fail(f"--slo {s}: write NAME=SECONDS with NAME one of ttft, tpot, e2e (e.g. --slo ttft=1)")
        try:
            sec = float(v)
        except ValueError:
            sec = math.nan
        if not (np.isfinite(sec) and sec > 0):
            fail(f"--slo {s}: the threshold is a positive number of seconds (e.g. --slo {name}=0.5)")
        out.append((name, sec))
    return out


def parse_formats(text):
    fmts = [f.strip().lower() for f in text.split(",") if f.strip()]
    for f in fmts:
        if f not in FORMATS:
            fail(f"--format {f}: not a format; write a comma list of png, pdf, svg")
    if not fmts:
        fail("--format: empty; write a comma list of png, pdf, svg")
    return list(dict.fromkeys(fmts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path", help="a run folder (report.h5) or a sweep folder (results.sqlite)")
    ap.add_argument("-o", "--out", required=True, help="folder for the figures")
    ap.add_argument("--by", help="sweep: the swept key that names the curves")
    ap.add_argument("--facet", help="sweep: one column of panels per value of this swept key")
    ap.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                    help="sweep: keep the runs whose swept KEY has VALUE (repeatable)")
    ap.add_argument("--x", help="sweep: a numeric swept key; draws metrics_vs_X")
    ap.add_argument("--metrics", help="with --x: comma list of summary metrics "
                    "(default ttft_p50_s,ttft_p99_s,e2e_p99_s)")
    ap.add_argument("--slo", action="append", default=[], metavar="NAME=SECONDS",
                    help="threshold line on latency axes (ttft, tpot, e2e); repeatable")
    ap.add_argument("--format", default="png", help="comma list of png, pdf, svg (default png)")
    ap.add_argument("--dpi", type=int, default=100, help="PNG resolution (default 100; 300 for print)")
    a = ap.parse_args()
    formats = parse_formats(a.format)
    if not 20 <= a.dpi <= 1200:
        fail(f"--dpi {a.dpi}: write a resolution from 20 to 1200 dots per inch (300 for print)")
    formats = [(f, a.dpi) for f in formats]
    a.slo = parse_slo(a.slo)
    if not os.path.exists(a.path):
        fail(f"{a.path}: no such run or sweep folder")
    sweep = os.path.exists(os.path.join(a.path, "results.sqlite")) and \
        os.path.isdir(os.path.join(a.path, "runs"))
    if not sweep:
        for opt in ("by", "facet", "x", "metrics"):
            if getattr(a, opt) is not None:
                fail(f"--{opt}: {a.path} is a run folder, not a sweep (no swept keys)")
        if a.filter:
            fail(f"--filter: {a.path} is a run folder, not a sweep (no swept keys)")
        if not os.path.exists(os.path.join(a.path, "report.h5")) and not a.path.endswith(".h5"):
            fail(f"{a.path}: no report.h5 (an llmsim run folder) and no results.sqlite (a sweep)")
    if a.metrics is not None and a.x is None:
        fail("--metrics: give --x KEY as well (the metrics are drawn against it)")
    os.makedirs(a.out, exist_ok=True)
    if sweep:
        plot_sweep(a.path, a.out, a, formats)
    else:
        plot_run(a.path, a.out, a.slo, formats)


if __name__ == "__main__":
    main()
