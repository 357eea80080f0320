// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// The replay's hidden states and weights: values drawn from a seed by a
// counter hash, so that every backend, thread count and rank draws the same
// ones (an expert-parallel rank draws the full weights and keeps its share).
#ifndef KOKKOSMOE_REPLAYINPUTS_HPP
#define KOKKOSMOE_REPLAYINPUTS_HPP

#include <Kokkos_Core.hpp>

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

}  // namespace Driver
}  // namespace KokkosMoE

#endif
