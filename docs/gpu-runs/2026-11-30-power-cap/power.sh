#!/bin/bash
# Clock, power and throttle reasons while a dense GEMM and our replays run.
cd "$(dirname "$0")"; export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
Q=timestamp,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv -lms 100 > $OUT/smi.csv 2>&1 &
SMI=$!
mark(){ echo "$(date +%H:%M:%S.%N) $*" >> $OUT/phases.log; }
mark idle; sleep 1
mark gemm; python3 -c "
import torch,time
x=torch.randn(8192,8192,dtype=torch.bfloat16,device='cuda');y=torch.randn_like(x)
for _ in range(5): x@y
torch.cuda.synchronize(); t=time.time(); n=0
s=torch.cuda.Event(enable_timing=True); e=torch.cuda.Event(enable_timing=True); s.record()
while time.time()-t<4:
  for _ in range(20): x@y
  n+=20
  torch.cuda.synchronize()
e.record(); e.synchronize(); ms=s.elapsed_time(e)
print('gemm 8192 TFLOP/s', 2*8192**3*n/ms/1e9)
" >> $OUT/phases.log 2>&1
sleep 1
for p in "mixtral-uniform-4096 4096 300" "deepseek-zipf0.5-4096 4096 150" "mixtral-uniform-4096 512 1000" "qwen2-zipf0.5-4096 4096 500"; do
  set -- $p
  mark "replay $1 T=$2"; bin/kokkos-moe-replay traces/$1.h5 --layers 0 --max-tokens $2 --tokens $2 --repeat $3 > $OUT/r-$1-$2.log 2>&1
  sleep 1
done
mark end
kill $SMI
