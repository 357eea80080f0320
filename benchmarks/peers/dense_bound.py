#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What cuBLAS reaches on the expert layer's GEMMs without routing: a bound.

For each model and token count T it times, on the current CUDA device, the
two GEMMs of the expert MLP with all T k rows dense, no routing, gather,
activation or combine (bf16, float accumulation, CUDA graph, median):
  - one: all rows through one expert's weights, x [A, H] @ [H, 2F] and
    h [A, F] @ [F, H] (A = T k): the largest dense GEMMs of the point's
    flops, the best case for the multiplies;
  - balanced: E experts of A / E rows each, torch.bmm over all experts'
    weights: the same flops and the same weight bytes as a uniformly routed
    layer, with no partly filled tiles.
Each as a fraction of the point's floor (the formula of kokkos-moe-replay
and moe_peers.py, with the ceilings measured in the same run). Short runs
(20 replays, the board's boost clock for part of them) and, with --long, 300
replays (the board at its power cap). Also the cuBLAS kernel each GEMM ran
(torch.profiler), whose name tells its tile shape and schedule.

  dense_bound.py [--points mixtral-8x7b:512,2048,4096 qwen2-57b:2048,4096 ...] [--long] [--json F]
"""
import argparse
import sys

import torch

from moe_peers import PRESETS, emit, floor_of, layer_work, median_ms, run_header

QWEN2_TOP_K = 4  # the results' Qwen2 traces route each token to 4 experts


def shape(model):
    E, k, H, F = PRESETS[model]
    return E, (QWEN2_TOP_K if model == "qwen2-57b" else k), H, F


def graph_of(fn):
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def kernels_of(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def timed(gate_up, down, long_runs):
    """Median ms of the two GEMMs as graph replays, short (and long) runs."""
    graphs = [graph_of(gate_up), graph_of(down)]

    def both():
        graphs[0].replay()
        graphs[1].replay()

    short = median_ms(both, warmup=3, repeat=20)
    return short, (median_ms(both, warmup=50, repeat=300) if long_runs else None)


def measure(result, model, T, long_runs):
    """One point: its floor and both dense forms' times (see the top)."""
    E, k, H, F = shape(model)
    A, dev = T * k, "cuda"
    per = A // E
    # The floor with every expert touched (true of these points).
    bytes_, flops = layer_work(E, T, k, H, F)
    floor_ms = floor_of(result, bytes_, flops)
    x = torch.randn(A, H, device=dev).bfloat16()
    w1 = (torch.randn(H, 2 * F, device=dev) / H**0.5).bfloat16()
    h = torch.randn(A, F, device=dev).bfloat16()
    w2 = (torch.randn(F, H, device=dev) / F**0.5).bfloat16()
    xb = x[:per * E].view(E, per, H)
    hb = h[:per * E].view(E, per, F)
    w1b = (torch.randn(E, H, 2 * F, device=dev) / H**0.5).bfloat16()
    w2b = (torch.randn(E, F, H, device=dev) / F**0.5).bfloat16()
    runs = {
        "one": (lambda: x @ w1, lambda: h @ w2),
        "balanced": (lambda: torch.bmm(xb, w1b), lambda: torch.bmm(hb, w2b)),
    }
    point = {"model": model, "tokens": T, "E": E, "k": k, "H": H, "F": F,
             "floor_ms": floor_ms, "flops": flops, "bytes": bytes_}
    for name, (gate_up, down) in runs.items():
        short, long_ = timed(gate_up, down, long_runs)
        point[name + "_ms"] = short
        point[name + "_fraction_of_floor"] = floor_ms / short
        if long_runs:
            point[name + "_long_ms"] = long_
            point[name + "_long_fraction_of_floor"] = floor_ms / long_
        point[name + "_kernels"] = kernels_of(lambda: (gate_up(), down()))
    return point


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--points", nargs="+", default=["mixtral-8x7b:512,2048,4096", "qwen2-57b:2048,4096",
                                                   "deepseek-v3:2048,4096"])
    p.add_argument("--long", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    result = run_header()
    for spec in args.points:
        model, tokens = spec.split(":")
        for T in [int(t) for t in tokens.split(",")]:
            point = measure(result, model, T, args.long)
            torch.cuda.empty_cache()
            result["points"].append(point)
            print(f"{model:14s} T={T:5d} floor {point['floor_ms']:7.3f} ms | one {point['one_ms']:7.3f} "
                  f"({point['one_fraction_of_floor']:.2f}) | balanced {point['balanced_ms']:7.3f} "
                  f"({point['balanced_fraction_of_floor']:.2f})"
                  + (f" | long: one {point['one_long_fraction_of_floor']:.2f} balanced "
                     f"{point['balanced_long_fraction_of_floor']:.2f}" if args.long else ""),
                  file=sys.stderr)
    emit(result, args.json)


if __name__ == "__main__":
    main()
