#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Records and a Markdown table of the host layer against its floor, from
the Google Benchmark JSON of KokkosMoE_host_benchmarks (one file per thread
count, e.g. OMP_NUM_THREADS=1 and 2):

    host_table.py RUN.json... [--out host.json] [--commit C]

Each layer benchmark (host/<impl>/<dtype>/<model>/t<tokens>) becomes one
record per (model, shape, tokens, dtype, threads, impl) in --out (default
host.json beside this file; records of the same point and build flags are
replaced, those of other builds kept): the
median time, the floor from the ceilings the same run measured (copy
bandwidth, sgemm rate: the run's context), the fraction of the floor, the
fraction of the cores' multiply-add peak (measured in the same run), and
the run's CPU, flags, date, command and commit. The table of the given
runs goes to stdout.
"""
import argparse
import json
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = re.compile(r"^host/(?P<impl>\w+)/(?P<dtype>\w+)/(?P<label>[\w.-]+)/t(?P<tokens>\d+)")
TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def medians(run):
    """The median of each benchmark's repetitions (or its only run)."""
    out = {}
    for b in run["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        out[b["run_name"].replace("/manual_time", "")] = b
    return out


def git_commit():
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                          text=True, check=True).stdout.strip()


def records(run, commit):
    ctx = run["context"]
    threads = int(ctx["kokkos_threads"])
    common = {
        "copy_gbps": float(ctx["floor_copy_gbps"]),
        "sgemm_gflops": float(ctx["floor_sgemm_gflops"]),
        "fma_peak_gflops": float(ctx["fma_peak_gflops"]) if "fma_peak_gflops" in ctx else None,
        "cpu": ctx["cpu"],
        "flags": ctx.get("build_flags") or None,
        "date": ctx["date"][:10],
        "command": ctx["command"],
        "commit": commit,
        # The machine's load when the run began (other work skews the times).
        "loadavg_at_start": float(ctx["loadavg_at_start"].split()[0]),
    }
    for name, b in medians(run).items():
        m = NAME.match(name)
        if not m:
            continue
        time_ms = b["real_time"] * TO_MS[b["time_unit"]]
        rec = {
            # The preset's name: -r16 (reduced) and -eN (experts cut) are in the shape.
            "model": re.sub(r"-(r|e)\d+$", "", m["label"]),
            "shape": {"experts": int(b["experts"]), "top_k": int(b["top_k"]),
                      "hidden": int(b["hidden"]), "ffn": int(b["ffn"]), "reduce": int(b["reduce"])},
            "tokens": int(m["tokens"]),
            "dtype": m["dtype"],
            "threads": threads,
            "impl": m["impl"],
            "time_ms": time_ms,
            "floor_ms": b["floor_ms"],
            "fraction_of_floor": b["floor_ms"] / time_ms,
            "gflops": b["flops"] / time_ms / 1e6,
            "bytes": b["bytes"],
            "flops": b["flops"],
        }
        if "fraction_of_fma_peak" in b:
            rec["fraction_of_fma_peak"] = b["fraction_of_fma_peak"]
        if "rel_err_vs_ours" in b:
            rec["rel_err_vs_ours"] = b["rel_err_vs_ours"]
        rec.update(common)
        for k in ("flags", "fma_peak_gflops"):
            if rec[k] is None:
                del rec[k]
        rec["label"] = m["label"]
        yield rec


def key(r):
    """A record's point; runs of other builds (flags: another CPU) are kept beside."""
    s = r["shape"]
    return (r["model"], s["experts"], s["top_k"], s["hidden"], s["ffn"], r["tokens"], r["dtype"],
            r["threads"], r["impl"], r.get("flags") or "")


def merge(path, new):
    try:
        with open(path) as f:
            old = json.load(f)
    except FileNotFoundError:
        old = []
    by_key = {key(r): r for r in old}
    by_key.update({key(r): {k: v for k, v in r.items() if k != "label"} for r in new})
    with open(path, "w") as f:
        json.dump(sorted(by_key.values(), key=key), f, indent=1)
        f.write("\n")


def ceilings_line(run):
    """The floor's inputs of one run, and the same measured again as benchmarks."""
    ctx, b = run["context"], medians(run)
    again = []
    if "host/copy_bandwidth" in b:
        again.append(f"{b['host/copy_bandwidth']['bytes_per_second'] / 1e9:.1f} GB/s")
    if "host/sgemm_rate" in b:
        again.append(f"{b['host/sgemm_rate']['flops_per_second'] / 1e9:.0f} GFLOP/s")
    measured_again = f" (as benchmarks: {', '.join(again)})" if again else ""
    peak = (f"; multiply-add peak {float(ctx['fma_peak_gflops']):.0f} GFLOP/s"
            if "fma_peak_gflops" in ctx else "")
    return (f"- {ctx['kokkos_threads']} thread(s): copy {float(ctx['floor_copy_gbps']):.1f} GB/s, "
            f"sgemm {float(ctx['floor_sgemm_gflops']):.0f} GFLOP/s{measured_again}, "
            f"{ctx['blas']}{peak}; load average at start {ctx['loadavg_at_start'].split()[0]}")


def ms(v):
    return f"{v:.3g}" if v < 1000 else f"{v:.0f}"


def cell(r):
    return f"{ms(r['time_ms'])} ({r['fraction_of_floor']:.1%})" if r else "-"


def table(runs, recs):
    threads = sorted({r["threads"] for r in recs})
    ctx = runs[0]["context"]
    print(f"{ctx['cpu']}, {ctx['date'][:10]}, commit {recs[0]['commit']}, "
          f"flags `{ctx.get('build_flags', '')}`. Floor = max(bytes / copy, "
          f"flops / sgemm), ceilings measured in the same run:\n")
    for run in sorted(runs, key=lambda r: int(r["context"]["kokkos_threads"])):
        print(ceilings_line(run))
    print("\nms (fraction of the floor), medians of the repetitions; cblas: the fp32 "
          "per-expert cblas_sgemm loop\n")
    head = ["point", "dtype"]
    for n in threads:
        head += [f"floor ms, {n}t", f"ours, {n}t", f"cblas, {n}t"]
    head.append(f"ours of FMA peak, {threads[-1]}t")
    print("| " + " | ".join(head) + " |")
    print("| --- | --- |" + " ---: |" * (len(head) - 2))
    by = {(r["label"], r["tokens"], r["dtype"], r["threads"], r["impl"]): r for r in recs}
    rows = []  # in the run's order
    for r in recs:
        row = (r["label"], r["tokens"], r["dtype"])
        if row not in rows:
            rows.append(row)
    for label, tokens, dtype in rows:
        cells = [f"{label} T={tokens}", dtype]
        for n in threads:
            ours, peer = by.get((label, tokens, dtype, n, "ours")), by.get((label, tokens, dtype, n, "cblas"))
            floor = (ours or peer or {}).get("floor_ms")
            cells += [ms(floor) if floor else "-", cell(ours), cell(peer)]
        ours = by.get((label, tokens, dtype, threads[-1], "ours")) or {}
        peak = ours.get("fraction_of_fma_peak")
        cells.append(f"{peak:.1%}" if peak is not None else "-")
        print("| " + " | ".join(cells) + " |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="Google Benchmark JSON (--benchmark_out)")
    p.add_argument("--out", default=os.path.join(HERE, "host.json"))
    p.add_argument("--commit", help="default: git rev-parse --short HEAD here")
    args = p.parse_args()
    commit = args.commit or git_commit()
    runs, recs = [], []
    for path in args.runs:
        with open(path) as f:
            runs.append(json.load(f))
        recs += list(records(runs[-1], commit))
    merge(args.out, recs)
    table(runs, recs)


if __name__ == "__main__":
    main()
