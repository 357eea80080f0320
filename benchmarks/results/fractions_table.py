#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The records of h200.json as docs/performance.md's tables of fractions.

  fractions_table.py [--records h200.json] [--fp8]

One row per (model, routing), one column per batch size: the fraction of the
floor (floor over time, the floor of each record's own call) of ours /
torch._grouped_mm / the cuBLAS loop, then the ranges of the peers' speed-ups
that the paragraph under the table quotes. --fp8: the e4m3 records, ours /
torch._scaled_grouped_mm, then their times against the bf16 records' (ms).
"""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

from record_names import title

# The rows, in the order docs/performance.md gives them.
ORDER = [
    ("mixtral-8x7b", "uniform"),
    ("qwen2-57b", "uniform"),
    ("qwen2-57b", "zipf0.5"),
    ("deepseek-v3", "zipf0.5"),
    ("deepseek-v3", "trace:deepseek-v3-prefill4096-sampled"),
    ("gpt-oss-20b", "trace:gpt-oss-20b-decode"),
]


def header(tokens):
    print("| model, routing | " + " | ".join(f"T = {t}" if i == 0 else str(t)
                                          for i, t in enumerate(tokens)) + " |")
    print("| --- " * (len(tokens) + 1) + "|")


def fp8_tables(records):
    fp8 = {(r["model"], r["routing"], r["tokens"]): r for r in records if r.get("dtype") == "fp8"}
    bf16 = {(r["model"], r["routing"], r["tokens"]): r for r in records
            if r.get("dtype", "bf16") == "bf16"}
    tokens = sorted({k[2] for k in fp8})
    rows = [(m, rt) for m, rt in ORDER if any((m, rt, t) in fp8 for t in tokens)]
    header(tokens)
    for model, routing in rows:
        cells = []
        for t in tokens:
            r = fp8[(model, routing, t)]
            peer = r.get("peer_torch_scaled_grouped_ms")
            cells.append(f"{r['floor_ms'] / r['time_ms']:.2f} / "
                         + (f"{r['floor_ms'] / peer:.2f}" if peer else "-"))
        print(f"| {title((model, routing))} | " + " | ".join(cells) + " |")
    print()
    header(tokens)
    for model, routing in rows:
        print(f"| {title((model, routing))} | " + " | ".join(
            f"{fp8[(model, routing, t)]['time_ms']:.3f} / {bf16[(model, routing, t)]['time_ms']:.3f}"
            for t in tokens) + " |")
    peers = [r["peer_torch_scaled_grouped_ms"] / r["time_ms"] for r in fp8.values()
             if r.get("peer_torch_scaled_grouped_ms")]
    ratio = [r["time_ms"] / bf16[k]["time_ms"] for k, r in fp8.items()]
    one = [r["time_ms"] / bf16[k]["time_ms"] for k, r in fp8.items() if k[2] == 1]
    print(f"\nfaster than torch._scaled_grouped_mm {min(peers):.2f}-{max(peers):.2f}x; "
          f"fp8 / bf16 time {min(ratio):.2f}-{max(ratio):.2f} (one token "
          f"{min(one):.2f}-{max(one):.2f})")


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--records", default=os.path.join(HERE, "h200.json"))
    a.add_argument("--fp8", action="store_true")
    args = a.parse_args()
    with open(args.records) as f:
        records = json.load(f)
    if args.fp8:
        return fp8_tables(records)
    records = [r for r in records if r.get("dtype", "bf16") == "bf16"]
    tokens = sorted({r["tokens"] for r in records})
    header(tokens)
    by = {(r["model"], r["routing"], r["tokens"]): r for r in records}
    torch, cublas = [], []
    for model, routing in ORDER:
        cells = []
        for t in tokens:
            r = by.get((model, routing, t))
            if r is None:
                cells.append("-")
                continue
            floor = r["floor_ms"]
            cells.append(f"{floor / r['time_ms']:.2f} / {floor / r['peer_torch_grouped_ms']:.2f}"
                         f" / {floor / r['peer_cublas_loop_ms']:.2f}")
            torch.append(r["peer_torch_grouped_ms"] / r["time_ms"])
            cublas.append(r["peer_cublas_loop_ms"] / r["time_ms"])
        print(f"| {title((model, routing))} | " + " | ".join(cells) + " |")
    print(f"\nfaster than torch._grouped_mm {min(torch):.2f}-{max(torch):.2f}x, "
          f"than the cuBLAS loop {min(cublas):.2f}-{max(cublas):.2f}x")


if __name__ == "__main__":
    main()
