#!/bin/bash
# N1 (main) / N3 (wide, 216) / N4 (wide, 208) fp8 timings; ncu of gate/up at DeepSeek-V3 4096 for N1 and N4.
set -u
root=$(pwd)
B=/tmp/sweep-bundle
[ -d $B/sweep ] || { mkdir -p $B && tar xJf $root/.device/sweep-pack/sweep.tar.xz -C $B && cp $root/.device/sweep-pack/*.h5 $B/sweep/traces/ && chmod +x $B/sweep/bin/*; }
A=$B/sweep; N=/tmp/new; rm -rf $N; cp -r $A $N; tar xJf $root/.device/ab/new-bin.tar.xz -C $N/bin; chmod +x $N/bin/*
export LD_LIBRARY_PATH=$A/lib:/usr/local/cuda/lib64
R=$OUT/r; mkdir -p $R
cd $A
t0=$(date +%s)
for spec in "deepseek-zipf0.5-4096 4096" "mixtral-uniform-4096 4096" "deepseek-zipf0.5-4096 2048" "mixtral-uniform-4096 2048" "deepseek-v3-prefill4096-sampled 4096" "mixtral-uniform-4096 512"; do set -- $spec
  for round in 1 2 3; do for v in N1 N3 N4; do
    bin=$N/bin/kokkos-moe-replay-$(echo $v | tr N n)
    echo "== $v $round $spec" >> $R/ab.log
    timeout 100 $bin traces/$1.h5 --tokens $2 --max-tokens $2 --dtype fp8 --repeat 10 --warmup 2 2>&1 | grep -E "gate_up|down_combine|dispatch|total|graph" >> $R/ab.log
  done; done
done
echo "ab $(( $(date +%s) - t0 )) s" >> $R/parts.log
for v in n1 n4; do
timeout 80 ncu --kernel-name-base demangled --kernel-name regex:'GateUpE4m3' --launch-count 1 \
    --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
    $N/bin/kokkos-moe-replay-$v traces/deepseek-zipf0.5-4096.h5 --tokens 4096 --max-tokens 4096 --dtype fp8 --repeat 1 --warmup 0 > $R/ncu-$v.txt 2>&1
done
echo "ncu $(( $(date +%s) - t0 )) s total" >> $R/parts.log
cd $OUT && tar czf r.tgz r && rm -rf r
