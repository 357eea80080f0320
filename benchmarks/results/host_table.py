#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Records and a Markdown table of the host layer against its floor, from
the Google Benchmark JSON of KokkosMoE_host_benchmarks (one file per thread
count, e.g. OMP_NUM_THREADS=1 and 2):

    host_table.py RUN.json... [--out host.json] [--commit C] [--raw-runs WHERE]
    host_table.py [--records host.json] [--build COMMIT]   # the tables from the records alone

Each layer benchmark (host/<impl>/<dtype>/<model>/t<tokens>) becomes one
record per (model, shape, tokens, dtype, threads, impl) in --out (default
host.json beside this file; records of the same point, build flags and commit are
replaced, those of other builds kept): the
median time, the floor from the ceilings the same run measured (copy
bandwidth, sgemm rate: the run's context), the fraction of the floor, the
fraction of the cores' multiply-add peak (measured in the same run),
where the run measured one, the fraction of its read stream (the time a
pure read of the point's bytes takes at the run's read rate, over the
point's: fraction_of_read_stream, read_gbps), and the shortest and longest
repetition and their count (time_ms_min, time_ms_max, repetitions: the spread, where the run has repetitions), the
run's CPU, flags, date, command and commit (and --raw-runs, where the
run's Google Benchmark JSON is kept: "raw_runs"; {run} in it is replaced by
the run file's name). The table of the given runs goes to stdout.

Without runs it prints the table of each build in the records (one per
commit and flags; --build COMMIT: that one), the tables of
docs/performance.md.
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


def spreads(run):
    """The shortest and longest repetition of each benchmark, in ms, and how
    many repetitions ran (runs with repetitions and not only aggregates)."""
    out = {}
    for b in run["benchmarks"]:
        if b.get("run_type") != "iteration" or "repetition_index" not in b:
            continue
        t = b["real_time"] * TO_MS[b["time_unit"]]
        lo, hi, n = out.get(b["run_name"].replace("/manual_time", ""), (t, t, 0))
        out[b["run_name"].replace("/manual_time", "")] = (min(lo, t), max(hi, t), n + 1)
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
        "bf16_pair_peak_gflops": (float(ctx["bf16_pair_peak_gflops"])
                                  if "bf16_pair_peak_gflops" in ctx else None),
        "read_gbps": float(ctx["read_gbps"]) if "read_gbps" in ctx else None,
        "cpu": ctx["cpu"],
        "flags": ctx.get("build_flags") or None,
        # How the kernels streamed the weights (HostTuning), where the run says.
        "host_tuning": ctx.get("host_tuning"),
        "date": ctx["date"][:10],
        "command": ctx["command"],
        "commit": commit,
        # The machine's load when the run began (other work skews the times).
        "loadavg_at_start": float(ctx["loadavg_at_start"].split()[0]),
    }
    spread = spreads(run)
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
        if spread.get(name, (0, 0, 0))[2] > 1:
            rec["time_ms_min"], rec["time_ms_max"], rec["repetitions"] = spread[name]
        for k in ("fraction_of_fma_peak", "fraction_of_bf16_pair_peak", "fraction_of_read_stream"):
            if k in b:
                rec[k] = b[k]
        if "rel_err_vs_ours" in b:
            rec["rel_err_vs_ours"] = b["rel_err_vs_ours"]
        rec.update(common)
        for k in ("flags", "host_tuning", "fma_peak_gflops", "bf16_pair_peak_gflops", "read_gbps"):
            if rec[k] is None:
                del rec[k]
        rec["label"] = m["label"]
        yield rec


# The benchmark's order of the models (Bench_HostLayer.cpp, cases()).
MODEL_ORDER = ("mixtral-8x7b", "qwen2-57b", "deepseek-v3")


def bench_label(r, full_experts):
    """The benchmark's label of a record: -r16 where H and F were divided by
    16, -eN where E was cut (full_experts: each model's expert count)."""
    if "label" in r:
        return r["label"]
    s = r["shape"]
    if s["reduce"] != 1:
        return f"{r['model']}-r{s['reduce']}"
    if s["experts"] < full_experts.get(r["model"], s["experts"]):
        return f"{r['model']}-e{s['experts']}"
    return r["model"]


def key(r):
    """A record's point and build: runs of other commits or flags (another
    CPU) are kept beside, so that each table the docs cite stays in the
    records."""
    s = r["shape"]
    return (r["model"], s["experts"], s["top_k"], s["hidden"], s["ffn"], r["tokens"], r["dtype"],
            r["threads"], r["impl"], r.get("flags") or "", r["commit"])


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
    if "bf16_pair_peak_gflops" in ctx:
        peak += f" (bf16 pairs {float(ctx['bf16_pair_peak_gflops']):.0f})"
    if "read_gbps" in ctx:
        peak += f"; read stream {float(ctx['read_gbps']):.1f} GB/s"
    if "host_tuning" in ctx:
        peak += f"; kernels' weight streaming: {ctx['host_tuning']}"
    return (f"- {ctx['kokkos_threads']} thread(s): copy {float(ctx['floor_copy_gbps']):.1f} GB/s, "
            f"sgemm {float(ctx['floor_sgemm_gflops']):.0f} GFLOP/s{measured_again}, "
            f"{ctx['blas']}{peak}; load average at start {ctx['loadavg_at_start'].split()[0]}")


def ms(v):
    return f"{v:.3g}" if v < 1000 else f"{v:.0f}"


def cell(r):
    """The median (its fraction of the floor), and where the record has them,
    the spread of the repetitions: (longest - shortest) / median."""
    if not r:
        return "-"
    spread = (f", ±{(r['time_ms_max'] - r['time_ms_min']) / 2 / r['time_ms']:.0%}"
              if "time_ms_min" in r else "")
    return f"{ms(r['time_ms'])} ({r['fraction_of_floor']:.1%}{spread})"


def records_ceilings_line(recs, n):
    """The floor's inputs of one thread count, from its records."""
    r = next(r for r in recs if r["threads"] == n)
    peak = f"; multiply-add peak {r['fma_peak_gflops']:.0f} GFLOP/s" if "fma_peak_gflops" in r else ""
    if "bf16_pair_peak_gflops" in r:
        peak += f" (bf16 pairs {r['bf16_pair_peak_gflops']:.0f})"
    if "read_gbps" in r:
        peak += f"; read stream {r['read_gbps']:.1f} GB/s"
    return (f"- {n} thread(s): copy {r['copy_gbps']:.1f} GB/s, sgemm {r['sgemm_gflops']:.0f} GFLOP/s"
            f"{peak}; load average at start {r['loadavg_at_start']}")


def header(recs, runs):
    """What the table's runs were: from the runs' context, or from the records."""
    first = recs[0]
    flags = runs[0]["context"].get("build_flags", "") if runs else first.get("flags", "")
    print(f"{first['cpu']}, {first['date']}, commit {first['commit']}, "
          f"flags `{flags}`. Floor = max(bytes / copy, "
          f"flops / sgemm), ceilings measured in the same run:\n")
    if runs:
        for run in sorted(runs, key=lambda r: int(r["context"]["kokkos_threads"])):
            print(ceilings_line(run))
    else:
        for n in sorted({r["threads"] for r in recs}):
            print(records_ceilings_line(recs, n))
    print("\nms (fraction of the floor), medians of the repetitions; cblas: the fp32 "
          "per-expert cblas_sgemm loop\n")


def table(recs, runs=()):
    threads = sorted({r["threads"] for r in recs})
    header(recs, runs)
    full = {}
    for r in recs:
        full[r["model"]] = max(full.get(r["model"], 0), r["shape"]["experts"])
    head = ["point", "dtype"]
    for n in threads:
        head += [f"floor ms, {n}t", f"ours, {n}t", f"cblas, {n}t"]
    # bf16 where the build multiplies pairs: of the pairs' peak.
    head.append(f"ours of FMA peak, {threads[-1]}t")
    # Where the runs measured a read stream: ours against it (decode's limit).
    reads = any("fraction_of_read_stream" in r for r in recs)
    if reads:
        head += [f"ours of read stream, {n}t" for n in threads]
    print("| " + " | ".join(head) + " |")
    print("| --- | --- |" + " ---: |" * (len(head) - 2))
    by = {(bench_label(r, full), r["tokens"], r["dtype"], r["threads"], r["impl"]): r for r in recs}
    rows = []  # in the run's order
    ordered = recs if runs else sorted(recs, key=lambda r: (
        MODEL_ORDER.index(r["model"]) if r["model"] in MODEL_ORDER else len(MODEL_ORDER), r["model"],
        -r["shape"]["reduce"], r["dtype"] != "fp32", r["dtype"], r["tokens"]))
    for r in ordered:
        row = (bench_label(r, full), r["tokens"], r["dtype"])
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
        pairs = ours.get("fraction_of_bf16_pair_peak")
        cells.append(f"{pairs:.1%} (pairs)" if pairs is not None else
                     f"{peak:.1%}" if peak is not None else "-")
        if reads:
            for n in threads:
                read = (by.get((label, tokens, dtype, n, "ours")) or {}).get("fraction_of_read_stream")
                cells.append(f"{read:.1%}" if read is not None else "-")
        print("| " + " | ".join(cells) + " |")


def print_records(path, build):
    """The table of each build (commit and flags) in the records."""
    with open(path) as f:
        recs = json.load(f)
    builds = []
    for r in recs:
        b = (r["commit"], r.get("flags") or "")
        if b not in builds and build in (None, r["commit"]):
            builds.append(b)
    if not builds:
        raise SystemExit(f"host_table.py: no records of commit {build} in {path}")
    for i, b in enumerate(builds):
        if i:
            print()
        table([r for r in recs if (r["commit"], r.get("flags") or "") == b])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*", help="Google Benchmark JSON (--benchmark_out); "
                   "none: print the tables of the records")
    p.add_argument("--out", default=os.path.join(HERE, "host.json"))
    p.add_argument("--records", help="without runs: the records to print (default: --out)")
    p.add_argument("--build", help="without runs: only the records of this commit")
    p.add_argument("--commit", help="default: git rev-parse --short HEAD here")
    p.add_argument("--raw-runs", help="where the runs are kept ({run}: a run file's name)")
    args = p.parse_args()
    if not args.runs:
        print_records(args.records or args.out, args.build)
        return
    commit = args.commit or git_commit()
    runs, recs = [], []
    for path in args.runs:
        with open(path) as f:
            runs.append(json.load(f))
        new = list(records(runs[-1], commit))
        if args.raw_runs:
            for r in new:
                r["raw_runs"] = args.raw_runs.replace("{run}", os.path.basename(path))
        recs += new
    merge(args.out, recs)
    table(recs, runs)


if __name__ == "__main__":
    main()
