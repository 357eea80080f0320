// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// Expert parallelism over MPI (docs/expert-parallel.md): one MoE layer whose
// E experts are split across the ranks of a communicator. Each rank holds
// only its experts' weights and routes its own tokens; an all-to-all sends
// each token assignment's row of x to its expert's owner, the owner runs its
// experts on the rows it received (a core Layer), and a second all-to-all
// brings the results back for the weighted combine on the token's rank.
//
// Link KokkosMoE::ep (find_package(KokkosMoE COMPONENTS ep)).
#ifndef KOKKOSMOE_EXPERTPARALLEL_HPP
#define KOKKOSMOE_EXPERTPARALLEL_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>
#include <KokkosMoE/KokkosMoE_Layer.hpp>
#include <KokkosMoE/KokkosMoE_Weights.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace KokkosMoE {

// Which rank holds each expert. A rank holds its experts in increasing
// expert order: its local expert i is experts_of(rank)[i].
class ExpertPlacement {
 public:
  // Blocks of consecutive experts, E / P per rank and one more on each of
  // the first E % P ranks (ranks past E hold none).
  static ExpertPlacement contiguous(int num_experts, int num_ranks);
  // owners[e]: the rank that holds expert e. Throws std::invalid_argument
  // unless there is an expert and every owner is in [0, num_ranks).
  ExpertPlacement(std::vector<int> owners, int num_ranks);

  int num_experts() const { return int(owners_.size()); }
  int num_ranks() const { return num_ranks_; }
  int owner(int expert) const { return owners_[expert]; }
  // The expert's index among its owner's experts.
  int local_index(int expert) const { return local_index_[expert]; }
  // Experts held by `rank` (0 for a rank that holds none).
  int count(int rank) const { return counts_[rank]; }
  std::vector<int> experts_of(int rank) const;
  const std::vector<int>& owners() const { return owners_; }
  const std::vector<int>& local_indices() const { return local_index_; }
  // Equal placements give equal values (compared across ranks).
  std::uint64_t fingerprint() const;

 private:
  std::vector<int> owners_, local_index_, counts_;
  int num_ranks_ = 0;
};

// A rank's share of full weights: gate, up and down of the experts the
// placement gives `rank`, copied into new views (so the full ones can be
// freed); router and bias are shared, not copied.
template <class Scalar, class MemorySpace>
Weights<Scalar, MemorySpace> local_expert_weights(const Weights<Scalar, MemorySpace>& full,
                                                  const ExpertPlacement& placement, int rank) {
  Weights<Scalar, MemorySpace> w;
  w.router = full.router;
  w.bias = full.bias;
  const auto mine = placement.experts_of(rank);
  const auto E = std::int64_t(mine.size());
  const auto F = std::int64_t(full.gate.extent(1)), H = std::int64_t(full.gate.extent(2));
  w.gate = decltype(w.gate)("KokkosMoE::gate", E, F, H);
  w.up = decltype(w.up)("KokkosMoE::up", E, F, H);
  w.down = decltype(w.down)("KokkosMoE::down", E, H, F);
  auto copy_expert = [](const auto& to, std::int64_t i, const auto& from, int e) {
    Kokkos::deep_copy(Kokkos::subview(to, i, Kokkos::ALL(), Kokkos::ALL()),
                      Kokkos::subview(from, e, Kokkos::ALL(), Kokkos::ALL()));
  };
  for (std::int64_t i = 0; i < E; ++i) {
    copy_expert(w.gate, i, full.gate, mine[i]);
    copy_expert(w.up, i, full.up, mine[i]);
    copy_expert(w.down, i, full.down, mine[i]);
  }
  if (is_block_scaled<Scalar>::value) {
    const auto FB = Weights<Scalar, MemorySpace>::blocks(F),
               HB = Weights<Scalar, MemorySpace>::blocks(H);
    const auto has = [&](const auto& t, std::int64_t rows, std::int64_t cols) {
      return t.extent(1) == std::size_t(rows) && t.extent(2) == std::size_t(cols) &&
             t.extent(0) == full.gate.extent(0);
    };
    if (!has(full.gate_scale, FB, HB) || !has(full.up_scale, FB, HB) ||
        !has(full.down_scale, HB, FB))
      throw std::invalid_argument(
          "KokkosMoE::local_expert_weights: the block scales must be [E, ceil(F/128), "
          "ceil(H/128)] (gate, up) and [E, ceil(H/128), ceil(F/128)] (down)");
    w.gate_scale = decltype(w.gate_scale)("KokkosMoE::gate_scale", E, FB, HB);
    w.up_scale = decltype(w.up_scale)("KokkosMoE::up_scale", E, FB, HB);
    w.down_scale = decltype(w.down_scale)("KokkosMoE::down_scale", E, HB, FB);
    for (std::int64_t i = 0; i < E; ++i) {
      copy_expert(w.gate_scale, i, full.gate_scale, mine[i]);
      copy_expert(w.up_scale, i, full.up_scale, mine[i]);
      copy_expert(w.down_scale, i, full.down_scale, mine[i]);
    }
  }
  return w;
}

struct ExpertParallelOptions {
  // The most rows (token assignments to its experts) one rank may receive in
  // a forward: it sizes the rank's receive buffers and its local layer. A
  // forward that would exceed it throws on every rank. 0: the worst case,
  // every rank's max_tokens times top_k, summed over the ranks.
  std::int64_t capacity = 0;
  // How rows travel: MPI all-to-all collectives, or NCCL's grouped sends
  // and receives on the layer's CUDA stream (builds with
  // KokkosMoE_ENABLE_NCCL, Cuda execution space; the communicator is made
  // from the MPI one, each rank on the GPU its Kokkos uses). The counts of
  // rows always travel over MPI, which the host needs to size the exchange.
  enum class Transport { mpi, nccl };
  Transport transport = Transport::mpi;
  // Whether MPI takes the layer's device buffers (MPI transport only: NCCL
  // always does): yes; no (rows go through
  // host buffers; on a host backend that is one more copy, which tests the
  // path); detect (the environment variable KOKKOSMOE_EP_GPU_AWARE=0|1 if
  // set, else MPIX_Query_cuda_support or MPIX_Query_rocm_support where
  // Open MPI has them, else no). Host backends with yes or detect never
  // stage.
  enum class GpuAware { detect, yes, no };
  GpuAware gpu_aware = GpuAware::detect;
};

// What the last forward took on this rank: the seconds of each phase
// (between fences of the layer's instance) and what it sent and received.
struct ExpertParallelTimes {
  double route = 0;              // the replicated router (forward without given routing)
  double plan = 0;               // routing check, rows per destination, counts exchange
  double pack = 0;               // rows of x grouped by destination
  double dispatch_exchange = 0;  // rows to their experts' ranks
  double expert_compute = 0;     // this rank's experts on the rows it received
  double combine_exchange = 0;   // results back to the tokens' ranks
  double combine = 0;            // weighted sum of each token's k results
  double total = 0;              // the whole forward
  // Token assignments sent and received, this rank's own included.
  std::int64_t rows_sent = 0, rows_received = 0;
  // Bytes to and from the other ranks (own rows are copied, not sent): rows
  // and their local expert index in the dispatch, rows in the combine.
  std::int64_t dispatch_bytes_sent = 0, dispatch_bytes_received = 0;
  std::int64_t combine_bytes_sent = 0, combine_bytes_received = 0;

  std::int64_t bytes_sent() const { return dispatch_bytes_sent + combine_bytes_sent; }
  std::int64_t bytes_received() const { return dispatch_bytes_received + combine_bytes_received; }
};

// Whether this build has the NCCL transport (KokkosMoE_ENABLE_NCCL).
bool nccl_available();

// The GPU a rank should use where each node runs several ranks: its rank
// among the ranks of comm on its node, modulo the GPUs visible to it (CUDA
// or HIP builds; 0 on host backends). Collective over comm; call it between
// MPI_Init and Kokkos::initialize and pass it as Kokkos' device id.
int node_local_device(MPI_Comm comm);

namespace Impl {
class NcclCommunicator;  // src/ep/KokkosMoE_EP_Nccl.hpp

// The layer's own duplicate of the caller's communicator (its collectives
// never match the caller's) and the MPI datatype of one row of H values, so
// that counts are rows and fit an int for any width. Freed with the layer,
// which must go before MPI_Finalize.
class ExpertParallelComm {
 public:
  ExpertParallelComm() = default;
  explicit ExpertParallelComm(MPI_Comm comm);
  ~ExpertParallelComm();
  ExpertParallelComm(ExpertParallelComm&& other) noexcept;
  ExpertParallelComm& operator=(ExpertParallelComm&& other) noexcept;
  ExpertParallelComm(const ExpertParallelComm&) = delete;
  ExpertParallelComm& operator=(const ExpertParallelComm&) = delete;

  // One row of `bytes` bytes (once the row width is known to be valid).
  void set_row_bytes(std::int64_t bytes);
  MPI_Comm comm() const { return comm_; }
  MPI_Datatype row_type() const { return row_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  void release() noexcept;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Datatype row_ = MPI_DATATYPE_NULL;
  int rank_ = 0, size_ = 1;
};
}  // namespace Impl

template <class ExecutionSpace, class Scalar>
class ExpertParallelLayer {
 public:
  using local_layer_type = Layer<ExecutionSpace, Scalar>;
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using scalar_type = Scalar;
  using token_type = token_type_t<Scalar>;
  using weights_type = Weights<Scalar, memory_space>;
  using tokens_view = typename local_layer_type::tokens_view;
  using const_tokens_view = typename local_layer_type::const_tokens_view;
  using ids_view = typename local_layer_type::ids_view;
  using weights_view = typename local_layer_type::weights_view;
  using const_ids_view = typename local_layer_type::const_ids_view;
  using const_weights_view = typename local_layer_type::const_weights_view;

  // Collective over comm. config: the same on every rank except max_tokens,
  // which is this rank's largest batch. local_weights: gate, up [n, F, H]
  // and down [n, H, F] of this rank's n = placement.count(rank) experts, in
  // placement order (local_expert_weights); router [E, H] and bias [E]
  // whole, as a Layer needs them (routed modes). An error on any rank
  // (a bad argument, a configuration, placement or storage type that
  // differs between ranks, a failed allocation) throws the same
  // std::invalid_argument, naming that rank, on every rank.
  ExpertParallelLayer(const Config& config, MPI_Comm comm, const weights_type& local_weights,
                      const ExpertPlacement& placement, const ExpertParallelOptions& options = {},
                      const execution_space& exec = execution_space());
  ExpertParallelLayer(const ExpertParallelLayer&) = delete;
  ExpertParallelLayer& operator=(const ExpertParallelLayer&) = delete;
  ExpertParallelLayer(ExpertParallelLayer&&) = default;
  ExpertParallelLayer& operator=(ExpertParallelLayer&&) = default;

  // Both forwards are collective: every rank calls them together, each with
  // its own tokens (num_tokens in [0, max_tokens], any count, 0 included).
  // Errors of arguments or routing (ids distinct in [0, E), weights finite)
  // on any rank throw the same std::invalid_argument on every rank; more
  // rows for one rank than its capacity throw the same std::runtime_error
  // on every rank. Nothing is sent before that agreement, and the layer
  // stays usable after it.
  //
  // With the replicated router (softmax_topk, sigmoid_group_topk).
  void forward(const const_tokens_view& x, const tokens_view& out, std::int64_t num_tokens);
  // With given routing (any mode; trace replay).
  void forward(const const_tokens_view& x, const const_ids_view& ids,
               const const_weights_view& routing_weights, const tokens_view& out,
               std::int64_t num_tokens);

  const Config& config() const { return config_; }
  const ExpertPlacement& placement() const { return placement_; }
  const execution_space& space() const { return exec_; }
  int rank() const { return comm_.rank(); }
  int num_ranks() const { return comm_.size(); }
  // The most rows this rank receives per forward (0 where it holds no expert).
  std::int64_t capacity() const { return capacity_; }
  // Whether rows go to MPI through host buffers (device memory, MPI not
  // GPU-aware).
  bool staged() const { return staged_; }
  ExpertParallelOptions::Transport transport() const { return options_.transport; }
  const ExpertParallelTimes& last_times() const { return times_; }
  // The routing of the last forward with the router.
  ids_view routing_ids() const { return router_.ids; }
  weights_view routing_weights() const { return router_.weights; }

 private:
  // The forward after routing: `error` is this rank's argument error, if
  // any, agreed on with the other ranks before anything is sent.
  void exchange_and_compute(const const_tokens_view& x, const const_ids_view& ids,
                            const const_weights_view& routing_weights, const tokens_view& out,
                            std::int64_t num_tokens, std::string error, bool check_routing);
  // This rank's argument error of a forward, or "".
  std::string argument_error(const const_tokens_view& x, const const_ids_view& ids,
                             const const_weights_view& routing_weights, const tokens_view& out,
                             std::int64_t num_tokens) const;
  // The message of the first malformed routing row among num_tokens, or "".
  std::string routing_error(const const_ids_view& ids, const const_weights_view& routing_weights,
                            std::int64_t num_tokens) const;
  // One all-to-all of each payload (through the host buffers where staged;
  // with NCCL, all payloads in one group); counts and displacements in
  // items, the same for every payload.
  struct Payload {
    const void* send;
    void* recv;
    void* host_send;
    void* host_recv;
    std::size_t item_bytes;
    MPI_Datatype type;
  };
  void exchange(std::initializer_list<Payload> payloads, const std::vector<int>& send_counts,
                const std::vector<int>& send_displs, const std::vector<int>& recv_counts,
                const std::vector<int>& recv_displs);
  std::string where() const;  // "KokkosMoE::ExpertParallelLayer: rank r: "

  Config config_;
  ExpertPlacement placement_;
  ExpertParallelOptions options_;
  execution_space exec_;
  Impl::ExpertParallelComm comm_;
  std::shared_ptr<Impl::NcclCommunicator> nccl_;  // with Transport::nccl
  std::int64_t capacity_ = 0;
  bool staged_ = false;

  // The replicated router and its buffers, [max_tokens, ...].
  struct RouterState {
    Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> router;
    Kokkos::View<const float*, memory_space> bias;
    Kokkos::View<float**, Kokkos::LayoutRight, memory_space> logits, x_float;
    ids_view ids;
    weights_view weights;
  } router_;

  // The exchange plan of a forward (src/ep/KokkosMoE_EP_ExchangePlan.hpp).
  Kokkos::View<int*, memory_space> owner_, local_index_;  // [E]
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> chunk_counts_;
  Kokkos::View<int*, memory_space> send_counts_device_, send_offsets_;  // [P]
  Kokkos::View<int*, memory_space> slot_;                               // [max_tokens * k]
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;

  // Rows: sent (and their results, back), received, and the local results.
  tokens_view send_rows_;                                   // [max_tokens * k, H]
  Kokkos::View<std::int32_t*, memory_space> send_experts_;  // [max_tokens * k]
  tokens_view recv_rows_, recv_out_;                        // [capacity, H]
  ids_view recv_experts_;                                   // [capacity, 1]
  weights_view ones_;                                       // [capacity, 1]
  // Host buffers of the exchanges where staged: sent, received.
  Kokkos::View<token_type**, Kokkos::LayoutRight, Kokkos::HostSpace> host_send_rows_,
      host_recv_rows_;
  Kokkos::View<std::int32_t*, Kokkos::HostSpace> host_send_experts_, host_recv_experts_;

  // This rank's experts on the rows it receives (none if it holds none).
  std::optional<local_layer_type> local_;
  ExpertParallelTimes times_;
};

}  // namespace KokkosMoE

#include <KokkosMoE/KokkosMoE_ExpertParallelInstantiation.hpp>

#endif
