#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Merges one GPU run into benchmarks/results/h200.json and its table.

  merge.py PEERS.json REPLAY_DIR --routing-of NAME=ROUTING... --date D --commit C --command CMD \
      [--raw-runs WHERE]
  merge.py                  # rewrites table.md from h200.json alone

PEERS.json is benchmarks/peers/moe_peers.py's output; REPLAY_DIR holds the
kokkos-moe-replay --json files of the same run, named <trace>-t<tokens>.json.
Each record pairs our time with the floor (from the ceilings measured in the
same run, with the same byte and flop counts) and both peers' times.
Records with the same (model, tokens, routing, dtype) are replaced (records
without "dtype" are bf16). The device is the one the peer script ran on
(the same call). For fp8 runs (moe_peers.py --dtype fp8) the peer is
torch._scaled_grouped_mm ("peer_torch_scaled_grouped_ms", with its error
where it did not run) and the floor counts e4m3 bytes at the e4m3 GEMM rate.
--raw-runs is kept in each record as "raw_runs": where the run's raw output
(PEERS.json, REPLAY_DIR, logs) can be read with git show, as
"benchmarks/results/FOLDER/ at COMMIT" (README.md: the raw runs live in git
history, not in the tree).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def main():
    p = argparse.ArgumentParser()
    p.add_argument("peers", nargs="?", help="without it and REPLAY_DIR: only rewrite table.md")
    p.add_argument("replay_dir", nargs="?")
    p.add_argument("--routing-of", action="append", default=[],
                   help="TRACE_STEM=ROUTING (e.g. mixtral-uniform-4096=uniform)")
    p.add_argument("--date")
    p.add_argument("--commit")
    p.add_argument("--command")
    p.add_argument("--raw-runs", help="where the run's raw output is kept (git show COMMIT:PATH)")
    p.add_argument("--out", default=os.path.join(HERE, "h200.json"))
    args = p.parse_args()
    records = load(args.out, [])
    if args.peers is None:
        write_table(records)
        return
    if args.replay_dir is None or None in (args.date, args.commit, args.command):
        p.error("a run needs PEERS.json, REPLAY_DIR, --date, --commit and --command")
    routing_of = dict(r.split("=", 1) for r in args.routing_of)
    peers = load(args.peers, None)
    key_of = lambda r: (r["model"], r["tokens"], r["routing"], r.get("dtype", "bf16"))
    index = {key_of(r): i for i, r in enumerate(records)}
    for pt in peers["points"]:
        stem = os.path.splitext(os.path.basename(pt["trace"]))[0]
        ours = load(os.path.join(args.replay_dir, f"{stem}-t{pt['tokens']}.json"), None)
        if ours is None:
            print(f"no replay result for {stem} T={pt['tokens']}", file=sys.stderr)
            continue
        layer = next(l for l in ours["layers"] if l["layer"] == pt["layer"])
        # Our time is the forward replayed as one CUDA graph ("graph"), as the
        # torch._grouped_mm peer runs; "total" (kernels enqueued one by one)
        # stays in stages_ms. Older records have "total" only.
        total = layer["stages"].get("graph", layer["stages"]["total"])
        if abs(total["bytes"] - pt["bytes"]) > 1e-6 * pt["bytes"] or abs(total["flops"] - pt["flops"]) > 1e-6 * max(pt["flops"], 1):
            sys.exit(f"{stem} T={pt['tokens']}: driver and peers count different work")
        rec = {
            "model": pt["model"], "tokens": pt["tokens"], "routing": routing_of.get(stem, stem),
            "dtype": pt.get("dtype", "bf16"),
            "time_ms": total["median_ms"], "floor_ms": pt["floor_ms"],
            "fraction_of_floor": pt["floor_ms"] / total["median_ms"],
            "max_rel_err": layer["check"]["max_rel_err"],
            "stages_ms": {s: v["median_ms"] for s, v in layer["stages"].items()},
            # Routed rows over the rows of the expert kernels' tiles (replays
            # that report their tiles).
            "tile_fill": layer.get("tiles", {}).get("fill"),
            "ceilings": peers["ceilings"],
            # SM clock and power-cap throttling while it ran (scripts/gpu.sh perf).
            "board": load(os.path.join(args.replay_dir, f"{stem}-t{pt['tokens']}.board.json"), None),
            "device": peers.get("device"), "date": args.date, "command": args.command, "commit": args.commit,
        }
        if args.raw_runs:
            rec["raw_runs"] = args.raw_runs
        for peer in ("peer_torch_grouped_ms", "peer_cublas_loop_ms", "peer_torch_scaled_grouped_ms",
                     "peer_torch_scaled_grouped_error"):
            if peer in pt:
                rec[peer] = pt[peer]
        key = key_of(rec)
        if key in index:
            records[index[key]] = rec
        else:
            index[key] = len(records)
            records.append(rec)
    records.sort(key=lambda r: (r.get("dtype", "bf16"), r["model"], r["routing"], r["tokens"]))
    with open(args.out, "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    write_table(records)


def write_table(records):
    """table.md (and stdout): one row per record; the tile fill column only
    where some record has it."""
    ms = lambda v: "-" if v is None else f"{v:.3f}"
    fill = lambda v: "-" if v is None else f"{v:.2f}"
    fills = any(r.get("tile_fill") is not None for r in records)
    lines = ["| dtype | model | routing | tokens | ours (ms) | floor (ms) | fraction of floor |"
             + (" tile fill |" if fills else "")
             + " torch._grouped_mm / _scaled_grouped_mm (ms) | cuBLAS loop (ms) | max rel. err |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: |" + (" ---: |" if fills else "") + " ---: | ---: | ---: |"]
    for r in records:
        torch_ms = r.get("peer_torch_grouped_ms", r.get("peer_torch_scaled_grouped_ms"))
        lines.append(f"| {r.get('dtype', 'bf16')} | {r['model']} | {r['routing']} | {r['tokens']} | {r['time_ms']:.3f} | "
                     f"{r['floor_ms']:.3f} | {r['fraction_of_floor']:.2f} |"
                     + (f" {fill(r.get('tile_fill'))} |" if fills else "")
                     + f" {ms(torch_ms)} | {ms(r.get('peer_cublas_loop_ms'))} | {r['max_rel_err']:.1e} |")
    with open(os.path.join(HERE, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
