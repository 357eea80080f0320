// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>

#include <Kokkos_Macros.hpp>
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#elif defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime_api.h>
#endif

#include <mpi.h>

namespace KokkosMoE {

int node_local_device(MPI_Comm comm) {
  // The ranks that share this rank's memory: its node.
  MPI_Comm node = MPI_COMM_NULL;
  int local = 0;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  int devices = 0;
#if defined(KOKKOS_ENABLE_CUDA)
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
#elif defined(KOKKOS_ENABLE_HIP)
  if (hipGetDeviceCount(&devices) != hipSuccess) devices = 0;
#endif
  return devices > 0 ? local % devices : 0;
}

}  // namespace KokkosMoE
