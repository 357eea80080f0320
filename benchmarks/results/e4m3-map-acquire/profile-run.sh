#!/bin/bash
# ncu sections of the decode expert kernels (fp8 and bf16), HEAD's build.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$(dirname "$0")"
rm -rf B; tar -xJf pack.tar.xz
B=$PWD/B; T=$root/.device/ab/traces
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$OUT/prof; mkdir -p $R
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } | tee $R/gpu.txt
synth() { [ -f $T/$1.h5 ] || $B/bin/kokkos-moe-trace synth "${@:2}" --tokens 4096 --layers 1 --seed 3 --out $T/$1.h5 >/dev/null; }
synth mixtral-uniform-4096 --preset mixtral-8x7b --dist uniform
synth deepseek-zipf0.5-4096 --preset deepseek-v3 --dist zipf --zipf-s 0.5
t0=$SECONDS
for p in ${POINTS:-fp8:mixtral-uniform-4096:8 bf16:mixtral-uniform-4096:8 fp8:deepseek-zipf0.5-4096:8}; do
  d=${p%%:*}; q=${p#*:}; n=${q%%:*}; t=${q#*:}
  timeout 60 $B/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype $d --repeat 20 --warmup 3 --json $R/$d-$n-$t.json > $R/$d-$n-$t.log 2>&1
  python3 -c "import json,sys;l=json.load(open('$R/$d-$n-$t.json'))['layers'][0]['stages'];print('$d $n $t',{k:round(v['median_ms'],4) for k,v in l.items()})"
  timeout 200 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:'GateUp|Down' --launch-count 2 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats \
    $B/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype $d --repeat 1 --warmup 0 > $R/ncu-$d-$n-$t.txt 2>&1
  echo "ncu $d $n $t rc=$? $((SECONDS-t0)) s"
  grep -E "^  [A-Za-z].*\(|Duration|DRAM Throughput|Memory Throughput|L2 Hit|L1/TEX Hit|Achieved Occupancy|Registers Per|Shared Memory Config|Block Limit|Stall|Warp Cycles Per Issued|Issued Warp|No Eligible|Compute \(SM\)|Grid Size|Block Size|Waves" $R/ncu-$d-$n-$t.txt | sed -E 's/void Impl::cuda_parallel_launch_local_memory<Impl::ParallelFor<KokkosMoE::Impl::([A-Za-z0-9]+)<.*\) \(([0-9]+), 1, 1\)x\(([0-9]+).*/== \1 grid \2 x \3/' | head -80
done 2>&1 | tee $OUT/prof.log
(cd $OUT && tar -cJf prof.tar.xz prof && rm -rf prof)
