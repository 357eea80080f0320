// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// Definitions of ExpertParallelLayer's members; compiled once per
// (execution space, storage type) in the generated instantiation units.
//
// A forward, on every rank at once:
//   route     this rank's tokens with the replicated router (or given routing)
//   plan      check the routing; rows per destination rank; exchange the
//             counts; agree on errors and on every rank's capacity
//   pack      each assignment's send row; x's rows copied there
//   dispatch_exchange  rows (and their local expert) to the experts' ranks
//   expert_compute     a core Layer over this rank's experts, top_k 1,
//                      weight 1, on the rows received
//   combine_exchange   the results back, the counts reversed
//   combine   out[t] = sum_j w[t, j] y_j on the token's rank
#ifndef KOKKOSMOE_EXPERTPARALLEL_IMPL_HPP
#define KOKKOSMOE_EXPERTPARALLEL_IMPL_HPP

#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>

#include "KokkosMoE_EP_Agreement.hpp"
#include "KokkosMoE_EP_ExchangePlan.hpp"
#include "KokkosMoE_EP_Nccl.hpp"
#include "KokkosMoE_EP_Transport.hpp"
#include "KokkosMoE_Router.hpp"
#include "KokkosMoE_Routing_Impl.hpp"

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// One phase of a forward: a profiling region, timed on the host between
// fences of the layer's instance, so that each phase's time is its own work.
template <class ExecutionSpace>
class ExpertParallelPhase {
 public:
  ExpertParallelPhase(const ExecutionSpace& exec, const char* name, double& seconds)
      : exec_(exec), seconds_(seconds) {
    Kokkos::Profiling::pushRegion(name);
    exec_.fence();
    timer_.reset();
  }
  ~ExpertParallelPhase() {
    exec_.fence();
    seconds_ = timer_.seconds();
    Kokkos::Profiling::popRegion();
  }
  ExpertParallelPhase(const ExpertParallelPhase&) = delete;
  ExpertParallelPhase& operator=(const ExpertParallelPhase&) = delete;

 private:
  ExecutionSpace exec_;
  double& seconds_;
  Kokkos::Timer timer_;
};

// The storage type, as a number compared across ranks.
template <class Scalar>
constexpr int storage_code() {
  return std::is_same<Scalar, float>::value      ? 1
         : std::is_same<Scalar, float16>::value  ? 2
         : std::is_same<Scalar, bfloat16>::value ? 3
                                                 : 4;
}

inline std::int64_t float_bits_value(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return std::int64_t(u);
}

// Exclusive prefix sums: the displacements of the counts.
inline void displacements(const std::vector<int>& counts, std::vector<int>& displs) {
  displs.resize(counts.size());
  int before = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) displs[r] = before, before += counts[r];
}

template <class View>
void require_extents(const View& v, std::initializer_list<std::int64_t> want, const char* name) {
  int d = 0;
  for (std::int64_t n : want) {
    if (std::int64_t(v.extent(d)) != n)
      throw std::invalid_argument(std::string("weights.") + name + " has extent " +
                                  std::to_string(v.extent(d)) + " in dimension " +
                                  std::to_string(d) + ", expected " + std::to_string(n));
    ++d;
  }
}

// The stream NCCL enqueues on: the execution space instance's (Cuda only).
template <class ExecutionSpace>
constexpr bool has_nccl_stream() {
#ifdef KOKKOS_ENABLE_CUDA
  return std::is_same<ExecutionSpace, Kokkos::Cuda>::value;
#else
  return false;
#endif
}
template <class ExecutionSpace>
void* nccl_stream(const ExecutionSpace&) {
  return nullptr;
}
#ifdef KOKKOS_ENABLE_CUDA
inline void* nccl_stream(const Kokkos::Cuda& exec) { return exec.cuda_stream(); }
#endif

}  // namespace Impl

template <class ExecutionSpace, class Scalar>
std::string ExpertParallelLayer<ExecutionSpace, Scalar>::where() const {
  return "KokkosMoE::ExpertParallelLayer: rank " + std::to_string(comm_.rank()) + ": ";
}

template <class ExecutionSpace, class Scalar>
ExpertParallelLayer<ExecutionSpace, Scalar>::ExpertParallelLayer(
    const Config& config, MPI_Comm comm, const weights_type& local_weights,
    const ExpertPlacement& placement, const ExpertParallelOptions& options,
    const execution_space& exec)
    : config_(config), placement_(placement), options_(options), exec_(exec), comm_(comm) {
  constexpr bool host_memory =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
  const MPI_Comm c = comm_.comm();
  const int P = comm_.size(), me = comm_.rank();
  const int E = config_.num_experts, k = config_.top_k;
  const std::int64_t H = config_.hidden_size, F = config_.ffn_size;

  // This rank's own arguments first, agreed on before anything is compared
  // across ranks (a rank whose configuration is invalid has nothing to compare).
  std::string error;
  try {
    config_.validate();
    if (placement_.num_ranks() != P)
      throw std::invalid_argument("the placement is for " + std::to_string(placement_.num_ranks()) +
                                  " ranks, the communicator has " + std::to_string(P));
    if (placement_.num_experts() != E)
      throw std::invalid_argument("the placement has " + std::to_string(placement_.num_experts()) +
                                  " experts, the configuration num_experts = " + std::to_string(E));
    if (config_.routing != RoutingMode::external)
      Impl::require_extents(local_weights.router, {E, H}, "router");
    if (config_.routing == RoutingMode::sigmoid_group_topk)
      Impl::require_extents(local_weights.bias, {E}, "bias");
    // The rest of each expert tensor's shape is the local layer's to check.
    const std::int64_t mine = placement_.count(me);
    Impl::require_extents(local_weights.gate, {mine}, "gate (this rank's experts)");
    Impl::require_extents(local_weights.up, {mine}, "up (this rank's experts)");
    Impl::require_extents(local_weights.down, {mine}, "down (this rank's experts)");
    if (options_.capacity < 0)
      throw std::invalid_argument("capacity must be >= 0 (0: the worst case), got " +
                                  std::to_string(options_.capacity));
    if (H * std::int64_t(sizeof(token_type)) > INT_MAX)
      throw std::invalid_argument("a row of hidden_size values exceeds 2^31 - 1 bytes");
    if (options_.transport == ExpertParallelOptions::Transport::nccl) {
      if (!nccl_available())
        throw std::invalid_argument(
            "the NCCL transport is not in this build (configure with KokkosMoE_ENABLE_NCCL=ON)");
      if (!Impl::has_nccl_stream<ExecutionSpace>())
        throw std::invalid_argument("the NCCL transport needs the Cuda execution space, not " +
                                    std::string(ExecutionSpace::name()));
    } else {
      // GpuAware::no stages on host backends too (a host copy): the same
      // path as on GPUs without a GPU-aware MPI, testable anywhere.
      staged_ = options_.gpu_aware == ExpertParallelOptions::GpuAware::no ||
                (!host_memory && !Impl::mpi_takes_device_memory(options_.gpu_aware));
    }
  } catch (const std::exception& e) {
    error = where() + e.what();
  }
  Impl::throw_first_error(c, {{error, Impl::ErrorKind::invalid_argument}});

  // What must be alike on every rank (max_tokens and capacity may differ).
  const std::string differs = Impl::first_difference(
      c, {{"num_experts", E},
          {"top_k", k},
          {"hidden_size", H},
          {"ffn_size", F},
          {"routing (0 softmax_topk, 1 sigmoid_group_topk, 2 external)", int(config_.routing)},
          {"renormalize", config_.renormalize},
          {"n_group", config_.n_group},
          {"topk_group", config_.topk_group},
          {"routed_scaling", Impl::float_bits_value(config_.routed_scaling), false},
          {"batch_invariant", config_.batch_invariant},
          {"the storage type (1 fp32, 2 fp16, 3 bf16, 4 fp8)", Impl::storage_code<Scalar>()},
          {"the expert placement", std::int64_t(placement_.fingerprint() >> 1), false},
          {"the transport", int(options_.transport)}});
  if (!differs.empty()) throw std::invalid_argument("KokkosMoE::ExpertParallelLayer: " + differs);
  if (options_.transport == ExpertParallelOptions::Transport::nccl) {
    std::string nccl_error;
    nccl_ = Impl::make_nccl_communicator(c, nccl_error);
    if (!nccl_error.empty()) nccl_error = where() + nccl_error;
    Impl::throw_first_error(c, {{nccl_error, Impl::ErrorKind::runtime_error}});
  }

  // Capacity: by default the worst case, every rank's tokens to this rank.
  std::int64_t all_tokens = config_.max_tokens;
  Impl::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &all_tokens, 1, MPI_INT64_T, MPI_SUM, c),
                  "MPI_Allreduce");
  capacity_ = placement_.count(me) == 0 ? 0
              : options_.capacity > 0   ? options_.capacity
                                        : all_tokens * k;

  // Buffers and the local layer (an allocation may fail on one rank only).
  error.clear();
  try {
    if (capacity_ > INT_MAX)
      throw std::invalid_argument("capacity " + std::to_string(capacity_) +
                                  " rows exceeds 2^31 - 1: set ExpertParallelOptions::capacity");
    comm_.set_row_bytes(H * std::int64_t(sizeof(token_type)));
    const std::int64_t T = config_.max_tokens, A = T * k, C = capacity_;
    router_.router = local_weights.router;
    router_.bias = local_weights.bias;
    router_.ids = ids_view("KokkosMoE::ep::routing_ids", T, k);
    router_.weights = weights_view("KokkosMoE::ep::routing_weights", T, k);
    if (config_.routing != RoutingMode::external) {
      router_.logits = decltype(router_.logits)("KokkosMoE::ep::logits", T, E);
      if (!std::is_same<token_type, float>::value)
        router_.x_float = decltype(router_.x_float)("KokkosMoE::ep::x_float", T, H);
    }
    owner_ = decltype(owner_)("KokkosMoE::ep::owner", E);
    local_index_ = decltype(local_index_)("KokkosMoE::ep::local_index", E);
    using host_ints = Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
    Kokkos::deep_copy(owner_, host_ints(placement_.owners().data(), std::size_t(E)));
    Kokkos::deep_copy(local_index_, host_ints(placement_.local_indices().data(), std::size_t(E)));
    chunk_counts_ = decltype(chunk_counts_)("KokkosMoE::ep::chunk_counts", Impl::exchange_chunks(A),
                                            P);
    send_counts_device_ = decltype(send_counts_device_)("KokkosMoE::ep::send_counts", P);
    send_offsets_ = decltype(send_offsets_)("KokkosMoE::ep::send_offsets", P);
    slot_ = decltype(slot_)("KokkosMoE::ep::slot", A);
    send_rows_ = tokens_view("KokkosMoE::ep::send_rows", A, H);
    send_experts_ = decltype(send_experts_)("KokkosMoE::ep::send_experts", A);
    recv_rows_ = tokens_view("KokkosMoE::ep::recv_rows", C, H);
    recv_out_ = tokens_view("KokkosMoE::ep::recv_out", C, H);
    recv_experts_ = ids_view("KokkosMoE::ep::recv_experts", C, 1);
    ones_ = weights_view("KokkosMoE::ep::ones", C, 1);
    Kokkos::deep_copy(ones_, 1.0f);
    if (staged_) {
      host_send_rows_ = decltype(host_send_rows_)("KokkosMoE::ep::host_send_rows", A, H);
      host_recv_rows_ = decltype(host_recv_rows_)("KokkosMoE::ep::host_recv_rows", C, H);
      host_send_experts_ = decltype(host_send_experts_)("KokkosMoE::ep::host_send_experts", A);
      host_recv_experts_ = decltype(host_recv_experts_)("KokkosMoE::ep::host_recv_experts", C);
    }
    send_counts_.assign(std::size_t(P), 0);
    recv_counts_.assign(std::size_t(P), 0);
    Impl::displacements(send_counts_, send_displs_);
    Impl::displacements(recv_counts_, recv_displs_);
    // This rank's experts as a layer of their own: each received row is one
    // token routed to one local expert with weight 1.
    if (placement_.count(me) > 0) {
      Config local = config_;
      local.num_experts = placement_.count(me);
      local.top_k = 1;
      local.max_tokens = C;
      local.routing = RoutingMode::external;
      weights_type experts = local_weights;
      local_.emplace(local, experts, exec_);
    }
  } catch (const std::exception& e) {
    error = where() + e.what();
  }
  Impl::throw_first_error(c, {{error, Impl::ErrorKind::invalid_argument}});
}

template <class ExecutionSpace, class Scalar>
std::string ExpertParallelLayer<ExecutionSpace, Scalar>::argument_error(
    const const_tokens_view& x, const const_ids_view& ids,
    const const_weights_view& routing_weights, const tokens_view& out,
    std::int64_t num_tokens) const {
  if (num_tokens < 0 || num_tokens > config_.max_tokens)
    return where() + "num_tokens = " + std::to_string(num_tokens) +
           " is outside [0, max_tokens = " + std::to_string(config_.max_tokens) + "]";
  auto shape = [&](const char* what, std::int64_t rows, std::int64_t cols,
                   std::int64_t want_cols) -> std::string {
    if (rows < num_tokens)
      return where() + what + " has " + std::to_string(rows) +
             " rows, fewer than num_tokens = " + std::to_string(num_tokens);
    if (cols != want_cols)
      return where() + what + " has " + std::to_string(cols) + " columns, expected " +
             std::to_string(want_cols);
    return "";
  };
  const std::int64_t H = config_.hidden_size, k = config_.top_k;
  for (const std::string& e :
       {shape("x", x.extent(0), x.extent(1), H), shape("ids", ids.extent(0), ids.extent(1), k),
        shape("routing weights", routing_weights.extent(0), routing_weights.extent(1), k),
        shape("out", out.extent(0), out.extent(1), H)})
    if (!e.empty()) return e;
  return "";
}

template <class ExecutionSpace, class Scalar>
std::string ExpertParallelLayer<ExecutionSpace, Scalar>::routing_error(
    const const_ids_view& ids, const const_weights_view& routing_weights,
    std::int64_t num_tokens) const {
  if (num_tokens == 0) return "";
  // The core's check_routing test (ids distinct in [0, E), weights finite).
  std::int64_t first = 0;
  Kokkos::parallel_reduce(
      "KokkosMoE::ep::check_routing",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(exec_, 0, num_tokens),
      Impl::FirstBadRouting<ExecutionSpace>{ids, routing_weights, config_.num_experts},
      Kokkos::Min<std::int64_t>(first));
  exec_.fence();
  if (first >= num_tokens) return "";
  auto row_ids = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                                     Kokkos::subview(ids, first, Kokkos::ALL()));
  auto row_w = Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace(), Kokkos::subview(routing_weights, first, Kokkos::ALL()));
  std::string ids_text, w_text;
  for (int j = 0; j < config_.top_k; ++j) {
    ids_text += (j ? ", " : "") + std::to_string(row_ids(j));
    w_text += (j ? ", " : "") + std::to_string(row_w(j));
  }
  return where() + "routing of token " + std::to_string(first) +
         " is invalid (ids must be distinct in [0, " + std::to_string(config_.num_experts) +
         "), weights finite): ids [" + ids_text + "], weights [" + w_text + "]";
}

template <class ExecutionSpace, class Scalar>
void ExpertParallelLayer<ExecutionSpace, Scalar>::exchange(std::initializer_list<Payload> payloads,
                                                           const std::vector<int>& send_counts,
                                                           const std::vector<int>& send_displs,
                                                           const std::vector<int>& recv_counts,
                                                           const std::vector<int>& recv_displs) {
  const MPI_Comm c = comm_.comm();
  if (nccl_) {
    // Stream-ordered after the kernels that wrote the send buffers.
    std::vector<Impl::NcclPayload> blocks;
    for (const Payload& p : payloads) blocks.push_back({p.send, p.recv, p.item_bytes});
    Impl::nccl_all_to_all(*nccl_, Impl::nccl_stream(exec_), blocks, send_counts, send_displs,
                          recv_counts, recv_displs);
    return;
  }
  exec_.fence();  // the kernels that wrote the send buffers are done
  if (!staged_) {
    for (const Payload& p : payloads)
      Impl::exchange_items(c, p.type, p.send, send_counts, send_displs, p.recv, recv_counts,
                           recv_displs);
    return;
  }
  // Only the rows in use travel through the host buffers.
  using bytes = Kokkos::View<char*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  using device_bytes = Kokkos::View<char*, memory_space, Kokkos::MemoryUnmanaged>;
  const std::size_t sent = std::size_t(send_displs.back() + send_counts.back());
  const std::size_t got = std::size_t(recv_displs.back() + recv_counts.back());
  for (const Payload& p : payloads)
    Kokkos::deep_copy(exec_, bytes(static_cast<char*>(p.host_send), sent * p.item_bytes),
                      device_bytes(static_cast<char*>(const_cast<void*>(p.send)),
                                   sent * p.item_bytes));
  exec_.fence();
  for (const Payload& p : payloads)
    Impl::exchange_items(c, p.type, p.host_send, send_counts, send_displs, p.host_recv, recv_counts,
                         recv_displs);
  for (const Payload& p : payloads)
    Kokkos::deep_copy(exec_, device_bytes(static_cast<char*>(p.recv), got * p.item_bytes),
                      bytes(static_cast<char*>(p.host_recv), got * p.item_bytes));
  exec_.fence();
}

template <class ExecutionSpace, class Scalar>
void ExpertParallelLayer<ExecutionSpace, Scalar>::forward(const const_tokens_view& x,
                                                          const tokens_view& out,
                                                          std::int64_t num_tokens) {
  Impl::ExpertParallelPhase<ExecutionSpace> total(exec_, "KokkosMoE::ep::forward", times_.total);
  std::string error = argument_error(x, router_.ids, router_.weights, out, num_tokens);
  if (error.empty() && config_.routing == RoutingMode::external)
    error = where() +
            "a forward without routing needs a routed mode (softmax_topk or "
            "sigmoid_group_topk); give ids and weights to an external one";
  {
    Impl::ExpertParallelPhase<ExecutionSpace> phase(exec_, "KokkosMoE::ep::route", times_.route);
    if (error.empty())
      Impl::route_tokens<ExecutionSpace, token_type>(exec_, config_,
                                                     {router_.router, router_.bias, router_.logits,
                                                      router_.x_float, router_.ids,
                                                      router_.weights},
                                                     x, num_tokens);
  }
  // The router's ids are valid by construction: no check.
  exchange_and_compute(x, router_.ids, router_.weights, out, num_tokens, error, false);
}

template <class ExecutionSpace, class Scalar>
void ExpertParallelLayer<ExecutionSpace, Scalar>::forward(const const_tokens_view& x,
                                                          const const_ids_view& ids,
                                                          const const_weights_view& routing_weights,
                                                          const tokens_view& out,
                                                          std::int64_t num_tokens) {
  Impl::ExpertParallelPhase<ExecutionSpace> total(exec_, "KokkosMoE::ep::forward", times_.total);
  times_.route = 0;
  exchange_and_compute(x, ids, routing_weights, out, num_tokens,
                       argument_error(x, ids, routing_weights, out, num_tokens), true);
}

template <class ExecutionSpace, class Scalar>
void ExpertParallelLayer<ExecutionSpace, Scalar>::exchange_and_compute(
    const const_tokens_view& x, const const_ids_view& ids,
    const const_weights_view& routing_weights, const tokens_view& out, std::int64_t num_tokens,
    std::string error, bool check_routing) {
  using Phase = Impl::ExpertParallelPhase<ExecutionSpace>;
  using range = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
  const MPI_Comm c = comm_.comm();
  const int P = comm_.size(), me = comm_.rank(), k = config_.top_k;
  const std::int64_t H = config_.hidden_size, n = num_tokens;
  std::int64_t received = 0;

  {
    Phase phase(exec_, "KokkosMoE::ep::plan", times_.plan);
    if (error.empty() && check_routing) error = routing_error(ids, routing_weights, n);
    std::fill(send_counts_.begin(), send_counts_.end(), 0);
    if (error.empty() && n > 0) {
      const std::int64_t A = n * k, chunks = Impl::exchange_chunks(A);
      Kokkos::parallel_for("KokkosMoE::ep::count_by_destination", range(exec_, 0, chunks),
                           Impl::CountByDestination<ExecutionSpace>{ids, owner_, chunk_counts_, A,
                                                                    k, P});
      Kokkos::parallel_for(
          "KokkosMoE::ep::chunk_offsets", Kokkos::RangePolicy<ExecutionSpace>(exec_, 0, P),
          Impl::ChunkOffsets<ExecutionSpace>{chunk_counts_, send_counts_device_, chunks});
      Kokkos::deep_copy(exec_,
                        Kokkos::View<int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                            send_counts_.data(), std::size_t(P)),
                        send_counts_device_);
      exec_.fence();
    }
    // Every rank exchanges its counts, zeros where it has an error, so that
    // the ranks stay in step until they agree on the errors.
    Impl::exchange_counts(c, send_counts_, recv_counts_);
    for (int r = 0; r < P; ++r) received += recv_counts_[std::size_t(r)];
    std::string over;
    if (received > capacity_) {
      over =
          "KokkosMoE::ExpertParallelLayer: rank " + std::to_string(me) + " would receive " +
          std::to_string(received) +
          " rows (token assignments to its experts) in this forward, more than its capacity of " +
          std::to_string(capacity_) + " (ExpertParallelOptions::capacity)";
    }
    Impl::throw_first_error(c, {{error, Impl::ErrorKind::invalid_argument},
                                {over, Impl::ErrorKind::runtime_error}});
    Impl::displacements(send_counts_, send_displs_);
    Impl::displacements(recv_counts_, recv_displs_);
  }

  const std::int64_t A = n * k;
  const std::size_t row_bytes = std::size_t(H) * sizeof(token_type);
  {
    Phase phase(exec_, "KokkosMoE::ep::pack", times_.pack);
    if (A > 0) {
      Kokkos::parallel_scan(
          "KokkosMoE::ep::destination_offsets", Kokkos::RangePolicy<ExecutionSpace>(exec_, 0, P),
          Impl::DestinationOffsets<ExecutionSpace>{send_counts_device_, send_offsets_});
      Kokkos::parallel_for("KokkosMoE::ep::place_assignments",
                           range(exec_, 0, Impl::exchange_chunks(A)),
                           Impl::PlaceAssignments<ExecutionSpace>{ids, owner_, local_index_,
                                                                  chunk_counts_, send_offsets_,
                                                                  slot_, send_experts_, A, k});
      Kokkos::parallel_for("KokkosMoE::ep::pack_rows", range(exec_, 0, A * H),
                           Impl::PackRows<ExecutionSpace, token_type>{x, slot_, send_rows_, H, k});
    }
  }
  {
    Phase phase(exec_, "KokkosMoE::ep::dispatch_exchange", times_.dispatch_exchange);
    exchange({{send_rows_.data(), recv_rows_.data(), host_send_rows_.data(), host_recv_rows_.data(),
               row_bytes, comm_.row_type()},
              {send_experts_.data(), recv_experts_.data(), host_send_experts_.data(),
               host_recv_experts_.data(), sizeof(std::int32_t), MPI_INT32_T}},
             send_counts_, send_displs_, recv_counts_, recv_displs_);
  }
  {
    Phase phase(exec_, "KokkosMoE::ep::expert_compute", times_.expert_compute);
    if (local_) local_->forward(recv_rows_, recv_experts_, ones_, recv_out_, received);
  }
  {
    // The results go back the way their rows came: each lands on the send
    // row its assignment left from.
    Phase phase(exec_, "KokkosMoE::ep::combine_exchange", times_.combine_exchange);
    exchange({{recv_out_.data(), send_rows_.data(), host_recv_rows_.data(), host_send_rows_.data(),
               row_bytes, comm_.row_type()}},
             recv_counts_, recv_displs_, send_counts_, send_displs_);
  }
  {
    Phase phase(exec_, "KokkosMoE::ep::combine", times_.combine);
    if (n > 0)
      Kokkos::parallel_for("KokkosMoE::ep::combine", range(exec_, 0, n * H),
                           Impl::CombineRows<ExecutionSpace, token_type>{
                               send_rows_, slot_, routing_weights, out, H, k});
  }

  const std::int64_t own = send_counts_[std::size_t(me)];  // == recv_counts_[me]
  times_.rows_sent = A;
  times_.rows_received = received;
  times_.dispatch_bytes_sent = (A - own) * std::int64_t(row_bytes + 4);
  times_.dispatch_bytes_received = (received - own) * std::int64_t(row_bytes + 4);
  times_.combine_bytes_sent = (received - own) * std::int64_t(row_bytes);
  times_.combine_bytes_received = (A - own) * std::int64_t(row_bytes);
}

}  // namespace KokkosMoE

#endif
