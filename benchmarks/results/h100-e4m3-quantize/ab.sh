#!/bin/bash
# A/B: A = baseline (ad27cee's CUDA code), B = x per token (h pass as before).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd "$(dirname "$0")/ab" && TESTS='*cuda*' ROUNDS=3 REPEAT=20 \
  POINTS="deepseek-zipf0.5-4096:128,512,2048,4096 mixtral-uniform-4096:128,512,2048,4096" \
  NCU="deepseek-zipf0.5-4096:4096 deepseek-zipf0.5-4096:2048 mixtral-uniform-4096:2048 mixtral-uniform-4096:512" \
  bash run.sh > $OUT/run.log 2>&1
grep -E "tests rc|PASSED|FAILED|ab done|all done" $OUT/run.log
cat $OUT/ab.log
