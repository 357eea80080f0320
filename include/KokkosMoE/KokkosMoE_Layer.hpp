// SPDX-License-Identifier: BSD-3-Clause
// The MoE layer: route -> dispatch -> gate/up (SwiGLU) -> down + combine.
//
// Every stage is a Kokkos kernel on the layer's execution space instance and
// runs inside a profiling region named after it ("KokkosMoE::route", ...).
// Buffers are sized once for Config::max_tokens; forward does no host
// round-trip and no allocation, so it can be captured in a graph.
#ifndef KOKKOSMOE_LAYER_HPP
#define KOKKOSMOE_LAYER_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>
#include <KokkosMoE/KokkosMoE_Dispatch.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_Weights.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>

namespace KokkosMoE {
namespace Impl {
// The expert part after dispatch and its operand workspace (src/).
template <class ExecutionSpace, class Scalar>
class ExpertStages;
}  // namespace Impl

// Scalar: the storage type of the expert weights, and of the hidden states,
// activations and outputs (token_type), which for float8_e4m3 weights are
// bfloat16.
template <class ExecutionSpace, class Scalar>
class Layer {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using scalar_type = Scalar;
  using token_type = token_type_t<Scalar>;
  using weights_type = Weights<Scalar, memory_space>;
  // Hidden states and outputs: [tokens, H], row-major.
  using tokens_view = Kokkos::View<token_type**, Kokkos::LayoutRight, memory_space>;
  using const_tokens_view = Kokkos::View<const token_type**, Kokkos::LayoutRight, memory_space>;
  // Routing: [tokens, k] expert ids (in [0, E), distinct per row) and weights.
  using ids_view = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, memory_space>;
  using weights_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using const_ids_view = Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, memory_space>;
  using const_weights_view = Kokkos::View<const float**, Kokkos::LayoutRight, memory_space>;

  // Validates the configuration and the weights' extents (std::invalid_argument).
  // The layer reads the weights where they are, except on the host backends
  // of builds without a GPU backend: their first batch of at least 8 rows
  // per expert (prefill shapes) packs the expert weights into panels, a
  // copy of about their size that the layer keeps and multiplies from then
  // on (decode reads them where they are, and never makes it). Write the
  // weights before that batch, or make a new layer.
  Layer(const Config& config, const weights_type& weights,
        const execution_space& exec = execution_space());
  // A layer owns its buffers (plan, h, outputs: a copy would share them but
  // not the state that says what they hold): movable, not copyable.
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;
  Layer(Layer&&) noexcept;
  Layer& operator=(Layer&&) noexcept;
  ~Layer();

  const Config& config() const { return config_; }
  const weights_type& weights() const { return weights_; }
  const execution_space& space() const { return exec_; }

  // Stages, callable one by one. num_tokens <= config().max_tokens, and the
  // views hold at least num_tokens rows.

  // Router logits and top-k selection into routing_ids()/routing_weights().
  // Not available with RoutingMode::external.
  void route(const const_tokens_view& x, std::int64_t num_tokens);
  // Counts per expert, prefix sums, token order by expert and the tile list.
  void dispatch(const const_ids_view& ids, std::int64_t num_tokens);
  // h = silu(x gate^T) * (x up^T) per assignment (rows: see activations());
  // gate and up stay in team scratch. After a dispatch of num_tokens.
  void gate_up(const const_tokens_view& x, std::int64_t num_tokens);
  // out[t] = sum_j w[t, j] * (h down^T) for the k assignments of token t.
  // After a gate_up of num_tokens (the stages throw std::logic_error when
  // run out of order or on another batch size).
  void down_combine(const const_weights_view& routing_weights, const tokens_view& out,
                    std::int64_t num_tokens);

  // The whole layer with the router (softmax_topk, sigmoid_group_topk).
  void forward(const const_tokens_view& x, const tokens_view& out, std::int64_t num_tokens);
  // The whole layer with given routing (any mode; used for trace replay).
  void forward(const const_tokens_view& x, const const_ids_view& ids,
               const const_weights_view& routing_weights, const tokens_view& out,
               std::int64_t num_tokens);

  // Results of the stages, for inspection and tests.
  ids_view routing_ids() const { return ids_; }
  weights_view routing_weights() const { return routing_weights_; }
  const DispatchPlan<memory_space>& plan() const { return plan_; }
  // h, F wide: in sorted order (row p belongs to assignment plan().order(p)),
  // or tile-major where activations_tile_major() says so.
  using activations_view = Kokkos::View<token_type**, Kokkos::LayoutRight, memory_space>;
  activations_view activations() const;
  // Whether the last dispatch chose large tiles whose operands the backend
  // copies by tensor maps (CUDA sm_90a), or the layer multiplies e4m3 codes
  // (quantizes_activations): h's rows are then tile-major, the r-th row of
  // tile t (plan().tiles(t, 1) + r in sorted order) at t * plan().tile_rows
  // + r. The tile's rows past its last are zero where the tiles are large;
  // past the last of a smaller e4m3 tile they hold what an earlier forward
  // left there (the kernels store none of their products).
  bool activations_tile_major() const;
  // Whether the expert kernels multiply e4m3 codes on the tensor cores
  // (e4m3 weights, CUDA sm_90a builds, rows that tensor copies can read):
  // x's rows and h are then quantised to e4m3 in groups of 1 x 128 along K,
  // each group scaled by its largest magnitude / 448 (DeepSeek-V3's recipe),
  // and h is rounded to token_type before it is quantised. Otherwise the
  // kernels multiply the weights' values in token_type or float.
  bool quantizes_activations() const;

  // Checks routing before it is given to forward: ids in [0, E) and distinct
  // within a row, weights finite. Throws std::invalid_argument naming the
  // first bad token. It reads a result back, so call it outside graph capture;
  // forward itself skips out-of-range ids (see invalid_ids) and never checks.
  void check_routing(const const_ids_view& ids, const const_weights_view& routing_weights,
                     std::int64_t num_tokens) const;

  // Number of routing ids outside [0, E) seen by the last dispatch (reads
  // one integer from the device; those assignments contribute nothing).
  int invalid_ids() const;

 private:
  void check_tokens(std::int64_t num_tokens, std::int64_t rows, const char* what) const;
  // x's rows one after another (the expert kernels address them from data()).
  void check_rows_contiguous(const const_tokens_view& x) const;
  // Every argument of a forward with given routing, before its first kernel.
  void check_routed_arguments(const const_tokens_view& x, const const_ids_view& ids,
                              const const_weights_view& routing_weights, const tokens_view& out,
                              std::int64_t num_tokens) const;
  // Throws std::logic_error unless `stage` follows a `before` of num_tokens.
  void check_follows(std::int64_t before_tokens, std::int64_t num_tokens, const char* stage,
                     const char* before) const;
  template <class View>
  void check_width(const View& v, std::int64_t width, const char* what) const;

  Config config_;
  weights_type weights_;
  execution_space exec_;
  ids_view ids_;
  weights_view routing_weights_;
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> logits_;  // [max_tokens, E]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space>
      x_float_;  // router input, 16-bit types only
  DispatchPlan<memory_space> plan_;
  int tile_size_ = -1;  // the Impl::TileSize of the last dispatch; -1 before any
  // The batch sizes of the last dispatch and of the gate_up after it (-1:
  // none): a stage given another batch would read a stale plan or h.
  std::int64_t dispatched_tokens_ = -1;
  std::int64_t gated_tokens_ = -1;
  int one_team_threads_ = 1;  // the one-team dispatch's team on exec_
  // gate/up, down and combine, with the operands they need.
  std::unique_ptr<Impl::ExpertStages<ExecutionSpace, Scalar>> experts_;
};

}  // namespace KokkosMoE

#include <KokkosMoE/KokkosMoE_ExplicitInstantiation.hpp>

#endif
