# SPDX-License-Identifier: BSD-3-Clause
# The instruction set of the host kernels: the host fragment
# (src/host/KokkosMoE_Host_Fragment.hpp) is written in vectors as wide as the
# compile allows, so this decides its speed.
#
#   KokkosMoE_HOST_ARCH   native (default): this machine's, resolved to its
#                         name with GCC (e.g. rocketlake) and the features
#                         that name lacks, so that a compile cache shared
#                         across machines keys on it; kokkos:
#                         what Kokkos' own host arch option gives (Kokkos_ARCH_*,
#                         nothing more from here); baseline: the compiler's
#                         default (x86-64: SSE2); any other value: -march=VALUE.
#
# kokkosmoe_host_arch(<target>...) gives the flags to the targets that
# compile the kernels (the libraries' instantiations, the tests and
# benchmarks that instantiate fragments), so that every definition of a
# kernel is compiled alike. Builds with a GPU backend keep the compiler's
# default: their compilers see host code as device code too, and their host
# spaces take the portable fragment. With nvcc, a host-only function called
# from device code is an error there, not a warning (#20011, #20014): the
# kernel would run without the call's result.
set(KokkosMoE_HOST_ARCH "native" CACHE STRING
  "Host instruction set: native, kokkos (Kokkos' host arch), baseline, or a -march value")
set(KOKKOSMOE_KERNEL_FLAGS "")
set(_extra "")
# The instruction-set options GCC's -Q --help=target lists as enabled
# (-mavx512f [enabled] -> avx512f), in <out>.
function(kokkosmoe_enabled_features out text)
  string(REGEX MATCHALL "\n[ \t]+-m[a-z0-9.-]+[ \t]+\\[enabled\\]" _lines "${text}")
  set(_features "")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE "^[\n \t]+-m([a-z0-9.-]+).*$" "\\1" _f "${_line}")
    list(APPEND _features ${_f})
  endforeach()
  set(${out} ${_features} PARENT_SCOPE)
endfunction()
if(NOT "CUDA" IN_LIST Kokkos_DEVICES AND NOT "HIP" IN_LIST Kokkos_DEVICES)
  set(_arch "${KokkosMoE_HOST_ARCH}")
  if(_arch STREQUAL "native" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -march=native -Q --help=target
      OUTPUT_VARIABLE _targets ERROR_QUIET)
    if(_targets MATCHES "-march=[ \t]+([a-z0-9_-]+)")
      set(_arch "${CMAKE_MATCH_1}")
      # A compiler older than the CPU names the nearest CPU it knows (GCC 12
      # on a recent AMD EPYC: znver3, without AVX-512): the features native has and that
      # name lacks, or the reverse, are added as -m and -mno- options.
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -march=${_arch} -Q --help=target
        OUTPUT_VARIABLE _named ERROR_QUIET)
      kokkosmoe_enabled_features(_native_features "${_targets}")
      kokkosmoe_enabled_features(_named_features "${_named}")
      foreach(_f IN LISTS _native_features)
        if(NOT _f IN_LIST _named_features)
          list(APPEND _extra -m${_f})
        endif()
      endforeach()
      foreach(_f IN LISTS _named_features)
        if(NOT _f IN_LIST _native_features)
          list(APPEND _extra -mno-${_f})
        endif()
      endforeach()
    endif()
  endif()
  if(NOT _arch STREQUAL "kokkos" AND NOT _arch STREQUAL "baseline")
    set(KOKKOSMOE_KERNEL_FLAGS -march=${_arch} ${_extra})
  endif()
  # No fusing of a * b + c into an FMA behind the code's back (GCC does it
  # by default where the instruction set has FMA): kernels that must agree
  # bit for bit (the expert-parallel and one-device combines) could fuse
  # differently. The host fragments fuse explicitly.
  list(APPEND KOKKOSMOE_KERNEL_FLAGS -ffp-contract=off)
  string(JOIN " " _flags ${KOKKOSMOE_KERNEL_FLAGS})
  message(STATUS "KokkosMoE: host kernels compiled with '${_flags}' "
    "(KokkosMoE_HOST_ARCH=${KokkosMoE_HOST_ARCH})")
endif()

if("CUDA" IN_LIST Kokkos_DEVICES AND Kokkos_CXX_COMPILER_ID STREQUAL "NVIDIA")
  set(KOKKOSMOE_KERNEL_FLAGS "SHELL:-Xcudafe --diag_error=20011 -Xcudafe --diag_error=20014")
endif()

function(kokkosmoe_host_arch)
  foreach(_target IN LISTS ARGN)
    target_compile_options(${_target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX,CUDA>:${KOKKOSMOE_KERNEL_FLAGS}>")
  endforeach()
endfunction()
