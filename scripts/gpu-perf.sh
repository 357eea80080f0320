#!/usr/bin/env bash
# Speed sweep of kokkos-moe-replay on a GPU machine, from a bundle made by
# scripts/gpu-bundle.sh: for each trace in the bundle whose name matches
# PATTERN, each batch size, one replay with --check and JSON. Prints one
# line per run and leaves the JSON under OUT. Where nvidia-smi runs, each
# replay's SM clock, power and power-cap throttling are sampled every 50 ms
# into NAME-tT.power.csv, summed up in NAME-tT.board.json (run long
# enough, the H200 holds the large kernels at its 700 W cap, which sets
# their clock: benchmarks/results/README.md; merge.py keeps the summary in
# the records).
#
#   scripts/gpu-perf.sh BUNDLE OUT PATTERN "TOKENS..." [replay options...]
set -uo pipefail
bundle=$(cd "$1" && pwd) out=$2 pattern=$3 tokens=$4
shift 4
mkdir -p "$out"
. "$(dirname "$0")/gpu-env.sh"
for trace in "$bundle"/traces/*$pattern*.h5; do
  name=$(basename "$trace" .h5)
  # The first MoE layer of the trace, as the peer benchmark takes.
  layer=$("$bundle/bin/kokkos-moe-trace" info "$trace" | awk '/^ *layer +tokens/ {getline; print $1; exit}')
  for t in $tokens; do
    json="$out/$name-t$t.json" power="$out/$name-t$t.power.csv"
    sampler=
    if command -v nvidia-smi >/dev/null 2>&1; then
      nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_event_reasons.sw_power_cap \
        --format=csv,noheader,nounits -lms 50 >"$power" 2>/dev/null &
      sampler=$!
    fi
    "$bundle/bin/kokkos-moe-replay" "$trace" --layers "$layer" --max-tokens "$t" \
      --tokens "$t" --check --json "$json" "$@" >"$out/$name-t$t.log" 2>&1
    rc=$?
    [ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
    python3 - "$json" "$rc" "$name" "$t" "$power" <<'PY'
import json, sys
path, rc, name, t, power = sys.argv[1:]
# Median SM clock of the busy samples (the board's reading of its power,
# smoothed and late, over 100 W) and how many of them the power cap
# throttled. (The reading itself is not kept: during a short point it
# stays far below the cap while the cap already throttles.)
busy = []
try:
    for line in open(power):
        f = [x.strip() for x in line.split(",")]
        if len(f) == 3 and float(f[1]) > 100:
            busy.append((float(f[0]), float(f[1]), f[2] == "Active"))
except (OSError, ValueError):
    pass
def median(v):
    v = sorted(v)
    return v[len(v) // 2]
board = ""
if busy:
    summary = {"sm_clock_mhz": median([b[0] for b in busy]),
               "power_capped_samples": sum(b[2] for b in busy), "busy_samples": len(busy)}
    json.dump(summary, open(power.replace(".power.csv", ".board.json"), "w"))
    board = (f" | SM {summary['sm_clock_mhz']:.0f} MHz, power-capped "
             f"{summary['power_capped_samples']}/{len(busy)} samples")
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{name:32s} T={t:>5s} rc={rc} (no JSON: {e})"); sys.exit()
for l in r["layers"]:
    s = l["stages"]
    g = s.get('graph', s['total'])
    print(f"{name:32s} T={t:>5s} layer {l['layer']:>2d} graph {g['median_ms']:9.4f} ms total {s['total']['median_ms']:9.4f} ms "
          f"{s['total']['tflop_per_s']:7.2f} TFLOP/s {s['total']['gb_per_s']:8.1f} GB/s | "
          f"gate_up {s['gate_up']['median_ms']:8.4f} down {s['down_combine']['median_ms']:8.4f} "
          f"dispatch {s['dispatch']['median_ms']:7.4f} | err {l['check']['max_rel_err']:.2e} rc={rc}{board}")
PY
  done
done
