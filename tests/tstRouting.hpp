// SPDX-License-Identifier: BSD-3-Clause
// The route stage (router GEMM + top-k) against the float64 reference.
#include "TestUtils.hpp"

#include "KokkosMoE_RouterLogits.hpp"
#include "KokkosMoE_Routing_Impl.hpp"

#include <cfloat>
#include <cmath>

#define KMOE_CAT_(a, b) a##b
#define KMOE_CAT(a, b) KMOE_CAT_(a, b)
#define ROUTING_SUITE KMOE_CAT(Routing_, TEST_CATEGORY)

namespace {
using namespace KokkosMoE;
using namespace KokkosMoE::Test;
using Space = TEST_EXECSPACE;

template <class Scalar>
class ROUTING_SUITE : public ::testing::Test {};
TYPED_TEST_SUITE(ROUTING_SUITE, StorageTypes);

// Checks the layer's routing of T tokens against reference_route: the same
// experts in the same order and the same weights, except for tokens whose
// reference scores are too close to order reliably in float.
template <class Scalar>
void expect_routing_matches(Problem<Space, Scalar>& p, Layer<Space, Scalar>& layer,
                            std::int64_t T) {
  layer.route(p.x, T);
  const Config& c = p.config;
  auto ref = reference_route(c, to_double(p.x), to_double(p.weights.router),
                             to_double(p.weights.bias), T);
  auto ids = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.routing_ids());
  auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.routing_weights());
  const int E = c.num_experts, k = c.top_k;
  int compared = 0;
  for (std::int64_t t = 0; t < T; ++t) {
    // Near-ties of the reference scores may legitimately swap in float.
    std::vector<double> s(ref.scores.begin() + t * E, ref.scores.begin() + (t + 1) * E);
    std::sort(s.rbegin(), s.rend());
    bool close = false;
    for (int j = 0; j < k && j + 1 < E; ++j) close = close || s[j] - s[j + 1] < 1e-5 * s[j];
    if (close) continue;
    ++compared;
    for (int j = 0; j < k; ++j) {
      ASSERT_EQ(ids(t, j), ref.ids[t * k + j]) << "token " << t << " slot " << j;
      EXPECT_NEAR(w(t, j), ref.weights[t * k + j], 1e-5 * (1 + std::abs(ref.weights[t * k + j])))
          << "token " << t << " slot " << j;
    }
  }
  EXPECT_GT(compared, 0);
}

TYPED_TEST(ROUTING_SUITE, SoftmaxTopKEveryKUpToE) {
  using Scalar = TypeParam;
  for (int E : {1, 2, 8, 64, 256}) {
    for (int k : {1, 2, E / 2, E}) {
      if (k < 1 || k > E) continue;
      for (bool renormalize : {true, false}) {
        SCOPED_TRACE("E=" + std::to_string(E) + " k=" + std::to_string(k) +
                     " renormalize=" + std::to_string(renormalize));
        Problem<Space, Scalar> p(E, k, 24, 8, 20, RoutingMode::softmax_topk, E * 31 + k);
        p.config.renormalize = renormalize;
        Layer<Space, Scalar> layer(p.config, p.weights);
        p.ran_on(layer);
        expect_routing_matches(p, layer, 20);
      }
    }
  }
}

TYPED_TEST(ROUTING_SUITE, SigmoidGroupLimitedTopK) {
  using Scalar = TypeParam;
  struct G {
    int E, k, n_group, topk_group;
    bool renormalize;
    float scaling;
  };
  // DeepSeek-V3's own configuration first, then degenerate groupings.
  for (G g : {G{256, 8, 8, 4, true, 2.5f}, G{16, 3, 4, 2, false, 1.0f}, G{8, 2, 1, 1, true, 1.0f},
              G{8, 8, 8, 8, true, 1.0f}, G{12, 1, 12, 3, true, 1.0f}}) {
    SCOPED_TRACE("E=" + std::to_string(g.E) + " n_group=" + std::to_string(g.n_group));
    Problem<Space, Scalar> p(g.E, g.k, 40, 8, 30, RoutingMode::sigmoid_group_topk, g.E + g.k);
    p.config.n_group = g.n_group;
    p.config.topk_group = g.topk_group;
    p.config.renormalize = g.renormalize;
    p.config.routed_scaling = g.scaling;
    Layer<Space, Scalar> layer(p.config, p.weights);
    p.ran_on(layer);
    expect_routing_matches(p, layer, 30);
  }
}

// The top-k kernel that make(views) returns, run on given logits ([T, E]
// row-major); ids and weights come back [T, k] row-major.
template <class MakeKernel>
void run_topk(const std::vector<float>& logits, int E, int k, bool renormalize,
              const MakeKernel& make, std::vector<int>& ids, std::vector<float>& weights) {
  const int T = int(logits.size()) / E;
  Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> l("logits", T, E);
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Space::memory_space> id("ids", T, k);
  Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> w("weights", T, k);
  auto lh = Kokkos::create_mirror_view(l);
  for (int t = 0; t < T; ++t)
    for (int e = 0; e < E; ++e) lh(t, e) = logits[t * E + e];
  Kokkos::deep_copy(l, lh);
  Impl::RoutingViews<Space> v{l, id, w, E, k, renormalize};
  Kokkos::parallel_for(Kokkos::RangePolicy<Space>(0, T), make(v));
  auto ih = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), id);
  auto wh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
  ids.assign(ih.data(), ih.data() + T * k);
  weights.assign(wh.data(), wh.data() + T * k);
  for (int t = 0; t < T; ++t) {
    for (int j = 0; j < k; ++j) {
      const int e = ids[t * k + j];
      ASSERT_TRUE(e >= 0 && e < E) << "token " << t << " slot " << j << ": id " << e;
      for (int i = 0; i < j; ++i) ASSERT_NE(ids[t * k + i], e) << "token " << t;
      EXPECT_TRUE(std::isfinite(weights[t * k + j]) && weights[t * k + j] >= 0)
          << "token " << t << " slot " << j << ": weight " << weights[t * k + j];
    }
  }
}

// Infinite and NaN logits (an overflowing router product, a corrupt weight)
// still give k distinct, valid experts and finite weights.
TEST(ROUTING_SUITE, NonFiniteLogitsGiveValidRouting) {
  const float inf = INFINITY, nan = NAN;
  const std::vector<float> logits = {inf,  0,    0,    0,    // one +inf
                                     -inf, 1,    2,    3,    // one -inf
                                     nan,  -inf, 5,    inf,  // all kinds
                                     -inf, -inf, -inf, -inf, nan, nan, nan, nan};
  std::vector<int> ids;
  std::vector<float> w;
  auto softmax = [](const Impl::RoutingViews<Space>& v) { return Impl::SoftmaxTopK<Space>{v}; };
  run_topk(logits, 4, 3, true, softmax, ids, w);
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 2, 3, 2, 1, 3, 2, 0, 0, 1, 2, 0, 1, 2}));
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const std::vector<double> expected = {
      1, 0,       0,       std::exp(3.0) / z, std::exp(2.0) / z, std::exp(1.0) / z, 1,      0,
      0, 1 / 3.0, 1 / 3.0, 1 / 3.0,           1 / 3.0,           1 / 3.0,           1 / 3.0};
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], expected[i], 1e-6) << i;

  // Group-limited sigmoid routing, two groups of two: a whole group biased
  // to -inf is never kept, infinite logits score 1 or 0.
  Kokkos::View<float*, Space::memory_space> bias("bias", 4);
  auto bh = Kokkos::create_mirror_view(bias);
  bh(0) = bh(1) = -inf, bh(2) = bh(3) = 0;
  Kokkos::deep_copy(bias, bh);
  auto grouped = [&](const Impl::RoutingViews<Space>& v) {
    return Impl::SigmoidGroupTopK<Space>{v, bias, 2, 1, 2.0f};
  };
  run_topk({inf, inf, -inf, 0, nan, nan, nan, nan}, 4, 2, true, grouped, ids, w);
  EXPECT_EQ(ids, (std::vector<int>{3, 2, 2, 3}));
  EXPECT_NEAR(w[0], 2.0, 1e-6);  // sigmoid(0) against sigmoid(-inf) = 0
  EXPECT_NEAR(w[1], 0.0, 1e-6);
  EXPECT_NEAR(w[2], 1.0, 1e-6);  // NaN ranks lowest: both score 0, equal shares
  EXPECT_NEAR(w[3], 1.0, 1e-6);
}

// Sigmoid scores of logits below about -87 underflow in float; the
// renormalised weights keep their ratios (as in float64) instead of 0 / 0.
TEST(ROUTING_SUITE, SigmoidWeightsOfVeryNegativeLogits) {
  Kokkos::View<float*, Space::memory_space> bias("bias", 2);
  auto grouped = [&](const Impl::RoutingViews<Space>& v) {
    return Impl::SigmoidGroupTopK<Space>{v, bias, 1, 1, 1.0f};
  };
  std::vector<int> ids;
  std::vector<float> w;
  run_topk({-100, -101, -200, -200, -90, -300}, 2, 2, true, grouped, ids, w);
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  const double r = 1 / (1 + std::exp(-1.0));
  const std::vector<double> expected = {r, 1 - r, 0.5, 0.5, 1, 0};
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], expected[i], 1e-6) << i;
}

// Our router kernel (the route stage's GEMM in builds without Kokkos
// Kernels) against float64: token counts around its blocks of 8 tokens, H
// around its 256-wide scratch chunks, E from 1 up.
TEST(ROUTING_SUITE, RouterLogitsKernelMatchesFloat64) {
  using Kernel = Impl::RouterLogitsKernel<Space>;
  for (int T : {0, 1, 7, 8, 9, 33}) {
    for (int H : {1, 40, 256, 300, 600}) {
      for (int E : {1, 3, 64}) {
        SCOPED_TRACE("T=" + std::to_string(T) + " H=" + std::to_string(H) +
                     " E=" + std::to_string(E));
        Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> x("x", T, H),
            router("router", E, H), logits("logits", T, E);
        fill_uniform(x, -1.0, 1.0, 7 + T);
        fill_uniform(router, -1.0, 1.0, 11 + H);
        fill_uniform(logits, -1.0, 1.0, 13);  // stale values must be overwritten
        Kernel{x, router, logits}.run(Space());
        Kokkos::fence();
        const auto xh = to_double(x), rh = to_double(router), lh = to_double(logits);
        for (int t = 0; t < T; ++t)
          for (int e = 0; e < E; ++e) {
            double ref = 0, mag = 0;
            for (int h = 0; h < H; ++h) {
              ref += xh[t * H + h] * rh[e * H + h];
              mag += std::abs(xh[t * H + h] * rh[e * H + h]);
            }
            // A float sum of H products: within about H ulp of their magnitudes' sum.
            ASSERT_NEAR(lh[t * E + e], ref, 1.2e-7 * H * (mag + 1)) << "t=" << t << " e=" << e;
          }
      }
    }
  }
}

TEST(ROUTING_SUITE, ZeroTokensAndBadConfigs) {
  Problem<Space, float> p(8, 2, 16, 8, 4, RoutingMode::softmax_topk);
  Layer<Space, float> layer(p.config, p.weights);
  EXPECT_NO_THROW(layer.route(p.x, 0));
  Config c = p.config;
  c.routing = RoutingMode::sigmoid_group_topk;
  c.n_group = 3;  // 8 experts do not split into 3 groups
  EXPECT_THROW(c.validate(), std::invalid_argument);
  c.n_group = 4;
  c.topk_group = 1;
  c.top_k = 3;  // one group of 2 experts cannot give 3
  EXPECT_THROW(c.validate(), std::invalid_argument);
}
}  // namespace
