#!/bin/bash
# usage: ab.sh FILTER THREADS binA binB ... ; interleaved, 2 rounds, 3 reps each
F=$1; T=$2; shift 2
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$T OMP_PROC_BIND=spread OMP_PLACES=threads
for round in 1 2; do for b in "$@"; do
  $b --benchmark_filter="$F" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>/dev/null | grep median | awk -v b=$(basename $b) '{print b, $1, $2}' | sed 's/manual_time_median//'
done; done | sort -k2,2 -k1,1 | awk '{k=$2; a[k]=a[k] " " $1 "=" $3} END {for (k in a) print k, a[k]}' | sort
