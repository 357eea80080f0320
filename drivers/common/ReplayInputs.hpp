// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// The replay's hidden states and weights: values drawn from a seed by a
// counter hash, so that every backend, thread count and rank draws the same
// ones (an expert-parallel rank draws the full weights and keeps its share).
#ifndef KOKKOSMOE_DRIVER_REPLAYINPUTS_HPP
#define KOKKOSMOE_DRIVER_REPLAYINPUTS_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>
#include <KokkosMoE/KokkosMoE_Quantize.hpp>
#include <KokkosMoE/KokkosMoE_Trace.hpp>
#include <KokkosMoE/KokkosMoE_Weights.hpp>

#include "ModelPresets.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace KokkosMoE {
namespace Driver {
using Space = Kokkos::DefaultExecutionSpace;

// Deterministic uniform values in [-scale, scale) from a counter hash, the
// same on every backend and independent of the thread count.
template <class View>
void fill_hashed(const View& v, std::uint64_t seed, float scale) {
  using T = typename View::non_const_value_type;
  T* data = v.data();
  Kokkos::parallel_for(
      "kokkos-moe-replay::fill",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(0, v.span()),
      KOKKOS_LAMBDA(std::int64_t i) {
        std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + std::uint64_t(i);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        const float u = float(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
        data[i] = T((2.0f * u - 1.0f) * scale);
      });
}

// The seed of one trace layer's replay (--seed and the layer's index):
// the weights draw from it (replay_weights), and the hidden states of the
// batch that starts at token t0 (fill_hidden_states).
std::uint64_t layer_seed(std::uint64_t seed, int layer);

// The layer a replay runs: the model shape, external routing (the trace's),
// buffers for max_tokens.
Config replay_config(const Shape& s, std::int64_t max_tokens, bool batch_invariant);

// All E experts' weights of a replayed layer, scaled to keep O(1) values
// (e4m3: the bf16 weights of the same seed, quantised).
template <class Scalar, class Memory>
Weights<Scalar, Memory> replay_weights(const Config& c, std::uint64_t layer_seed) {
  if constexpr (is_block_scaled<Scalar>::value) {
    return quantize_fp8(replay_weights<bfloat16, Memory>(c, layer_seed));
  } else {
    auto w = Weights<Scalar, Memory>::allocate(c);
    fill_hashed(w.gate, layer_seed + 1, 2.0f / std::sqrt(float(c.hidden_size)));
    fill_hashed(w.up, layer_seed + 2, 2.0f / std::sqrt(float(c.hidden_size)));
    fill_hashed(w.down, layer_seed + 3, 2.0f / std::sqrt(float(c.ffn_size)));
    return w;
  }
}

// The hidden states of the batch that starts at token t0.
template <class View>
void fill_hidden_states(const View& x, std::uint64_t layer_seed, std::int64_t t0) {
  fill_hashed(x, layer_seed + 4 + std::uint64_t(t0), 1.0f);
}

// Rows first..first+n of a trace layer's routing into ids and rw (their
// first n rows); gives the host copy of the ids.
template <class Ids, class RoutingWeights>
auto copy_routing(const TraceLayer& tl, std::int64_t first, std::int64_t n, const Ids& ids,
                  const RoutingWeights& rw) {
  const std::size_t k = ids.extent(1), begin = std::size_t(first) * k;
  auto host_ids = Kokkos::create_mirror_view(ids);
  auto host_weights = Kokkos::create_mirror_view(rw);
  for (std::size_t i = 0; i < std::size_t(n) * k; ++i) {
    host_ids.data()[i] = tl.expert_ids[begin + i];
    host_weights.data()[i] = tl.weights[begin + i];
  }
  Kokkos::deep_copy(ids, host_ids);
  Kokkos::deep_copy(rw, host_weights);
  return host_ids;
}

}  // namespace Driver
}  // namespace KokkosMoE

#endif
