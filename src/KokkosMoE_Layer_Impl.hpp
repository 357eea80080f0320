// SPDX-License-Identifier: BSD-3-Clause
// Definitions of Layer's members; compiled once per (execution space,
// storage type) in the generated instantiation units.
#ifndef KOKKOSMOE_LAYER_IMPL_HPP
#define KOKKOSMOE_LAYER_IMPL_HPP

#include <KokkosMoE/KokkosMoE_HostTuning.hpp>
#include <KokkosMoE/KokkosMoE_Layer.hpp>

#include "KokkosMoE_Dispatch_Impl.hpp"
#include "KokkosMoE_ExpertStages.hpp"
#include "KokkosMoE_Router.hpp"
#include "KokkosMoE_Routing_Impl.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace KokkosMoE {

namespace Impl {
// Opens a profiling region for the lifetime of a stage.
class StageRegion {
 public:
  explicit StageRegion(const char* name) { Kokkos::Profiling::pushRegion(name); }
  ~StageRegion() { Kokkos::Profiling::popRegion(); }
  StageRegion(const StageRegion&) = delete;
  StageRegion& operator=(const StageRegion&) = delete;
};

template <class View>
void check_extents(const View& v, std::initializer_list<std::int64_t> want, const char* name) {
  int r = 0;
  for (std::int64_t n : want) {
    if (std::int64_t(v.extent(r)) != n)
      throw std::invalid_argument(std::string("KokkosMoE::Layer: weights.") + name +
                                  " has extent " + std::to_string(v.extent(r)) + " in dimension " +
                                  std::to_string(r) + ", expected " + std::to_string(n));
    ++r;
  }
  if (v.data() == nullptr && value_count(v) > 0)
    throw std::invalid_argument(std::string("KokkosMoE::Layer: weights.") + name +
                                " has no memory (a view without data)");
  check_span(v, std::string("KokkosMoE::Layer: weights.") + name);
  // The kernels address an expert's rows from data() (and by tensor maps).
  if (v.span() != value_count(v) || !v.span_is_contiguous())
    throw std::invalid_argument(std::string("KokkosMoE::Layer: weights.") + name +
                                " must be contiguous (no padding, no strided subview)");
}

// Block-scaled weights: every scale finite and no element a NaN code (bad
// weights fail here, once, rather than as NaN outputs).
template <class Space, class Tensor, class Scales>
void check_block_scaled(const Space& exec, const Tensor& t, const Scales& scale, const char* name) {
  using range = Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>;
  const std::int64_t R = t.extent(1), C = t.extent(2);
  std::int64_t bad_values = 0, bad_scales = 0;
  Kokkos::parallel_reduce(
      "KokkosMoE::check_weights", range(exec, 0, std::int64_t(value_count(t))),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t & n) {
        n += (t(i / (R * C), (i / C) % R, i % C).bits & 0x7f) == 0x7f;
      },
      bad_values);
  const std::int64_t RB = scale.extent(1), CB = scale.extent(2);
  Kokkos::parallel_reduce(
      "KokkosMoE::check_scales", range(exec, 0, std::int64_t(value_count(scale))),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t & n) {
        const float s = scale(i / (RB * CB), (i / CB) % RB, i % CB);
        n += (float_bits(s) & 0x7f800000u) == 0x7f800000u;
      },
      bad_scales);
  if (bad_values > 0)
    throw std::invalid_argument(std::string("KokkosMoE::Layer: weights.") + name + " holds " +
                                std::to_string(bad_values) + " e4m3 NaN values");
  if (bad_scales > 0)
    throw std::invalid_argument(std::string("KokkosMoE::Layer: weights.") + name + "_scale holds " +
                                std::to_string(bad_scales) + " scales that are not finite");
}
template <class Space, class Weights>
void check_block_scaled(const Space& exec, const Weights& w) {
  check_block_scaled(exec, w.gate, w.gate_scale, "gate");
  check_block_scaled(exec, w.up, w.up_scale, "up");
  check_block_scaled(exec, w.down, w.down_scale, "down");
}
}  // namespace Impl

template <class ExecutionSpace, class Scalar>
Layer<ExecutionSpace, Scalar>::Layer(const Config& config, const weights_type& weights,
                                     const execution_space& exec)
    : config_(config), weights_(weights), exec_(exec) {
  config_.validate();
  // The host kernels' tuning, read here so that a bad setting of its
  // environment variables throws now rather than inside a kernel.
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible)
    host_tuning();
  const std::int64_t E = config_.num_experts, H = config_.hidden_size, F = config_.ffn_size;
  const std::int64_t T = config_.max_tokens, k = config_.top_k;
  if (config_.routing != RoutingMode::external)
    Impl::check_extents(weights_.router, {E, H}, "router");
  if (config_.routing == RoutingMode::sigmoid_group_topk)
    Impl::check_extents(weights_.bias, {E}, "bias");
  Impl::check_extents(weights_.gate, {E, F, H}, "gate");
  Impl::check_extents(weights_.up, {E, F, H}, "up");
  Impl::check_extents(weights_.down, {E, H, F}, "down");
  if constexpr (is_block_scaled<Scalar>::value) {
    const std::int64_t fb = weights_type::blocks(F), hb = weights_type::blocks(H);
    Impl::check_extents(weights_.gate_scale, {E, fb, hb}, "gate_scale");
    Impl::check_extents(weights_.up_scale, {E, fb, hb}, "up_scale");
    Impl::check_extents(weights_.down_scale, {E, hb, fb}, "down_scale");
    Impl::check_block_scaled(exec_, weights_);
  }

  ids_ = ids_view("KokkosMoE::routing_ids", T, k);
  routing_weights_ = weights_view("KokkosMoE::routing_weights", T, k);
  if (config_.routing != RoutingMode::external) {
    logits_ = decltype(logits_)("KokkosMoE::logits", T, E);
    if (!std::is_same<token_type, float>::value)
      x_float_ = decltype(x_float_)("KokkosMoE::x_float", T, H);
  }
  // Room for the tiles of the shape with the fewest rows per tile.
  plan_ = DispatchPlan<memory_space>::allocate(int(E), T * k,
                                               Impl::min_tile_rows<ExecutionSpace, Scalar>());
  // For this instance (an OpenMP partition may hold fewer threads than
  // another instance of the same space), once: not in every forward.
  one_team_threads_ =
      Impl::DispatchKernels<ExecutionSpace>{plan_, {}, int(E), int(k), 0}.one_team_threads(exec_);
  experts_ = std::make_unique<Impl::ExpertStages<ExecutionSpace, Scalar>>(config_, weights_, exec_);
}

template <class ExecutionSpace, class Scalar>
Layer<ExecutionSpace, Scalar>::~Layer() = default;
template <class ExecutionSpace, class Scalar>
Layer<ExecutionSpace, Scalar>::Layer(Layer&&) noexcept = default;
template <class ExecutionSpace, class Scalar>
Layer<ExecutionSpace, Scalar>& Layer<ExecutionSpace, Scalar>::operator=(Layer&&) noexcept = default;

template <class ExecutionSpace, class Scalar>
auto Layer<ExecutionSpace, Scalar>::activations() const -> activations_view {
  return experts_->activations();
}

template <class ExecutionSpace, class Scalar>
bool Layer<ExecutionSpace, Scalar>::activations_tile_major() const {
  return experts_->tile_major(Impl::TileSize(tile_size_));
}

template <class ExecutionSpace, class Scalar>
bool Layer<ExecutionSpace, Scalar>::quantizes_activations() const {
  return experts_->quantizes_activations();
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::check_tokens(std::int64_t num_tokens, std::int64_t rows,
                                                 const char* what) const {
  if (num_tokens < 0 || num_tokens > config_.max_tokens)
    throw std::invalid_argument(
        "KokkosMoE::Layer: num_tokens = " + std::to_string(num_tokens) +
        " is outside [0, max_tokens = " + std::to_string(config_.max_tokens) + "]");
  if (rows < num_tokens)
    throw std::invalid_argument(std::string("KokkosMoE::Layer: ") + what + " has " +
                                std::to_string(rows) +
                                " rows, fewer than num_tokens = " + std::to_string(num_tokens));
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::check_follows(std::int64_t before_tokens,
                                                  std::int64_t num_tokens, const char* stage,
                                                  const char* before) const {
  const std::string head = std::string("KokkosMoE::Layer: ") + stage;
  if (before_tokens < 0) throw std::logic_error(head + " before any " + before);
  if (before_tokens != num_tokens)
    throw std::logic_error(head + " of " + std::to_string(num_tokens) + " tokens after a " +
                           before + " of " + std::to_string(before_tokens));
}

template <class ExecutionSpace, class Scalar>
template <class View>
void Layer<ExecutionSpace, Scalar>::check_width(const View& v, std::int64_t width,
                                                const char* what) const {
  if (std::int64_t(v.extent(1)) != width)
    throw std::invalid_argument(std::string("KokkosMoE::Layer: ") + what + " has " +
                                std::to_string(v.extent(1)) + " columns, expected " +
                                std::to_string(width));
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::check_rows_contiguous(const const_tokens_view& x) const {
  // The expert kernels find a token's row at data() + token * H.
  if (x.extent(0) > 1 && std::int64_t(x.stride(0)) != config_.hidden_size)
    throw std::invalid_argument(
        "KokkosMoE::Layer: x's rows are " + std::to_string(x.stride(0)) +
        " values apart, not hidden_size = " + std::to_string(config_.hidden_size) +
        " (a padded view or a column subview): copy it first");
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::check_routed_arguments(
    const const_tokens_view& x, const const_ids_view& ids,
    const const_weights_view& routing_weights, const tokens_view& out,
    std::int64_t num_tokens) const {
  check_tokens(num_tokens, std::int64_t(x.extent(0)), "x");
  check_width(x, config_.hidden_size, "x");
  check_rows_contiguous(x);
  check_tokens(num_tokens, std::int64_t(ids.extent(0)), "ids");
  check_width(ids, config_.top_k, "ids");
  check_tokens(num_tokens, std::int64_t(routing_weights.extent(0)), "routing weights");
  check_width(routing_weights, config_.top_k, "routing weights");
  check_tokens(num_tokens, std::int64_t(out.extent(0)), "out");
  check_width(out, config_.hidden_size, "out");
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::route(const const_tokens_view& x, std::int64_t num_tokens) {
  Impl::StageRegion region("KokkosMoE::route");
  if (config_.routing == RoutingMode::external)
    throw std::logic_error(
        "KokkosMoE::Layer::route: the layer was configured for external routing");
  check_tokens(num_tokens, std::int64_t(x.extent(0)), "x");
  check_width(x, config_.hidden_size, "x");
  Impl::route_tokens<ExecutionSpace, token_type>(
      exec_, config_, {weights_.router, weights_.bias, logits_, x_float_, ids_, routing_weights_},
      x, num_tokens);
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::dispatch(const const_ids_view& ids, std::int64_t num_tokens) {
  Impl::StageRegion region("KokkosMoE::dispatch");
  check_tokens(num_tokens, std::int64_t(ids.extent(0)), "ids");
  check_width(ids, config_.top_k, "ids");
  // The tile shape from the rows per expert if all experts that can be
  // active are: the choice needs only num_tokens, known on the host. A
  // batch-invariant layer keeps the large shape for every batch.
  const std::int64_t assignments = num_tokens * config_.top_k;
  const std::int64_t active =
      std::max<std::int64_t>(1, std::min<std::int64_t>(assignments, config_.num_experts));
  const Impl::TileSize size = config_.batch_invariant
                                  ? Impl::TileSize::large
                                  : Impl::tile_size_for<ExecutionSpace>(assignments / active);
  tile_size_ = int(size);
  dispatched_tokens_ = num_tokens;
  gated_tokens_ = -1;
  plan_.tile_rows = experts_->tile_rows(size);
  Impl::DispatchKernels<ExecutionSpace>{plan_, ids, config_.num_experts, config_.top_k,
                                        int(assignments)}
      .run(exec_, one_team_threads_);
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::gate_up(const const_tokens_view& x, std::int64_t num_tokens) {
  Impl::StageRegion region("KokkosMoE::gate_up");
  check_tokens(num_tokens, std::int64_t(x.extent(0)), "x");
  check_width(x, config_.hidden_size, "x");
  check_rows_contiguous(x);
  check_follows(dispatched_tokens_, num_tokens, "gate_up", "dispatch");
  gated_tokens_ = num_tokens;
  if (num_tokens * config_.top_k == 0) return;
  // The tile shape the last dispatch built its tiles for.
  experts_->gate_up(x, num_tokens, Impl::TileSize(tile_size_), plan_);
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::down_combine(const const_weights_view& routing_weights,
                                                 const tokens_view& out, std::int64_t num_tokens) {
  Impl::StageRegion region("KokkosMoE::down_combine");
  check_tokens(num_tokens, std::int64_t(routing_weights.extent(0)), "routing weights");
  check_tokens(num_tokens, std::int64_t(out.extent(0)), "out");
  check_width(out, config_.hidden_size, "out");
  check_width(routing_weights, config_.top_k, "routing weights");
  check_follows(gated_tokens_, num_tokens, "down_combine", "gate_up");
  if (num_tokens * config_.top_k == 0) return;
  experts_->down_combine(routing_weights, out, num_tokens, Impl::TileSize(tile_size_), plan_);
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::forward(const const_tokens_view& x, const tokens_view& out,
                                            std::int64_t num_tokens) {
  // Every argument before the first kernel: a refused forward changes nothing
  // (route refuses an external layer before its kernels).
  check_routed_arguments(x, ids_, routing_weights_, out, num_tokens);
  route(x, num_tokens);
  forward(x, ids_, routing_weights_, out, num_tokens);
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::forward(const const_tokens_view& x, const const_ids_view& ids,
                                            const const_weights_view& routing_weights,
                                            const tokens_view& out, std::int64_t num_tokens) {
  check_routed_arguments(x, ids, routing_weights, out, num_tokens);
  dispatch(ids, num_tokens);
  gate_up(x, num_tokens);
  down_combine(routing_weights, out, num_tokens);
}

template <class ExecutionSpace, class Scalar>
void Layer<ExecutionSpace, Scalar>::check_routing(const const_ids_view& ids,
                                                  const const_weights_view& routing_weights,
                                                  std::int64_t num_tokens) const {
  check_tokens(num_tokens, std::int64_t(ids.extent(0)), "ids");
  check_tokens(num_tokens, std::int64_t(routing_weights.extent(0)), "routing weights");
  check_width(ids, config_.top_k, "ids");
  check_width(routing_weights, config_.top_k, "routing weights");
  std::int64_t first = 0;
  Kokkos::parallel_reduce(
      "KokkosMoE::check_routing",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(exec_, 0, num_tokens),
      Impl::FirstBadRouting<ExecutionSpace>{ids, routing_weights, config_.num_experts},
      Kokkos::Min<std::int64_t>(first));
  exec_.fence();
  if (first >= num_tokens) return;  // Min's identity is the largest value
  // Describe the offending row from a host copy of it.
  const int k = config_.top_k;
  auto row_ids = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                                     Kokkos::subview(ids, first, Kokkos::ALL()));
  auto row_w = Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace(), Kokkos::subview(routing_weights, first, Kokkos::ALL()));
  std::string ids_text, w_text;
  for (int j = 0; j < k; ++j) {
    ids_text += (j ? ", " : "") + std::to_string(row_ids(j));
    w_text += (j ? ", " : "") + std::to_string(row_w(j));
  }
  throw std::invalid_argument("KokkosMoE::Layer: routing of token " + std::to_string(first) +
                              " is invalid (ids must be distinct in [0, " +
                              std::to_string(config_.num_experts) + "), weights finite): ids [" +
                              ids_text + "], weights [" + w_text + "]");
}

template <class ExecutionSpace, class Scalar>
int Layer<ExecutionSpace, Scalar>::invalid_ids() const {
  int n = 0;
  Kokkos::deep_copy(exec_, n, plan_.invalid_ids);
  exec_.fence();
  return n;
}

}  // namespace KokkosMoE

#endif
