#!/bin/bash
cd /tmp/rec
for t in 1 2; do
  for isa in avx512 avx2; do
    core=Cooperlake; [ $isa = avx2 ] && core=Haswell
    s=$SECONDS
    OPENBLAS_CORETYPE=$core OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$t OMP_PROC_BIND=spread OMP_PLACES=threads ./bench-$isa \
      --benchmark_repetitions=5 --benchmark_out=$isa-zen5-1e5e697-threads$t.json --benchmark_out_format=json > $isa-threads$t.log 2>&1
    echo "$isa t$t rc=$? $((SECONDS-s)) s" >> done.txt
  done
done
