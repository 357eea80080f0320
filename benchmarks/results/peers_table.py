#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Our H200 records against the fastest public MoE expert kernels.

  peers_table.py [--records h200.json] [--peers h200-peers.json] [--summary]

h200-peers.json: vLLM's fused_moe Triton kernels and DeepGEMM measured on one
H200 (2026-12-04), one point per model, dtype and batch size, with their
fraction of the floor in our units and a target of 1.03x it. Prints one row
a point: the best peer, its fraction, ours (the record on the peers'
routing: the traces for DeepSeek-V3 and GPT-OSS-20B, uniform for
Mixtral-8x7B and Qwen2-57B), ours over the peer's fraction, and whether the
point reaches its target. --summary prints the counts only.
"""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# The record that stands for each model's peer routing.
ROUTING = {
    "deepseek-v3": "trace:deepseek-v3-prefill4096-sampled",
    "gpt-oss-20b": "trace:gpt-oss-20b-decode",
    "mixtral-8x7b": "uniform",
    "qwen2-57b": "uniform",
}

PEER_NAMES = {
    "vLLM fused_moe Triton, vLLM's own config choice": "vLLM",
    "vLLM fused_moe Triton with a tuned H200 table of another shape": "vLLM (tuned table)",
    "DeepGEMM grouped masked (GEMMs only)": "DeepGEMM masked",
    "DeepGEMM grouped contiguous (GEMMs only)": "DeepGEMM contiguous",
}


def rows(records, peers):
    ours = {(r["model"], r.get("dtype", "bf16"), r["tokens"], r["routing"]): r for r in records}
    for p in peers["points"]:
        r = ours.get((p["model"], p["dtype"], p["tokens"], ROUTING[p["model"]]))
        yield p, r


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--records", default=os.path.join(HERE, "h200.json"))
    a.add_argument("--peers", default=os.path.join(HERE, "h200-peers.json"))
    a.add_argument("--summary", action="store_true")
    args = a.parse_args()
    with open(args.records) as f:
        records = json.load(f)
    with open(args.peers) as f:
        peers = json.load(f)
    ahead = reached = missing = total = 0
    lines = [
        "| model | dtype | T | best peer | peer | target | ours | ours / peer | target reached |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for p, r in rows(records, peers):
        total += 1
        if r is None:
            missing += 1
            lines.append(f"| {p['model']} | {p['dtype']} | {p['tokens']} | "
                         f"{PEER_NAMES.get(p['peer'], p['peer'])} | "
                         f"{p['peer_fraction_of_floor']:.2f} | {p['target_fraction_of_floor']:.2f} "
                         "| no record | | |")
            continue
        ours = r["fraction_of_floor"]
        ratio = ours / p["peer_fraction_of_floor"]
        ahead += ratio >= 1
        reached += ours >= p["target_fraction_of_floor"]
        lines.append(f"| {p['model']} | {p['dtype']} | {p['tokens']} | "
                     f"{PEER_NAMES.get(p['peer'], p['peer'])} | "
                     f"{p['peer_fraction_of_floor']:.2f} | {p['target_fraction_of_floor']:.2f} | "
                     f"{ours:.2f} | {ratio:.2f} | "
                     f"{'yes' if ours >= p['target_fraction_of_floor'] else 'no'} |")
    summary = (f"{total} points: ours at or above the best peer's fraction at {ahead}, "
               f"at the target (1.03x) at {reached}" +
               (f", no record at {missing}" if missing else ""))
    if not args.summary:
        print("\n".join(lines))
        print()
    print(summary)


if __name__ == "__main__":
    main()
