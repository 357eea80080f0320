// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
#include "KokkosMoE_EP_Nccl.hpp"

#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>

// KOKKOSMOE_ENABLE_NCCL: defined for this file alone (src/ep/CMakeLists.txt).
#ifdef KOKKOSMOE_ENABLE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

#include <stdexcept>
#include <utility>

namespace KokkosMoE {

#ifdef KOKKOSMOE_ENABLE_NCCL
bool nccl_available() { return true; }

namespace Impl {

namespace {
std::string nccl_error(const char* call, ncclResult_t code) {
  return std::string(call) + " failed: " + ncclGetErrorString(code);
}
}  // namespace

class NcclCommunicator {
 public:
  explicit NcclCommunicator(ncclComm_t comm) : comm_(comm) {}
  ~NcclCommunicator() {
    if (comm_) ncclCommDestroy(comm_);
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_;
};

std::shared_ptr<NcclCommunicator> make_nccl_communicator(MPI_Comm comm, std::string& error) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Rank 0's id and whether it has one travel together, so that a failure
  // there leaves no rank waiting in ncclCommInitRank.
  struct {
    ncclUniqueId id;
    int ok;
  } root{};
  if (rank == 0) {
    const ncclResult_t code = ncclGetUniqueId(&root.id);
    root.ok = code == ncclSuccess;
    if (!root.ok) error = nccl_error("ncclGetUniqueId", code);
  }
  MPI_Bcast(&root, int(sizeof root), MPI_BYTE, 0, comm);
  if (!root.ok) {
    if (error.empty()) error = "rank 0 has no NCCL unique id (ncclGetUniqueId failed there)";
    return nullptr;
  }
  ncclComm_t handle = nullptr;
  const ncclResult_t code = ncclCommInitRank(&handle, size, root.id, rank);
  if (code != ncclSuccess) {
    int device = -1;
    cudaGetDevice(&device);
    error = nccl_error("ncclCommInitRank", code) + " (CUDA device " + std::to_string(device) +
            "; NCCL_DEBUG=WARN says more)";
    return nullptr;
  }
  return std::make_shared<NcclCommunicator>(handle);
}

void nccl_all_to_all(NcclCommunicator& comm, void* stream, const std::vector<NcclPayload>& payloads,
                     const std::vector<int>& send_counts, const std::vector<int>& send_displs,
                     const std::vector<int>& recv_counts, const std::vector<int>& recv_displs) {
  const auto s = static_cast<cudaStream_t>(stream);
  auto check = [](const char* call, ncclResult_t code) {
    if (code != ncclSuccess)
      throw std::runtime_error("KokkosMoE::ExpertParallelLayer: " + nccl_error(call, code));
  };
  check("ncclGroupStart", ncclGroupStart());
  for (const NcclPayload& p : payloads) {
    for (std::size_t r = 0; r < send_counts.size(); ++r) {
      const int peer = int(r);
      if (send_counts[r] > 0)
        check("ncclSend",
              ncclSend(static_cast<const char*>(p.send) +
                           std::size_t(send_displs[r]) * p.item_bytes,
                       std::size_t(send_counts[r]) * p.item_bytes, ncclUint8, peer, comm.get(), s));
      if (recv_counts[r] > 0)
        check("ncclRecv",
              ncclRecv(static_cast<char*>(p.recv) + std::size_t(recv_displs[r]) * p.item_bytes,
                       std::size_t(recv_counts[r]) * p.item_bytes, ncclUint8, peer, comm.get(), s));
    }
  }
  check("ncclGroupEnd", ncclGroupEnd());
}

}  // namespace Impl

#else  // no NCCL in this build

bool nccl_available() { return false; }

namespace Impl {

class NcclCommunicator {};

std::shared_ptr<NcclCommunicator> make_nccl_communicator(MPI_Comm, std::string& error) {
  error = "the NCCL transport is not in this build (configure with KokkosMoE_ENABLE_NCCL=ON)";
  return nullptr;
}

void nccl_all_to_all(NcclCommunicator&, void*, const std::vector<NcclPayload>&,
                     const std::vector<int>&, const std::vector<int>&, const std::vector<int>&,
                     const std::vector<int>&) {
  throw std::logic_error("KokkosMoE: nccl_all_to_all without NCCL in the build");
}

}  // namespace Impl

#endif

}  // namespace KokkosMoE
