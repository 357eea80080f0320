#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One line of `scripts/gpu.sh perf` per replay: the replay's JSON report
and the board's samples taken while it ran.

    perf_summary.py JSON RC NAME TOKENS POWER_CSV

JSON is kokkos-moe-replay's --json report, RC its exit code, NAME the trace's
name and TOKENS the batch size (both only printed), POWER_CSV the nvidia-smi
samples (SM clock in MHz, power draw in W, sw_power_cap Active/Not Active),
every 50 ms; it may be missing or empty (no nvidia-smi). Where samples exist,
their summary is written next to them as NAME-tT.board.json (the
.power.csv's name with .board.json), which benchmarks/results/merge.py keeps
in the records. Prints one line per layer of the report; exits 0 (also without a report).
"""
import json
import sys


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def board_summary(power):
    """Median SM clock of the busy samples (the board's reading of its power,
    smoothed and late, over 100 W) and how many of them the power cap
    throttled. (The reading itself is not kept: during a short point it
    stays far below the cap while the cap already throttles.)"""
    busy = []
    try:
        with open(power) as f:
            for line in f:
                fields = [x.strip() for x in line.split(",")]
                if len(fields) == 3 and float(fields[1]) > 100:
                    busy.append((float(fields[0]), float(fields[1]), fields[2] == "Active"))
    except (OSError, ValueError):
        pass
    if not busy:
        return None
    return {"sm_clock_mhz": median([b[0] for b in busy]),
            "power_capped_samples": sum(b[2] for b in busy), "busy_samples": len(busy)}


def main(path, rc, name, t, power):
    board = ""
    summary = board_summary(power)
    if summary:
        with open(power.replace(".power.csv", ".board.json"), "w") as f:
            json.dump(summary, f)
        board = (f" | SM {summary['sm_clock_mhz']:.0f} MHz, power-capped "
                 f"{summary['power_capped_samples']}/{summary['busy_samples']} samples")
    try:
        with open(path) as f:
            report = json.load(f)
    except Exception as e:
        print(f"{name:32s} T={t:>5s} rc={rc} (no JSON: {e})")
        return
    for layer in report["layers"]:
        s = layer["stages"]
        g = s.get("graph", s["total"])
        print(f"{name:32s} T={t:>5s} layer {layer['layer']:>2d} graph {g['median_ms']:9.4f} ms "
              f"total {s['total']['median_ms']:9.4f} ms "
              f"{s['total']['tflop_per_s']:7.2f} TFLOP/s {s['total']['gb_per_s']:8.1f} GB/s | "
              f"gate_up {s['gate_up']['median_ms']:8.4f} down {s['down_combine']['median_ms']:8.4f} "
              f"dispatch {s['dispatch']['median_ms']:7.4f} | "
              f"err {layer['check']['max_rel_err']:.2e} rc={rc}{board}")


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
