#!/usr/bin/env bash
# Builds KokkosMoE (library, drivers, tests, benchmarks) for one backend,
# building Kokkos first when needed (scripts/deps.sh). Prints the build dir.
#
#   scripts/build.sh [host|cuda]     (default host; build dir build-<backend>)
#
# Kokkos_ROOT=<prefix> uses an installed Kokkos + Kokkos Kernels instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
backend=${1:-host}
jobs=${JOBS:-$(nproc)}
build="$root/build-$backend"

prefix=$("$root/scripts/deps.sh" "$backend" | tail -n 1)
extra=()
if [ "$backend" = cuda ]; then
  # Kokkos' nvcc_wrapper compiles the CUDA backend's C++; its default arch is
  # Hopper (sm_90) in our patched copy, and Kokkos adds the configured arch.
  extra+=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper")
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DKokkos_ROOT="$prefix" -DKokkosKernels_ROOT="$prefix" "${extra[@]}" >&2
cmake --build "$build" -j "$jobs" >&2
echo "$build"
