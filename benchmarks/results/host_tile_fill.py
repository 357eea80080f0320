#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Expected share of the host prefill kernels' token lanes that hold rows.

The panel fragment multiplies an expert's rows in blocks of MB x lanes
token rows (src/host/KokkosMoE_Host_Fragment.hpp): 16-row tiles from 8 rows
per expert on average, 32-row tiles from 32 (TileCrossovers), a block of
one 16-lane vector (16-row tiles, AVX-512) or two (32-row tiles; two
8-lane vectors with AVX2), so each expert's rows are padded to a multiple
of the block. Routing as the host benchmark draws it: each token picks k
distinct experts uniformly. Prints, per point and instruction set, the
rows over the lanes multiplied (mean over `--draws` routings)."""
import argparse
import random

POINTS = [("mixtral-8x7b-r16", 8, 2), ("qwen2-57b-r16", 64, 8), ("deepseek-v3-r16", 256, 8)]


def block_rows(avg_rows, lanes):
    tile = 32 if avg_rows >= 32 else 16
    mb = min(2, tile // lanes)
    return mb * lanes


def fill(experts, k, tokens, lanes, draws, rng):
    block = block_rows(tokens * k / experts, lanes)
    total = 0.0
    for _ in range(draws):
        rows = [0] * experts
        for _ in range(tokens):
            for e in rng.sample(range(experts), k):
                rows[e] += 1
        lanes_used = sum(-(-r // block) * block for r in rows)
        total += tokens * k / lanes_used
    return block, total / draws


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print("| point | tokens | rows per expert | AVX-512 block, fill | AVX2 block, fill |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, experts, k in POINTS:
        for tokens in (512, 2048):
            cells = []
            for lanes in (16, 8):
                block, f = fill(experts, k, tokens, lanes, args.draws, rng)
                cells.append(f"{block}, {f:.2f}")
            print(f"| {name} | {tokens} | {tokens * k / experts:g} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
