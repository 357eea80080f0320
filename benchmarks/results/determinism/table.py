#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Bitwise determinism and the cost of Config::batch_invariant on the GPU.

    table.py merge RUN_DIR --date D --commit C --device NAME --command CMD [--raw-runs WHERE] > h200.json
    table.py [h200.json]            # the Markdown table, one row per point
    table.py --costs [h200.json]    # the cost per trace and size (docs/performance.md)

RUN_DIR holds two `scripts/gpu.sh perf ... --check-bits` sweeps over the same
traces and batch sizes: RUN_DIR/default and RUN_DIR/invariant (the second with
--batch-invariant), whose kokkos-moe-replay reports are NAME-tT.json. `merge`
pairs them into one record per point; the table prints, per point, the graph
time of both modes, the cost (invariant over default), and the values that
differed bitwise run to run and for tokens run alone. --raw-runs is kept in
each record ("raw_runs": where RUN_DIR and the logs can be read, as
git show COMMIT:PATH). The tables need only the records.
"""
import argparse
import glob
import json
import os
import re
import sys

# The traces as docs/performance.md names them, in its order.
LABELS = {"synth-mixtral-8x7b-uniform": "Mixtral-8x7B, uniform",
          "synth-qwen2-57b-zipf0.5": "Qwen2-57B, Zipf 0.5",
          "synth-deepseek-v3-zipf0.5": "DeepSeek-V3, Zipf 0.5",
          "deepseek-v3-prefill4096-sampled": "DeepSeek-V3, prefill trace",
          "gpt-oss-20b-decode": "GPT-OSS-20B, decode trace"}


def point(report):
    layer = report["layers"][0]
    bits = layer.get("bits", {})
    return {"ms": layer["stages"]["graph"]["median_ms"],
            "check_passed": layer.get("check", {}).get("passed"),
            "max_rel_err": layer.get("check", {}).get("max_rel_err"),
            "values": bits.get("values"),
            "run_to_run_differing": bits.get("run_to_run_differing"),
            "tokens_alone": bits.get("tokens_alone"),
            "alone_differing": bits.get("alone_differing")}


def merge(args):
    records = []
    for path in sorted(glob.glob(os.path.join(args.run_dir, "default", "*-t*.json"))):
        match = re.match(r"(.*)-t(\d+)\.json$", os.path.basename(path))
        if not match:  # the board's samples (NAME-tT.board.json)
            continue
        name, tokens = match.groups()
        other = os.path.join(args.run_dir, "invariant", os.path.basename(path))
        if not os.path.exists(other):
            sys.exit(f"table.py: {other} is missing (each point needs both modes)")
        with open(path) as f:
            default = json.load(f)
        with open(other) as f:
            invariant = json.load(f)
        if invariant.get("batch_invariant") is not True or default.get("batch_invariant"):
            sys.exit(f"table.py: {path}: the sweeps' modes are not default and --batch-invariant")
        records.append({"trace": name, "model": default["model"], "tokens": int(tokens),
                        "dtype": default["dtype"], "default": point(default),
                        "invariant": point(invariant), "device": args.device,
                        "date": args.date, "commit": args.commit, "command": args.command})
        if args.raw_runs:
            records[-1]["raw_runs"] = args.raw_runs
    records.sort(key=lambda r: (r["trace"], r["tokens"]))
    json.dump(records, sys.stdout, indent=1)
    print()


def table(path):
    with open(path) as f:
        records = json.load(f)
    print("| trace | T | default ms | invariant ms | cost | run to run (default / invariant) "
          "| alone vs batch (default / invariant) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in records:
        d, i = r["default"], r["invariant"]
        print(f"| {r['trace']} | {r['tokens']} | {d['ms']:.3f} | {i['ms']:.3f} | "
              f"{i['ms'] / d['ms']:.2f}x | {d['run_to_run_differing']} / "
              f"{i['run_to_run_differing']} of {d['values']} | {d['alone_differing']} / "
              f"{i['alone_differing']} in {d['tokens_alone']} tokens |")


def costs(path):
    """The cost of batch invariance (invariant time over default) per trace
    and batch size, and whether every point kept its bits."""
    with open(path) as f:
        records = json.load(f)
    sizes = sorted({r["tokens"] for r in records})
    print("| trace | " + " | ".join(f"T = {t}" if t == sizes[0] else str(t) for t in sizes) + " |")
    print("| --- |" + " --- |" * len(sizes))
    order = list(LABELS) + sorted({r["trace"] for r in records} - set(LABELS))
    for trace in (t for t in order if any(r["trace"] == t for r in records)):
        row = {r["tokens"]: r for r in records if r["trace"] == trace}
        print(f"| {LABELS.get(trace, trace)} | " + " | ".join(
            f"{row[t]['invariant']['ms'] / row[t]['default']['ms']:.2f}x" if t in row else ""
            for t in sizes) + " |")
    kept = all(r[m]["run_to_run_differing"] == 0 for r in records for m in ("default", "invariant"))
    alone = all(r["invariant"]["alone_differing"] == 0 for r in records)
    print(f"\nrun to run bitwise at every point, both modes: {kept}; "
          f"batch-invariant tokens alone bitwise at every point: {alone}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "merge":
        p = argparse.ArgumentParser(description="pair the two sweeps into records")
        p.add_argument("run_dir")
        for key in ("--date", "--commit", "--device", "--command"):
            p.add_argument(key, required=True)
        p.add_argument("--raw-runs")
        merge(p.parse_args(sys.argv[2:]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--costs":
        costs(sys.argv[2] if len(sys.argv) > 2
              else os.path.join(os.path.dirname(os.path.abspath(__file__)), "h200.json"))
    else:
        table(sys.argv[1] if len(sys.argv) > 1
              else os.path.join(os.path.dirname(os.path.abspath(__file__)), "h200.json"))


if __name__ == "__main__":
    main()
