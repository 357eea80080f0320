# SPDX-License-Identifier: BSD-3-Clause
# Backend-specific code lives in the backend folders only (src/cuda, src/hip,
# src/host, src/portable, and such folders under include/KokkosMoE): every
# other source under src/ and include/ is backend-neutral, so that a new
# backend is one folder (docs/adding-a-backend.md). Fails naming each line
# of a neutral file that holds device-pass macros, inline assembly, AMD or
# NVIDIA builtins, or x86 intrinsics.
#   cmake -DROOT=<source dir> -P check_backend_boundary.cmake
set(_patterns "__CUDA_ARCH__" "asm\\(" "asm volatile" "__HIP_DEVICE_COMPILE__"
  "__builtin_amdgcn" "__nv_" "_mm[0-9]*_" "immintrin")
file(GLOB_RECURSE _files RELATIVE ${ROOT}
  ${ROOT}/src/*.hpp ${ROOT}/src/*.cpp ${ROOT}/src/*.h ${ROOT}/src/*.in
  ${ROOT}/include/*.hpp ${ROOT}/include/*.h)
set(_found "")
set(_checked 0)
foreach(_file IN LISTS _files)
  if(_file MATCHES "/(cuda|hip|host|portable)/")
    continue()
  endif()
  math(EXPR _checked "${_checked} + 1")
  foreach(_pattern IN LISTS _patterns)
    file(STRINGS ${ROOT}/${_file} _lines REGEX "${_pattern}")
    foreach(_line IN LISTS _lines)
      string(APPEND _found "  ${_file}: ${_line}\n")
    endforeach()
  endforeach()
endforeach()
if(_checked LESS 20)
  message(FATAL_ERROR "only ${_checked} neutral sources found under ${ROOT}: wrong ROOT?")
endif()
if(_found)
  message(FATAL_ERROR "backend-specific code outside the backend folders:\n${_found}")
endif()
message(STATUS "${_checked} backend-neutral sources hold no backend-specific code")
