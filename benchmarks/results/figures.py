#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Figures of the H200 records (h200.json beside this file) for the docs.

  figures.py [h200.json] [--out DIR]      (default: docs/figures/ of the repository)

Writes three PNGs:
  fraction-of-floor.png  ours and both peers as a fraction of the floor
                         against tokens, one panel per model and routing
                         (bf16 records);
  fraction-of-floor-fp8.png  the same for e4m3 expert weights (fp8
                         records): ours and torch._scaled_grouped_mm, with
                         ours in bf16 for comparison (its own floor);
  stages.png             the time of each stage (dispatch, gate_up,
                         down_combine, each timed alone) in units of the
                         floor, stacked, per model, routing and tokens, with
                         the graph-replayed forward's time (mark and ms).
Needs matplotlib (Debian: python3-matplotlib); renders without a display.
"""
import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from record_names import MODEL_ORDER, title  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

STAGES = [("dispatch", "dispatch", "#8c8c8c"), ("gate_up", "gate/up (with the gather of x)", "#1f77b4"),
          ("down_combine", "down + combine", "#ff7f0e")]


def panels(records):
    """(model, routing) -> records sorted by tokens, in a fixed order."""
    groups = {}
    for r in records:
        groups.setdefault((r["model"], r["routing"]), []).append(r)
    keys = sorted(groups, key=lambda k: (MODEL_ORDER.index(k[0]) if k[0] in MODEL_ORDER else 99, k[1]))
    return [(k, sorted(groups[k], key=lambda r: r["tokens"])) for k in keys]


def dtype_of(r):
    return r.get("dtype", "bf16")


def header(records):
    r = records[0]
    device = r.get("device", "H200")
    return f"{device}, {dtype_of(r)}, commit {r['commit']}, {r['date']}"


def grid(n):
    cols = 3
    rows = (n + 1 + cols - 1) // cols  # one cell more for the legend
    fig, axes = plt.subplots(rows, cols, figsize=(4.0 * cols, 3.1 * rows), squeeze=False)
    return fig, [a for row in axes for a in row]


BF16_LINES = [("ours (CUDA graph)", lambda r: r["time_ms"], "-", "o", "#d62728"),
              ("torch._grouped_mm (CUDA graph)", lambda r: r.get("peer_torch_grouped_ms"), "--", "s",
               "#1f77b4"),
              ("per-expert cuBLAS loop", lambda r: r.get("peer_cublas_loop_ms"), ":", "^", "#7f7f7f")]
FP8_LINES = [("ours, fp8 (CUDA graph)", lambda r: r["time_ms"], "-", "o", "#d62728"),
             ("torch._scaled_grouped_mm, fp8 (CUDA graph)",
              lambda r: r.get("peer_torch_scaled_grouped_ms"), "--", "s", "#1f77b4")]


def fraction_of_floor(records, out, lines=BF16_LINES, bf16=None):
    """One panel per (model, routing); with bf16 records given, ours in bf16
    (against its own floor) as a grey line."""
    groups = panels(records)
    fig, axes = grid(len(groups))
    for ax, (key, rs) in zip(axes, groups):
        tokens = [r["tokens"] for r in rs]
        for label, time, style, marker, color in lines:
            pts = [(r["tokens"], r["floor_ms"] / time(r)) for r in rs if time(r)]
            if pts:
                ax.plot(*zip(*pts), style, marker=marker, color=color, label=label, markersize=4,
                        linewidth=1.5)
        if bf16 is not None:
            same = sorted((r for r in bf16 if (r["model"], r["routing"]) == key), key=lambda r: r["tokens"])
            if same:
                ax.plot([r["tokens"] for r in same], [r["fraction_of_floor"] for r in same], "-.",
                        marker=".", color="#7f7f7f", label="ours, bf16 (its floor)", linewidth=1)
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xscale("log", base=2)
        ax.set_xticks(tokens)
        ax.set_xticklabels([str(t) for t in tokens], fontsize=8, rotation=45)
        ax.minorticks_off()
        ax.set_ylim(0, 1.08)
        ax.set_title(title(key), fontsize=10)
        ax.grid(True, linewidth=0.3)
        ax.set_xlabel("tokens", fontsize=8)
        ax.set_ylabel("fraction of the floor", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
    legend_ax = axes[len(groups)]
    legend_ax.axis("off")
    handles, labels = axes[0].get_legend_handles_labels()
    legend_ax.legend(handles, labels, loc="upper left", fontsize=9, frameon=False)
    rate = "e4m3" if dtype_of(records[0]) == "fp8" else "bf16"
    legend_ax.text(0.0, 0.45, "floor = max(bytes / copy bandwidth,\n"
                   f"            flops / {rate} GEMM rate),\nboth ceilings measured in the same run;\n"
                   "higher is better\n\n" + header(records), fontsize=8, va="top",
                   transform=legend_ax.transAxes)
    for ax in axes[len(groups) + 1:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def stages(records, out):
    groups = panels(records)
    fig, axes = grid(len(groups))
    for ax, (key, rs) in zip(axes, groups):
        x = list(range(len(rs)))
        bottom = [0.0] * len(rs)
        for stage, label, color in STAGES:
            part = [r["stages_ms"][stage] / r["floor_ms"] for r in rs]
            ax.bar(x, part, bottom=bottom, color=color, label=label, width=0.75)
            bottom = [b + p for b, p in zip(bottom, part)]
        ax.plot(x, [r["time_ms"] / r["floor_ms"] for r in rs], linestyle="none", marker="_",
                markersize=14, markeredgewidth=2, color="black", label="forward as one CUDA graph")
        for i, r in enumerate(rs):
            ms = r["time_ms"]
            ax.text(i, bottom[i] + 0.04, f"{ms:.2f}" if ms < 10 else f"{ms:.1f}", ha="center",
                    va="bottom", fontsize=7)
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xticks(x)
        ax.set_xticklabels([str(r["tokens"]) for r in rs], fontsize=8)
        ax.set_ylim(0, 2.6)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(title(key), fontsize=10)
        ax.set_xlabel("tokens", fontsize=8)
        ax.set_ylabel("time / floor", fontsize=8)
        ax.grid(True, axis="y", linewidth=0.3)
    legend_ax = axes[len(groups)]
    legend_ax.axis("off")
    handles, labels = axes[0].get_legend_handles_labels()
    legend_ax.legend(handles[::-1], labels[::-1], loc="upper left", fontsize=9, frameon=False)
    legend_ax.text(0.0, 0.45, "bars: each stage timed alone between two\n"
                   "fences, in units of the point's floor (1.0);\n"
                   "number on a bar: the forward as one\nCUDA graph, ms\n\n" + header(records),
                   fontsize=8, va="top", transform=legend_ax.transAxes)
    for ax in axes[len(groups) + 1:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("records", nargs="?", default=str(HERE / "h200.json"))
    p.add_argument("--out", default=str(ROOT / "docs" / "figures"))
    args = p.parse_args()
    records = json.loads(Path(args.records).read_text())
    bf16 = [r for r in records if dtype_of(r) == "bf16"]
    fp8 = [r for r in records if dtype_of(r) == "fp8"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = []
    if bf16:
        names += ["fraction-of-floor.png", "stages.png"]
        fraction_of_floor(bf16, out / names[0])
        stages(bf16, out / names[1])
    if fp8:
        names.append("fraction-of-floor-fp8.png")
        fraction_of_floor(fp8, out / names[-1], FP8_LINES, bf16)
    for name in names:
        print(out / name)


if __name__ == "__main__":
    main()
