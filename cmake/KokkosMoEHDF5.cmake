# SPDX-License-Identifier: BSD-3-Clause
# KokkosMoE::hdf5: FindHDF5's results (HDF5_INCLUDE_DIRS, HDF5_DEFINITIONS,
# HDF5_C_LIBRARIES) as one imported target. Used by the build and, installed,
# by KokkosMoEConfig.cmake after find_dependency(HDF5 COMPONENTS C), so the
# installed trace library carries no paths of the build machine's HDF5.
if(NOT TARGET KokkosMoE::hdf5)
  add_library(KokkosMoE::hdf5 INTERFACE IMPORTED ${KOKKOSMOE_HDF5_TARGET_SCOPE})
  target_include_directories(KokkosMoE::hdf5 INTERFACE ${HDF5_INCLUDE_DIRS})
  target_compile_definitions(KokkosMoE::hdf5 INTERFACE ${HDF5_DEFINITIONS})
  target_link_libraries(KokkosMoE::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
endif()
