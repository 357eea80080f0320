#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Peers of the KokkosMoE layer on the same shapes and routing, in one run.

For each point (trace layer, token count) it measures, on the current CUDA device:
  - torch_grouped: a torch._grouped_mm layer (sort by expert, gather, one
    grouped GEMM for gate and up, SiLU times up, grouped GEMM for down, weighted
    index_add_), captured in a CUDA graph and replayed;
  - cublas_loop: a per-expert loop of cuBLAS GEMMs (torch.matmul), the routing
    grouped on the host beforehand (not timed);
and, once per run, the ceilings: device copy bandwidth (bytes read + written),
the bf16 GEMM rate (8192^3, random data) and the e4m3 GEMM rate
(torch._scaled_mm, 8192^3, bf16 output). The floor of a point is
max(bytes that must move / bandwidth, flops / GEMM rate), with bytes = the
touched experts' weights once + hidden states in and out + routing, and
flops = 6 * tokens * k * H * F: the same formula as kokkos-moe-replay.

With --dtype fp8 the weights are e4m3 (counted as 1 byte per value plus a
float scale per 128 x 128 block, as ours), the rate is the e4m3 one, and the
peer is torch._scaled_grouped_mm (e4m3 operands, a scale per weight row and
per activation row, which the layer quantises on the fly, in the graph;
torch's grouped fp8 GEMM takes no 128 x 128 block scales), or the reason it
did not run; there is no per-expert loop.

Output: one JSON object on stdout (and --json FILE):
  {"ceilings": {...}, "points": [{"trace", "layer", "tokens", "model", "E", "k", "H", "F",
    "bytes", "flops", "floor_ms", "peer_torch_grouped_ms", "peer_cublas_loop_ms", ...}]}
"""
import argparse
import json
import sys

import h5py
import torch

PRESETS = {  # E, k, H, F
    "mixtral-8x7b": (8, 2, 4096, 14336),
    "qwen2-57b": (64, 8, 3584, 2560),
    "deepseek-v3": (256, 8, 7168, 2048),
    "gpt-oss-20b": (32, 4, 2880, 2880),
}


def median_ms(fn, warmup=3, repeat=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def ceilings():
    n = 1 << 30  # 2 GiB of bf16 each way
    a = torch.empty(n, dtype=torch.bfloat16, device="cuda")
    b = torch.empty_like(a)
    copy_ms = median_ms(lambda: b.copy_(a))
    bandwidth = 2 * a.numel() * a.element_size() / (copy_ms * 1e-3)
    del a, b
    m = 8192
    x = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    y = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    gemm_ms = median_ms(lambda: x @ y)
    rate = 2 * m**3 / (gemm_ms * 1e-3)
    result = {"copy_bytes_per_s": bandwidth, "bf16_gemm_flops_per_s": rate}
    try:
        xq = x.to(torch.float8_e4m3fn)
        yq = y.to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
        one = torch.ones((), device="cuda")
        fp8_ms = median_ms(lambda: torch._scaled_mm(xq, yq, scale_a=one, scale_b=one,
                                                    out_dtype=torch.bfloat16))
        result["fp8_gemm_flops_per_s"] = 2 * m**3 / (fp8_ms * 1e-3)
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        result["fp8_gemm_error"] = str(e).splitlines()[0]
    return result


def run_header():
    """What every result of these scripts starts with: the device, torch and
    the ceilings measured now (random data seeded first)."""
    torch.manual_seed(0)
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "ceilings": ceilings(), "points": []}


def layer_work(touched, T, k, H, F, weight_bytes=2.0):
    """(bytes, flops) a point must move and multiply: the touched experts'
    weights once (weight_bytes per value), hidden states in and out (bf16),
    the routing; 6 T k H F (the counts of kokkos-moe-replay)."""
    return touched * 3 * H * F * weight_bytes + 2 * T * H * 2 + T * k * 8, 6 * T * k * H * F


FP8_WEIGHT_BYTES = 1.0 + 4.0 / (128 * 128)  # e4m3 and its share of a block scale


def floor_of(result, bytes_, flops, rate="bf16_gemm_flops_per_s"):
    """The floor (ms) of a point: its bytes at the copy rate or its flops at
    the GEMM rate of the run's ceilings, whichever takes longer."""
    c = result["ceilings"]
    return max(bytes_ / c["copy_bytes_per_s"], flops / c[rate]) * 1e3


def emit(result, path):
    """The result as JSON on stdout, and in `path` when given."""
    text = json.dumps(result, indent=1)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")
    print(text)


def sort_by_expert(ids, E):
    """(order, offs, token): the assignments sorted by expert, the groups'
    cumulative row counts (int32) and the token of each sorted row."""
    T, k = ids.shape
    flat = ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.zeros(E, dtype=torch.int32, device=ids.device).index_add_(
        0, flat, torch.ones_like(flat, dtype=torch.int32))
    return order, torch.cumsum(counts, 0, dtype=torch.int32), order // k


def combine(x, y, w, order, token):
    """out[t] = sum of w times the expert outputs y of token t's rows."""
    y = y * w.reshape(-1).index_select(0, order).unsqueeze(1).to(y.dtype)
    out = torch.zeros_like(x, dtype=torch.float32)
    out.index_add_(0, token, y.float())
    return out.to(x.dtype)


def grouped_layer(x, ids, w, gate_up, down, E):
    """One MoE expert layer with torch._grouped_mm; no host synchronisation."""
    order, offs, token = sort_by_expert(ids, E)
    xs = x.index_select(0, token)
    gu = torch._grouped_mm(xs, gate_up.transpose(1, 2), offs=offs)
    F = down.shape[2]
    h = torch.nn.functional.silu(gu[:, :F]) * gu[:, F:]
    y = torch._grouped_mm(h, down.transpose(1, 2), offs=offs)
    return combine(x, y, w, order, token)


def quantize_rows(a):
    """a (2-D, bf16) as e4m3 with one float scale per row (amax / 448)."""
    scale = a.abs().amax(dim=1).float().clamp(min=1e-12) / 448.0
    return (a.float() / scale.unsqueeze(1)).to(torch.float8_e4m3fn), scale


def scaled_grouped_layer(x, ids, w, gate_up_q, gate_up_s, down_q, down_s, E):
    """The layer of grouped_layer with e4m3 operands: activations quantised
    per row on the fly, weights per output row (gate_up_q [E, 2F, H] with
    gate_up_s [E, 2F], down_q [E, H, F] with down_s [E, H])."""
    order, offs, token = sort_by_expert(ids, E)
    xq, xs = quantize_rows(x.index_select(0, token))
    gu = torch._scaled_grouped_mm(xq, gate_up_q.transpose(1, 2), xs, gate_up_s, offs=offs,
                                  out_dtype=torch.bfloat16)
    F = down_q.shape[2]
    hq, hs = quantize_rows(torch.nn.functional.silu(gu[:, :F]) * gu[:, F:])
    y = torch._scaled_grouped_mm(hq, down_q.transpose(1, 2), hs, down_s, offs=offs,
                                 out_dtype=torch.bfloat16)
    return combine(x, y, w, order, token)


def quantize_weight_rows(wt):
    """[E, N, K] bf16 weights as e4m3 with a scale per (expert, row)."""
    scale = wt.abs().amax(dim=2).float().clamp(min=1e-12) / 448.0
    return (wt.float() / scale.unsqueeze(2)).to(torch.float8_e4m3fn), scale


def fp8_point(x, ids, w, weights, E, repeat):
    """(median ms of the torch._scaled_grouped_mm layer in a CUDA graph,
    None) or (None, why it did not run); weights: (gate_up_q, gate_up_s,
    down_q, down_s) from quantize_weight_rows."""
    try:
        gate_up_q, gate_up_s, down_q, down_s = weights
        scaled_grouped_layer(x, ids, w, gate_up_q, gate_up_s, down_q, down_s, E)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            scaled_grouped_layer(x, ids, w, gate_up_q, gate_up_s, down_q, down_s, E)
        ms = median_ms(graph.replay, repeat=repeat)
        del graph
        return ms, None
    except Exception as e:  # noqa: BLE001 - reported in the point
        torch.cuda.synchronize()
        return None, str(e).splitlines()[0] if str(e) else type(e).__name__


def cublas_loop(x, groups, w_flat, gate, up, down, out32):
    out32.zero_()
    for e, (token, slot_index) in groups:
        xe = x.index_select(0, token)
        h = torch.nn.functional.silu(xe @ gate[e].t()) * (xe @ up[e].t())
        ye = (h @ down[e].t()).float() * w_flat.index_select(0, slot_index).unsqueeze(1)
        out32.index_add_(0, token, ye)
    return out32


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="+")
    p.add_argument("--tokens", default="1,8,32,128,512,2048,4096")
    p.add_argument("--layer", type=int, default=None, help="layer index (default: the first)")
    p.add_argument("--model", default=None)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--json", default=None)
    p.add_argument("--dtype", choices=["bf16", "fp8"], default="bf16")
    args = p.parse_args()
    result = run_header()
    for path in args.traces:
        with h5py.File(path, "r") as f:
            model = args.model or f.attrs["model"]
            model = model.decode() if isinstance(model, bytes) else str(model)
            E, k = int(f.attrs["num_experts"]), int(f.attrs["top_k"])
            H, F = int(f.attrs["hidden_size"]), int(f.attrs["ffn_size"])
            if (H == 0 or F == 0) and model in PRESETS:
                H, F = PRESETS[model][2], PRESETS[model][3]
            layers = sorted(f["layers"].keys(), key=int)
            layer = str(args.layer) if args.layer is not None else layers[0]
            all_ids = torch.from_numpy(f["layers"][layer]["expert_ids"][()]).long()
            all_w = torch.from_numpy(f["layers"][layer]["weights"][()]).float()
        dev = "cuda"
        scale = 2.0 / H**0.5
        gate = ((torch.rand(E, F, H, device=dev) * 2 - 1) * scale).bfloat16()
        up = ((torch.rand(E, F, H, device=dev) * 2 - 1) * scale).bfloat16()
        down = ((torch.rand(E, H, F, device=dev) * 2 - 1) * (2.0 / F**0.5)).bfloat16()
        gate_up = torch.cat([gate, up], dim=1).contiguous()
        if args.dtype == "fp8":
            if "fp8_gemm_flops_per_s" not in result["ceilings"]:
                sys.exit("no e4m3 GEMM rate for the fp8 floor: "
                         + result["ceilings"].get("fp8_gemm_error", "unknown"))
            # Once per trace (DeepSeek-V3's are 33 GB in bf16), in place of the bf16 ones.
            del gate, up
            weights8 = (*quantize_weight_rows(gate_up), *quantize_weight_rows(down))
            del gate_up, down
            torch.cuda.empty_cache()
        for T in [int(t) for t in args.tokens.split(",")]:
            if T > all_ids.shape[0]:
                continue
            ids = all_ids[:T].to(dev)
            w = all_w[:T].to(dev)
            x = (torch.rand(T, H, device=dev) * 2 - 1).bfloat16()
            touched = int(torch.unique(ids).numel())
            if args.dtype == "fp8":
                bytes_, flops = layer_work(touched, T, k, H, F, FP8_WEIGHT_BYTES)
                floor_ms = floor_of(result, bytes_, flops, "fp8_gemm_flops_per_s")
                ms, why = fp8_point(x, ids, w, weights8, E, args.repeat)
                point = {"trace": path, "layer": int(layer), "model": model, "tokens": T,
                         "dtype": "fp8", "E": E, "k": k, "H": H, "F": F,
                         "touched_experts": touched, "bytes": bytes_, "flops": flops,
                         "floor_ms": floor_ms, "peer_torch_scaled_grouped_ms": ms}
                if why:
                    point["peer_torch_scaled_grouped_error"] = why
                result["points"].append(point)
                print(f"{model:14s} T={T:5d} floor {floor_ms:8.4f} ms  torch_scaled_grouped "
                      + (f"{ms:8.4f} ms ({floor_ms / ms:5.1%})" if ms else f"did not run: {why}"),
                      file=sys.stderr)
                continue
            bytes_, flops = layer_work(touched, T, k, H, F)
            floor_ms = floor_of(result, bytes_, flops)

            # torch._grouped_mm layer in a CUDA graph.
            static_out = grouped_layer(x, ids, w, gate_up, down, E)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = grouped_layer(x, ids, w, gate_up, down, E)
            grouped_ms = median_ms(graph.replay, repeat=args.repeat)

            # Per-expert cuBLAS loop, routing grouped beforehand.
            flat = ids.reshape(-1)
            groups = []
            for e in torch.unique(flat).tolist():
                slot_index = torch.nonzero(flat == e).reshape(-1)
                groups.append((e, (slot_index // k, slot_index)))
            out32 = torch.zeros(T, H, dtype=torch.float32, device=dev)
            loop_ms = median_ms(lambda: cublas_loop(x, groups, w.reshape(-1), gate, up, down, out32),
                                repeat=args.repeat)
            # Both peers compute the same layer.
            diff = (static_out.float() - out32).abs().max().item()
            scale_ = out32.abs().max().item() or 1.0
            result["points"].append({
                "trace": path, "layer": int(layer), "model": model, "tokens": T,
                "E": E, "k": k, "H": H, "F": F, "touched_experts": touched,
                "bytes": bytes_, "flops": flops, "floor_ms": floor_ms,
                "peer_torch_grouped_ms": grouped_ms, "peer_cublas_loop_ms": loop_ms,
                "peers_max_rel_diff": diff / scale_,
            })
            print(f"{model:14s} T={T:5d} floor {floor_ms:8.4f} ms  torch_grouped {grouped_ms:8.4f} ms "
                  f"({floor_ms / grouped_ms:5.1%})  cublas_loop {loop_ms:8.4f} ms "
                  f"({floor_ms / loop_ms:5.1%})  peers agree to {diff / scale_:.1e}", file=sys.stderr)
            del graph
        if args.dtype == "fp8":
            del weights8
        else:
            del gate, up, down, gate_up
        torch.cuda.empty_cache()
    emit(result, args.json)


if __name__ == "__main__":
    main()
