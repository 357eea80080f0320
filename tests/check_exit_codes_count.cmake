# SPDX-License-Identifier: BSD-3-Clause
# Fails when a CMake file of the tests or the examples decides a test's pass
# by its output alone (PASS_REGULAR_EXPRESSION, FAIL_REGULAR_EXPRESSION):
# CTest then ignores the exit code, so a program that prints PASSED and
# exits 1 (or is killed, or has a sanitizer report a leak at exit) passes.
# Run such programs through tests/run_cli.cmake, which checks both.
#   cmake -DROOT=<source dir> -P tests/check_exit_codes_count.cmake
file(GLOB_RECURSE files LIST_DIRECTORIES false
  "${ROOT}/tests/*CMakeLists.txt" "${ROOT}/tests/*.cmake"
  "${ROOT}/examples/*CMakeLists.txt" "${ROOT}/examples/*.cmake")
set(found "")
foreach(f IN LISTS files)
  if(f MATCHES "/check_exit_codes_count\\.cmake$")
    continue()
  endif()
  file(STRINGS "${f}" lines REGEX "(PASS|FAIL)_REGULAR_EXPRESSION")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^[ \t]*#")
      file(RELATIVE_PATH rel "${ROOT}" "${f}")
      string(APPEND found "\n  ${rel}: ${line}")
    endif()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "tests whose pass ignores the exit code (use tests/run_cli.cmake):${found}")
endif()
message(STATUS "every test's exit code counts (${ROOT})")
