// SPDX-License-Identifier: BSD-3-Clause
// Top-k selection kernels of the router (one thread per token).
#ifndef KOKKOSMOE_ROUTING_IMPL_HPP
#define KOKKOSMOE_ROUTING_IMPL_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_Math.hpp>

#include <Kokkos_Core.hpp>

#include "KokkosMoE_FlatIndex.hpp"

#include <cfloat>
#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// Non-finite logits must still yield k distinct, valid experts and finite
// weights: NaN ranks lowest, infinities as the largest finite values (an
// infinite score would be excluded by next_best, or make inf - inf).
KOKKOS_INLINE_FUNCTION float rankable(float s) {
  return s == s ? (s > FLT_MAX ? FLT_MAX : s < -FLT_MAX ? -FLT_MAX : s) : -FLT_MAX;
}

// Order of selection: higher score first, lower index on ties.
KOKKOS_INLINE_FUNCTION bool ranks_before(float s1, int i1, float s2, int i2) {
  return s1 > s2 || (s1 == s2 && i1 < i2);
}

// The best of n items that ranks after (prev_score, prev) (prev < 0: no
// bound). Calling it k times yields the top k in order without storing any
// per-item state, so E has no compile-time bound. Items scored -inf are
// excluded (the caller guarantees enough others remain).
template <class ScoreOf>
KOKKOS_INLINE_FUNCTION int next_best(int n, const ScoreOf& score_of, float prev_score, int prev,
                                     float& best_score) {
  int best = -1;
  best_score = -INFINITY;
  for (int i = 0; i < n; ++i) {
    const float s = score_of(i);
    if (s == -INFINITY) continue;
    if (prev >= 0 && !ranks_before(prev_score, prev, s, i)) continue;
    if (best < 0 || ranks_before(s, i, best_score, best)) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

template <class ExecutionSpace>
struct RoutingViews {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> logits;  // [T, E]
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, memory_space> ids;    // [T, k]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> weights;       // [T, k]
  int experts;
  int k;
  bool renormalize;

  KOKKOS_INLINE_FUNCTION void normalize(int t, float sum, float scale) const {
    const float f = renormalize ? scale / sum : scale;
    for (int j = 0; j < k; ++j) weights(t, j) *= f;
  }
};

// Mixtral: softmax over all E logits, top-k, optional renormalisation.
template <class ExecutionSpace>
struct SoftmaxTopK : RoutingViews<ExecutionSpace> {
  KOKKOS_INLINE_FUNCTION void operator()(int t) const {
    const auto& v = *this;
    auto logit = [&](int e) { return rankable(v.logits(t, e)); };
    float m = -FLT_MAX;
    for (int e = 0; e < v.experts; ++e) m = math::fmax(m, logit(e));
    float denom = 0;
    for (int e = 0; e < v.experts; ++e) denom += math::exp(logit(e) - m);
    float prev_score = 0, chosen = 0;
    int prev = -1;
    for (int j = 0; j < v.k; ++j) {
      prev = next_best(v.experts, logit, prev_score, prev, prev_score);
      const float p = math::exp(prev_score - m) / denom;
      v.ids(t, j) = prev;
      v.weights(t, j) = p;
      chosen += p;
    }
    v.normalize(t, chosen, 1.0f);
  }
};

// DeepSeek-V3: sigmoid scores, biased for selection only, group-limited.
template <class ExecutionSpace>
struct SigmoidGroupTopK : RoutingViews<ExecutionSpace> {
  Kokkos::View<const float*, typename ExecutionSpace::memory_space> bias;  // [E]
  int n_group;
  int topk_group;
  float routed_scaling;

  KOKKOS_INLINE_FUNCTION float logit(int t, int e) const { return rankable(this->logits(t, e)); }
  // sigmoid without an overflowing exp for very negative logits.
  KOKKOS_INLINE_FUNCTION float score(int t, int e) const {
    const float l = logit(t, e);
    if (l >= 0) return 1.0f / (1.0f + math::exp(-l));
    const float z = math::exp(l);
    return z / (1.0f + z);
  }

  KOKKOS_INLINE_FUNCTION void operator()(int t) const {
    const auto& v = *this;
    const int per_group = v.experts / n_group;
    auto biased = [&](int e) { return rankable(score(t, e) + bias(e)); };

    // A group's score is the sum of its two best biased scores.
    auto group_score = [&](int g) {
      auto in_group = [&](int i) { return biased(g * per_group + i); };
      float s1 = 0, s2 = 0;
      const int b1 = next_best(per_group, in_group, 0.0f, -1, s1);
      if (per_group == 1) return s1;
      next_best(per_group, in_group, s1, b1, s2);
      return rankable(s1 + s2);  // two -FLT_MAX biases must not sum to -inf
    };
    std::uint64_t kept = 0;
    float prev_score = 0;
    int prev = -1;
    for (int j = 0; j < topk_group; ++j) {
      prev = next_best(n_group, group_score, prev_score, prev, prev_score);
      kept |= std::uint64_t(1) << prev;
    }

    auto candidate = [&](int e) { return (kept >> (e / per_group)) & 1u ? biased(e) : -INFINITY; };
    float sum = 0;
    prev = -1;
    for (int j = 0; j < v.k; ++j) {
      prev = next_best(v.experts, candidate, prev_score, prev, prev_score);
      const float w = score(t, prev);
      v.ids(t, j) = prev;
      v.weights(t, j) = w;
      sum += w;
    }
    // All chosen scores below FLT_MIN (logits under about -87) keep no
    // ratios in float; sigmoid(l) -> exp(l) there, so renormalise
    // exp(l - max l) instead of dividing by zero.
    if (v.renormalize && !(sum >= FLT_MIN)) {
      float m = -FLT_MAX;
      for (int j = 0; j < v.k; ++j) m = math::fmax(m, logit(t, v.ids(t, j)));
      sum = 0;
      for (int j = 0; j < v.k; ++j) {
        v.weights(t, j) = math::exp(logit(t, v.ids(t, j)) - m);
        sum += v.weights(t, j);
      }
    }
    v.normalize(t, sum, routed_scaling);
  }
};

// The first token whose routing row is malformed (min-reduction).
template <class ExecutionSpace>
struct FirstBadRouting {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, memory_space> ids;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> weights;
  int experts;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t t, std::int64_t& first) const {
    const int k = int(ids.extent(1));
    bool bad = false;
    for (int j = 0; j < k; ++j) {
      const int e = ids(t, j);
      const float w = weights(t, j);
      bad = bad || e < 0 || e >= experts || !(w - w == 0.0f);  // w - w is NaN for inf and NaN
      for (int i = 0; i < j; ++i) bad = bad || ids(t, i) == e;
    }
    if (bad && t < first) first = t;
  }
};

// Router input in float for the BLAS projection (16-bit storage types).
template <class ExecutionSpace, class Scalar>
struct ConvertToFloat {
  Kokkos::View<const Scalar**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space> in;
  Kokkos::View<float**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space> out;
  std::int64_t cols;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t row, col;
    row_and_column(i, cols, row, col);
    out(row, col) = to_float(in(row, col));
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
