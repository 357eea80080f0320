#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The CUDA build on a GPU machine: bundle it here, then check, time or
# sanitize it there (docs/performance.md: how the records in
# benchmarks/results/ were made with it).
#
#   scripts/gpu.sh bundle BUILD_DIR BUNDLE [TRACE.h5...]
#   scripts/gpu.sh check BUNDLE [OUT]
#   scripts/gpu.sh perf BUNDLE OUT PATTERN "TOKENS..." [replay options...]
#   scripts/gpu.sh sanitize BUNDLE [OUT]
#   scripts/gpu.sh ep BUNDLE [OUT]
#   scripts/gpu.sh env BUNDLE COMMAND [ARGS...]
#   scripts/gpu.sh --help
#
# bundle    (here) collects what the CUDA build needs on a GPU machine without
#           HDF5: the test and driver binaries (stripped), the non-system
#           shared libraries they load (HDF5 and its dependencies; not glibc,
#           libstdc++ or CUDA) and the traces to replay (inputs/*.h5 and the
#           TRACE.h5 given), in BUNDLE/bin, lib and traces; names the
#           recorded traces that check replays and were not given.
# check     the unit tests, the trace tests and kokkos-moe-replay --check on
#           the bundle's traces (bf16, fp16, fp32; DeepSeek-V3 and GPT-OSS at
#           512 tokens), each logged to OUT/NAME.log, with OUT/summary.log.
#           Exit 1 when any of them failed.
# perf      speed sweep: for each bundled trace whose name contains PATTERN
#           and each batch size in TOKENS, one replay of the trace's first
#           layer with --check and --json OUT/NAME-tT.json, summed up in one
#           line (scripts/gpu/perf_summary.py). Where nvidia-smi runs, the SM
#           clock, power and power-cap throttling are sampled every 50 ms into
#           OUT/NAME-tT.power.csv and summed up in OUT/NAME-tT.board.json (run
#           long enough, the H200 holds the large kernels at its 700 W cap,
#           which sets their clock: benchmarks/results/README.md;
#           benchmarks/results/merge.py keeps the summary in the records).
# sanitize  the CUDA tests under compute-sanitizer: memcheck on every Cuda
#           test, racecheck on the expert-kernel tests, the launch/fence and
#           graph tests and the bf16 layer cases (every tile shape); logs
#           OUT/memcheck.log and OUT/racecheck.log. Exit 1 on a failed
#           test or a memcheck or racecheck error (racecheck's warnings,
#           which Kokkos 3.4's reductions draw, are listed, not failures).
# ep        expert parallelism on 2 ranks (the machine's Open MPI; builds
#           with KokkosMoE_ENABLE_MPI, and NCCL for its half): the EP tests
#           and kokkos-moe-replay --ep --check over MPI and over NCCL, on the
#           bundled Mixtral trace (bf16; fp32 batch-invariant, bitwise) and
#           DeepSeek-V3 prefill trace (4096 tokens), logged as check does.
#           Ranks that share a GPU reach NCCL as hosts of their own
#           (ep_mpirun below).
# env       runs COMMAND with the bundle's libraries and the CUDA install's
#           cuBLAS on the loader path, as the commands above do (for a run of
#           a bundled binary by hand).
#
# OUT defaults to $OUT, else ./gpu-out. On the GPU machine the repository's
# scripts/ must be there too (the bundle holds only binaries and data).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

usage() { sed -n '2,/^[^#]/{/SPDX-License-Identifier/d;/^#/{s/^# \{0,1\}//;p}}' "$0"; }
die_usage() { echo "scripts/gpu.sh: $*" >&2; echo "run scripts/gpu.sh --help" >&2; exit 2; }

# The bundle's libraries (HDF5 and its dependencies) and the CUDA install's
# cuBLAS on the loader path.
bundle_env() {  # bundle
  local cublas
  cublas=$( (ldconfig -p | awk '/libcublas\.so\.13/ {print $NF}'
    ls /usr/local/cuda*/lib*/libcublas.so.13 \
      /usr/local/cuda*/targets/*/lib/libcublas.so.13 2>/dev/null) | head -n 1)
  export LD_LIBRARY_PATH="$1/lib:${cublas:+$(dirname "$cublas"):}${LD_LIBRARY_PATH:-}"
}

# The absolute path of an existing bundle.
bundle_dir() {
  [ -d "${1:-}" ] || die_usage "no bundle directory '${1:-}'"
  (cd "$1" && pwd)
}

# The recorded traces cmd_check replays besides inputs/ (given to bundle).
check_traces="deepseek-v3-prefill4096-sampled.h5 deepseek-v3-decode-sampled.h5 gpt-oss-20b-decode.h5"

cmd_bundle() {  # BUILD_DIR BUNDLE [TRACE.h5...]
  set -e
  [ $# -ge 2 ] || die_usage "bundle: BUILD_DIR BUNDLE [TRACE.h5...]"
  local build=$1 bundle=$2
  shift 2
  rm -rf "$bundle" && mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/traces"
  cp "$build/tests/KokkosMoE_tests" "$build/tests/trace/kokkosmoe_trace_tests" \
    "$build/drivers/kokkos-moe-replay" "$build/drivers/kokkos-moe-trace" "$bundle/bin/"
  if [ -f "$build/tests/ep/KokkosMoE_ep_tests" ]; then
    cp "$build/tests/ep/KokkosMoE_ep_tests" "$bundle/bin/"
  fi
  strip "$bundle"/bin/*
  # Not MPI's runtime (it must match the machine's mpirun) nor NCCL: the
  # machine's own.
  for b in "$bundle"/bin/*; do ldd "$b" | awk '/=> \// {print $3}'; done | sort -u |
    grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt)\.so|cuda' |
    grep -v -E '/lib(mpi|mpi_cxx|open-rte|open-pal|pmix|hwloc|event|nccl)[-_.]' |
    xargs -r -I{} cp -L {} "$bundle/lib/"
  cp "$root"/inputs/*.h5 "$@" "$bundle/traces/"
  # check replays these recorded traces too: say which the bundle lacks now,
  # not as a failed replay on the GPU machine.
  local t
  for t in $check_traces; do
    [ -f "$bundle/traces/$t" ] ||
      echo "scripts/gpu.sh bundle: no $t given: 'check' will fail its replay" >&2
  done
  du -sh "$bundle"
}

# check NAME COMMAND...: runs it, logged to $out/NAME.log, its tail and exit
# code to $out/summary.log; a failure sets status=1 (the caller's locals).
check() {
  local name=$1 rc
  shift
  echo "== $name: $*" | tee -a "$out/summary.log"
  "$@" >"$out/$name.log" 2>&1
  rc=$?
  tail -n 4 "$out/$name.log" | tee -a "$out/summary.log"
  echo "-> exit $rc" | tee -a "$out/summary.log"
  [ $rc -eq 0 ] || status=1
}

# open_run BUNDLE [OUT]: sets the caller's bundle, out and bin, makes OUT,
# puts the bundle's libraries on the loader path and starts
# OUT/summary.log with the date and the GPU.
open_run() {
  bundle=$(bundle_dir "$1")
  out=${2:-${OUT:-./gpu-out}}
  mkdir -p "$out"
  bundle_env "$bundle"
  bin=$bundle/bin
  {
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  } | tee "$out/summary.log"
}

cmd_check() {  # BUNDLE [OUT]
  [ $# -ge 1 ] || die_usage "check: BUNDLE [OUT]"
  local bundle out bin status=0 dt
  open_run "$@"
  check unit-tests "$bin/KokkosMoE_tests"
  check trace-tests "$bin/kokkosmoe_trace_tests"
  check replay-default-bf16 "$bin/kokkos-moe-replay" "$bundle/traces/mixtral-8x7b-zipf0.3.h5" \
    --check --json "$out/replay-default-bf16.json"
  for dt in fp16 fp32; do
    check replay-default-$dt "$bin/kokkos-moe-replay" "$bundle/traces/mixtral-8x7b-zipf0.3.h5" \
      --check --dtype $dt --repeat 5 --warmup 1
  done
  check replay-deepseek-prefill "$bin/kokkos-moe-replay" \
    "$bundle/traces/deepseek-v3-prefill4096-sampled.h5" \
    --max-tokens 512 --layers 3,4 --check --repeat 5 --warmup 1
  check replay-deepseek-decode "$bin/kokkos-moe-replay" \
    "$bundle/traces/deepseek-v3-decode-sampled.h5" \
    --max-tokens 512 --layers 3,4 --check --repeat 5 --warmup 1
  check replay-gpt-oss "$bin/kokkos-moe-replay" "$bundle/traces/gpt-oss-20b-decode.h5" \
    --max-tokens 512 --layers 0,1 --check --repeat 5 --warmup 1
  return $status
}

cmd_perf() {  # BUNDLE OUT PATTERN "TOKENS..." [replay options...]
  [ $# -ge 4 ] || die_usage "perf: BUNDLE OUT PATTERN \"TOKENS...\" [replay options...]"
  local bundle out=$2 pattern=$3 tokens=$4 trace name layer t json power sampler rc
  bundle=$(bundle_dir "$1")
  shift 4
  mkdir -p "$out"
  bundle_env "$bundle"
  for trace in "$bundle"/traces/*"$pattern"*.h5; do
    name=$(basename "$trace" .h5)
    # The first MoE layer of the trace, as the peer benchmark takes.
    layer=$("$bundle/bin/kokkos-moe-trace" info "$trace" |
      awk '/^ *layer +tokens/ {getline; print $1; exit}')
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
      python3 "$here/gpu/perf_summary.py" "$json" "$rc" "$name" "$t" "$power"
    done
  done
}

# racecheck_errors LOG: 1 unless LOG's racecheck summary reports 0 errors;
# prints the racecheck warnings whose accesses lie outside Kokkos' reductions.
racecheck_errors() {
  local errors
  errors=$(grep -oE 'RACECHECK SUMMARY: .*\(([0-9]+) errors' "$1" | grep -oE '[0-9]+ errors' | cut -d' ' -f1)
  grep -E '^=+ +(Warning|Error): Race|^=+ +and (Read|Write) access' "$1" |
    grep -v 'Kokkos::Impl::ParallelReduce' | sed 's/^/racecheck, not in a Kokkos reduction: /' | head -n 20
  [ "${errors:-1}" = 0 ]
}

cmd_sanitize() {  # BUNDLE [OUT]
  [ $# -ge 1 ] || die_usage "sanitize: BUNDLE [OUT]"
  local bundle out sanitizer status=0 f
  bundle=$(bundle_dir "$1")
  out=${2:-${OUT:-./gpu-out}}
  mkdir -p "$out"
  bundle_env "$bundle"
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  "$sanitizer" --tool memcheck --error-exitcode 1 "$bundle/bin/KokkosMoE_tests" \
    --gtest_filter='*cuda*' >"$out/memcheck.log" 2>&1 || status=1
  # racecheck's exit code counts its warnings too, and Kokkos 3.4's
  # parallel_reduce (the input checks' reductions) draws hundreds of them:
  # the tests' exit code and racecheck's count of errors decide instead, and
  # the warnings outside Kokkos' own reductions are listed.
  "$sanitizer" --tool racecheck "$bundle/bin/KokkosMoE_tests" \
    --gtest_filter='ExpertMLP_cuda*:Layer_cuda*Fences*:Layer_cuda*Graph*:Layer_cuda/2.ExternalRouting*' \
    >"$out/racecheck.log" 2>&1 || status=1
  racecheck_errors "$out/racecheck.log" || status=1
  for f in memcheck racecheck; do
    echo "== $f: $(grep -E '^\[  PASSED|^\[  FAILED' "$out/$f.log" | tr '\n' ' ')$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$f.log")"
  done
  return $status
}

# mpirun -np RANKS COMMAND... with the machine's Open MPI. Where the
# machine has fewer GPUs than ranks (ranks share one), NCCL would refuse the
# ranks of one GPU ("Duplicate GPU detected"): each rank then gets an
# NCCL_HOSTID of its own, so that NCCL takes them for hosts of their own and
# joins them over its socket transport on the loopback interface. A test
# set-up, not a speed: on a machine with a GPU a rank NCCL uses NVLink.
ep_mpirun() {  # RANKS COMMAND...
  local ranks=$1 gpus
  shift
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "$gpus" -lt "$ranks" ]; then
    mpirun --allow-run-as-root --oversubscribe -np "$ranks" -x NCCL_SOCKET_IFNAME=lo \
      bash -c 'NCCL_HOSTID=kokkos-moe-rank-$OMPI_COMM_WORLD_RANK exec "$@"' ep-rank "$@"
  else
    mpirun --allow-run-as-root -np "$ranks" "$@"
  fi
}

cmd_ep() {  # BUNDLE [OUT]
  [ $# -ge 1 ] || die_usage "ep: BUNDLE [OUT]"
  local bundle out bin status=0 transport trace
  open_run "$@"
  mpirun --version | head -n 1 | tee -a "$out/summary.log"
  export NCCL_DEBUG=${NCCL_DEBUG:-VERSION}
  for transport in mpi nccl; do
    export KOKKOSMOE_EP_TEST_TRANSPORT=$transport
    check "ep-tests-$transport" ep_mpirun 2 "$bin/KokkosMoE_ep_tests"
    trace=$bundle/traces/mixtral-8x7b-zipf0.3.h5
    check "replay-ep-$transport-bf16" ep_mpirun 2 "$bin/kokkos-moe-replay" "$trace" --ep \
      --ep-transport $transport --check --json "$out/replay-ep-$transport-bf16.json"
    check "replay-ep-$transport-fp32-bitwise" ep_mpirun 2 "$bin/kokkos-moe-replay" "$trace" \
      --ep --ep-transport $transport --dtype fp32 --batch-invariant --check --repeat 5 --warmup 1
    for trace in "$bundle"/traces/deepseek-v3-prefill*.h5; do
      [ -f "$trace" ] || continue
      check "replay-ep-$transport-deepseek" ep_mpirun 2 "$bin/kokkos-moe-replay" "$trace" --ep \
        --ep-transport $transport --layers 3 --max-tokens 4096 --tokens 4096 --check \
        --json "$out/replay-ep-$transport-deepseek.json"
    done
  done
  return $status
}

cmd_env() {  # BUNDLE COMMAND [ARGS...]
  [ $# -ge 2 ] || die_usage "env: BUNDLE COMMAND [ARGS...]"
  local bundle
  bundle=$(bundle_dir "$1")
  shift
  bundle_env "$bundle"
  exec "$@"
}

[ $# -ge 1 ] || { usage >&2; exit 2; }
command=$1
shift
case $command in
  -h | --help | help) usage ;;
  bundle | check | perf | sanitize | ep | env) "cmd_$command" "$@" ;;
  *) die_usage "unknown command '$command'" ;;
esac
