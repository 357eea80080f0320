#!/bin/bash
# A/B of two builds' fp8 replays, interleaved; B's e4m3 tests; ncu DRAM bytes.
set -u
cd "$(dirname "$0")"
rm -rf A B C; tar -xJf pack.tar.xz
here=$PWD; A=$here/A; B=$here/B; T=$here/traces
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$OUT/ab; mkdir -p $R/json
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
date -u
[ -f $T/mixtral-uniform-4096.h5 ] || $B/bin/kokkos-moe-trace synth --preset mixtral-8x7b --dist uniform --tokens 4096 --layers 1 --seed 3 --out $T/mixtral-uniform-4096.h5 >/dev/null
[ -f $T/deepseek-zipf0.5-4096.h5 ] || $B/bin/kokkos-moe-trace synth --preset deepseek-v3 --dist zipf --zipf-s 0.5 --tokens 4096 --layers 1 --seed 3 --out $T/deepseek-zipf0.5-4096.h5 >/dev/null
t0=$SECONDS
[ "${TESTS:-*}" = none ] || timeout 200 $B/bin/KokkosMoE_tests --gtest_filter="${TESTS:-*}" > $R/tests.log 2>&1; echo "tests rc=$? $((SECONDS-t0)) s"; grep -E "^\[  (PASSED|FAILED)|FAILED TEST|tests ran" $R/tests.log | head
line() { python3 - "$@" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
for l in r["layers"]:
    s=l["stages"]; g=s.get("graph",s["total"])
    print(f"{sys.argv[2]:3s} {sys.argv[3]:28s} T={sys.argv[4]:>5s} graph {g['median_ms']:8.4f} gate_up {s['gate_up']['median_ms']:8.4f} down {s['down_combine']['median_ms']:8.4f} dispatch {s['dispatch']['median_ms']:7.4f} err {l.get('check',{}).get('max_rel_err',0):.2e}")
PY
}
points=${POINTS:-"deepseek-zipf0.5-4096:1,8,32,128,512,4096 mixtral-uniform-4096:8,128,2048"}
for round in $(seq 1 ${ROUNDS:-2}); do
  for p in $points; do
    n=${p%%:*}
    for t in $(echo ${p#*:} | tr , ' '); do
      for v in ${BUILDS:-A B}; do
        chk=; [ $round = 1 ] && chk=--check
        j=$R/json/$v-$n-t$t-r$round.json
        timeout 120 ${here}/$v/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype fp8 --repeat ${REPEAT:-20} --warmup 3 $chk --json $j > $R/json/$v-$n-t$t-r$round.log 2>&1 || echo "$v $n $t rc=$? $(tail -2 $R/json/$v-$n-t$t-r$round.log)"
        line $j $v $n $t
      done
    done
  done
done 2>&1 | tee $OUT/ab.log
echo "ab done $((SECONDS-t0)) s"
if [ -n "${NCU:-}" ]; then
  for v in ${NCU_BUILDS:-A B}; do for p in $NCU; do
    n=${p%%:*}; t=${p#*:}
    timeout 150 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:'GateUp|Down|Quantize|Combine|Dispatch|Gather' --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
      ${here}/$v/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype fp8 --repeat 1 --warmup 0 > $R/ncu-$v-$n-$t.txt 2>&1
    echo "== ncu $v $n T=$t"; grep -E "^  [a-zA-Z]|duration|bytes_read|bytes_write|hit_rate" $R/ncu-$v-$n-$t.txt | sed -E 's/.*KokkosMoE::(Impl::)?([A-Za-z0-9]+).*\(([0-9]+), 1, 1\)x\(([0-9]+), ([0-9]+).*/\2 grid=\3 x\4x\5/' | paste - - - - - | head -14
  done; done 2>&1 | tee $OUT/ncu.log
fi
echo "all done $((SECONDS-t0)) s"
(cd $OUT && tar -cJf ab.tar.xz ab && rm -rf ab)
