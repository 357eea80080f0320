#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: replays the default trace in inputs/ through the layer on the
# host backend, checks it against float64 and prints the report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Only what it runs: the library, the trace component and the driver (the
# tests and benchmarks are scripts/test.sh's).
build=$(BUILD_TARGETS=kokkos-moe-replay "$root/scripts/build.sh" host)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
exec "$build/drivers/kokkos-moe-replay" "$root/inputs/mixtral-8x7b-zipf0.3.h5" --check "$@"
