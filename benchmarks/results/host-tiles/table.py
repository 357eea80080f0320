#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Host speed of the layer with 16-deep host tiles (the depth that fits the
32 KiB of team scratch Kokkos >= 5.1 gives on host backends) against 32-deep
ones, as a Markdown table from the Google Benchmark JSON beside this file:
three interleaved runs of each binary (before-R.json: 32 deep, after-R.json:
16 deep; medians of 5 repetitions each), the median over runs with the
range, GFLOP/s and the fraction of the host's fp32 FMA peak (host_fma_peak,
2 threads, best run). unfused_forward is the same code in both binaries:
its spread is the machine's noise.

    benchmarks/results/host-tiles/table.py
"""
import json
import statistics
from pathlib import Path

here = Path(__file__).parent


def medians(path):
    data = json.loads(path.read_text())
    return {b["run_name"].replace("/manual_time", ""): b for b in data["benchmarks"]}


rounds = sorted({p.stem.split("-")[1] for p in here.glob("after-*.json")})
before = [medians(here / f"before-{r}.json") for r in rounds]
after = [medians(here / f"after-{r}.json") for r in rounds]
peak = max(a["host_fma_peak/threads:2"]["flops_per_second"] for a in after)
context = json.loads((here / f"after-{rounds[0]}.json").read_text())["context"]
print(f"{context['num_cpus']} CPUs, {context['date'][:10]}, OMP_NUM_THREADS=2; "
      f"fp32 FMA peak (2 threads, {after[0]['host_fma_peak/threads:2'].get('label', '')}): "
      f"{peak / 1e9:.0f} GFLOP/s\n")
print("| benchmark | tile_k 32 ms | tile_k 16 ms | 32 / 16 | 16: GFLOP/s | of peak |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name in after[0]:
    if name.startswith("host_fma_peak"):
        continue
    tb = [b[name]["real_time"] for b in before]
    ta = [a[name]["real_time"] for a in after]
    flops = after[0][name]["flops_per_second"] * after[0][name]["real_time"] / 1e3
    mb, ma = statistics.median(tb), statistics.median(ta)
    print(f"| {name} | {mb:.1f} ({min(tb):.1f}-{max(tb):.1f}) | {ma:.1f} ({min(ta):.1f}-{max(ta):.1f}) "
          f"| {mb / ma:.2f} | {flops / ma / 1e6:.1f} | {flops / ma * 1e3 / peak:.1%} |")
