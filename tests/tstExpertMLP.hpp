// The gate/up stage alone: the activations h against float64.
#include "TestUtils.hpp"

#include "KokkosMoE_Fragment.hpp"

#define KMOE_CAT_(a, b) a##b
#define KMOE_CAT(a, b) KMOE_CAT_(a, b)
#define EXPERTMLP_SUITE KMOE_CAT(ExpertMLP_, TEST_CATEGORY)

namespace KokkosMoE {
namespace Test {
// c += a b^T through the fragment of (Space, Scalar), from global memory via
// scratch tiles; a and b hold values representable in Scalar. (A free
// function: CUDA lambdas cannot live in a test body, a private member.)
template <class Space, class Scalar, class frag, class View>
void fragment_mma(const View& a, const View& b, const View& c, int team_size) {
  using policy = Kokkos::TeamPolicy<Space, typename frag::launch_bounds>;
  const int M = frag::tile_m, N = frag::tile_n, K = frag::tile_k;
  const std::size_t bytes = frag::operand_bytes(M) + frag::operand_bytes(N) + frag::accumulator_bytes();
  Kokkos::parallel_for(
      policy(1, team_size).set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const typename policy::member_type& m) {
        const typename frag::tile as = frag::operand(m, M), bs = frag::operand(m, N);
        typename frag::accumulator_type cs = frag::accumulator(m);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, M * K), [&](int i) {
          *frag::element(as, i / K, i % K) = frag::to_operand(Scalar(a(i / K, i % K)));
        });
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, N * K), [&](int i) {
          *frag::element(bs, i / K, i % K) = frag::to_operand(Scalar(b(i / K, i % K)));
        });
        frag::zero(m, cs);
        m.team_barrier();
        frag::mma_nt(m, as, bs, cs);  // twice: accumulation carries over
        frag::mma_nt(m, as, bs, cs);
        frag::finish(m, cs);
        frag::template store<2>(
            m,
            [&](int r, int n, const auto& run) {
              for (int i = 0; i < run.width; ++i) c(r, n + i) += run.v[i];
            },
            cs);
      });
  Kokkos::fence();
}
}  // namespace Test
}  // namespace KokkosMoE

namespace {
using namespace KokkosMoE;
using namespace KokkosMoE::Test;
using Space = TEST_EXECSPACE;

template <class Scalar>
class EXPERTMLP_SUITE : public ::testing::Test {};
TYPED_TEST_SUITE(EXPERTMLP_SUITE, StorageTypes);

TYPED_TEST(EXPERTMLP_SUITE, GateUpActivationsMatchFloat64) {
  using Scalar = TypeParam;
  const int E = 6, k = 2;
  const std::int64_t H = 70, F = 45, T = 50;
  Problem<Space, Scalar> p(E, k, H, F, T);
  const auto r = random_routing(T, k, first_experts(4), 9);
  p.set_routing(r);
  Layer<Space, Scalar> layer(p.config, p.weights);
  layer.dispatch(p.ids, T);
  layer.gate_up(p.x, T);

  const auto x = to_double(p.x), gate = to_double(p.weights.gate), up = to_double(p.weights.up);
  const auto h = to_double(layer.activations());
  auto order   = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.plan().order);
  double worst = 0;
  for (std::int64_t row = 0; row < T * k; ++row) {
    const int a = order(row), t = a / k, e = r.ids[a];
    double scale = 0, diff = 0;
    for (std::int64_t f = 0; f < F; ++f) {
      double g = 0, u = 0;
      for (std::int64_t c = 0; c < H; ++c) {
        g += x[t * H + c] * gate[(e * F + f) * H + c];
        u += x[t * H + c] * up[(e * F + f) * H + c];
      }
      const double want = g / (1 + std::exp(-g)) * u;
      scale = std::max(scale, std::abs(want));
      diff  = std::max(diff, std::abs(h[row * F + f] - want));
    }
    worst = std::max(worst, diff / scale);
  }
  EXPECT_LT(worst, reference_tolerance<Scalar>());
}

// The backend's fragment alone, in one tile shape: c += 2 a b^T on one
// full tile.
template <class Scalar, class frag>
void expect_fragment_mma() {
  constexpr int M = frag::tile_m, N = frag::tile_n, K = frag::tile_k;
  Kokkos::View<float**, Kokkos::LayoutRight, Space::memory_space> a("a", M, K), b("b", N, K),
      c("c", M, N);
  // Values exact in every storage type, so only accumulation can differ.
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Space::memory_space> as("as", M, K), bs("bs", N, K);
  fill_uniform(as, -1, 1, 1);
  fill_uniform(bs, -1, 1, 2);
  const auto a0 = to_double(as), b0 = to_double(bs);
  auto ha = Kokkos::create_mirror_view(a);
  auto hb = Kokkos::create_mirror_view(b);
  for (int i = 0; i < M * K; ++i) ha.data()[i] = float(a0[i]);
  for (int i = 0; i < N * K; ++i) hb.data()[i] = float(b0[i]);
  Kokkos::deep_copy(a, ha);
  Kokkos::deep_copy(b, hb);
  // The fragment's own team size, and on a host backend that allows it a
  // team of two (the portable fragment's loop for GPU teams).
  std::vector<int> team_sizes = {frag::team_size()};
  if (frag::team_size() == 1 && Space().concurrency() >= 2) team_sizes.push_back(2);
  for (int team_size : team_sizes) {
    SCOPED_TRACE("team size " + std::to_string(team_size));
    fill_uniform(c, -1, 1, 3);
    const auto c0 = to_double(c);
    fragment_mma<Space, Scalar, frag>(a, b, c, team_size);
    const auto got = to_double(c);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double want = 0;
        for (int q = 0; q < K; ++q) want += a0[i * K + q] * b0[j * K + q];
        EXPECT_NEAR(got[i * N + j], c0[i * N + j] + 2 * want, 1e-4) << i << "," << j;
      }
  }
}

// The layer tests' cases reach every tile shape (tstLayer.hpp: 10, 40 and
// 600 rows per expert).
TEST(EXPERTMLP_SUITE, TileShapeFollowsRowsPerExpert) {
  EXPECT_EQ(Impl::tile_size_for(1), Impl::TileSize::small);
  EXPECT_EQ(Impl::tile_size_for(10), Impl::TileSize::small);
  EXPECT_EQ(Impl::tile_size_for(15), Impl::TileSize::small);
  EXPECT_EQ(Impl::tile_size_for(16), Impl::TileSize::medium);
  EXPECT_EQ(Impl::tile_size_for(40), Impl::TileSize::medium);
  EXPECT_EQ(Impl::tile_size_for(Impl::large_tile_rows_from - 1), Impl::TileSize::medium);
  EXPECT_EQ(Impl::tile_size_for(Impl::large_tile_rows_from), Impl::TileSize::large);
  EXPECT_EQ(Impl::tile_size_for(600), Impl::TileSize::large);
}

// Every shape of both kernels' fragments.
TYPED_TEST(EXPERTMLP_SUITE, FragmentMultiplyAccumulate) {
  using Impl::TileSize;
  expect_fragment_mma<TypeParam, Impl::Fragment<Space, TypeParam, TileSize::large>>();
  expect_fragment_mma<TypeParam, Impl::Fragment<Space, TypeParam, TileSize::medium>>();
  expect_fragment_mma<TypeParam, Impl::Fragment<Space, TypeParam, TileSize::small>>();
  expect_fragment_mma<TypeParam, Impl::DownFragment<Space, TypeParam, TileSize::large>>();
  expect_fragment_mma<TypeParam, Impl::DownFragment<Space, TypeParam, TileSize::medium>>();
}
}  // namespace
