# SPDX-License-Identifier: BSD-3-Clause
# Installs the CMake package of KokkosMoE: one export set per component, so
# that the layer alone needs neither HDF5 nor a Fortran compiler.
#
#   KokkosMoETargets.cmake         KokkosMoE::moe, KokkosMoE::moe_c   (always)
#   KokkosMoETraceTargets.cmake    KokkosMoE::trace                   (component trace)
#   KokkosMoEFortranTargets.cmake  KokkosMoE::moe_fortran             (component fortran)
#   KokkosMoEEpTargets.cmake       KokkosMoE::ep (MPI)                (component ep)
include(CMakePackageConfigHelpers)
set(KokkosMoE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/KokkosMoE)

install(EXPORT KokkosMoETargets NAMESPACE KokkosMoE:: DESTINATION ${KokkosMoE_INSTALL_CMAKEDIR})
set(KOKKOSMOE_COMPONENTS "")
if(KokkosMoE_ENABLE_TRACE)
  install(EXPORT KokkosMoETraceTargets NAMESPACE KokkosMoE:: DESTINATION ${KokkosMoE_INSTALL_CMAKEDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/KokkosMoEHDF5.cmake DESTINATION ${KokkosMoE_INSTALL_CMAKEDIR})
  list(APPEND KOKKOSMOE_COMPONENTS trace)
endif()
if(KokkosMoE_ENABLE_FORTRAN)
  install(EXPORT KokkosMoEFortranTargets NAMESPACE KokkosMoE:: DESTINATION ${KokkosMoE_INSTALL_CMAKEDIR})
  list(APPEND KOKKOSMOE_COMPONENTS fortran)
endif()
if(KokkosMoE_ENABLE_MPI)
  install(EXPORT KokkosMoEEpTargets NAMESPACE KokkosMoE:: DESTINATION ${KokkosMoE_INSTALL_CMAKEDIR})
  if(KokkosMoE_ENABLE_NCCL)
    install(FILES ${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake DESTINATION ${KokkosMoE_INSTALL_CMAKEDIR})
    get_filename_component(KOKKOSMOE_NCCL_ROOT "${NCCL_INCLUDE_DIR}" DIRECTORY)
  endif()
  list(APPEND KOKKOSMOE_COMPONENTS ep)
  set(_kmoe_ep_header_pattern "")
else()
  # Without the component its header would include a generated header that
  # is not installed.
  set(_kmoe_ep_header_pattern PATTERN "KokkosMoE_ExpertParallel.hpp" EXCLUDE)
endif()

# Hints for the consumer's find_dependency calls: the same Kokkos and Kokkos
# Kernels this build was compiled against (a different Kokkos would not link).
set(KOKKOSMOE_KOKKOS_DIR "${Kokkos_DIR}")
set(KOKKOSMOE_KOKKOSKERNELS_DIR "${KokkosKernels_DIR}")
get_filename_component(KOKKOSMOE_KOKKOS_ROOT "${Kokkos_DIR}/../../.." ABSOLUTE)
configure_package_config_file(cmake/KokkosMoEConfig.cmake.in
  ${PROJECT_BINARY_DIR}/KokkosMoEConfig.cmake
  INSTALL_DESTINATION ${KokkosMoE_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KokkosMoEConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KokkosMoEConfig.cmake
              ${PROJECT_BINARY_DIR}/KokkosMoEConfigVersion.cmake
        DESTINATION ${KokkosMoE_INSTALL_CMAKEDIR})

# Public headers (the trace headers need nothing beyond the standard library).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/KokkosMoE
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h"
        ${_kmoe_ep_header_pattern})
