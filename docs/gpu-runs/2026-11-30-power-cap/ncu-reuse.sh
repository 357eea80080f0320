#!/bin/bash
# DRAM and L2 traffic of one large gate/up kernel: ncu-reuse.sh "variants" "trace tokens"...
# (variant a: bin/kokkos-moe-replay, X: bin/replay-X)
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
variants=$1; shift
for tr in "$@"; do set -- $tr
for v in $variants; do
  b=bin/kokkos-moe-replay; [ "$v" != a ] && b=bin/replay-$v
  echo "== $1 T=$2 $v"
  timeout 120 ncu --metrics $M --kernel-name-base demangled -k regex:${K:-GateUp} --launch-skip 2 --launch-count 1 $b traces/$1.h5 --layers 0 --max-tokens $2 --tokens $2 --repeat 2 --warmup 1 2>&1 | grep -E "^\s+(gpu__|dram__|lts__|sm__)"
done; done
