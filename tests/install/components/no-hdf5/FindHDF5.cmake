# SPDX-License-Identifier: BSD-3-Clause
# A FindHDF5 that finds nothing: a machine without HDF5.
set(HDF5_FOUND FALSE)
