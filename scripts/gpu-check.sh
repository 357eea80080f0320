#!/usr/bin/env bash
# Runs the CUDA build's checks on a GPU machine from a bundle made by
# scripts/gpu-bundle.sh (bin/, lib/, traces/ in one folder), writing logs and
# JSON reports to OUT (default ./gpu-out). Used for docs/gpu-runs.md.
#
#   scripts/gpu-check.sh BUNDLE [OUT]
set -uo pipefail
bundle=$(cd "$1" && pwd)
out=${2:-${OUT:-./gpu-out}}
mkdir -p "$out"
. "$(dirname "$0")/gpu-env.sh"
bin=$bundle/bin
status=0
run() {  # name, command...: log to OUT/name.log, remember failures
  local name=$1
  shift
  echo "== $name: $*" | tee -a "$out/summary.log"
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -n 4 "$out/$name.log" | tee -a "$out/summary.log"
  echo "-> exit $rc" | tee -a "$out/summary.log"
  [ $rc -eq 0 ] || status=1
}
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
} | tee "$out/summary.log"
run unit-tests "$bin/KokkosMoE_tests"
run trace-tests "$bin/kokkosmoe_trace_tests"
run replay-default-bf16 "$bin/kokkos-moe-replay" "$bundle/traces/mixtral-8x7b-zipf0.3.h5" --check \
  --json "$out/replay-default-bf16.json"
for dt in fp16 fp32; do
  run replay-default-$dt "$bin/kokkos-moe-replay" "$bundle/traces/mixtral-8x7b-zipf0.3.h5" --check \
    --dtype $dt --repeat 5 --warmup 1
done
run replay-deepseek-prefill "$bin/kokkos-moe-replay" "$bundle/traces/deepseek-v3-prefill4096-sampled.h5" \
  --max-tokens 512 --layers 3,4 --check --repeat 5 --warmup 1
run replay-deepseek-decode "$bin/kokkos-moe-replay" "$bundle/traces/deepseek-v3-decode-sampled.h5" \
  --max-tokens 512 --layers 3,4 --check --repeat 5 --warmup 1
run replay-gpt-oss "$bin/kokkos-moe-replay" "$bundle/traces/gpt-oss-20b-decode.h5" \
  --max-tokens 512 --layers 0,1 --check --repeat 5 --warmup 1
exit $status
