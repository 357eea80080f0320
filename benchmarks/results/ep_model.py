#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The expert-parallel forward on paper: bytes, link time and expert compute.

  ep_model.py [h200.json] [--latency-us L] [--json]

For Mixtral-8x7B and DeepSeek-V3 (routed experts), EP = 2, 8, 64 ranks and
T = 1, 128, 4096 tokens per rank, under uniform routing and the contiguous
placement (E/P experts per rank), prints a Markdown table of the predicted
ExpertParallelLayer forward (src/ep/KokkosMoE_ExpertParallel_Impl.hpp):

- Volumes per rank, exactly as the layer sends them: each (token, expert)
  assignment is one row of H bf16 values plus a 4-byte local expert index to
  the expert's rank (rows for the rank's own experts are copied, not sent),
  and each result row (H bf16) comes back. A rank sends T k (P-1)/P rows on
  average and receives as many: dispatch rows (2H+4) bytes, combine rows 2H.
- dedup x: the reduction if a token went once per destination rank (DeepEP)
  instead of once per assignment: k (P-1)/P over (P-1)(1 - C(E-E/P,k)/C(E,k)),
  the expected number of other ranks among k distinct experts.
- Link time = bytes / bandwidth (per direction per GPU) + L per collective:
  3 before the expert compute (the plan's counts all-to-all and error
  all-reduce, the rows with their indices), 1 for the combine.
- Expert compute per rank = t_1gpu(T P tokens) / P, t_1gpu our measured
  single-H200 bf16 forward (h200.json, `time_ms`), interpolated in log-log
  between measured token counts; past the largest count, proportional to
  tokens from it (marked *). Routing: uniform where measured, else zipf0.5.
- total = dispatch + compute + combine (the layer runs its phases one after
  another); comm % = link share of it; overlap <= min(comm, compute) / total,
  the most that overlapping the exchanges with the compute could save.
"""
import argparse
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {  # name in h200.json: (label, E, top_k, H, F), as drivers/ModelPresets.hpp
    "mixtral-8x7b": ("Mixtral-8x7B", 8, 2, 4096, 14336),
    "deepseek-v3": ("DeepSeek-V3", 256, 8, 7168, 2048),
}
RANKS = (2, 8, 64)
TOKENS = (1, 128, 4096)
LINKS = {"NVLink": 450e9, "IB": 50e9}  # bytes/s per direction per GPU
ROUTING_PREFERENCE = ("uniform", "zipf0.5")
COLLECTIVES_DISPATCH, COLLECTIVES_COMBINE = 3, 1


def measured(records, model):
    """(routing, sorted [(tokens, ms)]) of our bf16 layer for the model."""
    for routing in ROUTING_PREFERENCE:
        pts = sorted((r["tokens"], r["time_ms"]) for r in records
                     if r["model"] == model and r["routing"] == routing and r.get("dtype", "bf16") == "bf16")
        if pts:
            return routing, pts
    raise SystemExit(f"no {model} record with routing in {ROUTING_PREFERENCE}")


def single_gpu_ms(pts, n):
    """Our one-GPU time at n tokens, and whether it is extrapolated."""
    if n >= pts[-1][0]:
        return pts[-1][1] * n / pts[-1][0], n > pts[-1][0]
    if n <= pts[0][0]:
        return pts[0][1], False
    for (n0, t0), (n1, t1) in zip(pts, pts[1:]):
        if n0 <= n <= n1:
            a = math.log(n / n0) / math.log(n1 / n0)
            return math.exp(math.log(t0) + a * math.log(t1 / t0)), False


def point(pts, E, k, H, P, T, latency_s):
    rows = T * k * (P - 1) / P  # sent (= received on average) per rank
    miss = math.comb(E - E // P, k) / math.comb(E, k)  # no expert on a given rank
    dedup = (k * (P - 1) / P) / ((P - 1) * (1 - miss))
    d_bytes, c_bytes = rows * (2 * H + 4), rows * 2 * H
    t1, extra = single_gpu_ms(pts, T * P)
    p = {"ranks": P, "tokens": T, "dispatch_MB": d_bytes / 1e6, "combine_MB": c_bytes / 1e6,
         "dedup_factor": dedup, "dispatch_MB_once_per_rank": d_bytes / dedup / 1e6, "compute_ms": t1 / P, "compute_extrapolated": extra}
    for link, bw in LINKS.items():
        d = d_bytes / bw + COLLECTIVES_DISPATCH * latency_s
        c = c_bytes / bw + COLLECTIVES_COMBINE * latency_s
        comm, comp = (d + c) * 1e3, p["compute_ms"]
        p[link] = {"dispatch_ms": d * 1e3, "combine_ms": c * 1e3,
                   "effective_GBps": (d_bytes + c_bytes) / (d + c) / 1e9,
                   "total_ms": comm + comp, "comm_fraction": comm / (comm + comp),
                   "overlap_bound": min(comm, comp) / (comm + comp)}
    return p


def model(records, latency_s):
    out = []
    for name, (label, E, k, H, F) in MODELS.items():
        routing, pts = measured(records, name)
        m = {"model": label, "E": E, "top_k": k, "H": H, "F": F, "routing": routing,
             "measured_tokens": [n for n, _ in pts], "points": []}
        for P in RANKS:
            if P > E:
                m["points"].append({"ranks": P, "tokens": "any", "na": "fewer experts than ranks"})
                continue
            m["points"] += [point(pts, E, k, H, P, T, latency_s) for T in TOKENS]
        out.append(m)
    return out


def fmt(x):
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def table(models):
    head = ["model", "EP", "T/rank", "disp / comb MB", "dedup x", "compute ms"]
    for link in LINKS:
        head += [f"{link} disp / comb us", "GB/s", "total ms", "comm %", "overlap <= %"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for m in models:
        for p in m["points"]:
            cells = [m["model"], str(p["ranks"]), str(p["tokens"])]
            if "na" in p:
                cells += [f"n/a: {p['na']}"] + [""] * (len(head) - 4)
            else:
                star = "*" if p["compute_extrapolated"] else ""
                cells += [f"{fmt(p['dispatch_MB'])} / {fmt(p['combine_MB'])}",
                          f"{p['dedup_factor']:.2f}", fmt(p["compute_ms"]) + star]
                for link in LINKS:
                    q = p[link]
                    cells += [f"{fmt(1e3 * q['dispatch_ms'])} / {fmt(1e3 * q['combine_ms'])}",
                              fmt(q["effective_GBps"]), fmt(q["total_ms"]),
                              f"{100 * q['comm_fraction']:.0f}",
                              f"{100 * q['overlap_bound']:.0f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="?", default=os.path.join(HERE, "h200.json"))
    ap.add_argument("--latency-us", type=float, default=15.0,
                    help="fixed cost of one collective (default 15)")
    ap.add_argument("--json", action="store_true", help="print the points as JSON instead")
    args = ap.parse_args()
    with open(args.records) as f:
        models = model(json.load(f), args.latency_us * 1e-6)
    if args.json:
        print(json.dumps({"latency_us": args.latency_us, "links_Bps": LINKS,
                          "models": models}, indent=1))
        return
    print(table(models))
    for m in models:
        print(f"\n{m['model']}: compute from our {m['routing']} records at "
              f"{', '.join(map(str, m['measured_tokens']))} tokens.", end="")
    print(f"\nL = {args.latency_us:g} us per collective; * = extrapolated past the "
          "largest measured token count.")


if __name__ == "__main__":
    main()
