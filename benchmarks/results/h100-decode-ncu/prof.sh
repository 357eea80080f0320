#!/bin/bash
# ncu sections of the bf16 decode expert kernels (not part of the repository).
set -u
root=$(cd "$(dirname "$0")/.." && pwd); D=$root/.device; cd $D
rm -rf A; tar -xJf packA.tar.xz; A=$D/A; T=$D/traces; mkdir -p $T; cp $A/traces/*.h5 $T/
export LD_LIBRARY_PATH=$A/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$OUT/prof; mkdir -p $R
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; } | tee $R/gpu.txt
synth() { [ -f $T/$1.h5 ] || $A/bin/kokkos-moe-trace synth "${@:2}" --tokens 4096 --layers 1 --seed 3 --out $T/$1.h5 >/dev/null; }
synth mixtral-uniform-4096 --preset mixtral-8x7b --dist uniform
synth qwen2-uniform-4096 --preset qwen2-57b --top-k 4 --dist uniform
synth deepseek-zipf0.5-4096 --preset deepseek-v3 --dist zipf --zipf-s 0.5
t0=$SECONDS
for p in ${POINTS:-bf16:deepseek-zipf0.5-4096:32 bf16:gpt-oss-20b-decode:8 bf16:qwen2-uniform-4096:128 bf16:mixtral-uniform-4096:8 fp8:deepseek-zipf0.5-4096:1}; do
  d=${p%%:*}; q=${p#*:}; n=${q%%:*}; t=${q#*:}
  lay=; case $n in gpt-oss*) lay="--layers 0";; esac
  [ $SECONDS -gt ${DEADLINE:-400} ] && break
  timeout 200 ncu --clock-control none --kernel-name-base demangled -k "regex:GateUp|Down|E4m3" -c ${COUNT:-2} \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    --metrics dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,smsp__warps_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warps_issue_stalled_barrier_per_warp_active.pct,smsp__warps_issue_stalled_wait_per_warp_active.pct \
    $A/bin/kokkos-moe-replay $T/$n.h5 --tokens $t --max-tokens $t --dtype $d $lay --repeat 1 --warmup 0 > $R/ncu-$d-$n-$t.txt 2>&1
  echo "== $d $n T=$t rc=$? $((SECONDS-t0)) s"
  grep -E "^  [A-Za-z].*\(|Duration|DRAM Throughput|Memory Throughput|dram__bytes_read|L2 Hit|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall Long|stalled_long|stalled_barrier|stalled_wait|Issued Warp|No Eligible|Grid Size|Dynamic Shared" $R/ncu-$d-$n-$t.txt | sed 's/  */ /g' | cut -c1-160 | head -60
done
echo "all done $((SECONDS-t0)) s"
(cd $OUT && tar -cJf prof.tar.xz prof && rm -rf prof)
