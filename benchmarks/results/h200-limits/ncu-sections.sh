# SPDX-License-Identifier: BSD-3-Clause
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
ncu --query-metrics 2>/dev/null | grep -iE "gmma|pipe_tensor|xbar2l1tex|shared_op|pipe_shared|mio" | head -30
for spec in "mixtral-uniform-4096 4096" "qwen2-zipf0.5-4096 4096"; do set -- $spec
  echo "== GateUp $1 T=$2"
  timeout 120 ncu --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SpeedOfLight --kernel-name-base demangled -k regex:GateUp --launch-skip 2 --launch-count 1 bin/kokkos-moe-replay traces/$1.h5 --layers 0 --max-tokens $2 --tokens $2 --repeat 2 --warmup 1 2>&1 | grep -vE "^==PROF==|^\s*$|kokkos|Kokkos" | tail -60
done
