// SPDX-License-Identifier: BSD-3-Clause
// Random inputs of the tests, seeded and never all zero: values, weights
// and routings. Without GoogleTest, so that the MPI tests (tests/ep) draw the
// same data.
#ifndef KOKKOSMOE_TESTRANDOM_HPP
#define KOKKOSMOE_TESTRANDOM_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>
#include <KokkosMoE/KokkosMoE_Quantize.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_Weights.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace KokkosMoE {
namespace Test {

// Uniform values in [lo, hi), never all zero, seeded; any contiguous view.
template <class View>
void fill_uniform(const View& v, double lo, double hi, std::uint64_t seed) {
  using T = typename View::non_const_value_type;
  auto host = Kokkos::create_mirror_view(v);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::size_t i = 0; i < host.span(); ++i) host.data()[i] = T(float(dist(rng)));
  Kokkos::deep_copy(v, host);
}

template <class View>
std::vector<double> to_double(const View& v) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(host.span());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = double(Impl::to_float(host.data()[i]));
  return out;
}

// Random weights scaled so activations stay O(1) whatever H and F are.
template <class Scalar, class Mem>
Weights<Scalar, Mem> random_values(const Config& c, std::uint64_t seed) {
  auto w = Weights<Scalar, Mem>::allocate(c);
  const double gh = 1.0 / std::sqrt(double(c.hidden_size)),
               df = 1.0 / std::sqrt(double(c.ffn_size));
  fill_uniform(w.router, -gh, gh, seed + 1);
  fill_uniform(w.bias, -0.1, 0.1, seed + 2);
  fill_uniform(w.gate, -2 * gh, 2 * gh, seed + 3);
  fill_uniform(w.up, -2 * gh, 2 * gh, seed + 4);
  fill_uniform(w.down, -2 * df, 2 * df, seed + 5);
  return w;
}

// The same for any storage type.
template <class Scalar, class Mem>
Weights<Scalar, Mem> random_weights(const Config& c, std::uint64_t seed) {
  // e4m3: the float weights of the same seed, quantised.
  if constexpr (is_block_scaled<Scalar>::value)
    return quantize_fp8(random_weights<float, Mem>(c, seed));
  else return random_values<Scalar, Mem>(c, seed);
}
// Host routing: every token draws k distinct experts among `experts`.
struct HostRouting {
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
};

inline HostRouting random_routing(std::int64_t T, int k, std::vector<int> experts,
                                  std::uint64_t seed) {
  HostRouting r;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> w(0.05f, 1.0f);
  for (std::int64_t t = 0; t < T; ++t) {
    std::shuffle(experts.begin(), experts.end(), rng);
    for (int j = 0; j < k; ++j) {
      r.ids.push_back(experts[j]);
      r.weights.push_back(w(rng));
    }
  }
  return r;
}

inline std::vector<int> first_experts(int n) {
  std::vector<int> e(n);
  std::iota(e.begin(), e.end(), 0);
  return e;
}

}  // namespace Test
}  // namespace KokkosMoE

#endif
