#!/bin/bash
# interleaved A/B of host benchmark binaries: ROUNDS, THREADS, FILTER
out=${OUT:-/tmp/ab-host}; mkdir -p $out
for r in $(seq 1 ${ROUNDS:-2}); do
  for t in ${THREADS:-1}; do
    for v in base new; do
      OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$t OMP_PROC_BIND=spread OMP_PLACES=threads /tmp/bench-$v \
        --benchmark_filter="${FILTER}" --benchmark_repetitions=${REPS:-3} --benchmark_report_aggregates_only=true \
        --benchmark_out=$out/$v-t$t-r$r.json --benchmark_out_format=json > /dev/null 2>&1
    done
  done
done
python3 - $out <<'PY'
import json,sys,glob,collections,statistics
d=collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    v,t,r=f.split('/')[-1][:-5].split('-')
    for b in json.load(open(f))['benchmarks']:
        if b.get('aggregate_name')=='median' and 'manual_time' in b['name']:
            d[(b['run_name'],t,v)].append((b['real_time'], b.get('fraction_of_floor',0)))
keys=sorted({(k[0],k[1]) for k in d})
for n,t in keys:
    a=d.get((n,t,'base'),[]); b=d.get((n,t,'new'),[])
    fa=lambda x: ' '.join(f"{y[0]:.2f}" for y in x)
    if a and b: print(f"{n:55s} {t} base {fa(a):18s} new {fa(b):18s} x{min(y[0] for y in a)/min(y[0] for y in b):.2f} frac {max(y[1] for y in b):.2f}")
PY
