#!/bin/bash
# Per-kernel ncu breakdown of the fp8 layer at its worst prefill points (bundle B of the pack).
cd "$(dirname "$0")/ab"
rm -rf B; tar -xJf pack.tar.xz B
B=$PWD/B; T=$PWD/traces
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
R=$OUT/ncu; mkdir -p $R
[ -f $T/mixtral-uniform-4096.h5 ] || $B/bin/kokkos-moe-trace synth --preset mixtral-8x7b --dist uniform --tokens 4096 --layers 1 --seed 3 --out $T/mixtral-uniform-4096.h5 >/dev/null
[ -f $T/deepseek-zipf0.5-4096.h5 ] || $B/bin/kokkos-moe-trace synth --preset deepseek-v3 --dist zipf --zipf-s 0.5 --tokens 4096 --layers 1 --seed 3 --out $T/deepseek-zipf0.5-4096.h5 >/dev/null
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread
for p in mixtral-uniform-4096:512 mixtral-uniform-4096:2048 deepseek-zipf0.5-4096:4096; do
  n=${p%%:*}; t=${p#*:}
  timeout 120 $B/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype fp8 --repeat 10 --warmup 3 --json $R/$n-t$t.json > $R/$n-t$t.log 2>&1
  timeout 150 ncu --clock-control none --kernel-name-base demangled --metrics $M --csv \
    $B/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype fp8 --repeat 1 --warmup 0 > $R/ncu-$n-t$t.csv 2>&1
  echo "== $n T=$t rc=$?"; python3 - $R/ncu-$n-t$t.csv $R/$n-t$t.json <<'PY'
import csv,sys,json,re,collections
rows=[r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
h=rows[0]; i={k:h.index(k) for k in ('ID','Kernel Name','Metric Name','Metric Value')}
k=collections.OrderedDict()
for r in rows[1:]:
    name=re.sub(r'.*KokkosMoE::(Impl::)?([A-Za-z0-9_]+).*',r'\2',r[i['Kernel Name']])[:28]
    k.setdefault((r[i['ID']],name),{})[r[i['Metric Name']]]=r[i['Metric Value']]
for (id_,name),m in k.items():
    us=float(m.get('gpu__time_duration.sum','0').replace(',',''))/1e3
    if us<5: continue
    print(f"{name:28s} {us:8.1f} us  dram {float(m.get('dram__bytes_read.sum','0').replace(',',''))/1e9:6.3f} GB ({m.get('dram__throughput.avg.pct_of_peak_sustained_elapsed','-')}%)  gmma {m.get('sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active','-')}%  L2 {m.get('lts__throughput.avg.pct_of_peak_sustained_elapsed','-')}%  warps {m.get('sm__warps_active.avg.pct_of_peak_sustained_active','-')}%  grid {m.get('launch__grid_size','-')} regs {m.get('launch__registers_per_thread','-')}")
try:
    l=json.load(open(sys.argv[2]))['layers'][0]['stages']; print('replay stages (ms):', {a:round(b['median_ms'],4) for a,b in l.items()})
except Exception as e: print('no replay json', e)
PY
done 2>&1 | tee $OUT/ncu.log
(cd $OUT && tar -cJf ncu.tar.xz ncu && rm -rf ncu)
