"""llmsim results as pandas DataFrames.

Opens what `llmsim run` and `llmsim sweep` write (docs/output.md,
docs/sweeps.md) with numpy, h5py and pandas only:

    import llmsim
    r = llmsim.open_run("out/quickstart")      # a run folder or its report.h5
    r.requests.describe()                      # one row per request
    r.summary["ttft_p99_s"]                    # the summary as a Series
    s = llmsim.open_sweep("out/policy_sweep")  # a sweep folder
    s.summary                                  # one row per run: swept keys + metrics
    s.run(s.summary.run_id[0]).requests        # one run of the sweep

Strings come back as str (h5py gives bytes), and every column that has a
unit carries it in its name (`arrival` is `arrival_s`, `bw` is
`bw_bytes_per_s`); the units are those of docs/output.md, which
tests/test_python.sh checks this module against.
"""

import os
import sqlite3

import h5py
import numpy as np
import pandas as pd

__all__ = ["open", "open_run", "open_sweep", "Run", "Sweep", "UNITS"]

# The unit of each column that has one, per table (docs/output.md).
UNITS = {
    "requests": {"arrival": "s", "first_scheduled": "s", "first_token": "s",
                 "finish": "s", "prompt_tokens": "tokens",
                 "output_tokens": "tokens", "predicted_output": "tokens",
                 "gpu_time_s": "s", "kv_peak_bytes": "B"},
    "classes": {"ttft_target": "s", "tpot_target": "s", "e2e_target": "s",
                "goodput_rps": "1/s", "ttft_mean_s": "s"},
    "instances": {"tp": "GPUs", "start": "s", "ready": "s", "stop": "s",
                  "busy_s": "s", "tokens": "tokens", "kv_blocks": "blocks",
                  "energy_j": "J", "cost_usd": "USD",
                  "prompt_tokens": "tokens", "prefix_hit_tokens": "tokens",
                  "swap_bytes": "B", "kv_sent_bytes": "B", "failed_at": "s",
                  "carbon_g": "g", "pp_bytes": "B", "work_s": "s",
                  "model_flops": "FLOP", "hbm_bytes": "B"},
    "timeseries": {"t": "s", "power_w": "W", "arrival_rate": "1/s"},
    "links": {"bw": "B/s", "latency_s": "s", "bytes": "B", "busy_s": "s"},
    "link_timeseries": {"t": "s"},
}

# The name suffix each unit gets, and the endings that already say it.
_SUFFIX = {"s": ("_s", ("_s",)), "1/s": ("_per_s", ("_per_s", "_rps")),
           "B": ("_bytes", ("bytes",)), "B/s": ("_bytes_per_s", ("_bytes_per_s",)),
           "W": ("_w", ("_w",)), "J": ("_j", ("_j",)), "USD": ("_usd", ("_usd",)),
           "g": ("_g", ("_g",))}

_TABLES = ("requests", "instances", "timeseries", "classes", "tenants",
           "links", "link_timeseries", "jobs", "job_timeline",
           "job_timeseries")


def unit_name(column, unit):
    """The column's name with its unit: arrival + s -> arrival_s. Counts
    (tokens, blocks, GPUs, FLOP) and fractions keep their names."""
    if unit not in _SUFFIX:
        return column
    suffix, endings = _SUFFIX[unit]
    if column.endswith(endings) or column == "bytes":
        return column
    return column + suffix


def _decode(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _frame(dataset, units):
    """A compound HDF5 table as a DataFrame: strings decoded, units named."""
    data = dataset[()]
    frame = pd.DataFrame({name: data[name] for name in data.dtype.names}
                         if data.dtype.names else {})
    for name in frame.columns:
        if frame[name].dtype.kind == "S" or frame[name].dtype == object:
            frame[name] = [_decode(v) for v in frame[name]]
    return frame.rename(columns={c: unit_name(c, units[c])
                                 for c in frame.columns if c in units})


def _names(attr):
    """An attribute of names, one per line (model_names, tenant_names)."""
    text = _decode(attr) if attr is not None else ""
    return text.split("\n") if text else []


class Run:
    """One run: the tables of report.h5 as DataFrames, read when first used."""

    def __init__(self, path):
        if os.path.isdir(path):
            path = os.path.join(path, "report.h5")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no report.h5 (is this a run folder?)")
        self.path = path
        self._cache = {}

    def _read(self, table):
        if table not in self._cache:
            with h5py.File(self.path, "r") as f:
                if table not in f:
                    raise KeyError(f"{self.path} has no table /{table}")
                frame = _frame(f[table], UNITS.get(table, {}))
                if table == "requests":
                    attrs = f[table].attrs
                    models = _names(attrs.get("model_names"))
                    tenants = _names(attrs.get("tenant_names"))
                    frame["model_name"] = [models[m] if 0 <= m < len(models) else ""
                                           for m in frame["model"]]
                    if tenants:
                        frame["tenant_name"] = [tenants[t] if 0 <= t < len(tenants) else ""
                                                for t in frame["tenant"]]
                    frame["status_name"] = pd.Categorical.from_codes(
                        frame["status"].clip(0, 3),
                        ["finished", "rejected", "failed", "unfinished"])
                if "period_s" in f[table].attrs:
                    # a stored time series' recorded period: the sample
                    # period, or a power of two times it once the table
                    # passed output.timeseries_rows (docs/output.md)
                    frame.attrs["period_s"] = float(f[table].attrs["period_s"])
                self._cache[table] = frame
        return self._cache[table]

    def __getattr__(self, name):
        if name in _TABLES:
            return self._read(name)
        raise AttributeError(name)

    @property
    def summary(self):
        """The summary fields as a Series (name -> value; NaN: not defined)."""
        if "summary" not in self._cache:
            with h5py.File(self.path, "r") as f:
                row = f["summary"][0]
                self._cache["summary"] = pd.Series(
                    {n: float(row[n]) for n in row.dtype.names}, name="summary")
        return self._cache["summary"]

    @property
    def summary_units(self):
        """Each summary field's unit ('' for counts and fractions)."""
        with h5py.File(self.path, "r") as f:
            row = f["summary_units"][0]
            return {n: _decode(row[n]) for n in row.dtype.names}

    @property
    def config(self):
        """The effective configuration, as YAML text."""
        with h5py.File(self.path, "r") as f:
            return _decode(f["config"][()])

    @property
    def provenance(self):
        """version, seed, run_id, scenario, hw_profile, hw_source, perf_model."""
        with h5py.File(self.path, "r") as f:
            return {k: (_decode(v) if not isinstance(v, np.integer) else int(v))
                    for k, v in f["provenance"].attrs.items()}

    def tables(self):
        """The tables this report holds."""
        with h5py.File(self.path, "r") as f:
            return [t for t in _TABLES if t in f]


class Sweep:
    """A sweep folder: its database as one row per run (swept keys and
    metrics side by side), and each run's report."""

    def __init__(self, path):
        db = os.path.join(path, "results.sqlite")
        if not os.path.isfile(db):
            raise FileNotFoundError(f"{db}: no results.sqlite (is this a sweep folder?)")
        self.path = path
        self.db = db
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            tables = {r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "sweep_runs" not in tables:
                raise ValueError(f"{db}: not a sweep's database (no sweep_runs table); "
                                 "open a run with open_run")
            self.runs = pd.read_sql_query(
                "SELECT s.run_id, s.run, s.point, s.seed, s.dir, s.status, r.scenario, "
                "r.wall_s FROM sweep_runs s LEFT JOIN runs r USING(run_id) "
                "ORDER BY s.run", con)
            params = pd.read_sql_query("SELECT run_id, key, value FROM params", con)
            metrics = pd.read_sql_query("SELECT run_id, name, value FROM metrics", con)
            self.units = dict(con.execute("SELECT DISTINCT name, unit FROM metrics"))
        wide_p = params.pivot(index="run_id", columns="key", values="value") \
            if len(params) else pd.DataFrame(index=pd.Index([], name="run_id"))
        for key in wide_p.columns:
            numeric = pd.to_numeric(wide_p[key], errors="coerce")
            if numeric.notna().sum() == wide_p[key].notna().sum():
                wide_p[key] = numeric
        wide_m = metrics.pivot(index="run_id", columns="name", values="value") \
            if len(metrics) else pd.DataFrame(index=pd.Index([], name="run_id"))
        self.params = list(wide_p.columns)
        self.metrics = list(wide_m.columns)
        summary = self.runs[["run_id", "run", "point", "seed", "status"]]
        summary = summary.merge(wide_p.drop(columns=["seed"], errors="ignore"),
                                left_on="run_id", right_index=True, how="left")
        self.summary = summary.merge(wide_m, left_on="run_id", right_index=True,
                                     how="left").reset_index(drop=True)
        self.summary.columns.name = None

    def run(self, run_id):
        """One run of the sweep, by its run id."""
        row = self.runs[self.runs.run_id == run_id]
        if row.empty:
            raise KeyError(f"run {run_id} is not in {self.db}")
        return Run(os.path.join(self.path, row.dir.iloc[0]))


def open_run(path):
    """A run folder (llmsim run -o DIR) or its report.h5."""
    return Run(path)


def open_sweep(path):
    """A sweep folder (llmsim sweep -o DIR)."""
    return Sweep(path)


def open(path):  # noqa: A001 - the package's entry point, like h5py.File
    """A run or a sweep, whichever the folder holds."""
    if os.path.isfile(os.path.join(path, "report.h5")) or path.endswith(".h5"):
        return Run(path)
    return Sweep(path)
