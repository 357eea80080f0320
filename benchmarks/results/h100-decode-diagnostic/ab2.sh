#!/bin/bash
# A/B of decode variants, then A's check (not part of the repository).
set -u
root=$(cd "$(dirname "$0")/.." && pwd); D=$root/.device
t0=$SECONDS
NO_TAR=1 SWEEP=0 TESTS=none ROUNDS=${ROUNDS:-2} REPEAT=${REPEAT:-20} DEADLINE=${DEADLINE:-330} bash $D/run.sh
python3 $D/summarize.py $OUT/r | tee $OUT/r/summary.txt
if [ "${CHECK:-1}" = 1 ]; then
  export LD_LIBRARY_PATH=$D/A/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  timeout ${CHECK_LIMIT:-220} $root/scripts/gpu.sh check $D/A $OUT/check > $OUT/check.log 2>&1; echo "check rc=$? $((SECONDS-t0)) s"
  tail -15 $OUT/check/summary.log 2>/dev/null
fi
(cd $OUT && tar -cJf r.tar.xz r check 2>/dev/null; rm -rf r/json)
