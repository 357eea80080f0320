// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
#include "KokkosMoE_EP_Transport.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_Query_cuda_support, MPIX_Query_rocm_support
#endif

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace KokkosMoE {
namespace Impl {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string("KokkosMoE::ExpertParallelLayer: ") + call +
                           " failed: " + std::string(text, std::size_t(length)));
}

ExpertParallelComm::ExpertParallelComm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL)
    throw std::invalid_argument(
        "KokkosMoE::ExpertParallelLayer: the communicator is MPI_COMM_NULL");
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

void ExpertParallelComm::set_row_bytes(std::int64_t bytes) {
  if (row_ != MPI_DATATYPE_NULL) MPI_Type_free(&row_);
  check_mpi(MPI_Type_contiguous(int(bytes), MPI_BYTE, &row_), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&row_), "MPI_Type_commit");
}

void ExpertParallelComm::release() noexcept {
  // After MPI_Finalize nothing may be freed (the handles are gone with it).
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    if (row_ != MPI_DATATYPE_NULL) MPI_Type_free(&row_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  row_ = MPI_DATATYPE_NULL;
  comm_ = MPI_COMM_NULL;
}

ExpertParallelComm::~ExpertParallelComm() { release(); }

ExpertParallelComm::ExpertParallelComm(ExpertParallelComm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      row_(std::exchange(other.row_, MPI_DATATYPE_NULL)),
      rank_(other.rank_),
      size_(other.size_) {}

ExpertParallelComm& ExpertParallelComm::operator=(ExpertParallelComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    row_ = std::exchange(other.row_, MPI_DATATYPE_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
  }
  return *this;
}

void exchange_counts(MPI_Comm comm, const std::vector<int>& send, std::vector<int>& recv) {
  recv.resize(send.size());
  check_mpi(MPI_Alltoall(send.data(), 1, MPI_INT, recv.data(), 1, MPI_INT, comm), "MPI_Alltoall");
}

void exchange_items(MPI_Comm comm, MPI_Datatype type, const void* send,
                    const std::vector<int>& send_counts, const std::vector<int>& send_displs,
                    void* recv, const std::vector<int>& recv_counts,
                    const std::vector<int>& recv_displs) {
  check_mpi(MPI_Alltoallv(send, send_counts.data(), send_displs.data(), type, recv,
                          recv_counts.data(), recv_displs.data(), type, comm),
            "MPI_Alltoallv");
}

bool mpi_takes_device_memory(ExpertParallelOptions::GpuAware choice) {
  using GpuAware = ExpertParallelOptions::GpuAware;
  if (choice != GpuAware::detect) return choice == GpuAware::yes;
  if (const char* env = std::getenv("KOKKOSMOE_EP_GPU_AWARE")) {
    const std::string v = env;
    if (v == "1") return true;
    if (v == "0") return false;
    throw std::invalid_argument("KokkosMoE::ExpertParallelLayer: KOKKOSMOE_EP_GPU_AWARE is '" + v +
                                "', not 0 or 1");
  }
  // Compiled in and enabled at run time: Open MPI's own answer.
#if defined(KOKKOS_ENABLE_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#elif defined(KOKKOS_ENABLE_HIP) && defined(MPIX_ROCM_AWARE_SUPPORT) && MPIX_ROCM_AWARE_SUPPORT
  return MPIX_Query_rocm_support() == 1;
#else
  return false;
#endif
}

}  // namespace Impl
}  // namespace KokkosMoE
