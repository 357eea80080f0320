// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// The NCCL transport of the expert-parallel layer: a communicator made from
// the layer's MPI one, and the all-to-all of rows as one group of
// ncclSend/ncclRecv on the layer's stream. Built with KokkosMoE_ENABLE_NCCL;
// without it, making a communicator throws.
#ifndef KOKKOSMOE_EP_NCCL_HPP
#define KOKKOSMOE_EP_NCCL_HPP

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Impl {

class NcclCommunicator;

// Collective over comm: rank 0 makes the unique id, MPI broadcasts it, each
// rank joins on its current CUDA device. Returns nullptr and sets `error`
// (this rank's message) where this rank failed, so that the caller can
// agree on it with the others.
std::shared_ptr<NcclCommunicator> make_nccl_communicator(MPI_Comm comm, std::string& error);

// One item-sized block per (rank, payload): the bytes of payload p for rank r
// start at send[p] + send_displs[r] * item_bytes[p]; those from rank s land
// at recv[p] + recv_displs[s] * item_bytes[p]. Enqueued on `stream` (a
// cudaStream_t), in one NCCL group; throws std::runtime_error on an error.
struct NcclPayload {
  const void* send;
  void* recv;
  std::size_t item_bytes;
};
void nccl_all_to_all(NcclCommunicator& comm, void* stream, const std::vector<NcclPayload>& payloads,
                     const std::vector<int>& send_counts, const std::vector<int>& send_displs,
                     const std::vector<int>& recv_counts, const std::vector<int>& recv_displs);

}  // namespace Impl
}  // namespace KokkosMoE

#endif
