#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: replays the default trace in inputs/ through the layer on the
# host backend, checks it against float64 and prints the report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$("$root/scripts/build.sh" host)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
exec "$build/drivers/kokkos-moe-replay" "$root/inputs/mixtral-8x7b-zipf0.3.h5" --check "$@"
