#!/bin/bash
# Device: A (sweep bundle, 1ba7bc3) / N1 / N2 interleaved fp8 timings; the
# records' sweep of N2 (check, bf16, fp8, peers); N2 under ncu.
set -u
root=$(pwd)
B=/tmp/sweep-bundle
[ -d $B/sweep ] || { mkdir -p $B && tar xJf $root/.device/sweep-pack/sweep.tar.xz -C $B && cp $root/.device/sweep-pack/*.h5 $B/sweep/traces/ && chmod +x $B/sweep/bin/*; }
A=$B/sweep; N=/tmp/new; rm -rf $N; cp -r $A $N; tar xJf $root/.device/ab/new-bin.tar.xz -C $N/bin; chmod +x $N/bin/*
export LD_LIBRARY_PATH=$A/lib:/usr/local/cuda/lib64
R=$OUT/r; mkdir -p $R/bf16 $R/fp8
cd $A
t0=$(date +%s)
( timeout 200 $N/bin/KokkosMoE_tests --gtest_filter='*/3.*:Quantize*' 2>&1 | tail -12 ) > $R/tests-fp8.log
echo "tests-fp8 $(( $(date +%s) - t0 )) s" >> $R/parts.log
for spec in "mixtral-uniform-4096 4096" "deepseek-zipf0.5-4096 4096" "mixtral-uniform-4096 2048" "deepseek-zipf0.5-4096 2048" "mixtral-uniform-4096 512" "deepseek-zipf0.5-4096 512" "deepseek-zipf0.5-4096 32"; do set -- $spec
  for round in 1 2 3; do for v in N1 N2 N3; do
    bin=$N/bin/kokkos-moe-replay-n1; [ $v = N2 ] && bin=$N/bin/kokkos-moe-replay; [ $v = N3 ] && bin=$N/bin/kokkos-moe-replay-n3
    echo "== $v $round $spec" >> $R/ab.log
    timeout 100 $bin traces/$1.h5 --tokens $2 --max-tokens $2 --dtype fp8 --repeat 10 --warmup 2 2>&1 | grep -E "gate_up|down_combine|dispatch|total|graph" >> $R/ab.log
  done; done
done
echo "ab $(( $(date +%s) - t0 )) s" >> $R/parts.log
cd $root
t1=$(date +%s); timeout 200 scripts/gpu.sh check $N $R/check > /dev/null 2>&1; echo "check rc=$?" >> $R/parts.log; echo "check $(( $(date +%s) - t1 )) s" >> $R/parts.log
(nvidia-smi; ncu --version) > $R/gpu.txt 2>&1
cd $N
n=mixtral-uniform-4096-4096
timeout 70 ncu --kernel-name-base demangled --kernel-name regex:'GateUpE4m3|DownE4m3' --launch-count 2 \
    --section SourceCounters --section WarpStateStats --section ComputeWorkloadAnalysis --section SpeedOfLight \
    -o /tmp/$n bin/kokkos-moe-replay traces/mixtral-uniform-4096.h5 --tokens 4096 --max-tokens 4096 --dtype fp8 --repeat 1 --warmup 0 > $R/ncu-$n.log 2>&1
ncu --import /tmp/$n.ncu-rep --page details > $R/ncu-$n.details.txt 2>&1
echo "ncu $(( $(date +%s) - t0 )) s total" >> $R/parts.log
cd $OUT && tar czf r.tgz r && rm -rf r
