// SPDX-License-Identifier: BSD-3-Clause
// The float64 reference the layer is checked against: straightforward
// kernels in double precision, written independently of the fast path (no
// dispatch, no tiles, no scratch), runnable where the weights live so that
// full-size models can be checked on the GPU.
#ifndef KOKKOSMOE_REFERENCE_HPP
#define KOKKOSMOE_REFERENCE_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_Math.hpp>
#include <KokkosMoE/KokkosMoE_Weights.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace KokkosMoE {

// Tolerance of the largest row-relative error for a storage type. The
// activations h and the outputs are each rounded once to the storage type
// (half an ulp, eps / 2, each), accumulation is in float: one ulp bounds
// what we see with margin (bf16 4e-3, fp16 4e-4 at H = 4096..7168), while a
// 1 % error in any stage fails. fp32 is bounded by float accumulation.
// e4m3 weights are compared with the values they stand for (the e4m3
// rounding itself is the quantiser's, tested there): their bf16 activations
// take one bf16 ulp as above, and the CUDA fragments round each weight's
// value once more, to the bf16 it is multiplied in (up to 1.0e-2 measured
// on the H200 where bf16 alone stays under 7.8e-3): two bf16 ulps.
template <class Scalar>
constexpr double reference_tolerance() {
  if (is_block_scaled<Scalar>::value) return 2 * ScalarTraits<Scalar>::epsilon;
  return ScalarTraits<Scalar>::epsilon < 1e-6 ? 1e-4 : ScalarTraits<Scalar>::epsilon;
}

// The tolerance for a layer that quantizes_activations(), against the
// reference that quantises them alike: the tensor cores accumulate e4m3
// products with fewer bits than float, so an element of h can differ from
// the reference's by a bf16 ulp before its own rounding to e4m3, and then
// take the neighbouring code (measured on the H200: a few elements in a
// thousand). One such element moves its row's outputs by up to an e4m3 ulp
// (2^-3) of its term, which for rows of 48 or more terms of like size stays
// under 2^-4 of the row's largest output: e4m3's unit roundoff. (A wrong
// scale, row or K step moves them by far more.)
constexpr double quantized_activations_tolerance() { return 0x1p-4; }

// out_ref[s, :] = sum_j w[t, j] down[e](silu(gate[e] x[t]) * (up[e] x[t])) for the
// sampled tokens t = tokens[s], e = ids[t, j], in double. Ids outside [0, E)
// contribute nothing, as in the layer. Returns a host view [S, H]. Name
// both template arguments: the views then convert (e.g. to const).
// With term_rss, also sets *term_rss[s, n] to the root sum of squares of the
// k * F terms w[t, j] down[e](n, f) h[j, f] that out_ref[s, n] sums: the
// scale of the layer's rounding errors in that output (the replay driver's
// check, drivers/common/ErrorModel.hpp).
// With e4m3_activations, x and h as a layer that quantizes_activations()
// multiplies them: each row's groups of 128 values along K quantised to e4m3
// with their scales, h rounded to the token type before (the layer stores
// it so); the rest in double.
template <class ExecutionSpace, class Scalar>
Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> reference_experts(
    const ExecutionSpace& exec, const Weights<Scalar, typename ExecutionSpace::memory_space>& w,
    const Kokkos::View<const token_type_t<Scalar>**, Kokkos::LayoutRight,
                       typename ExecutionSpace::memory_space>& x,
    const Kokkos::View<const std::int32_t**, Kokkos::LayoutRight,
                       typename ExecutionSpace::memory_space>& ids,
    const Kokkos::View<const float**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>&
        weights,
    const Kokkos::View<const int*, typename ExecutionSpace::memory_space>& tokens,
    Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>* term_rss = nullptr,
    bool e4m3_activations = false) {
  using mem = typename ExecutionSpace::memory_space;
  using range = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
  const std::int64_t S = tokens.extent(0);
  const int k = int(ids.extent(1));
  const int E = int(w.gate.extent(0));
  const std::int64_t F = w.gate.extent(1), H = w.gate.extent(2);
  auto gate = w.gate;
  auto up = w.up;
  auto down = w.down;
  auto gate_scale = w.gate_scale;
  auto up_scale = w.up_scale;
  auto down_scale = w.down_scale;
  Kokkos::View<double***, Kokkos::LayoutRight, mem> h("KokkosMoE::reference::h", S, k, F);
  Kokkos::View<double**, Kokkos::LayoutRight, mem> out("KokkosMoE::reference::out", S, H);
  Kokkos::View<double**, Kokkos::LayoutRight, mem> rss("KokkosMoE::reference::rss",
                                                       term_rss ? S : 0, term_rss ? H : 0);
  using token = token_type_t<Scalar>;
  constexpr int group = weight_block;
  // The sampled rows of x as multiplied (see e4m3_activations).
  Kokkos::View<double**, Kokkos::LayoutRight, mem> xs("KokkosMoE::reference::x", S, H);
  const std::int64_t HG = (H + group - 1) / group, FG = (F + group - 1) / group;
  Kokkos::parallel_for(
      "KokkosMoE::reference::x", range(exec, 0, S * HG), KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t s = i / HG, c0 = (i % HG) * group, c1 = c0 + group < H ? c0 + group : H;
        const int t = tokens(s);
        float amax = 0;
        for (std::int64_t c = c0; c < c1; ++c)
          amax = Impl::max_magnitude(amax, Impl::to_float(x(t, c)));
        const float scale = Impl::e4m3_scale(amax);
        for (std::int64_t c = c0; c < c1; ++c) {
          const float v = Impl::to_float(x(t, c));
          xs(s, c) = e4m3_activations ? double(float(float8_e4m3(v / scale))) * double(scale)
                                      : double(v);
        }
      });
  Kokkos::parallel_for(
      "KokkosMoE::reference::gate_up", range(exec, 0, S * k * F), KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t s = i / (k * F), j = (i / F) % k, f = i % F;
        const int t = tokens(s), e = ids(t, j);
        if (e < 0 || e >= E) return;
        double g = 0, u = 0;
        for (std::int64_t c = 0; c < H; ++c) {
          const double xv = xs(s, c);
          g += xv * double(Impl::weight_value(gate, gate_scale, e, f, c));
          u += xv * double(Impl::weight_value(up, up_scale, e, f, c));
        }
        h(s, j, f) = g / (1.0 + Impl::math::exp(-g)) * u;
      });
  if (e4m3_activations)
    Kokkos::parallel_for(
        "KokkosMoE::reference::h", range(exec, 0, S * k * FG), KOKKOS_LAMBDA(std::int64_t i) {
          const std::int64_t s = i / (k * FG), j = (i / FG) % k, f0 = (i % FG) * group;
          const std::int64_t f1 = f0 + group < F ? f0 + group : F;
          float amax = 0;
          for (std::int64_t f = f0; f < f1; ++f)
            amax = Impl::max_magnitude(amax, Impl::to_float(token(float(h(s, j, f)))));
          const float scale = Impl::e4m3_scale(amax);
          for (std::int64_t f = f0; f < f1; ++f) {
            const float v = Impl::to_float(token(float(h(s, j, f))));
            h(s, j, f) = double(float(float8_e4m3(v / scale))) * double(scale);
          }
        });
  Kokkos::parallel_for(
      "KokkosMoE::reference::down", range(exec, 0, S * H), KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t s = i / H, n = i % H;
        const int t = tokens(s);
        double acc = 0, squares = 0;
        for (int j = 0; j < k; ++j) {
          const int e = ids(t, j);
          if (e < 0 || e >= E) continue;
          const double wj = double(weights(t, j));
          double d = 0, d2 = 0;
          for (std::int64_t f = 0; f < F; ++f) {
            const double term = h(s, j, f) * double(Impl::weight_value(down, down_scale, e, n, f));
            d += term;
            d2 += term * term;
          }
          acc += wj * d;
          squares += wj * wj * d2;
        }
        out(s, n) = acc;
        if (rss.extent(0) > 0) rss(s, n) = squares;  // the root is taken on the host
      });
  auto host = Kokkos::create_mirror_view(out);
  Kokkos::deep_copy(exec, host, out);
  if (term_rss) {
    *term_rss = Kokkos::create_mirror_view(rss);
    Kokkos::deep_copy(exec, *term_rss, rss);
  }
  exec.fence();
  if (term_rss)
    for (std::int64_t s = 0; s < S; ++s)
      for (std::int64_t n = 0; n < H; ++n) (*term_rss)(s, n) = std::sqrt((*term_rss)(s, n));
  return host;
}

// Largest over sampled rows of max|out - ref| / max|ref| (a row of zeros in
// the reference is compared absolutely). out is the layer's [T, H] output.
template <class OutView>
double max_row_relative_error(
    const OutView& out, const Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>& ref,
    const std::vector<int>& tokens) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  double worst = 0;
  for (std::size_t s = 0; s < tokens.size(); ++s) {
    double diff = 0, scale = 0;
    for (std::size_t n = 0; n < ref.extent(1); ++n) {
      const double o = double(Impl::to_float(host(tokens[s], n)));
      // NaN anywhere must fail the check: comparisons with NaN are false.
      diff = std::isnan(o) ? INFINITY : std::max(diff, std::abs(o - ref(s, n)));
      scale = std::max(scale, std::abs(ref(s, n)));
      if (std::isinf(diff)) break;
    }
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

// Routing in double, by sorting: top-k expert ids (best first) and weights
// per token, for softmax_topk and sigmoid_group_topk. x is [T, H] host data.
struct ReferenceRouting {
  std::vector<int> ids;         // [T, k]
  std::vector<double> weights;  // [T, k]
  std::vector<double> scores;   // [T, E], the scores selection ranks by
};

inline ReferenceRouting reference_route(const Config& c, const std::vector<double>& x,
                                        const std::vector<double>& router,
                                        const std::vector<double>& bias, std::int64_t T) {
  const int E = c.num_experts, k = c.top_k;
  const std::int64_t H = c.hidden_size;
  ReferenceRouting r;
  r.ids.resize(T * k);
  r.weights.resize(T * k);
  r.scores.resize(T * E);
  std::vector<double> logit(E), prob(E);
  std::vector<int> order(E);
  for (std::int64_t t = 0; t < T; ++t) {
    for (int e = 0; e < E; ++e) {
      double s = 0;
      for (std::int64_t c2 = 0; c2 < H; ++c2) s += x[t * H + c2] * router[e * H + c2];
      logit[e] = s;
    }
    std::vector<bool> allowed(E, true);
    if (c.routing == RoutingMode::softmax_topk) {
      const double m = *std::max_element(logit.begin(), logit.end());
      double z = 0;
      for (int e = 0; e < E; ++e) z += std::exp(logit[e] - m);
      for (int e = 0; e < E; ++e) prob[e] = std::exp(logit[e] - m) / z;
      for (int e = 0; e < E; ++e) r.scores[t * E + e] = prob[e];
    } else {
      for (int e = 0; e < E; ++e) {
        prob[e] = 1.0 / (1.0 + std::exp(-logit[e]));
        r.scores[t * E + e] = prob[e] + bias[e];
      }
      const int per = E / c.n_group;
      std::vector<std::pair<double, int>> groups;
      for (int g = 0; g < c.n_group; ++g) {
        std::vector<double> s(r.scores.begin() + t * E + g * per,
                              r.scores.begin() + t * E + (g + 1) * per);
        std::sort(s.rbegin(), s.rend());
        groups.push_back({-(s[0] + (per > 1 ? s[1] : 0.0)), g});
      }
      std::sort(groups.begin(), groups.end());
      for (int e = 0; e < E; ++e) allowed[e] = false;
      for (int i = 0; i < c.topk_group; ++i)
        for (int e = 0; e < per; ++e) allowed[groups[i].second * per + e] = true;
    }
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      if (allowed[a] != allowed[b]) return bool(allowed[a]);
      return r.scores[t * E + a] > r.scores[t * E + b];
    });
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += prob[order[j]];
    const double scale = c.routing == RoutingMode::softmax_topk ? 1.0 : c.routed_scaling;
    for (int j = 0; j < k; ++j) {
      r.ids[t * k + j] = order[j];
      r.weights[t * k + j] = prob[order[j]] * (c.renormalize ? scale / sum : scale);
    }
  }
  return r;
}

}  // namespace KokkosMoE

#endif
