#!/usr/bin/env bash
# Collects what the CUDA build needs on a GPU machine without HDF5: the test
# and driver binaries, the non-system shared libraries they load (HDF5 and its
# dependencies; not glibc, libstdc++ or CUDA), and the traces to replay.
#
#   scripts/gpu-bundle.sh BUILD_DIR BUNDLE [TRACE.h5...]
set -euo pipefail
build=$1 bundle=$2
shift 2
rm -rf "$bundle" && mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/traces"
cp "$build/tests/KokkosMoE_tests" "$build/tests/trace/kokkosmoe_trace_tests" \
  "$build/drivers/kokkos-moe-replay" "$build/drivers/kokkos-moe-trace" "$bundle/bin/"
strip "$bundle"/bin/*
for b in "$bundle"/bin/*; do ldd "$b" | awk '/=>/ {print $3}'; done | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt)\.so|cuda' |
  xargs -r -I{} cp -L {} "$bundle/lib/"
root=$(cd "$(dirname "$0")/.." && pwd)
cp "$root"/inputs/*.h5 "$@" "$bundle/traces/"
du -sh "$bundle"
