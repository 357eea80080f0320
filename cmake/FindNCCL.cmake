# SPDX-License-Identifier: BSD-3-Clause
# Finds NCCL: NCCL_INCLUDE_DIR (nccl.h), NCCL_LIBRARY (libnccl), NCCL_VERSION,
# and the imported target NCCL::NCCL. Looks under NCCL_ROOT (variable or
# environment), then the CUDA toolkit's directory (that of nvcc, CUDA_HOME or
# CUDA_PATH), then the system's. NCCL from the Python wheel nvidia-nccl-cu*:
# NCCL_ROOT=<site-packages>/nvidia/nccl.
find_program(_nccl_nvcc nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin)
set(_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{CUDA_HOME} $ENV{CUDA_PATH})
if(_nccl_nvcc)
  get_filename_component(_nccl_cuda "${_nccl_nvcc}" REALPATH)
  get_filename_component(_nccl_cuda "${_nccl_cuda}" DIRECTORY)
  get_filename_component(_nccl_cuda "${_nccl_cuda}" DIRECTORY)
  list(APPEND _nccl_hints "${_nccl_cuda}")
endif()
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
# The wheel has only the versioned name.
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints}
  PATH_SUFFIXES lib lib64 targets/x86_64-linux/lib targets/sbsa-linux/lib)
if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines
    REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define NCCL_${_part} +([0-9]+).*" "\\1" _nccl_${_part}
      "${_nccl_version_lines}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::NCCL)
  add_library(NCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(NCCL::NCCL PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
