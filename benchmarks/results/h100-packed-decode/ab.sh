#!/bin/bash
# A/B of replay binaries: VARIANTS (dirs under .device holding bin/kokkos-moe-replay),
# POINTS "trace:tokens:dtype ...", ROUNDS; alternating variant order per round.
# Output: $OUT/ab.txt lines "variant trace T dtype graph_ms gate_up down dispatch err rc"
here=$(cd "$(dirname "$0")" && pwd)
cublas=$( (ldconfig -p | awk '/libcublas\.so\.13/ {print $NF}'; ls /usr/local/cuda*/lib*/libcublas.so.13 /usr/local/cuda*/targets/*/lib/libcublas.so.13 2>/dev/null) | head -n 1)
export LD_LIBRARY_PATH="$here/lib:${cublas:+$(dirname "$cublas"):}${LD_LIBRARY_PATH:-}"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
ROUNDS=${ROUNDS:-3}
DEADLINE=${DEADLINE:-0}
start=$(date +%s)
summ() { python3 - "$1" <<'PY'
import json,sys
try:
  r=json.load(open(sys.argv[1]))
except Exception as e:
  print("nojson"); sys.exit()
for l in r["layers"]:
  s=l["stages"]; g=s.get("graph",s["total"])
  print(f"{g['median_ms']:.4f} {s['gate_up']['median_ms']:.4f} {s['down_combine']['median_ms']:.4f} {s['dispatch']['median_ms']:.4f} {l.get('check',{}).get('max_rel_err',-1):.2e}")
  break
PY
}
for r in $(seq 1 $ROUNDS); do
  vs=$VARIANTS; [ $((r % 2)) = 0 ] && vs=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
  for p in $POINTS; do
    IFS=: read tr t dt <<<"$p"
    trace=$here/traces/$tr.h5
    layer=$("$here/A/bin/kokkos-moe-trace" info "$trace" | awk '/^ *layer +tokens/ {getline; print $1; exit}')
    for v in $vs; do
      if [ "$DEADLINE" -gt 0 ] && [ $(( $(date +%s) - start )) -gt "$DEADLINE" ]; then echo "deadline"; exit 0; fi
      j=$OUT/$v-$tr-$t-$dt-r$r.json
      chk=--check; { [ -n "${NOCHECK:-}" ] || [ "$r" -gt 1 ]; } && chk=
      "$here/$v/bin/kokkos-moe-replay" "$trace" --layers "$layer" --max-tokens "$t" --tokens "$t" --dtype "$dt" $chk --json "$j" ${REPLAY_ARGS:-} > "$OUT/$v-$tr-$t-$dt-r$r.log" 2>&1
      rc=$?
      echo "$v $tr $t $dt r$r $(summ "$j") rc=$rc" | tee -a "$OUT/ab.txt"
    done
  done
done
