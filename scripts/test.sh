#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The tests: builds the host backends (OpenMP and Serial) and runs CTest.
#
#   scripts/test.sh              build-host, every test but the fuzz run
#   scripts/test.sh host-asan    build-host-asan (scripts/build.sh host-asan:
#                                AddressSanitizer, LeakSanitizer and
#                                UndefinedBehaviorSanitizer), the tests below
#   scripts/test.sh fuzz         build-host-asan, the fuzz run of the drivers
#                                (CTest label fuzz, tests/fuzz): Fuzz.Drivers,
#                                1200 seeded cases, and Fuzz.Planted.*, which
#                                show that it catches a planted bug
#
# Under the sanitizers the first report ends the test process (abort_on_error,
# halt_on_error), so any report fails its test; leaks of third-party code
# are suppressed in scripts/sanitizer/lsan.supp, each with its reason. An
# allocation beyond what the sanitizer can give returns NULL, as malloc
# does (allocator_may_return_null), so that the out-of-memory paths run as
# they do without it. The sanitized run leaves out, for time (the heaviest
# tests take 5-10 times as long as in the release build):
#   - the Serial backend's copies of the backend tests: the same kernels and
#     layer code as the OpenMP ones, on one thread;
#   - Determinism_*: bitwise comparisons of repeated forwards that the Layer
#     tests run once each;
# and, as not meaningful there:
#   - SpackRecipe (Python);
#   - ReplayCli.AllocationFailure: the sanitizer's warning about the
#     impossible allocation comes before the error line the test expects at
#     the start of the output.
# TESTS_REGEX (a CTest -R regex) and TESTS_EXCLUDE (-E) replace that choice.
# The fuzz run (label fuzz) is left to `scripts/test.sh fuzz`, its own CI part.
#
# Extra arguments go to ctest (e.g. -R Layer_openmp, --repeat until-fail:3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=host
case ${1:-} in
  host | host-asan | fuzz) mode=$1; shift ;;
esac
build_mode=$mode
[ "$mode" = fuzz ] && build_mode=host-asan
build=$("$root/scripts/build.sh" "$build_mode")
cd "$build"
select=(-LE fuzz)
if [ "$build_mode" = host-asan ]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export LSAN_OPTIONS=suppressions=$root/scripts/sanitizer/lsan.supp:print_suppressions=0
fi
if [ "$mode" = host-asan ]; then
  [ -n "${TESTS_REGEX:-}" ] && select+=(-R "$TESTS_REGEX")
  select+=(-E "${TESTS_EXCLUDE:-_serial\.|^Determinism_|^SpackRecipe\$|^ReplayCli\.AllocationFailure\$}")
elif [ "$mode" = fuzz ]; then
  select=(-L fuzz)
fi
if [ "$mode" = fuzz ]; then
  rc=0
  ctest --output-on-failure -j "${JOBS:-$(nproc)}" "${select[@]}" "$@" || rc=$?
  # The fuzz run's own line: cases, time, failures.
  grep -hE '^fuzz: [0-9]+ cases in' Testing/Temporary/LastTest.log || true
  exit $rc
fi
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "${select[@]}" "$@"
