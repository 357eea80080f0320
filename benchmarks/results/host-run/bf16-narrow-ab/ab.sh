#!/bin/bash
# ab.sh OUTDIR FILTER ROUNDS THREADS binA binB
out=$1; f=$2; rounds=$3; th=$4; shift 4
mkdir -p $out
for r in $(seq 1 $rounds); do
  i=0
  bins=("$@"); [ $((r % 2)) = 0 ] && bins=($(printf '%s\n' "$@" | tac))
  for b in "${bins[@]}"; do
    n=$(basename $b)
    OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$th OMP_PROC_BIND=spread OMP_PLACES=threads $b --benchmark_filter="$f" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>/dev/null | grep median | awk -v n=$n -v r=$r '{print n, r, $1, $2}' >> $out/ab.txt
  done
done
python3 - $out/ab.txt <<'PY'
import sys,collections,statistics
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
  n,r,name,t=l.split(); d[name.replace('/manual_time_median','')][n].append(float(t))
for name,v in d.items():
  ks=sorted(v); a=statistics.median(v['bench_old']); b=statistics.median(v['bench_new'])
  print(f"{name}: old {a:.2f} new {b:.2f} new/old {b/a:.3f}  old {sorted(v['bench_old'])} new {sorted(v['bench_new'])}")
PY
