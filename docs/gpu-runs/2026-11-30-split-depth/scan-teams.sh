#!/bin/bash
# scan.sh: split-K team target and minimum K steps per split at decode sizes (variant build bin/replay-skt)
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
run() {  # trace layer T label env...
  local tr=$1 l=$2 t=$3 lab=$4; shift 4
  r=$(env "$@" timeout 20 bin/replay-skt traces/$tr.h5 --layers $l --max-tokens $t --tokens $t --check 2>&1)
  echo "$tr T=$t $lab: $(echo "$r" | awk '$1=="graph"||$1=="gate_up"||$1=="down_combine"{printf "%s %s ", $1, $2}') $(echo "$r" | grep -o 'error [0-9.e-]*') $(echo "$r" | grep -iE 'fail|error:|abort' | head -2)"
}
for pass in 1 2; do
for spec in "mixtral-uniform-4096 0" "qwen2-zipf0.5-4096 0" "deepseek-zipf0.5-4096 0" "gpt-oss-20b-decode 0"; do
  set -- $spec
  for t in 1 8; do
    for skt in 1024 2048 4096 8192; do run $1 $2 $t "skt$skt" KMOE_SKT=$skt; done
    for ms in 2 8; do run $1 $2 $t "ms$ms" KMOE_MINSTEPS=$ms; done
  done
done
done
