# SPDX-License-Identifier: BSD-3-Clause
"""Medians over the rounds of the decode loop's weight rate, before and
after (python3 summary.py in this folder)."""
import collections
import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
rate = collections.defaultdict(lambda: collections.defaultdict(list))
read = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(HERE, "*-r*.json"))):
    build = os.path.basename(path).split("-")[0]
    run = json.load(open(path))
    read[build].append(float(run["context"]["read_gbps"]))
    for b in run["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rate[b["run_name"]][build].append(b["weight_bytes_per_second"] / 1e9)
print("read stream, GB/s:", {k: [round(x, 1) for x in v] for k, v in read.items()})
print("| loop | before GB/s | after GB/s | after / before | rounds' range, after |")
print("| --- | ---: | ---: | ---: | --- |")
for name, by in rate.items():
    a, b = statistics.median(by["before"]), statistics.median(by["after"])
    print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f} | {min(by['after']):.1f}-{max(by['after']):.1f} |")
