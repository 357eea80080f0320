#!/bin/bash
# compare replay variants with a time limit per run: cmpt.sh "variants" "traces" "tokens"
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
for tr in $2; do for t in $3; do for v in $1; do
  b=bin/kokkos-moe-replay; [ "$v" != a ] && b=bin/replay-$v
  r=$(timeout 60 $b traces/$tr.h5 --layers 0 --max-tokens $t --tokens $t --check 2>&1)
  echo "$tr T=$t $v: $(echo "$r" | awk '$1=="graph"||$1=="gate_up"||$1=="down_combine"{printf "%s %s ", $1, $2}') $(echo "$r" | grep -o 'error [0-9.e-]*') $(echo "$r" | grep -iE 'fail|error:|abort' | head -2)"
done; done; done
