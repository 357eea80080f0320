# SPDX-License-Identifier: BSD-3-Clause
# The e4m3 and bf16 expert kernels under ncu at decode (DeepSeek-V3 32
# tokens, Mixtral-8x7B 8) and prefill (DeepSeek-V3 4096), synthetic traces
# of benchmarks/results/README.md; ncu-fp8.log.
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
for spec in "deepseek-zipf0.5-4096 32" "deepseek-zipf0.5-4096 4096" "mixtral-uniform-4096 8"; do set -- $spec
  for d in fp8 bf16; do
    echo "== $1 T=$2 $d"
    timeout 150 ncu --kernel-name-base demangled --kernel-name regex:'GateUp|DownE4m3|DownKernel' --launch-count 3 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      --section Occupancy --section LaunchStats --metrics dram__bytes_read.sum,sm__inst_executed_pipe_tensor_op_gmma.sum \
      bin/kokkos-moe-replay traces/$1.h5 --tokens $2 --max-tokens $2 --dtype $d --repeat 1 --warmup 0 2>&1
  done
done
