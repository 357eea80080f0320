#!/usr/bin/env python3
"""A round-by-round model of the large gate/up and down kernels' time.

The resident teams (one per multiprocessor) take the work items in order,
one round of `teams` items at a time. An item multiplies a whole 128-row
tile (padding rows included) at a rate of P per multiprocessor-share; a
round lasts as long as the longer of its multiplies and the bytes its items
bring from memory for the first time (a weight tile once per group of row
tiles, a tile of x or h once per row tile) at BW. Items, groups and their
order are those of ExpertTileKernel::work. P and BW are fitted to measured
stage times (least squares on a grid); the model then says how much of the
time is padding: the same rounds with each tile's multiplies scaled to its
filled rows.

  tile-model.py MEASURED.log [TRACE...]   (MEASURED: lines of cmpt.sh)

With the floors of benchmarks/results/h200.json it also prints the
fraction of the floor that the measured forward would reach without the
padding (measured graph time scaled by the model's padding-free share).
"""
import json, os
import re, sys
import h5py, numpy as np

BM, TEAMS, MAX_GROUP = 128, 132, 16
LOADS = 0.8  # a full tile's copies alone take 0.8 of its time (2.61 of 3.26 ms, Mixtral 4096)
SHAPES = {  # trace name prefix: (H, F, BN of gate/up, BN of down)
    'mixtral': (4096, 14336, 128, 256), 'qwen2': (3584, 2560, 128, 256),
    'deepseek': (7168, 2048, 128, 256)}


def items(counts, K, N, BN, operand_bytes, weight_rows, store_bytes, padded):
    """(bytes, flops) per item in the kernel's order. padded: True, every
    tile multiplies BM rows; False, its filled rows only; 'streamed': its
    filled rows, but no faster than the copies of its K steps, which bring
    the whole weight tile (weight_rows * BN rows) and its filled rows of the
    operand, at the rate that makes a full tile's copies LOADS of its time
    (the measured share, see the seventh session's diagnostic builds)."""
    out = []
    for n in counts:
        tiles = -(-int(n) // BM)
        if tiles == 0:
            continue
        groups = -(-tiles // MAX_GROUP)
        for g in range(groups):
            s, e = g * tiles // groups, (g + 1) * tiles // groups
            for c in range(-(-N // BN)):
                for t in range(s, e):
                    filled = min(BM, n - t * BM)
                    rows = BM if padded is True else filled
                    if padded == 'streamed':
                        wr = weight_rows * BN
                        rows = BM * max(filled / BM, LOADS * (wr + filled) / (wr + BM))
                    b = (weight_rows * BN * K * 2 if t == s else 0) + (operand_bytes(t) if c == 0 else 0)
                    b += store_bytes * min(BM, n - t * BM) * BN
                    out.append((b, 2.0 * rows * weight_rows * BN * K))
    return np.array(out)


def kernel_time(it, P, BW):
    """Rounds of TEAMS items: the longer of their bytes at BW and their
    multiplies at P (shared by the teams; a last, partial round lasts as
    long as its longest item)."""
    t = 0.0
    for i in range(0, len(it), TEAMS):
        r = it[i:i + TEAMS]
        flops = r[:, 1].sum() / P if len(r) == TEAMS else r[:, 1].max() / (P / TEAMS)
        t += max(r[:, 0].sum() / BW, flops)
    return t * 1e3


def points(counts, H, F, bn_gu, bn_d, padded):
    # gate/up stores h (2 bytes a value, BN values a row); down stores y
    # (float); the combine reads y and writes the output (one pass at BW).
    gu = items(counts, H, F, bn_gu, lambda t: BM * H * 2, 2, 2, padded)
    dn = items(counts, F, H, bn_d, lambda t: BM * F * 2, 1, 4, padded)
    return gu, dn


def main():
    measured = {}
    for line in open(sys.argv[1]):
        m = re.match(r'(\S+) T=(\d+) base: gate_up (\S+) down_combine (\S+) graph (\S+)', line)
        if m:
            measured.setdefault((m[1], int(m[2])), []).append(tuple(map(float, m.groups()[2:])))
    records = os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../benchmarks/results/h200.json')
    floors = {(r['model'], r['routing'], r['tokens']): r['floor_ms'] for r in json.load(open(records))}
    cases = []
    for path in sys.argv[2:]:
        name = path.split('/')[-1].rsplit('.', 1)[0]
        H, F, bn_gu, bn_d = SHAPES[name.split('-')[0]]
        ids = h5py.File(path)['layers']['0']['expert_ids'][:]
        E = int(ids.max()) + 1
        for T in (512, 2048, 4096):
            if (name, T) not in measured:
                continue
            c = np.bincount(ids[:T].ravel(), minlength=E)
            gu, dn = points(c, H, F, bn_gu, bn_d, True)
            gu0, dn0 = points(c, H, F, bn_gu, bn_d, False)
            gus, dns = points(c, H, F, bn_gu, bn_d, 'streamed')
            mg, md, mt = (np.median([v[i] for v in measured[name, T]]) for i in range(3))
            model, routing = name.split('-')[0], name.split('-')[1]
            model = {'mixtral': 'mixtral-8x7b', 'qwen2': 'qwen2-57b', 'deepseek': 'deepseek-v3'}[model]
            floor = floors[model, routing, T]
            combine = (c.sum() * H * 4 + T * H * 2) / 1.0  # bytes
            cases.append((name, T, gu, dn, gu0, dn0, mg, md, combine, mt, floor, gus, dns))
    best = None
    for P in np.arange(560e12, 760e12, 5e12):
        for BW in np.arange(3.0e12, 4.4e12, 0.05e12):
            err = sum((kernel_time(c[2], P, BW) / c[6] - 1) ** 2 for c in cases)
            if best is None or err < best[0]:
                best = (err, P, BW)
    _, P, BW = best
    print(f'gate/up fit: P = {P / 1e12:.0f} TFLOP/s per padded tile, BW = {BW / 1e12:.2f} TB/s')
    print('trace T | gate/up ms: measured, model (padding-free) | down+combine ms: measured, model '
          '(padding-free) | fraction of the floor: measured, padding-free, partial tiles streamed')
    for name, T, gu, dn, gu0, dn0, mg, md, comb, mt, floor, gus, dns in cases:
        cm = comb / BW * 1e3
        padded = kernel_time(gu, P, BW) + kernel_time(dn, P, BW) + cm
        free = kernel_time(gu0, P, BW) + kernel_time(dn0, P, BW) + cm
        streamed = kernel_time(gus, P, BW) + kernel_time(dns, P, BW) + cm
        print(f'{name} {T} | {mg:.3f} {kernel_time(gu, P, BW):.3f} ({kernel_time(gu0, P, BW):.3f}) | '
              f'{md:.3f} {kernel_time(dn, P, BW) + cm:.3f} ({kernel_time(dn0, P, BW) + cm:.3f}) | '
              f'{floor / mt:.2f} {floor / (mt * free / padded):.2f} {floor / (mt * streamed / padded):.2f}')


main()
