#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The CUDA path each Kokkos gives, as a Markdown table from h200.json
(beside this file): forward time (CUDA graph replay, median) of each
variant at each point, and its slowdown against the fast path (A).

    benchmarks/results/kokkos-paths/table.py [h200.json]
"""
import json
import sys
from pathlib import Path

path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("h200.json")
records = json.loads(path.read_text())
time = {(r["variant"], r["trace"], r["tokens"]): r["time_ms"] for r in records}
points = sorted({(r["model"], r["trace"], r["tokens"]) for r in records})
kokkos = {r["variant"]: r["kokkos"] for r in records}

print("| model | routing | tokens | " + " | ".join(f"{v}: {kokkos[v]}" for v in "ABC") + " |")
print("| --- | --- | ---: | " + " | ".join("---:" for _ in "ABC") + " |")
for model, trace, tokens in points:
    a = time[("A", trace, tokens)]
    cells = [f"{a:.3f} ms"] + [f"{time[(v, trace, tokens)]:.3f} ms ({time[(v, trace, tokens)] / a:.2f}x)"
                               for v in "BC"]
    print(f"| {model} | {trace} | {tokens} | " + " | ".join(cells) + " |")
print(f"\nAll {len(records)} points passed --check: "
      f"{all(r['check_passed'] for r in records)}; largest error "
      f"{max(r['max_rel_err'] for r in records):.1e}. {records[0]['device']}, "
      f"{records[0]['date']}, commit {records[0]['commit']}.")
