# SPDX-License-Identifier: BSD-3-Clause
# Runs a program (EXE) with ARGS (a |-separated list) and checks its exit code
# (EXPECT_CODE) and that stdout+stderr match EXPECT_REGEX: a test passes only
# when both hold (CTest's PASS_REGULAR_EXPRESSION alone ignores the exit
# code). Used by the driver command-line tests and by every test that checks
# a program's output.
#
# Optional:
#   REJECT_REGEX  the output must not match it (e.g. "FAILED")
#   STDOUT_FILE   stdout goes to this file instead (e.g. /dev/full); then only
#                 stderr is matched
#
# A program that fails (nonzero exit) says why in at most one line on stderr:
# the drivers promise one-line errors, so more is a failure of the test.
string(REPLACE "|" ";" ARGS "${ARGS}")
if(DEFINED STDOUT_FILE AND NOT STDOUT_FILE STREQUAL "")
  execute_process(COMMAND ${EXE} ${ARGS}
    RESULT_VARIABLE code OUTPUT_FILE "${STDOUT_FILE}" ERROR_VARIABLE err)
  set(out "")
else()
  execute_process(COMMAND ${EXE} ${ARGS}
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
endif()
set(all "${out}${err}")
if(NOT code STREQUAL "${EXPECT_CODE}")
  message(FATAL_ERROR "exit code ${code}, expected ${EXPECT_CODE}; output:\n${all}")
endif()
if(NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}':\n${all}")
endif()
if(DEFINED REJECT_REGEX AND NOT REJECT_REGEX STREQUAL "" AND all MATCHES "${REJECT_REGEX}")
  message(FATAL_ERROR "output matches '${REJECT_REGEX}':\n${all}")
endif()
if(NOT EXPECT_CODE STREQUAL "0")
  string(REGEX REPLACE "\n$" "" last_line_ended "${err}")
  if(last_line_ended MATCHES "\n")
    message(FATAL_ERROR "a failing run must say why in one line; stderr has more:\n${err}")
  endif()
endif()
# Passed: the output still shows in `ctest -V` (tests/install/run.sh quotes
# the PASSED lines from there).
string(STRIP "${all}" shown)
if(NOT shown STREQUAL "")
  message("${shown}")
endif()
