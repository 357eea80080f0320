// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// The router's kernels as one call: logits [T, E] = x router^T, then the
// top-k of the configured mode. Layer::route runs it on the layer's buffers;
// the expert-parallel layer runs it on its own (its router is replicated,
// its experts are not), so both route bit for bit alike.
#ifndef KOKKOSMOE_ROUTER_HPP
#define KOKKOSMOE_ROUTER_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>

#include "KokkosMoE_RouterLogits.hpp"
#include "KokkosMoE_Routing_Impl.hpp"

#include <KokkosMoE/KokkosMoE_BuildConfig.hpp>
#ifdef KOKKOSMOE_ENABLE_KOKKOSKERNELS
#include <KokkosBlas3_gemm.hpp>
#endif
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// What the router reads and writes: the router [E, H], the bias [E]
// (sigmoid_group_topk), logits [max_tokens, E], x in float [max_tokens, H]
// (16-bit storage types only), ids and weights [max_tokens, k].
template <class ExecutionSpace>
struct RouterBuffers {
  using memory_space = typename ExecutionSpace::memory_space;
  template <class T>
  using matrix = Kokkos::View<T**, Kokkos::LayoutRight, memory_space>;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> router;
  Kokkos::View<const float*, memory_space> bias;
  matrix<float> logits, x_float;
  matrix<std::int32_t> ids;
  matrix<float> weights;
};

// Routes tokens 0..num_tokens-1 of x (a routed mode; arguments checked by
// the caller) into r.ids and r.weights.
template <class ExecutionSpace, class Scalar>
void route_tokens(const ExecutionSpace& exec, const Config& config,
                  const RouterBuffers<ExecutionSpace>& r,
                  const Kokkos::View<const Scalar**, Kokkos::LayoutRight,
                                     typename ExecutionSpace::memory_space>& x,
                  std::int64_t num_tokens) {
  using memory_space = typename ExecutionSpace::memory_space;
  if (num_tokens == 0) return;
  const auto rows = Kokkos::make_pair(std::int64_t(0), num_tokens);
  const auto H = config.hidden_size;

  // Router logits [T, E] = x [T, H] router^T, by Kokkos Kernels' GEMM where
  // the build has it, else by our own kernel.
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> xf;
  if constexpr (std::is_same<Scalar, float>::value) {
    xf = Kokkos::subview(x, rows, Kokkos::ALL());
  } else {
    Kokkos::parallel_for("KokkosMoE::route::to_float",
                         Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                             exec, 0, num_tokens * H),
                         ConvertToFloat<ExecutionSpace, Scalar>{x, r.x_float, H});
    xf = Kokkos::subview(r.x_float, rows, Kokkos::ALL());
  }
  auto logits = Kokkos::subview(r.logits, rows, Kokkos::ALL());
  // Batch-invariant layers take our kernel too: each logit is one dot
  // product summed in a fixed order, where a GEMM's blocking (and so its
  // sums' order) may follow the number of tokens.
#if !defined(KOKKOSMOE_ENABLE_KOKKOSKERNELS)
  RouterLogitsKernel<ExecutionSpace>{xf, r.router, logits}.run(exec);
#else
  if (config.batch_invariant) RouterLogitsKernel<ExecutionSpace>{xf, r.router, logits}.run(exec);
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40100
  else KokkosBlas::gemm(exec, "N", "T", 1.0f, xf, r.router, 0.0f, logits);
#else
  else {
    // Before 4.1 KokkosBlas runs on the space's default instance: order it
    // after our queue and the top-k after it (the only fences in forward).
    exec.fence();
    KokkosBlas::gemm("N", "T", 1.0f, xf, r.router, 0.0f, logits);
    ExecutionSpace().fence();
  }
#endif
#endif

  RoutingViews<ExecutionSpace> v{r.logits,           r.ids,        r.weights,
                                 config.num_experts, config.top_k, config.renormalize};
  const auto policy = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<int>>(exec, 0,
                                                                                  int(num_tokens));
  if (config.routing == RoutingMode::softmax_topk) {
    Kokkos::parallel_for("KokkosMoE::route::softmax_topk", policy, SoftmaxTopK<ExecutionSpace>{v});
  } else {
    Kokkos::parallel_for("KokkosMoE::route::sigmoid_group_topk", policy,
                         SigmoidGroupTopK<ExecutionSpace>{
                             v, r.bias, config.n_group, config.topk_group, config.routed_scaling});
  }
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
