#!/usr/bin/env bash
# The CUDA tests under compute-sanitizer on a GPU machine, from a bundle made
# by scripts/gpu-bundle.sh: memcheck on every Cuda test, racecheck on the
# expert-kernel tests, the launch/fence and graph tests and the bf16 layer
# cases (every tile shape). Logs to OUT (default ./gpu-out).
#
#   scripts/gpu-sanitize.sh BUNDLE [OUT]
set -uo pipefail
bundle=$(cd "$1" && pwd)
out=${2:-${OUT:-./gpu-out}}
mkdir -p "$out"
. "$(dirname "$0")/gpu-env.sh"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
status=0
"$sanitizer" --tool memcheck --error-exitcode 1 "$bundle/bin/KokkosMoE_tests" \
  --gtest_filter='*cuda*' >"$out/memcheck.log" 2>&1 || status=1
"$sanitizer" --tool racecheck --error-exitcode 1 "$bundle/bin/KokkosMoE_tests" \
  --gtest_filter='ExpertMLP_cuda*:Layer_cuda*Fences*:Layer_cuda*Graph*:Layer_cuda/2.ExternalRouting*' \
  >"$out/racecheck.log" 2>&1 || status=1
for f in memcheck racecheck; do
  echo "== $f: $(grep -E '^\[  PASSED|^\[  FAILED' "$out/$f.log" | tr '\n' ' ')$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$f.log")"
done
exit $status
