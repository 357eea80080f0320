#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The install test: installs a configured and built KokkosMoE build directory
# into a temporary prefix, then configures, builds and runs tests/install (a
# separate consumer project: C++ layer, C example, Fortran example) against
# that prefix only.
#
#   tests/install/run.sh BUILD_DIR [WORK_DIR]
#
# WORK_DIR (default: a fresh temporary directory, removed afterwards) holds
# the prefix and the consumer's build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [WORK_DIR]}" && pwd)
if [ -n "${2:-}" ]; then
  work=$2
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/kokkos-moe-install.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
prefix="$work/prefix"
consumer="$work/consumer"
rm -rf "$prefix" "$consumer"

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
components=()
[ "$(cache KokkosMoE_ENABLE_TRACE)" = ON ] && components+=(trace)
[ "$(cache KokkosMoE_ENABLE_FORTRAN)" = ON ] && components+=(fortran)
[ "$(cache KokkosMoE_ENABLE_MPI)" = ON ] && components+=(ep)
cxx=$(cache CMAKE_CXX_COMPILER)
kokkos_root=$(cache Kokkos_ROOT)

echo "[install] cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
# The consumer finds KokkosMoE in the prefix and Kokkos through the hint the
# package recorded (Kokkos_ROOT is passed too, as a user would).
echo "[install] configuring tests/install (components: ${components[*]:-none})"
cmake -S "$here" -B "$consumer" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" ${kokkos_root:+-DKokkos_ROOT="$kokkos_root"} \
  "-DKOKKOSMOE_REQUIRED_COMPONENTS=$(IFS=';'; echo "${components[*]:-}")" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
grep "KokkosMoE .* at " "$work/configure.log" | sed 's/^-- /[install] /'
cmake --build "$consumer" -j "${JOBS:-2}" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
status=0
(cd "$consumer" && ctest --output-on-failure -V) >"$work/ctest.log" 2>&1 || status=$?
grep -E "^[0-9]+: .*(PASSED|FAILED)|tests passed|tests failed" "$work/ctest.log" | sed 's/^[0-9]*: /[install] /'
[ "$status" = 0 ] || { cat "$work/ctest.log"; exit 1; }

# The trace component from a C++-only project, and without HDF5 (configure
# only: what find_package does).
if [[ " ${components[*]:-} " == *" trace "* ]]; then
  for hide in OFF ON; do
    cmake -S "$here/components" -B "$work/components-$hide" -DCMAKE_CXX_COMPILER="$cxx" \
      -DCMAKE_PREFIX_PATH="$prefix" ${kokkos_root:+-DKokkos_ROOT="$kokkos_root"} \
      -DKOKKOSMOE_HIDE_HDF5=$hide >"$work/components-$hide.log" 2>&1 ||
      { cat "$work/components-$hide.log"; exit 1; }
    grep "components check passed" "$work/components-$hide.log" | sed 's/^-- /[install] /'
  done
fi
