#!/usr/bin/env python3
"""Per point and stage, the fastest run of each build in an A/B log and its
speed-up over the first build named: summary.py LOG BASE OTHER..."""
import collections
import re
import sys

log, builds = sys.argv[1], sys.argv[2:]
runs = collections.defaultdict(list)
point = None
for line in open(log):
    m = re.match(r"== (\S+) (\d) (\S+) (\d+)", line)
    if m:
        point = (m.group(3), int(m.group(4)), m.group(1))
        continue
    f = line.split()
    if f and f[0] in ("graph", "gate_up", "down_combine"):
        runs[point + (f[0],)].append(float(f[1]))
for trace, tokens in sorted({(k[0], k[1]) for k in runs}):
    cells = []
    for stage in ("graph", "gate_up", "down_combine"):
        best = {b: min(runs[(trace, tokens, b, stage)] or [float("nan")]) for b in builds}
        base = best[builds[0]]
        cells.append(f"{stage} {base:.3f} ms" + "".join(
            f", {b} {best[b]:.3f} ({base / best[b]:.3f}x)" for b in builds[1:]))
    print(f"{trace} {tokens}: " + "; ".join(cells))
