// SPDX-License-Identifier: BSD-3-Clause
// Shared helpers of the backend tests: random problems and routings.
#ifndef KOKKOSMOE_TESTUTILS_HPP
#define KOKKOSMOE_TESTUTILS_HPP

#include <KokkosMoE/KokkosMoE_Layer.hpp>
#include <KokkosMoE/KokkosMoE_Reference.hpp>

#include "TestRandom.hpp"

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace KokkosMoE {
namespace Test {

using StorageTypes = ::testing::Types<float, float16, bfloat16>;
// The layer's: the storage types, and e4m3 expert weights (bf16 tokens).
using LayerTypes = ::testing::Types<float, float16, bfloat16, float8_e4m3>;

// One layer with random weights and inputs on the test space, external or
// routed, with max_tokens rows of inputs and outputs.
template <class Space, class Scalar>
struct Problem {
  using layer_type = Layer<Space, Scalar>;
  using mem = typename Space::memory_space;
  Config config;
  Weights<Scalar, mem> weights;
  typename layer_type::tokens_view x, out;
  typename layer_type::ids_view ids;
  typename layer_type::weights_view routing_weights;
  // Whether the layer checked quantizes its activations (the reference
  // then does too): set from it by ran_on.
  bool quantized_activations = false;
  void ran_on(const layer_type& layer) { quantized_activations = layer.quantizes_activations(); }
  // The tolerance of error() for the layer checked.
  double tolerance() const {
    return quantized_activations ? quantized_activations_tolerance()
                                 : reference_tolerance<Scalar>();
  }

  Problem(int E, int k, std::int64_t H, std::int64_t F, std::int64_t T,
          RoutingMode mode = RoutingMode::external, std::uint64_t seed = 7) {
    config.num_experts = E;
    config.top_k = k;
    config.hidden_size = H;
    config.ffn_size = F;
    config.max_tokens = T;
    config.routing = mode;
    weights = random_weights<Scalar, mem>(config, seed);
    x = typename layer_type::tokens_view("x", T, H);
    out = typename layer_type::tokens_view("out", T, H);
    fill_uniform(x, -1.0, 1.0, seed + 11);
    fill_uniform(out, -1.0, 1.0, seed + 12);  // stale garbage must be overwritten
    ids = typename layer_type::ids_view("ids", T, k);
    routing_weights = typename layer_type::weights_view("routing_weights", T, k);
  }

  void set_routing(const HostRouting& r) {
    Kokkos::deep_copy(ids,
                      Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Kokkos::HostSpace>(
                          r.ids.data(), ids.extent(0), ids.extent(1)));
    Kokkos::deep_copy(routing_weights,
                      Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace>(
                          r.weights.data(), ids.extent(0), ids.extent(1)));
  }

  // Largest row-relative error of out against the float64 reference over
  // the first T tokens, for the routing in (ids_view, weights_view).
  template <class Ids, class W>
  double error(const Ids& use_ids, const W& use_weights, std::int64_t T) const {
    if (T == 0) return 0;
    Kokkos::View<int*, mem> tokens("tokens", T);
    Kokkos::parallel_for(
        Kokkos::RangePolicy<Space>(0, T), KOKKOS_LAMBDA(int i) { tokens(i) = i; });
    auto ref = reference_experts<Space, Scalar>(Space(), weights, x, use_ids, use_weights, tokens,
                                                nullptr, quantized_activations);
    std::vector<int> rows(T);
    std::iota(rows.begin(), rows.end(), 0);
    return max_row_relative_error(out, ref, rows);
  }
  double error(std::int64_t T) const { return error(ids, routing_weights, T); }
};

}  // namespace Test
}  // namespace KokkosMoE

#endif
