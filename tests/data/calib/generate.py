#!/usr/bin/env python3
"""Writes synthetic.csv: a raw calibration table (the llmsim-calibrate CSV
layout) generated from known parameters with +-1% deterministic noise, so
that tests can check that the fits recover them. Run from this folder:
    python3 generate.py > synthetic.csv
"""
import math

COLS = ["bench", "variant", "size", "m", "n", "k", "threads", "util", "reps",
        "median_s", "min_s", "p10_s", "p90_s", "value", "unit", "note"]
rows = []
counter = [0]


def noise():
    """Deterministic noise factor in [0.99, 1.01]."""
    counter[0] += 1
    return 1.0 + 0.01 * math.sin(1.7 * counter[0] + 0.3)


def fmt(v):
    return "" if v is None else "%.9g" % v


def row(bench, variant, median, value=None, unit="", size=None, m=None,
        n=None, k=None, threads=None, util=None, reps=20):
    rows.append([bench, variant, fmt(size), fmt(m), fmt(n), fmt(k),
                 fmt(threads), fmt(util), fmt(reps), fmt(median),
                 fmt(median * 0.97), fmt(median * 0.98), fmt(median * 1.03),
                 fmt(value), unit, ""])


meta = [
    ("tool", "llmsim-calibrate"), ("tool_version", "0.1.0"),
    ("date", "2026-01-01T00:00:00Z"), ("quick", "no"),
    ("repetitions", "synthetic test data, not a measurement"),
    ("device", "0"), ("device_count", "1"),
    ("gpu_name", "Synthetic GPU, \"test\" data"),
    ("compute_capability", "9.0"), ("sm_count", "132"),
    ("total_mem", "85899345920"), ("mem_clock_khz", "2619000"),
    ("mem_bus_bits", "5120"), ("peak_mem_bw", "%.6g" % (2 * 2619000e3 * 5120 / 8)),
    ("async_engines", "3"), ("pci_bus_id", "0000:00:00.0"),
    ("driver_version", "0.0"), ("cuda_driver", "13.0"),
    ("cuda_runtime", "13.0"), ("cublas_version", "13.0.0"),
]

# host link: (latency s, bandwidth B/s) per kind
LINK = {"h2d_pinned": (10e-6, 25e9), "d2h_pinned": (8e-6, 26e9),
        "h2d_pageable": (20e-6, 12e9), "d2h_pageable": (22e-6, 11e9)}
for mode in ("pinned", "pageable"):
    for i in range(10):
        size = 4096 * 4 ** i
        for d in ("h2d", "d2h"):
            lat, bw = LINK[d + "_" + mode]
            t = (lat + size / bw) * noise()
            row("transfer", d + "_" + mode, t, size / t, "B/s", size=size)
        t = (12e-6 + 2 * size / 40e9) * noise()
        row("transfer", "bidir_" + mode, t, 2 * size / t, "B/s", size=size)

# PCIe interference: slowdown = 1 + a u / (1 - u)^b, probe 30 us unloaded
A, B, PROBE = 0.3, 1.5, 30e-6


def slow(u):
    return 1 + A * u / (1 - u) ** B


row("contention", "probe", PROBE * noise(), 0, "B/s", size=4096, threads=0,
    util=0, reps=500)
CUTIL = [0.62, 0.81, 0.88, 0.92, 0.95, 0.97, 0.985, 0.995]
for n, u in enumerate(CUTIL, start=1):
    s = slow(u) if u <= 0.98 else 20.0  # saturated: off the curve
    row("contention", "probe", PROBE * s * noise(), u * 25e9, "B/s",
        size=4096, threads=n, util=u, reps=300)
    block = 1024 * 1024 * n * 4
    t = block / (u * 25e9 / n) * noise()
    row("contention", "stream", t, block / t, "B/s", size=block, threads=n,
        util=u, reps=300 * n)
row("interference", "probe", PROBE * noise(), 0, "B/s", size=4096,
    threads=0, util=0, reps=500)
for i in range(1, 10):
    u = i / 10
    row("interference", "probe", PROBE * slow(u) * noise(), u * 25e9, "B/s",
        size=4096, threads=1, util=u, reps=1000)

# HBM: copy 2.95 TB/s, triad 3.0 TB/s (bytes moved: 2 and 3 arrays)
for size in (64 << 20, 256 << 20, 1 << 30):
    t = 2 * size / 2.95e12
    row("hbm", "copy", t, 2 * size / t, "B/s", size=size)
    t = 3 * size / 3.0e12
    row("hbm", "triad", t, 3 * size / t, "B/s", size=size)

# GEMM: achieved = e_max * peak * M / (M + m_half); peak 989 TFLOP/s
PEAK = 989e12
for dtype, emax, mhalf in (("bf16", 0.8, 256.0), ("fp16", 0.78, 240.0)):
    for n, k in ((4096, 4096), (4096, 14336), (14336, 4096)):
        for p in range(14):
            m = 2 ** p
            flops = emax * PEAK * m / (m + mhalf)
            t = 2.0 * m * n * k / flops * noise()
            row("gemm", dtype, t, 2.0 * m * n * k / t, "FLOP/s", m=m, n=n, k=k)

for variant, t in (("eager", 4.5e-6), ("eager_gpu", 2.2e-6),
                   ("graph", 1.1e-6), ("sync", 9e-6)):
    row("launch", variant, t, t, "s", reps=50)

print(",".join(COLS))
for key, value in meta:
    print("meta,%s,,,,,,,,,,,,,,\"%s\"" % (key, value.replace('"', '""')))
for r in rows:
    print(",".join(r))
