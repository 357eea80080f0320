#!/usr/bin/env bash
# Speed sweep of kokkos-moe-replay on a GPU machine, from a bundle made by
# scripts/gpu-bundle.sh: for each trace in the bundle whose name matches
# PATTERN, each batch size, one replay with --check and JSON. Prints one
# line per run and leaves the JSON under OUT.
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
    json="$out/$name-t$t.json"
    "$bundle/bin/kokkos-moe-replay" "$trace" --layers "$layer" --max-tokens "$t" \
      --tokens "$t" --check --json "$json" "$@" >"$out/$name-t$t.log" 2>&1
    rc=$?
    python3 - "$json" "$rc" "$name" "$t" <<'PY'
import json, sys
path, rc, name, t = sys.argv[1:]
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
          f"dispatch {s['dispatch']['median_ms']:7.4f} | err {l['check']['max_rel_err']:.2e} rc={rc}")
PY
  done
done
