# SPDX-License-Identifier: BSD-3-Clause
# The instruction set of the host code (the host backends' kernels): the
# host fragment (src/KokkosMoE_Host_Fragment.hpp) is written in vectors as
# wide as the compile allows, so this decides its speed.
#
#   KokkosMoE_HOST_ARCH   native (default): this machine's, resolved to its
#                         name (e.g. sapphirerapids) so that a compile cache
#                         shared across machines keys on it; kokkos: what
#                         Kokkos' own host arch option gives (Kokkos_ARCH_*,
#                         nothing more from here); baseline: the compiler's
#                         default (x86-64: SSE2); any other value: -march=VALUE.
#
# Builds with a GPU backend keep the compiler's default: their compilers
# see host code as device code too, and their host spaces take the
# portable fragment. GCC also gets -ffp-contract=fast: ISO C++ mode turns
# off the fusing of a * b + c into one FMA, which the fragment's inner
# loops are written for (clang fuses within an expression by default).
set(KokkosMoE_HOST_ARCH "native" CACHE STRING
  "Host instruction set: native, kokkos (Kokkos' host arch), baseline, or a -march value")
set(KOKKOSMOE_HOST_FLAGS "")
if(NOT "CUDA" IN_LIST Kokkos_DEVICES AND NOT "HIP" IN_LIST Kokkos_DEVICES)
  set(_arch "${KokkosMoE_HOST_ARCH}")
  if(_arch STREQUAL "native" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -march=native -Q --help=target
      OUTPUT_VARIABLE _targets ERROR_QUIET)
    if(_targets MATCHES "-march=[ \t]+([a-z0-9_-]+)")
      set(_arch "${CMAKE_MATCH_1}")
    endif()
  endif()
  if(NOT _arch STREQUAL "kokkos" AND NOT _arch STREQUAL "baseline")
    list(APPEND KOKKOSMOE_HOST_FLAGS -march=${_arch})
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND KOKKOSMOE_HOST_FLAGS -ffp-contract=fast)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${KOKKOSMOE_HOST_FLAGS}>")
  string(JOIN " " _flags ${KOKKOSMOE_HOST_FLAGS})
  message(STATUS "KokkosMoE: host code compiled with ${_flags} "
    "(KokkosMoE_HOST_ARCH=${KokkosMoE_HOST_ARCH})")
endif()
