# SPDX-License-Identifier: BSD-3-Clause
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
which nsys ncu
for spec in "gpt-oss-20b-decode 1" "qwen2-zipf0.5-4096 1" "mixtral-uniform-4096 1" "gpt-oss-20b-decode 8"; do set -- $spec
  echo "== $1 T=$2" | tee -a $OUT/decode-ncu.log
  timeout 60 bin/kokkos-moe-replay traces/$1.h5 --layers 0 --max-tokens $2 --tokens $2 2>&1 | awk '$1=="graph"||$1=="total"||$1=="dispatch"||$1=="gate_up"||$1=="down_combine"' | tee -a $OUT/decode-ncu.log
  timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --launch-skip 40 --launch-count 12 bin/kokkos-moe-replay traces/$1.h5 --layers 0 --max-tokens $2 --tokens $2 --repeat 4 --warmup 4 > $OUT/ncu-$1-$2.log 2>&1
  grep -E "^  [A-Za-z_].*\(|duration|grid_size|block_size" $OUT/ncu-$1-$2.log | sed -E 's/^  (void )?Kokkos::Impl::cuda_parallel_launch_[a-z_]+<Kokkos::Impl::Parallel(For|Scan|Reduce)<KokkosMoE::Impl::([A-Za-z]+)[^(]*.*/  \3/; s/^  ([a-z_:]+).{0,60}.*/  \1/' | tee -a $OUT/decode-ncu.log
done
