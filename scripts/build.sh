#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds KokkosMoE (library, drivers, tests, benchmarks) for one backend,
# building Kokkos first when needed (scripts/deps.sh). Prints the build dir.
#
#   scripts/build.sh [host|host-asan|cuda|hip]  (default host; build dir build-<backend>)
#
#   host       OpenMP + Serial, g++, with the expert-parallel component over
#              Debian's OpenMPI (KokkosMoE_ENABLE_MPI) and its mpiexec tests
#   host-asan  the host build under AddressSanitizer and UndefinedBehaviorSanitizer
#              (-fsanitize=address,undefined -fno-sanitize-recover=undefined,
#              -O1 -g, assertions on), without the benchmarks; only the
#              project's targets are instrumented: they link the host build's
#              Kokkos and Kokkos Kernels (same prefix). scripts/test.sh
#              host-asan runs its tests
#   cuda       CUDA + Serial, sm_90a, through Kokkos' nvcc_wrapper (needs nvcc)
#   hip        HIP + Serial, gfx90a by default (HIP_ARCH, see scripts/deps.sh),
#              with Debian's hipcc; links against Debian's libamdhip64. Compiles
#              and links only here: no AMD GPU to run on
#
# Environment:
#   Kokkos_ROOT=<prefix>  uses an installed Kokkos + Kokkos Kernels instead
#   CUDA_ARCH, HIP_ARCH   Kokkos arch names, passed on to scripts/deps.sh
#   JOBS                  parallel compile jobs (default: nproc)
#   BUILD_TARGETS         builds only these targets (space-separated; default all)
#   KOKKOS_MOE_CACHE      cache root (default ~/.cache/kokkos-moe)
#   CCACHE_DIR            ccache's cache (default $KOKKOS_MOE_CACHE/ccache)
#   KOKKOS_MOE_CCACHE=0   compiles without ccache
#
# The project's C and C++ compiles go through ccache when it is installed
# (deps.sh installs it), for g++, nvcc_wrapper and hipcc alike: ccache
# preprocesses with the compiler itself, whose -E output covers the device
# pass too (a change seen only under __CUDA_ARCH__ or __HIP_DEVICE_COMPILE__
# misses, as it must). The launcher sets CCACHE_DIR and CCACHE_BASEDIR (this
# checkout), so a fresh clone elsewhere (CI) hits what an earlier one cached.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
backend=${1:-host}
jobs=${JOBS:-$(nproc)}
build="$root/build-$backend"
cache=${KOKKOS_MOE_CACHE:-$HOME/.cache/kokkos-moe}
deps_backend=$backend
[ "$backend" = host-asan ] && deps_backend=host

prefix=$("$root/scripts/deps.sh" "$deps_backend" | tail -n 1)
# A build dir keeps the Kokkos it first found (Kokkos_DIR) over Kokkos_ROOT:
# forget it, so a new deps key (patches, arch) is picked up.
extra=(-UKokkos_DIR -UKokkosKernels_DIR)
build_type=Release
ccache_env=()
if [ "$backend" = host-asan ]; then
  # Debug, with its flags replaced: -O1 keeps the sanitized tests fast, -g
  # gives file:line in the reports, and NDEBUG stays off (assertions run).
  # The flags go on every C, C++ and Fortran compile and every link.
  san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
  build_type=Debug
  for lang in C CXX Fortran; do
    extra+=("-DCMAKE_${lang}_FLAGS=$san" "-DCMAKE_${lang}_FLAGS_DEBUG=-O1 -g")
  done
  for kind in EXE SHARED MODULE; do
    extra+=("-DCMAKE_${kind}_LINKER_FLAGS=-fsanitize=address,undefined")
  done
  extra+=(-DKokkosMoE_ENABLE_BENCHMARKS=OFF)
elif [ "$backend" = host ]; then
  extra+=(-DKokkosMoE_ENABLE_MPI=ON)
elif [ "$backend" = cuda ]; then
  # Kokkos' nvcc_wrapper compiles the CUDA backend's C++; its default arch is
  # Hopper (sm_90) in our patched copy, and Kokkos adds the configured arch.
  extra+=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper")
  # The expert-parallel layer where MPI is installed (the host backend's
  # dependencies), with its NCCL transport where nccl.h is under NCCL_ROOT or
  # beside nvcc (CUDA 13 toolkits ship NCCL).
  nvcc_include=$(dirname "$(readlink -f "$(command -v nvcc)")")/../include
  if ! command -v mpicxx >/dev/null; then
    extra+=(-DKokkosMoE_ENABLE_MPI=OFF -DKokkosMoE_ENABLE_NCCL=OFF)
  elif [ -n "${NCCL_ROOT:-}" ] || [ -f "$nvcc_include/nccl.h" ]; then
    extra+=(-DKokkosMoE_ENABLE_MPI=ON -DKokkosMoE_ENABLE_NCCL=ON
      ${NCCL_ROOT:+-DNCCL_ROOT="$NCCL_ROOT"})
  else
    extra+=(-DKokkosMoE_ENABLE_MPI=ON -DKokkosMoE_ENABLE_NCCL=OFF)
  fi
  # ccache would key the compiler on the wrapper script's mtime; its
  # --version (nvcc's) changes with the CUDA toolkit instead.
  ccache_env+=("CCACHE_COMPILERCHECK=%compiler% --version")
elif [ "$backend" = hip ]; then
  # Kokkos adds --amdgpu-target=<gfx> to each compile; hipcc links the HIP
  # runtime (libamdhip64) itself. hipcc called without an arch (CMake's probes,
  # links) asks rocm_agent_enumerator, a traceback without a GPU: give it the
  # arch Kokkos was built for.
  gfx=$(grep -ho -e '--amdgpu-target=gfx[0-9a-z]*' -e '--offload-arch=gfx[0-9a-z]*' \
    "$prefix"/lib*/cmake/Kokkos/KokkosTargets.cmake 2>/dev/null | head -n 1 | cut -d= -f2 || true)
  [ -n "$gfx" ] && export HCC_AMDGPU_TARGET=$gfx
  extra+=(-DCMAKE_CXX_COMPILER=hipcc)
  # hipcc is a perl script in front of clang: key ccache on its --version.
  ccache_env+=("CCACHE_COMPILERCHECK=%compiler% --version")
fi
if [ "${KOKKOS_MOE_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  launcher="env;CCACHE_DIR=${CCACHE_DIR:-$cache/ccache};CCACHE_BASEDIR=$root"
  for e in "${ccache_env[@]}"; do launcher+=";$e"; done
  launcher+=";ccache"
  extra+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_C_COMPILER_LAUNCHER="$launcher")
else
  extra+=(-UCMAKE_CXX_COMPILER_LAUNCHER -UCMAKE_C_COMPILER_LAUNCHER)
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="$build_type" \
  -DKokkos_ROOT="$prefix" -DKokkosKernels_ROOT="$prefix" "${extra[@]}" >&2
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}" >&2
echo "$build"
