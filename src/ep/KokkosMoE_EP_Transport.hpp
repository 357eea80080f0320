// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// How the expert-parallel layer moves data between ranks: MPI all-to-all
// collectives on counts and rows, and whether MPI may be given device
// memory. Counts of rows travel as rows of the layer's row datatype
// (ExpertParallelComm), so that an int holds them for any model width.
#ifndef KOKKOSMOE_EP_TRANSPORT_HPP
#define KOKKOSMOE_EP_TRANSPORT_HPP

#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>

#include <mpi.h>

#include <vector>

namespace KokkosMoE {
namespace Impl {

// Throws std::runtime_error naming the call unless code is MPI_SUCCESS
// (with MPI's default error handler a failed call aborts first).
void check_mpi(int code, const char* call);

// recv[s] = what rank s sent to this rank (send[r]: to rank r).
void exchange_counts(MPI_Comm comm, const std::vector<int>& send, std::vector<int>& recv);

// Items of `type` to every rank: send_counts[r] items from send +
// send_displs[r] to rank r, recv_counts[s] from rank s into recv +
// recv_displs[s] (counts and displacements in items).
void exchange_items(MPI_Comm comm, MPI_Datatype type, const void* send,
                    const std::vector<int>& send_counts, const std::vector<int>& send_displs,
                    void* recv, const std::vector<int>& recv_counts,
                    const std::vector<int>& recv_displs);

// Whether the MPI library takes device memory of the build's GPU backend:
// the environment variable KOKKOSMOE_EP_GPU_AWARE (0 or 1) if set, else
// what Open MPI's MPIX_Query_cuda_support / MPIX_Query_rocm_support say,
// else false.
bool mpi_takes_device_memory(ExpertParallelOptions::GpuAware choice);

}  // namespace Impl
}  // namespace KokkosMoE

#endif
