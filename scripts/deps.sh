#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what KokkosMoE needs and builds Kokkos + Kokkos Kernels 3.4.01 from
# Debian's trilinos source package when no usable installation is given.
#
#   scripts/deps.sh [host|cuda|hip]...      (default: host)
#
#   host   OpenMP + Serial, g++
#   cuda   CUDA + Serial through Kokkos' nvcc_wrapper (nvcc on PATH)
#   hip    HIP + Serial with Debian's hipcc 5.2 (clang 15), installed here with
#          libamdhip64-dev; compiles and links without an AMD GPU. Kokkos
#          Kernels 3.4 has no rocBLAS TPL: its own kernels serve HIP
#
# Prints nothing but progress on stderr; the last line on stdout of each
# backend is the install prefix (also reachable as $CACHE/<key>/install; <key>
# is kokkos-<version>-<backend>[-<CUDA_ARCH or HIP_ARCH>]-<hash of
# cmake/patches/*.patch and the commands of this script>).
#
# Environment:
#   KOKKOS_MOE_CACHE   cache root (default ~/.cache/kokkos-moe)
#   Kokkos_ROOT        an existing Kokkos install (spack, module): nothing is
#                      built, this prefix is printed instead
#   CUDA_ARCH          Kokkos arch name for the CUDA build (default HOPPER90)
#   HIP_ARCH           Kokkos arch name for the HIP build (default VEGA90A,
#                      gfx90a, MI200; also VEGA908 gfx908, AMD_GFX940 gfx940:
#                      VEGA90A and AMD_GFX940 come from our patch
#                      cmake/patches/kokkos-3.4-hip-gfx90a.patch)
#   JOBS               parallel compile jobs (default: nproc)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cache=${KOKKOS_MOE_CACHE:-$HOME/.cache/kokkos-moe}
jobs=${JOBS:-$(nproc)}
cuda_arch=${CUDA_ARCH:-HOPPER90}
hip_arch=${HIP_ARCH:-VEGA90A}
kokkos_version=3.4.01
trilinos_version=13.2.0
log() { echo "[deps] $*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages: HDF5 (trace component), GoogleTest, Google Benchmark,
# compilers, ccache (scripts/build.sh's compiles); hipcc and the HIP runtime
# (libamdhip64) only when the hip backend is asked for.
install_debian_packages() {
  local missing=() packages=(libhdf5-dev libgtest-dev libbenchmark-dev cmake g++
    gfortran make patch ccache)
  # gfortran: the Fortran module and example (CI checks them against the install).
  case " $* " in *" hip "*) packages+=(hipcc libamdhip64-dev) ;; esac
  # OpenMPI: the host build's expert-parallel component and its mpiexec
  # tests; OpenBLAS: the host benchmark's CBLAS peer and sgemm rate (the
  # reference BLAS that other packages pull in is 30-50x slower).
  case " $* " in *" host "*) packages+=(libopenmpi-dev openmpi-bin libopenblas-dev) ;; esac
  for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    as_root apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q "${missing[@]}" >&2
  fi
}

# A deb-src entry derived from the system's own sources (no host names here).
ensure_deb_src() {
  local src=/etc/apt/sources.list.d/kokkos-moe-src.sources
  if apt-cache showsrc trilinos 2>/dev/null | grep -q "^Version: ${trilinos_version}"; then
    return
  fi
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
      as_root tee "$src" >/dev/null
  elif [ -f /etc/apt/sources.list ]; then
    grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' |
      as_root tee /etc/apt/sources.list.d/kokkos-moe-src.list >/dev/null
  fi
  as_root apt-get update -q >&2
}

# Kokkos and Kokkos Kernels sources, unpacked once into the cache.
fetch_sources() {
  local dir="$cache/src/trilinos-$trilinos_version"
  if [ ! -f "$dir/.complete" ]; then
    ensure_deb_src
    rm -rf "$dir" && mkdir -p "$dir"
    log "downloading Debian's trilinos $trilinos_version source"
    (cd "$dir" && apt-get source --download-only "trilinos=$trilinos_version-*" >&2 ||
      apt-get source --download-only trilinos >&2)
    (cd "$dir" && tar xzf trilinos_*.orig.tar.gz --strip-components=2 \
      --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*' &&
      rm -f trilinos_*.orig.tar.gz)
    touch "$dir/.complete"
  fi
  echo "$dir"
}

# The gfx target of a Kokkos AMD GPU arch name.
amdgpu_target() {
  case $1 in
    VEGA900) echo gfx900 ;; VEGA906) echo gfx906 ;; VEGA908) echo gfx908 ;;
    VEGA90A) echo gfx90a ;; AMD_GFX940) echo gfx940 ;;
    *) log "unknown HIP_ARCH $1 (VEGA900|VEGA906|VEGA908|VEGA90A|AMD_GFX940)"; exit 2 ;;
  esac
}

patch_hash() {  # the patches and this script's commands (not its comments)
  { cat "$root"/cmake/patches/*.patch; grep -v '^[[:space:]]*#' "$0"; } | sha256sum | cut -c1-12
}

build_backend() {
  local backend=$1 key prefix src build kokkos_opts cxx gfx
  key="kokkos-$kokkos_version-$backend-$(patch_hash)"
  [ "$backend" = cuda ] && key="kokkos-$kokkos_version-cuda-$cuda_arch-$(patch_hash)"
  [ "$backend" = hip ] && key="kokkos-$kokkos_version-hip-$hip_arch-$(patch_hash)"
  prefix="$cache/$key/install"
  if [ -f "$prefix/.complete" ]; then
    log "$backend: cached at $prefix"
    echo "$prefix"
    return
  fi
  src=$(fetch_sources)
  build="$cache/$key/build"
  rm -rf "$cache/$key" && mkdir -p "$build"
  # Patch a private copy so the cached source stays pristine for other keys.
  cp -r "$src/kokkos" "$build/kokkos-src"
  for p in "$root"/cmake/patches/kokkos-3.4-*.patch; do
    patch -s -p1 -d "$build/kokkos-src" <"$p"
  done

  cxx=g++
  case $backend in
    host) kokkos_opts=(-DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON) ;;
    cuda)
      cxx="$build/kokkos-src/bin/nvcc_wrapper"
      kokkos_opts=(-DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_SERIAL=ON
        -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_${cuda_arch}=ON)
      ;;
    hip)
      cxx=hipcc
      kokkos_opts=(-DKokkos_ENABLE_HIP=ON -DKokkos_ENABLE_SERIAL=ON
        -DKokkos_ARCH_${hip_arch}=ON)
      # hipcc runs rocm_agent_enumerator (a traceback without a GPU) whenever
      # it is called without an arch, as CMake's probes do: give it ours.
      gfx=$(amdgpu_target "$hip_arch")
      export HCC_AMDGPU_TARGET=$gfx
      ;;
    *) log "unknown backend $backend (host|cuda|hip)"; exit 2 ;;
  esac

  log "$backend: building Kokkos $kokkos_version into $prefix"
  cmake -S "$build/kokkos-src" -B "$build/kokkos" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_STANDARD=17 \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DBUILD_SHARED_LIBS=OFF "${kokkos_opts[@]}" >&2
  cmake --build "$build/kokkos" -j "$jobs" >&2
  cmake --install "$build/kokkos" >&2

  # No explicit instantiations: the few BLAS calls we make compile from headers
  # in our own translation units (the default ETI takes ~1 h for CUDA on 2 cores).
  log "$backend: building Kokkos Kernels $kokkos_version"
  local kk_opts=(-DKokkosKernels_ADD_DEFAULT_ETI=OFF
    -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF
    -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF -DKokkosKernels_INST_COMPLEX_FLOAT=OFF
    -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_ORDINAL_INT64_T=OFF
    -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF
    -DKokkosKernels_INST_LAYOUTLEFT=OFF -DKokkosKernels_INST_LAYOUTRIGHT=OFF
    -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF
    -DKokkosKernels_INST_EXECSPACE_CUDA=OFF -DKokkosKernels_INST_MEMSPACE_CUDAUVMSPACE=OFF
    -DKokkosKernels_INST_EXECSPACE_HIP=OFF -DKokkosKernels_INST_MEMSPACE_HIPSPACE=OFF
    -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF)
  # cuSPARSE's legacy API is gone in CUDA 12+; cuBLAS serves the reference GEMM.
  [ "$backend" = cuda ] && kk_opts+=(-DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF
    -DKokkosKernels_ENABLE_TPL_CUBLAS=ON)
  cmake -S "$src/kokkos-kernels" -B "$build/kokkos-kernels" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_STANDARD=17 \
    -DKokkos_ROOT="$prefix" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF "${kk_opts[@]}" >&2
  cmake --build "$build/kokkos-kernels" -j "$jobs" >&2
  cmake --install "$build/kokkos-kernels" >&2

  # nvcc_wrapper must stay reachable for consumers of the CUDA build.
  rm -rf "$build/kokkos" "$build/kokkos-kernels"
  touch "$prefix/.complete"
  echo "$prefix"
}

main() {
  local backends=("$@")
  [ ${#backends[@]} -eq 0 ] && backends=(host)
  install_debian_packages "${backends[@]}"
  for b in "${backends[@]}"; do
    if [ -n "${Kokkos_ROOT:-}" ]; then
      log "using Kokkos from Kokkos_ROOT=$Kokkos_ROOT"
      echo "$Kokkos_ROOT"
      continue
    fi
    build_backend "$b"
  done
}

main "$@"
