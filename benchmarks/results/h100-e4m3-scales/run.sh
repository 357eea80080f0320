#!/bin/bash
# Device: A (the records' bundle, commit 1ba7bc3) / N (new binaries)
# interleaved fp8 timings, N's fp8 checks, N under ncu source counters.
# Ran from the repository root with the sweep bundle in
# .device/sweep-pack/sweep.tar.xz and N's binaries in .device/ab/new-bin.tar.xz.
set -u
root=$(pwd)
B=/tmp/sweep-bundle
mkdir -p $B && tar xJf $root/.device/sweep-pack/sweep.tar.xz -C $B && chmod +x $B/sweep/bin/*
A=$B/sweep; N=/tmp/new; rm -rf $N; cp -r $A $N; tar xJf $root/.device/ab/new-bin.tar.xz -C $N/bin; chmod +x $N/bin/*
export LD_LIBRARY_PATH=$A/lib:/usr/local/cuda/lib64
mkdir -p $OUT/r
cd $A
t0=$(date +%s)
( timeout 240 $N/bin/KokkosMoE_tests --gtest_filter='*/3.*:Quantize*' 2>&1 | tail -40 ) > $OUT/r/tests-fp8.log
for spec in "mixtral-uniform-4096 512" "deepseek-zipf0.5-4096 512" "deepseek-zipf0.5-4096 4096" "mixtral-uniform-4096 8"; do set -- $spec
  timeout 100 $N/bin/kokkos-moe-replay traces/$1.h5 --tokens $2 --max-tokens $2 --dtype fp8 --check --repeat 2 --warmup 1 >> $OUT/r/check.log 2>&1; echo "rc=$? $spec" >> $OUT/r/check.log
done
echo "checks $(( $(date +%s) - t0 )) s" >> $OUT/r/parts.log
for spec in "mixtral-uniform-4096 4096" "deepseek-zipf0.5-4096 4096" "mixtral-uniform-4096 512" "deepseek-zipf0.5-4096 512" "mixtral-uniform-4096 2048" "deepseek-zipf0.5-4096 2048" "deepseek-zipf0.5-4096 32" "mixtral-uniform-4096 32"; do set -- $spec
  for round in 1 2; do for v in A N; do
    bin=$A/bin; [ $v = N ] && bin=$N/bin
    echo "== $v $round $spec" >> $OUT/r/ab.log
    timeout 100 $bin/kokkos-moe-replay traces/$1.h5 --tokens $2 --max-tokens $2 --dtype fp8 --repeat 10 --warmup 2 2>&1 | grep -E "gate_up|down_combine|dispatch|total|graph" >> $OUT/r/ab.log
  done; done
done
echo "ab $(( $(date +%s) - t0 )) s" >> $OUT/r/parts.log
for spec in "deepseek-zipf0.5-4096 4096" "mixtral-uniform-4096 4096"; do set -- $spec
  n=$1-$2
  timeout 150 ncu --kernel-name-base demangled --kernel-name regex:'GateUpE4m3|DownE4m3' --launch-count 2 \
    --section SourceCounters --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SpeedOfLight \
    -o $OUT/r/$n $N/bin/kokkos-moe-replay traces/$1.h5 --tokens $2 --max-tokens $2 --dtype fp8 --repeat 1 --warmup 0 > $OUT/r/$n.log 2>&1
  ncu --import $OUT/r/$n.ncu-rep --page details > $OUT/r/$n.details.txt 2>&1
  ncu --import $OUT/r/$n.ncu-rep --page source --print-source sass --csv > $OUT/r/$n.sass.csv 2>&1
  echo "ncu $n $(( $(date +%s) - t0 )) s" >> $OUT/r/parts.log
done
(nvidia-smi; ncu --version) > $OUT/r/env.txt 2>&1
