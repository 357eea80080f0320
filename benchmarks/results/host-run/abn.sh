#!/bin/bash
# interleaved runs of several host benchmark binaries /tmp/bench-$v: VARIANTS, ROUNDS, THREADS, FILTER, REPS, OUT
out=${OUT:-/tmp/abn}; mkdir -p $out
for r in $(seq 1 ${ROUNDS:-3}); do
  for t in ${THREADS:-1}; do
    for v in $VARIANTS; do
      OPENBLAS_CORETYPE=Cooperlake OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$t OMP_PROC_BIND=spread OMP_PLACES=threads /tmp/bench-$v \
        --benchmark_filter="${FILTER}" --benchmark_repetitions=${REPS:-3} --benchmark_report_aggregates_only=true \
        --benchmark_out=$out/$v-t$t-r$r.json --benchmark_out_format=json > /dev/null 2>&1
    done
  done
done
python3 - $out "$VARIANTS" <<'PY'
import json,sys,glob,collections
d=collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    v,t,r=f.split('/')[-1][:-5].rsplit('-',2)
    for b in json.load(open(f))['benchmarks']:
        if b.get('aggregate_name')=='median' and 'manual_time' in b['name']:
            d[(b['run_name'].replace('/manual_time','').replace('host/ours/',''),t,v)].append(b['real_time'])
vs=sys.argv[2].split()
keys=sorted({(k[0],k[1]) for k in d})
print(f"{'point':32s} t " + ' '.join(f"{v:>22s}" for v in vs))
for n,t in keys:
    base=min(d[(n,t,vs[0])])
    cells=[]
    for v in vs:
        x=d.get((n,t,v),[])
        cells.append(f"{min(x):7.2f} x{base/min(x):.2f} ({max(x)/min(x)-1:4.0%})" if x else '-')
    print(f"{n:32s} {t} " + ' '.join(f"{c:>22s}" for c in cells))
PY
