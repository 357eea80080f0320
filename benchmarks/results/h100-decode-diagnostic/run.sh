#!/bin/bash
# Device harness (not part of the repository). A = bundle of main's build (full), B = variant's replay.
# SWEEP=1 on an H200: scripts/gpu.sh check + perf sweep + peers with A (records).
# Then A/B interleaved across binaries at POINTS.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
D=$root/.device
cd $D
rm -rf A B D; tar -xJf packA.tar.xz; for p in packB packC packD packE packF packG; do [ -f $p.tar.xz ] && tar -xJf $p.tar.xz; done
A=$D/A; B=$D/B; T=$D/traces; mkdir -p $T
for v in B C D E F G; do [ -d $D/$v ] && { rm -rf $D/$v/lib; ln -s $A/lib $D/$v/lib; }; done
cp $A/traces/*.h5 $T/
export LD_LIBRARY_PATH=$A/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p $R/json
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } | tee $R/gpu.txt
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
synth() { [ -f $T/$1.h5 ] || $A/bin/kokkos-moe-trace synth "${@:2}" --tokens 4096 --layers 1 --seed 3 --out $T/$1.h5 >/dev/null; }
synth mixtral-uniform-4096 --preset mixtral-8x7b --dist uniform
synth qwen2-uniform-4096 --preset qwen2-57b --top-k 4 --dist uniform
synth qwen2-zipf0.5-4096 --preset qwen2-57b --top-k 4 --dist zipf --zipf-s 0.5
synth deepseek-zipf0.5-4096 --preset deepseek-v3 --dist zipf --zipf-s 0.5
cp $T/*.h5 $A/traces/ 2>/dev/null
t0=$SECONDS
if [[ "$gpu" == *H200* && "${SWEEP:-1}" = 1 ]]; then
  S=$R/sweep; mkdir -p $S/bf16 $S/fp8
  t=$SECONDS
  for tr in mixtral-uniform-4096 qwen2-uniform-4096 qwen2-zipf0.5-4096 deepseek-zipf0.5-4096 deepseek-v3-prefill4096-sampled gpt-oss-20b-decode; do
    $root/scripts/gpu.sh perf $A $S/bf16 $tr "1 8 32 128 512 2048 4096" --repeat 10 --warmup 2 >> $S/bf16/ours.log 2>&1 || true
  done; echo "bf16 $((SECONDS-t)) s" >> $S/parts.log; t=$SECONDS
  for tr in mixtral-uniform-4096 deepseek-zipf0.5-4096 deepseek-v3-prefill4096-sampled; do
    $root/scripts/gpu.sh perf $A $S/fp8 $tr "1 8 32 128 512 2048 4096" --dtype fp8 --repeat 10 --warmup 2 >> $S/fp8/ours.log 2>&1 || true
  done; echo "fp8 $((SECONDS-t)) s" >> $S/parts.log; t=$SECONDS
  $root/scripts/gpu.sh check $A $S/check > /dev/null 2>&1; echo "check rc=$?" >> $S/parts.log; echo "check $((SECONDS-t)) s" >> $S/parts.log; t=$SECONDS
  python3 $root/benchmarks/peers/moe_peers.py $T/mixtral-uniform-4096.h5 $T/qwen2-uniform-4096.h5 $T/qwen2-zipf0.5-4096.h5 $T/deepseek-zipf0.5-4096.h5 $T/deepseek-v3-prefill4096-sampled.h5 $T/gpt-oss-20b-decode.h5 --json $S/bf16/peers.json > $S/bf16/peers.log 2>&1; echo "peers bf16 rc=$? $((SECONDS-t)) s" >> $S/parts.log; t=$SECONDS
  python3 $root/benchmarks/peers/moe_peers.py $T/mixtral-uniform-4096.h5 $T/deepseek-zipf0.5-4096.h5 $T/deepseek-v3-prefill4096-sampled.h5 --dtype fp8 --json $S/fp8/peers.json > $S/fp8/peers.log 2>&1; echo "peers fp8 rc=$? $((SECONDS-t)) s" >> $S/parts.log
  cat $S/parts.log; tail -5 $S/check/summary.log
elif [ "${TESTS:-cuda}" != none ]; then
  timeout 300 $A/bin/KokkosMoE_tests --gtest_filter="${TESTS:-*_cuda*}" > $R/tests.log 2>&1; echo "tests rc=$? $((SECONDS-t0)) s"
  grep -E "^\[  (PASSED|FAILED)|FAILED TEST|tests ran" $R/tests.log | head -20
fi
line() { python3 - "$@" <<'PY'
import json,sys
try:
  r=json.load(open(sys.argv[1]))
except Exception as e:
  print(sys.argv[2:], "no json"); sys.exit()
for l in r["layers"]:
    s=l["stages"]; g=s.get("graph",s["total"])
    print(f"{sys.argv[2]:2s} {sys.argv[3]:4s} {sys.argv[4]:32s} T={sys.argv[5]:>5s} graph {g['median_ms']:8.4f} gate_up {s['gate_up']['median_ms']:8.4f} down {s['down_combine']['median_ms']:8.4f} dispatch {s['dispatch']['median_ms']:7.4f} err {l.get('check',{}).get('max_rel_err',0):.2e}")
PY
}
points=${POINTS:-}
for round in $(seq 1 ${ROUNDS:-3}); do
  for p in $points; do
    d=${p%%:*}; q=${p#*:}; n=${q%%:*}
    for t in $(echo ${q#*:} | tr , ' '); do
      [ $SECONDS -gt ${DEADLINE:-540} ] && { echo "deadline at round $round"; break 3; }
      for v in ${VARIANTS:-A B}; do
        bv=$v
        [ -d $D/$bv ] || continue
        envs=KMOE_NONE=1
        chk=; [ $round = 1 ] && [ -z "${NOCHECK:-}" ] && chk="--check"
        lay=; case $n in gpt-oss*) lay="--layers 0";; deepseek-v3-prefill*) lay="--layers 3";; esac
        j=$R/json/$v-$d-$n-t$t-r$round.json
        env $envs timeout 120 $D/$bv/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype $d $lay --repeat ${REPEAT:-20} --warmup 3 $chk --json $j > ${j%.json}.log 2>&1 || echo "$v $d $n $t rc=$? $(tail -2 ${j%.json}.log)"
        line $j $v $d $n $t
      done
    done
  done
done 2>&1 | tee $R/ab.log
echo "ab done $((SECONDS-t0)) s"
if [ -n "${NCU:-}" ]; then
  for p in $NCU; do
    d=${p%%:*}; q=${p#*:}; n=${q%%:*}; t=${q#*:}
    for v in ${NCU_BUILDS:-A B}; do
      timeout 150 ncu --clock-control none --kernel-name-base demangled --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size \
        $D/$v/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype $d $(case $n in gpt-oss*) echo --layers 0;; deepseek-v3-prefill*) echo --layers 3;; esac) --repeat 1 --warmup 0 > $R/ncu-$v-$d-$n-$t.txt 2>&1
      echo "== ncu $v $d $n T=$t"; grep -E "KokkosMoE|gpu__time|dram__bytes|dram__through" $R/ncu-$v-$d-$n-$t.txt | tail -40 | sed 's/  */ /g' | cut -c1-150
    done
  done 2>&1 | tee $R/ncu.log
fi
echo "all done $((SECONDS-t0)) s"
[ -n "${NO_TAR:-}" ] || (cd $OUT && tar -cJf r.tar.xz r && rm -rf r)
