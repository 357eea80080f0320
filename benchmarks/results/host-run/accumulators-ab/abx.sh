#!/bin/bash
# usage: abx.sh OUTDIR FILTER THREADS ROUNDS name=binary[:envvar=val]...
out=$1; filter=$2; thr=$3; rounds=$4; shift 4
mkdir -p $out
for r in $(seq 1 $rounds); do
  for nb in "$@"; do
    n=${nb%%=*}; b=${nb#*=}
    extra=; case $n in avx2*) extra="OPENBLAS_CORETYPE=Haswell";; esac
    env $extra OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$thr OMP_PROC_BIND=spread OMP_PLACES=threads $b --benchmark_filter="$filter" --benchmark_repetitions=3 --benchmark_out=$out/$n-t$thr-r$r.json --benchmark_out_format=json > $out/$n-t$thr-r$r.log 2>&1
  done
done
