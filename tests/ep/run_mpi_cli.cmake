# SPDX-FileCopyrightText: 2026 the KokkosMoE authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs an MPI job (COMMAND, a |-separated list: mpiexec, its flags, the
# program and its arguments) and checks its exit code (EXPECT_CODE) and that
# stdout+stderr match EXPECT_REGEX. Then, optionally:
#   ERROR_LINES  how many lines start with "error:" (an error every rank has
#                is reported once, by rank 0)
#   JSON_FILE, JSON_REGEX  the file the job wrote matches the regex
# (tests/run_cli.cmake's one-line rule does not apply: mpiexec and Kokkos
# add lines of their own to stderr.)
string(REPLACE "|" ";" COMMAND "${COMMAND}")
if(DEFINED JSON_FILE)
  file(REMOVE "${JSON_FILE}")
endif()
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT code STREQUAL "${EXPECT_CODE}")
  message(FATAL_ERROR "exit code ${code}, expected ${EXPECT_CODE}; output:\n${all}")
endif()
if(NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}':\n${all}")
endif()
if(DEFINED ERROR_LINES)
  string(REGEX MATCHALL "(^|\n)error:" found "${all}")
  list(LENGTH found count)
  if(NOT count EQUAL ERROR_LINES)
    message(FATAL_ERROR "${count} lines start with 'error:', expected ${ERROR_LINES}:\n${all}")
  endif()
endif()
if(DEFINED JSON_FILE)
  file(READ "${JSON_FILE}" json)
  if(NOT json MATCHES "${JSON_REGEX}")
    message(FATAL_ERROR "${JSON_FILE} does not match '${JSON_REGEX}':\n${json}")
  endif()
endif()
string(STRIP "${out}" shown)
if(NOT shown STREQUAL "")
  message("${shown}")
endif()
