// The route stage (router GEMM + top-k) against the float64 reference.
#include "TestUtils.hpp"

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
  auto w   = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.routing_weights());
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
    p.config.n_group        = g.n_group;
    p.config.topk_group     = g.topk_group;
    p.config.renormalize    = g.renormalize;
    p.config.routed_scaling = g.scaling;
    Layer<Space, Scalar> layer(p.config, p.weights);
    expect_routing_matches(p, layer, 30);
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
  c.n_group    = 4;
  c.topk_group = 1;
  c.top_k      = 3;  // one group of 2 experts cannot give 3
  EXPECT_THROW(c.validate(), std::invalid_argument);
}
}  // namespace
