#!/bin/bash
# The wide gate/up build (R=208): e4m3 tests, --check replays, and the small fp8 points against main.
set -u
root=$(pwd)
B=/tmp/sweep-bundle
[ -d $B/sweep ] || { mkdir -p $B && tar xJf $root/.device/sweep-pack/sweep.tar.xz -C $B && cp $root/.device/sweep-pack/*.h5 $B/sweep/traces/ && chmod +x $B/sweep/bin/*; }
A=$B/sweep; N=/tmp/new; rm -rf $N; cp -r $A $N; tar xJf $root/.device/ab/new-bin.tar.xz -C $N/bin; chmod +x $N/bin/*
export LD_LIBRARY_PATH=$A/lib:/usr/local/cuda/lib64
R=$OUT/r; mkdir -p $R
cd $A
t0=$(date +%s)
( timeout 100 $N/bin/KokkosMoE_tests --gtest_filter='*/3.*:Quantize*' 2>&1 | tail -8 ) > $R/tests-fp8.log
echo "tests-fp8 $(( $(date +%s) - t0 )) s" >> $R/parts.log
cd $root
t1=$(date +%s); timeout 130 scripts/gpu.sh check $N $R/check > /dev/null 2>&1; echo "check rc=$?" >> $R/parts.log; echo "check $(( $(date +%s) - t1 )) s" >> $R/parts.log
cd $A
for spec in "mixtral-uniform-4096 512" "deepseek-zipf0.5-4096 512" "mixtral-uniform-4096 32"; do set -- $spec
  for round in 1 2; do for v in N1 N4; do
    bin=$N/bin/kokkos-moe-replay-n1; [ $v = N4 ] && bin=$N/bin/kokkos-moe-replay
    echo "== $v $round $spec" >> $R/ab.log
    timeout 30 $bin traces/$1.h5 --tokens $2 --max-tokens $2 --dtype fp8 --repeat 10 --warmup 2 2>&1 | grep -E "gate_up|down_combine|dispatch|total|graph" >> $R/ab.log
  done; done
done
echo "all $(( $(date +%s) - t0 )) s" >> $R/parts.log
cd $OUT && tar czf r.tgz r && rm -rf r
