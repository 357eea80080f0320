# SPDX-License-Identifier: BSD-3-Clause
# The e4m3 layer at commit ce43d26 (padding rows left alone in medium and
# small tiles), on the H200 of 2026-12-03, in the bundle folder: the CUDA
# unit tests, replays with --check (NAME-tT.log) and, under ncu with the
# clocks left free, each kernel's time and DRAM bytes in one forward
# (kernels-*.txt) and the stall reasons of gate/up at DeepSeek-V3 4096
# tokens (gate-up-stalls-ds-4096.txt). Traces: benchmarks/results/README.md.
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
bin/KokkosMoE_tests > unit-tests.log 2>&1
for p in "deepseek-zipf0.5-4096 1 8 32 128 512 4096" "mixtral-uniform-4096 1 8 128 512 4096"; do set -- $p
  n=$1; shift
  for t in "$@"; do
    bin/kokkos-moe-replay traces/$n.h5 --tokens $t --max-tokens $t --dtype fp8 --repeat 10 --warmup 2 --check > $n-t$t.log 2>&1
  done
done
for p in "ds deepseek-zipf0.5-4096 32" "ds deepseek-zipf0.5-4096 512" "mx mixtral-uniform-4096 8"; do set -- $p
  ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    bin/kokkos-moe-replay traces/$2.h5 --tokens $3 --max-tokens $3 --dtype fp8 --repeat 1 --warmup 0 > kernels-$1-$3.txt 2>&1
done
ncu --kernel-name-base demangled --kernel-name regex:GateUpE4m3 --launch-count 1 --section WarpStateStats \
  --section ComputeWorkloadAnalysis --print-details all \
  --metrics lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum \
  bin/kokkos-moe-replay traces/deepseek-zipf0.5-4096.h5 --tokens 4096 --max-tokens 4096 --dtype fp8 --repeat 1 --warmup 0 > gate-up-stalls-ds-4096.txt 2>&1
