# SPDX-License-Identifier: BSD-3-Clause
# What the Kokkos we build against can do, decided at configure time from its
# version and its installed configuration (never from a private Kokkos
# macro), and the optional Kokkos Kernels. Sets, for
# cmake/KokkosMoE_BuildConfig.hpp.in and src/:
#
#   KokkosMoE_ENABLE_KOKKOSKERNELS          option: router GEMM by KokkosBlas, the
#                                           unfused baseline (ON when found)
#   KokkosMoE_KOKKOSKERNELS_TARGET          Kokkos::kokkoskernels or KokkosKernels::all_libs
#   KokkosMoE_ENABLE_CUDA_LARGE_TEAM_SCRATCH option: CUDA kernels ask for more than
#                                           48 KiB of team scratch (the fast tile shapes)
#   KokkosMoE_ENABLE_CUDA_WGMMA             option: Hopper's wgmma, code compiled for sm_90a
set(_kmoe_cuda OFF)
if("CUDA" IN_LIST Kokkos_DEVICES)
  set(_kmoe_cuda ON)
endif()

# --- Kokkos Kernels: optional. Kokkos Kernels' own install exports
# Kokkos::kokkoskernels, Trilinos' install KokkosKernels::all_libs.
find_package(KokkosKernels QUIET)
option(KokkosMoE_ENABLE_KOKKOSKERNELS
  "Router GEMM by Kokkos Kernels and the unfused KokkosBlas baseline (else our own router kernel)"
  ${KokkosKernels_FOUND})
set(KokkosMoE_KOKKOSKERNELS_TARGET "")
if(KokkosMoE_ENABLE_KOKKOSKERNELS)
  find_package(KokkosKernels REQUIRED)
  foreach(_target Kokkos::kokkoskernels KokkosKernels::all_libs)
    if(TARGET ${_target})
      set(KokkosMoE_KOKKOSKERNELS_TARGET ${_target})
      break()
    endif()
  endforeach()
  if(NOT KokkosMoE_KOKKOSKERNELS_TARGET)
    message(FATAL_ERROR "KokkosMoE: Kokkos Kernels ${KokkosKernels_VERSION} found in "
      "${KokkosKernels_DIR} exports neither Kokkos::kokkoskernels nor KokkosKernels::all_libs")
  endif()
  set(_kmoe_kk_version "${KokkosKernels_VERSION}")
  if(NOT _kmoe_kk_version)
    set(_kmoe_kk_version "(no version exported: Trilinos' install)")
  endif()
  message(STATUS "KokkosMoE: Kokkos Kernels ${_kmoe_kk_version} (${KokkosMoE_KOKKOSKERNELS_TARGET})")
else()
  message(STATUS "KokkosMoE: without Kokkos Kernels (router GEMM by our own kernel, no unfused baseline)")
endif()

# The Kokkos library targets whose interface carries the compile options.
set(_kmoe_kokkos_targets)
foreach(_target Kokkos::kokkoscore Kokkos::kokkos)
  if(TARGET ${_target})
    get_target_property(_aliased ${_target} ALIASED_TARGET)
    if(NOT _aliased)
      list(APPEND _kmoe_kokkos_targets ${_target})
    endif()
  endif()
endforeach()
set(_kmoe_kokkos_options "")
foreach(_target IN LISTS _kmoe_kokkos_targets)
  get_target_property(_options ${_target} INTERFACE_COMPILE_OPTIONS)
  if(_options)
    list(APPEND _kmoe_kokkos_options ${_options})
  endif()
endforeach()

# --- Team scratch beyond 48 KiB on CUDA. Kokkos >= 5.2 opts a kernel in to
# the device's whole shared memory per block by itself; Kokkos 3.4 does with
# our patch (cmake/patches/kokkos-3.4-cuda-shmem-optin.patch), recognised by
# the opt-in call it adds to Kokkos' installed launch header. Every other
# Kokkos caps team scratch near 40-48 KiB: the kernels then take the smaller
# tile shapes (src/cuda/KokkosMoE_Cuda_Fragment.hpp).
set(_kmoe_large_scratch OFF)
if(_kmoe_cuda)
  if(Kokkos_VERSION VERSION_GREATER_EQUAL 5.2.0)
    set(_kmoe_large_scratch ON)
    set(_kmoe_large_scratch_why "Kokkos ${Kokkos_VERSION} >= 5.2 opts in")
  else()
    set(_kmoe_launch_header "")
    foreach(_target IN LISTS _kmoe_kokkos_targets)
      get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
      foreach(_dir IN LISTS _dirs)
        if(EXISTS "${_dir}/Cuda/Kokkos_Cuda_KernelLaunch.hpp")
          set(_kmoe_launch_header "${_dir}/Cuda/Kokkos_Cuda_KernelLaunch.hpp")
        endif()
      endforeach()
    endforeach()
    set(_kmoe_large_scratch_why "Kokkos ${Kokkos_VERSION} without the opt-in patch")
    if(_kmoe_launch_header)
      file(STRINGS "${_kmoe_launch_header}" _optin REGEX "cudaDevAttrMaxSharedMemoryPerBlockOptin")
      if(_optin)
        set(_kmoe_large_scratch ON)
        set(_kmoe_large_scratch_why "Kokkos ${Kokkos_VERSION} patched to opt in")
      endif()
    endif()
  endif()
endif()
option(KokkosMoE_ENABLE_CUDA_LARGE_TEAM_SCRATCH
  "CUDA kernels use team scratch beyond 48 KiB (Kokkos >= 5.2, or 3.4 with our patch)"
  ${_kmoe_large_scratch})
if(_kmoe_cuda)
  message(STATUS "KokkosMoE: CUDA team scratch beyond 48 KiB ${KokkosMoE_ENABLE_CUDA_LARGE_TEAM_SCRATCH}"
    " (detected ${_kmoe_large_scratch}: ${_kmoe_large_scratch_why})")
endif()

# --- Hopper's warpgroup MMA (wgmma) exists only in code compiled for sm_90a,
# and Kokkos' HOPPER90 compiles sm_90 (our patched 3.4 compiles sm_90a). ON
# by default where Kokkos compiles for compute capability 9.0 and the large
# team scratch the wgmma shapes need is there; where Kokkos compiles sm_90,
# the option turns Kokkos' sm_90 flag into sm_90a for this project's
# targets. Otherwise the kernels use mma.sync.
set(_kmoe_sm90 OFF)
if(_kmoe_cuda AND _kmoe_kokkos_options MATCHES "sm_90")
  set(_kmoe_sm90 ON)
endif()
set(_kmoe_wgmma OFF)
if(_kmoe_sm90 AND KokkosMoE_ENABLE_CUDA_LARGE_TEAM_SCRATCH)
  set(_kmoe_wgmma ON)
endif()
option(KokkosMoE_ENABLE_CUDA_WGMMA
  "CUDA kernels use Hopper's wgmma (the code is compiled for sm_90a)" ${_kmoe_wgmma})
if(KokkosMoE_ENABLE_CUDA_WGMMA)
  if(NOT _kmoe_sm90)
    message(FATAL_ERROR "KokkosMoE_ENABLE_CUDA_WGMMA needs a Kokkos built for compute "
      "capability 9.0 (Kokkos_ARCH_HOPPER90); this one compiles: ${_kmoe_kokkos_options}")
  endif()
  if(NOT _kmoe_kokkos_options MATCHES "sm_90a")
    # Imported targets are local to this directory tree: consumers of the
    # installed package get Kokkos' own flags (they compile only declarations).
    foreach(_target IN LISTS _kmoe_kokkos_targets)
      get_target_property(_options ${_target} INTERFACE_COMPILE_OPTIONS)
      if(_options)
        string(REGEX REPLACE "sm_90([^a0-9]|$)" "sm_90a\\1" _options "${_options}")
        string(REGEX REPLACE "compute_90([^a0-9]|$)" "compute_90a\\1" _options "${_options}")
        set_target_properties(${_target} PROPERTIES INTERFACE_COMPILE_OPTIONS "${_options}")
      endif()
    endforeach()
    message(STATUS "KokkosMoE: Kokkos compiles sm_90; this project's code is compiled for sm_90a")
  endif()
endif()
if(_kmoe_cuda)
  message(STATUS "KokkosMoE: CUDA wgmma kernels ${KokkosMoE_ENABLE_CUDA_WGMMA}")
endif()

# --- AMD matrix cores (MFMA): the CDNA fragment (src/hip/) where Kokkos
# compiles HIP for CDNA2 or CDNA3 (gfx90a, gfx940-942, gfx950), read from
# the arch flag in Kokkos' compile options; other AMD GPUs keep the portable
# fragment.
set(_kmoe_hip OFF)
if("HIP" IN_LIST Kokkos_DEVICES)
  set(_kmoe_hip ON)
endif()
set(_kmoe_cdna OFF)
if(_kmoe_hip AND _kmoe_kokkos_options MATCHES "(offload-arch|amdgpu-target)=(gfx90a|gfx94[012]|gfx950)")
  set(_kmoe_cdna ON)
endif()
option(KokkosMoE_ENABLE_HIP_MATRIX_CORES
  "HIP kernels multiply on CDNA2/CDNA3 matrix cores (MFMA)" ${_kmoe_cdna})
if(KokkosMoE_ENABLE_HIP_MATRIX_CORES AND NOT _kmoe_cdna)
  message(FATAL_ERROR "KokkosMoE_ENABLE_HIP_MATRIX_CORES needs a Kokkos built for HIP on "
    "gfx90a, gfx940-942 or gfx950; this one compiles: ${_kmoe_kokkos_options}")
endif()
if(_kmoe_hip)
  message(STATUS "KokkosMoE: HIP matrix-core (MFMA) kernels ${KokkosMoE_ENABLE_HIP_MATRIX_CORES}")
endif()
