#!/bin/bash
# A/B in one binary (KMOE_AB_A=1: the A variant), interleaved; tests; ncu per-kernel times.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$(dirname "$0")"
rm -rf B; tar -xJf pack.tar.xz
B=$PWD/B; T=$root/.device/ab/traces
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p $R/json
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } | tee $R/gpu.txt
synth() { [ -f $T/$1.h5 ] || $B/bin/kokkos-moe-trace synth "${@:2}" --tokens 4096 --layers 1 --seed 3 --out $T/$1.h5 >/dev/null; }
synth mixtral-uniform-4096 --preset mixtral-8x7b --dist uniform
synth qwen2-uniform-4096 --preset qwen2-57b --top-k 4 --dist uniform
synth deepseek-zipf0.5-4096 --preset deepseek-v3 --dist zipf --zipf-s 0.5
t0=$SECONDS
if [ "${TESTS:-x}" != none ]; then
  timeout 300 $B/bin/KokkosMoE_tests --gtest_filter="${TESTS:-*_cuda*}" > $R/tests.log 2>&1; echo "tests rc=$? $((SECONDS-t0)) s"

  grep -E "^\[  (PASSED|FAILED)|FAILED TEST|tests ran" $R/tests*.log | head -30
fi
venv() { case $1 in A) echo KMOE_AB_A=1;; B) echo KMOE_X=0;; P1) echo KMOE_PDL=1;; P2) echo KMOE_PDL=2;; esac; }
line() { python3 - "$@" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
for l in r["layers"]:
    s=l["stages"]; g=s.get("graph",s["total"])
    print(f"{sys.argv[2]:2s} {sys.argv[3]:4s} {sys.argv[4]:28s} T={sys.argv[5]:>5s} graph {g['median_ms']:8.4f} gate_up {s['gate_up']['median_ms']:8.4f} down {s['down_combine']['median_ms']:8.4f} dispatch {s['dispatch']['median_ms']:7.4f} err {l.get('check',{}).get('max_rel_err',0):.2e}")
PY
}
points=${POINTS:-"bf16:gpt-oss-20b-decode:1,8 bf16:deepseek-zipf0.5-4096:1,8,32 bf16:mixtral-uniform-4096:1,8,32 bf16:qwen2-uniform-4096:1,8 fp8:deepseek-zipf0.5-4096:1,8,32 fp8:mixtral-uniform-4096:1,8,32"}
for round in $(seq 1 ${ROUNDS:-3}); do
  for p in $points; do
    d=${p%%:*}; q=${p#*:}; n=${q%%:*}
    for t in $(echo ${q#*:} | tr , ' '); do
      for v in ${VARIANTS:-A B}; do
        chk=; [ $round = 1 ] && chk="--check --check-bits"
        env=$(venv $v)
        j=$R/json/$v-$d-$n-t$t-r$round.json
        env $env timeout 120 $B/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype $d --repeat ${REPEAT:-30} --warmup 3 $chk --json $j > ${j%.json}.log 2>&1 || echo "$v $d $n $t rc=$? $(tail -2 ${j%.json}.log)"
        line $j $v $d $n $t
      done
    done
  done
done 2>&1 | tee $OUT/ab.log
echo "ab done $((SECONDS-t0)) s"
if [ -n "${NCU:-}" ]; then
  for p in $NCU; do
    d=${p%%:*}; q=${p#*:}; n=${q%%:*}; t=${q#*:}
    for v in ${NCU_BUILDS:-A B}; do
      env=$(venv $v)
      env $env timeout 150 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:"GateUp|Down" --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size \
        $B/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype $d --repeat 1 --warmup 0 > $R/ncu-$v-$d-$n-$t.txt 2>&1
      echo "== ncu $v $d $n T=$t"
      python3 - $R/ncu-$v-$d-$n-$t.txt <<'PY'
import re,sys
cur=None; rows=[]
for l in open(sys.argv[1]):
    m=re.match(r'\s\s(\S.*?)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)',l)
    if m:
        nm=m.group(1); k=re.search(r'KokkosMoE::(?:Impl::)?([A-Za-z0-9_]+)',nm); cur=[k.group(1) if k else nm[:40],{}]; rows.append(cur); continue
    m=re.match(r'\s+(\S+)\s+(\S+)?\s+([\d,.]+)$',l)
    if m and cur: cur[1][m.group(1)]=m.group(3)
seen=0
for n,m in rows[-14:]:
    print(f"  {n:30s} {m.get('gpu__time_duration.sum','-'):>9s} us-or-ns  dram {m.get('dram__bytes_read.sum','-'):>10s} {m.get('dram__throughput.avg.pct_of_peak_sustained_elapsed','-'):>6s}%  grid {m.get('launch__grid_size','-'):>6s} x {m.get('launch__block_size','-')}")
PY
    done
  done 2>&1 | tee $OUT/ncu.log
fi
echo "all done $((SECONDS-t0)) s"
(cd $OUT && tar -cJf r.tar.xz r && rm -rf r)
