# SPDX-FileCopyrightText: 2026 the KokkosMoE authors
# SPDX-License-Identifier: BSD-3-Clause
#
# Explicit instantiations of a class template over (execution space, storage
# type): one generated unit per pair, so that the kernels of each pair
# compile in parallel and users include only declarations.
#
#   kokkosmoe_instantiate(TEMPLATE <unit.cpp.in> CLASS <name> PREFIX <file prefix>
#                         SOURCES <var> EXTERNS <var>)
#
# For every space in KokkosMoE_EXECUTION_SPACES and type in KokkosMoE_SCALARS
# (both set by src/CMakeLists.txt), configures TEMPLATE (with @ONLY:
# @KOKKOSMOE_INST_SPACE@, @KOKKOSMOE_INST_SCALAR@) into
# generated/<prefix>_<SPACE>_<type>.cpp of the current binary directory,
# appends it to SOURCES, and appends "extern template class
# <name><Space, Scalar>;" lines to EXTERNS, for a generated header.
function(kokkosmoe_instantiate)
  cmake_parse_arguments(PARSE_ARGV 0 _arg "" "TEMPLATE;CLASS;PREFIX;SOURCES;EXTERNS" "")
  set(_sources "")
  set(_externs "")
  foreach(_dev IN LISTS KokkosMoE_EXECUTION_SPACES)
    foreach(_scalar IN LISTS KokkosMoE_SCALARS)
      set(KOKKOSMOE_INST_SPACE ${KokkosMoE_SPACE_${_dev}})
      set(KOKKOSMOE_INST_SCALAR KokkosMoE::${_scalar})
      if(_scalar STREQUAL "float")
        set(KOKKOSMOE_INST_SCALAR float)
      endif()
      set(_unit ${CMAKE_CURRENT_BINARY_DIR}/generated/${_arg_PREFIX}_${_dev}_${_scalar}.cpp)
      configure_file(${_arg_TEMPLATE} ${_unit} @ONLY)
      list(APPEND _sources ${_unit})
      string(APPEND _externs
        "extern template class ${_arg_CLASS}<${KOKKOSMOE_INST_SPACE}, ${KOKKOSMOE_INST_SCALAR}>;\n")
    endforeach()
  endforeach()
  set(${_arg_SOURCES} ${_sources} PARENT_SCOPE)
  set(${_arg_EXTERNS} "${_externs}" PARENT_SCOPE)
endfunction()
