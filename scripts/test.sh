#!/usr/bin/env bash
# The tests: builds the host backends (OpenMP and Serial) and runs CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$("$root/scripts/build.sh" host)
cd "$build"
ctest --output-on-failure -j "${JOBS:-$(nproc)}"
