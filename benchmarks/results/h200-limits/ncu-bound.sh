# SPDX-License-Identifier: BSD-3-Clause
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed
for K in GateUp Down; do for spec in "mixtral-uniform-4096 4096" "mixtral-uniform-4096 512" "qwen2-zipf0.5-4096 4096" "deepseek-zipf0.5-4096 4096"; do set -- $spec
  echo "== $K $1 T=$2"
  timeout 120 ncu --metrics $M --kernel-name-base demangled -k regex:$K --launch-skip 2 --launch-count 1 bin/kokkos-moe-replay traces/$1.h5 --layers 0 --max-tokens $2 --tokens $2 --repeat 2 --warmup 1 2>&1 | grep -E "^\s+(gpu__|dram__|lts__|sm__|l1tex__|smsp__)|ERR|error"
done; done
