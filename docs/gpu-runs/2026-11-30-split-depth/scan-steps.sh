#!/bin/bash
# scan2.sh: minimum K steps per split (KMOE_MINSTEPS) at decode sizes, variant build bin/replay-skt
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
run() {
  local tr=$1 t=$2 ms=$3
  r=$(KMOE_MINSTEPS=$ms timeout 20 bin/replay-skt traces/$tr.h5 --layers 0 --max-tokens $t --tokens $t --check 2>&1)
  echo "$tr T=$t ms$ms: $(echo "$r" | awk '$1=="graph"||$1=="gate_up"||$1=="down_combine"{printf "%s %s ", $1, $2}') $(echo "$r" | grep -o 'error [0-9.e-]*') $(echo "$r" | grep -iE 'fail|error:|abort' | head -2)"
}
for pass in 1 2; do
  for tr in qwen2-zipf0.5-4096 gpt-oss-20b-decode mixtral-uniform-4096 deepseek-zipf0.5-4096; do
    for t in 1 2 4 8; do for ms in 4 6 8 12 16; do run $tr $t $ms; done; done
  done
done
