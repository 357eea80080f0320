// SPDX-License-Identifier: BSD-3-Clause
// The gate/up stage alone: the activations h against float64.
#include "TestFragment.hpp"
#include "TestUtils.hpp"

#include "KokkosMoE_FlatIndex.hpp"
#include "KokkosMoE_ExpertMLP_Impl.hpp"
#include "KokkosMoE_ExpertStages.hpp"
#include "KokkosMoE_Fragment.hpp"
#include "KokkosMoE_ColumnRun.hpp"

#include <cstring>
#include <random>
#include <limits>
#include <type_traits>

#define KMOE_CAT_(a, b) a##b
#define KMOE_CAT(a, b) KMOE_CAT_(a, b)
#define EXPERTMLP_SUITE KMOE_CAT(ExpertMLP_, TEST_CATEGORY)

namespace KokkosMoE {
namespace Test {
// out[offset + j] = in[j] through store_column_run, Width values a call (the
// last call with the values left), as the kernels store their runs; or,
// Streamed (float), through stream_column_run, as the down kernels of
// fragments that stream their outputs store them.
template <class Space, class Scalar, int Width, bool Streamed = false>
void store_column_runs(const Kokkos::View<const float*, Space>& in,
                       const Kokkos::View<Scalar*, Space>& out, int offset = 0) {
  static_assert(!Streamed || std::is_same<Scalar, float>::value, "streamed runs are float");
  const std::int64_t n = in.extent(0);
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(0, (n + Width - 1) / Width), KOKKOS_LAMBDA(const std::int64_t i) {
        Impl::ColumnRun<Width> run{};
        const std::int64_t first = i * Width;
        for (int e = 0; e < Width && first + e < n; ++e) run.v[e] = in(first + e);
        Scalar* const to = &out(offset + first);
        const int valid = int(n - first < Width ? n - first : Width);
        if constexpr (Streamed) {
          Impl::stream_column_run(to, run, valid);
          Impl::target::stream_fence();
        } else {
          Impl::store_column_run(to, run, valid);
        }
      });
  Kokkos::fence();
}

// The row and column of Impl::row_and_column for each (i, n), computed on Space.
template <class Space>
void rows_and_columns(const Kokkos::View<const std::int64_t* [2], Space>& in,
                      const Kokkos::View<std::int64_t* [2], Space>& out) {
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(0, in.extent(0)), KOKKOS_LAMBDA(const int j) {
        std::int64_t row, col;
        Impl::row_and_column(in(j, 0), in(j, 1), row, col);
        out(j, 0) = row, out(j, 1) = col;
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
TYPED_TEST_SUITE(EXPERTMLP_SUITE, LayerTypes);

// h after gate_up against float64, at the row where the layer keeps each
// sorted row (sorted order or tile-major: see activations_tile_major, whose
// unused rows must then be zero). Tile-major exactly where asked for and
// the build's large kernels take tensor copies. The layer is made for
// max_tokens and runs T of them.
template <class Scalar>
void expect_activations_match(int E, int k, std::int64_t H, std::int64_t F, std::int64_t max_tokens,
                              std::int64_t T, int experts_used, bool large) {
  Problem<Space, Scalar> p(E, k, H, F, max_tokens);
  const auto r = random_routing(max_tokens, k, first_experts(experts_used), 9);
  p.set_routing(r);
  Layer<Space, Scalar> layer(p.config, p.weights);
  p.ran_on(layer);
  layer.dispatch(p.ids, T);
  layer.gate_up(p.x, T);
  EXPECT_EQ(layer.activations_tile_major(),
            (large && Impl::bulk_copies<Space, Scalar>()) || layer.quantizes_activations());

  // (e4m3: the values the weights stand for.)
  std::vector<double> gate, up;
  if constexpr (is_block_scaled<Scalar>::value) {
    const auto values = dequantize(p.weights);
    gate = to_double(values.gate), up = to_double(values.up);
  } else {
    gate = to_double(p.weights.gate), up = to_double(p.weights.up);
  }
  auto x = to_double(p.x);
  // As the layer multiplies x: quantised in groups of 128 along H where it
  // quantizes_activations (see reference_experts).
  if (layer.quantizes_activations())
    for (std::int64_t t = 0; t < max_tokens; ++t)
      for (std::int64_t c0 = 0; c0 < H; c0 += 128) {
        const std::int64_t c1 = std::min(H, c0 + 128);
        float amax = 0;
        for (std::int64_t c = c0; c < c1; ++c) amax = std::max(amax, float(std::abs(x[t * H + c])));
        const float scale = Impl::e4m3_scale(amax);
        for (std::int64_t c = c0; c < c1; ++c)
          x[t * H + c] = double(float(float8_e4m3(float(x[t * H + c]) / scale))) * scale;
      }
  const auto h = to_double(layer.activations());
  const auto& plan = layer.plan();
  auto order = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.order);
  auto tiles = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.tiles);
  auto used = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.tile_offsets);
  std::vector<std::int64_t> at(T * k);  // the row of h of each sorted row
  for (std::int64_t row = 0; row < T * k; ++row) at[row] = row;
  if (layer.activations_tile_major()) {
    // Rows past a tile's last are zero where the tiles are large (smaller
    // e4m3 tiles leave them as they were).
    const bool zero_padding = !layer.quantizes_activations() ||
                              plan.tile_rows == Impl::e4m3_tile_rows<Space>(Impl::TileSize::large);
    for (int t = 0; t < used(E); ++t)
      for (int r = 0; r < plan.tile_rows; ++r) {
        const std::int64_t row = std::int64_t(t) * plan.tile_rows + r;
        if (tiles(t, 1) + r < tiles(t, 2)) at[tiles(t, 1) + r] = row;
        else if (zero_padding)
          for (std::int64_t f = 0; f < F; ++f) ASSERT_EQ(h[row * F + f], 0.0) << "tile " << t;
      }
  }
  double worst = 0;
  std::int64_t worst_row = -1;
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
      diff = std::max(diff, std::abs(h[at[row] * F + f] - want));
    }
    if (diff / scale > worst) worst = diff / scale, worst_row = row;
  }
  EXPECT_LT(worst, reference_tolerance<Scalar>())
      << "sorted row " << worst_row << " (row " << (worst_row >= 0 ? at[worst_row] : -1)
      << " of h)";
}

TYPED_TEST(EXPERTMLP_SUITE, GateUpActivationsMatchFloat64) {
  expect_activations_match<TypeParam>(6, 2, 70, 45, 50, 50, 4, false);
}

// Large tiles (tile-major h with tensor copies), the experts' last tiles
// partly filled; all of max_tokens, and fewer.
TYPED_TEST(EXPERTMLP_SUITE, LargeTileActivationsMatchFloat64) {
  expect_activations_match<TypeParam>(4, 2, 72, 48, 1100, 1100, 4, true);
  expect_activations_match<TypeParam>(4, 2, 72, 48, 1100, 900, 4, true);
  // Rows tensor copies of e4m3 codes can read, K past the last 128-deep
  // step (e4m3 on sm_90a: the kernels that multiply codes): all rows on one
  // expert of eight (small tiles), and large tiles.
  expect_activations_match<TypeParam>(8, 1, 272, 48, 70, 70, 1, false);
  expect_activations_match<TypeParam>(2, 1, 320, 208, 600, 600, 2, true);
}

TYPED_TEST(EXPERTMLP_SUITE, StagesBeforeDispatchThrow) {
  Problem<Space, TypeParam> p(4, 2, 16, 24, 8);
  Layer<Space, TypeParam> layer(p.config, p.weights);
  EXPECT_FALSE(layer.activations_tile_major());
  EXPECT_THROW(layer.gate_up(p.x, 8), std::logic_error);
  EXPECT_THROW(layer.down_combine(p.routing_weights, p.out, 8), std::logic_error);
}

// A stage given another batch size than the stage before it would read a
// stale plan (or rows x does not have): refused.
TYPED_TEST(EXPERTMLP_SUITE, StagesOfAnotherBatchSizeThrow) {
  Problem<Space, TypeParam> p(4, 2, 16, 24, 8);
  Layer<Space, TypeParam> layer(p.config, p.weights);
  layer.dispatch(p.ids, 2);
  EXPECT_THROW(layer.gate_up(p.x, 8), std::logic_error);
  EXPECT_THROW(layer.down_combine(p.routing_weights, p.out, 2), std::logic_error);  // no gate_up
  layer.gate_up(p.x, 2);
  EXPECT_THROW(layer.down_combine(p.routing_weights, p.out, 8), std::logic_error);
  EXPECT_NO_THROW(layer.down_combine(p.routing_weights, p.out, 2));
  layer.dispatch(p.ids, 8);  // a new dispatch needs its own gate_up
  EXPECT_THROW(layer.down_combine(p.routing_weights, p.out, 8), std::logic_error);
  try {
    layer.gate_up(p.x, 2);
    ADD_FAILURE() << "gate_up of 2 tokens after a dispatch of 8 did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("gate_up of 2 tokens after a dispatch of 8"),
              std::string::npos)
        << e.what();
  }
}

// The backend's fragment alone, in one tile shape: c += 2 a b^T on one
// full tile.
// Stored runs (one, two or four values: on CUDA devices 16-bit pairs by the
// hardware's conversion) hold what from_float gives, bit for bit: random
// magnitudes, ties of both parities, subnormals, overflow, infinities, NaN.
std::vector<float> values_to_store() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.5f,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          -70000.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          3.0e-8f,
                          -6.0e-8f,
                          1.0e-5f,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min()};
  for (std::uint32_t upper : {0x3f80u, 0x3f81u, 0xc2abu, 0x0001u}) {  // bf16 ties, even and odd
    const std::uint32_t bits = (upper << 16) | 0x8000u;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    v.push_back(f);
  }
  for (float tie : {0x1.002p0f, 0x1.006p0f, 0x1.8p-24f, 0x1p-25f}) v.push_back(tie);  // fp16 ties
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f), exponent(-30.0f, 20.0f);
  for (int i = 0; i < 4000; ++i)
    v.push_back((i % 2 ? -1.0f : 1.0f) * mantissa(gen) * std::exp2(std::floor(exponent(gen))));
  v.push_back(0.25f);  // an odd count: every width ends with a partial run
  return v;
}

template <class Scalar, int Width>
void expect_stored_column_runs_round_like_from_float() {
  const std::vector<float> values = values_to_store();
  const std::int64_t n = values.size();
  Kokkos::View<float*, Space> in("in", n);
  Kokkos::View<Scalar*, Space> out("out", n);
  Kokkos::deep_copy(
      in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(values.data(), n));
  store_column_runs<Space, Scalar, Width>(in, out);
  const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (std::int64_t j = 0; j < n; ++j) {
    const Scalar want = Impl::from_float<Scalar>(values[j]);
    if (std::isnan(values[j])) {
      EXPECT_TRUE(std::isnan(Impl::to_float(got(j)))) << "width " << Width << " at " << j;
      continue;
    }
    EXPECT_EQ(std::memcmp(&got(j), &want, sizeof(Scalar)), 0)
        << "width " << Width << " value " << values[j] << " stored as " << Impl::to_float(got(j))
        << ", from_float " << Impl::to_float(want);
  }
}

// Widths of 8 and 16 too: whole host vectors (AVX2, AVX-512), which the
// host target rounds a vector at a time (target::narrow_run).
TYPED_TEST(EXPERTMLP_SUITE, StoredColumnRunsRoundLikeFromFloat) {
  expect_stored_column_runs_round_like_from_float<TypeParam, 1>();
  expect_stored_column_runs_round_like_from_float<TypeParam, 2>();
  expect_stored_column_runs_round_like_from_float<TypeParam, 4>();
  expect_stored_column_runs_round_like_from_float<TypeParam, 8>();
  expect_stored_column_runs_round_like_from_float<TypeParam, 16>();
}

// Streamed runs store their values bit for bit, whole runs at aligned and
// unaligned addresses (offset) and the last one partial, and nothing else.
template <int Width>
void expect_streamed_column_runs_store_their_values(int offset) {
  const std::vector<float> values = values_to_store();
  const std::int64_t n = values.size();
  Kokkos::View<float*, Space> in("in", n), out("out", n + offset + Width);
  Kokkos::deep_copy(
      in, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(values.data(), n));
  store_column_runs<Space, float, Width, true>(in, out, offset);
  const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (std::int64_t j = 0; j < n + offset + Width; ++j) {
    const float want = j >= offset && j < offset + n ? values[j - offset] : 0.0f;
    EXPECT_EQ(std::memcmp(&got(j), &want, sizeof(float)), 0)
        << "width " << Width << " offset " << offset << " at " << j << ": " << got(j);
  }
}

TEST(EXPERTMLP_SUITE, StreamedColumnRunsStoreTheirValues) {
  for (int offset : {0, 1, 4, 8, 16}) {
    expect_streamed_column_runs_store_their_values<16>(offset);
    expect_streamed_column_runs_store_their_values<8>(offset);
    expect_streamed_column_runs_store_their_values<4>(offset);
  }
}

#ifdef KOKKOSMOE_HOST_VECTORS
// Where x86 has streaming stores, the host target streams whole vectors at
// vector-aligned addresses and declines (storing nothing) elsewhere, and
// the prefill fragment, whose outputs are many times the caches, asks for
// them; the decode fragment does not.
TEST(EXPERTMLP_SUITE, HostTargetStreamsAlignedVectors) {
  using namespace Impl;
  using Host = Kokkos::DefaultHostExecutionSpace;
  static_assert(streams_outputs<HostPanelFragment<Host, 32, 128>> &&
                    !streams_outputs<HostDotFragment<Host, 128>>,
                "the prefill fragment streams its outputs, the decode one does not");
  constexpr int lanes = host_vector::lanes;
  alignas(64) float buffer[3 * lanes];
  float values[lanes];
  for (int i = 0; i < lanes; ++i) values[i] = 1.5f + i;
  std::fill(buffer, buffer + 3 * lanes, -1.0f);
  const bool streamed = target::stream_run<lanes>(buffer + lanes, values);
  target::stream_fence();
  EXPECT_EQ(streamed, host_vector::has_stream);
  for (int i = 0; i < 3 * lanes; ++i)
    EXPECT_EQ(buffer[i], streamed && i >= lanes && i < 2 * lanes ? values[i - lanes] : -1.0f)
        << "at " << i;
  std::fill(buffer, buffer + 3 * lanes, -1.0f);
  EXPECT_FALSE(target::stream_run<lanes>(buffer + 1, values));
  for (int i = 0; i < 3 * lanes; ++i) EXPECT_EQ(buffer[i], -1.0f) << "misaligned, at " << i;
}
#endif

// The combine sums each token's products in the same order whatever its
// columns an item: a host vector of them gives the bits of one at a time
// (an invalid assignment skipped), four those of one also over two K
// parts, and each width applies only where y's rows take it (wider than
// four: one K part).
TEST(EXPERTMLP_SUITE, CombineColumnsSumAsOneColumnDoes) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  using Mem = Kokkos::HostSpace;
  constexpr int width = 16, k = 3, tokens = 5, assignments = tokens * k;
  constexpr std::int64_t H = 3 * width;
  using wide = Impl::CombineKernel<Host, float, width>;
  using four = Impl::CombineKernel<Host, float, 4>;
  using one = Impl::CombineKernel<Host, float, 1>;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> y("y", 2 * assignments, H);  // two K parts
  Kokkos::View<int*, Mem> position("position", assignments);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> weights("weights", tokens, k);
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f), weight(0.05f, 1.0f);
  for (std::int64_t a = 0; a < 2 * assignments; ++a)
    for (std::int64_t n = 0; n < H; ++n) y(a, n) = value(gen);
  for (int a = 0; a < assignments; ++a) position(a) = (a * 7) % assignments;
  position(4) = -1;
  for (int t = 0; t < tokens; ++t)
    for (int j = 0; j < k; ++j) weights(t, j) = weight(gen);
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(y.data()) % (width * sizeof(float)), 0u);
  const auto combined = [&](auto kernel_type, int splits) {
    using kernel = decltype(kernel_type);
    EXPECT_TRUE(kernel::applies(y.data(), H, splits));
    Kokkos::View<float**, Kokkos::LayoutRight, Mem> out("out", tokens, H);
    Kokkos::parallel_for(
        Kokkos::RangePolicy<Host, Kokkos::IndexType<std::int64_t>>(0, kernel::items(tokens, H)),
        kernel{y, position, weights, out, k, H, splits, assignments});
    Kokkos::fence();
    return out;
  };
  for (int splits : {1, 2}) {
    const auto by_one = combined(one{}, splits), by_four = combined(four{}, splits);
    const auto by_vector = splits == 1 ? combined(wide{}, 1) : by_four;
    for (int t = 0; t < tokens; ++t)
      for (std::int64_t n = 0; n < H; ++n) {
        EXPECT_EQ(by_vector(t, n), by_one(t, n)) << "token " << t << ", column " << n;
        EXPECT_EQ(by_four(t, n), by_one(t, n))
            << "token " << t << ", column " << n << ", " << splits << " K parts";
        EXPECT_NE(by_one(t, n), 0.0f);
      }
  }
  EXPECT_FALSE(wide::applies(y.data(), H, 2)) << "split-K parts";
  EXPECT_FALSE(wide::applies(y.data() + 4, H, 1)) << "rows not aligned to the vector";
  EXPECT_TRUE(four::applies(y.data() + 4, H, 1));
  EXPECT_FALSE(wide::applies(y.data(), H - 4, 1)) << "H not a multiple of the vector";
  EXPECT_TRUE(one::applies(y.data() + 1, 7, 3));
}

#ifdef KOKKOSMOE_HOST_VECTORS
// A host accumulator that no multiply reached stores zeros, whatever its
// memory held: zero() only marks it, finish clears it.
TEST(EXPERTMLP_SUITE, HostAccumulatorsWithoutStepsStoreZeros) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  const auto expect_zeros = [](auto fragment) {
    using frag = decltype(fragment);
    auto acc = frag::accumulator(0);
    std::memset(acc.v, 0xff, sizeof acc.v);
    frag::zero(0, acc);
    frag::finish(0, acc);
    int stored = 0, nonzero = 0;
    frag::template store<16>(
        0,
        [&](int, int, const auto& run) {
          for (int i = 0; i < run.width; ++i) stored += 1, nonzero += run.v[i] != 0.0f;
        },
        acc);
    EXPECT_EQ(stored, frag::tile_m * frag::tile_n);
    EXPECT_EQ(nonzero, 0);
  };
  expect_zeros(Impl::HostPanelFragment<Host, 32, 64>{});
  expect_zeros(Impl::HostDotFragment<Host, 128>{});
}
#endif

// Impl::row_and_column on the device against the host's 64-bit division, on both
// sides of 2^31 (where it switches to 64 bits).
TEST(EXPERTMLP_SUITE, RowAndColumnMatchIntegerDivision) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> cases = {{0, 1},
                                                                    {7, 3},
                                                                    {4095, 4096},
                                                                    {4096, 4096},
                                                                    {0x7fffffff, 7},
                                                                    {0x80000000LL, 7},
                                                                    {0x7fffffff, 0x7fffffff},
                                                                    {5, 0x80000000LL},
                                                                    {(1LL << 40) + 12345, 1792},
                                                                    {(1LL << 40) + 12345,
                                                                     (1LL << 33) + 1}};
  Kokkos::View<std::int64_t*[2], Space> in("in", cases.size()), out("out", cases.size());
  auto host = Kokkos::create_mirror_view(in);
  for (std::size_t j = 0; j < cases.size(); ++j)
    host(j, 0) = cases[j].first, host(j, 1) = cases[j].second;
  Kokkos::deep_copy(in, host);
  rows_and_columns<Space>(in, out);
  const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  for (std::size_t j = 0; j < cases.size(); ++j) {
    const auto [i, n] = cases[j];
    EXPECT_EQ(got(j, 0), i / n) << i << " / " << n;
    EXPECT_EQ(got(j, 1), i % n) << i << " % " << n;
  }
}

// Split-K covers K with parts of whole K steps, no more of them than the
// teams, ceil(depth / (min_split_steps K steps)) and the rows of partial
// results allow. The layer tests' split-K cases (tstLayer.hpp: 1700 deep, 6
// assignments on 4 experts) split with this backend's team target.
TEST(EXPERTMLP_SUITE, SplitKPartsCoverKWithinBounds) {
  using kernel = Impl::DownKernel<Space, float, Impl::TileSize::small>;
  constexpr int BK = kernel::BK, least = kernel::min_split_steps * BK;
  const std::int64_t teams = kernel::frag::split_k_teams();
  struct Split {
    std::int64_t tiles;
    int depth;
    std::int64_t rows, capacity, teams;
    bool must_split;
  };
  for (const Split& c : {Split{4, 1700, 6, 512, teams, true}, Split{2, 14336, 2, 512, 4096, true},
                         Split{8, 2048, 8, 512, 1, false}, Split{4, 1700, 6, 6, 4096, false},
                         Split{4, 100, 6, 512, 4096, false}}) {
    kernel f;
    f.column_blocks = 1;
    f.split_k(c.tiles, c.depth, c.rows, c.capacity, c.teams);
    SCOPED_TRACE(c.depth);
    EXPECT_EQ(f.split_depth % BK, 0);
    EXPECT_GE(std::int64_t(f.splits) * f.split_depth, c.depth);      // K covered
    EXPECT_LT(std::int64_t(f.splits - 1) * f.split_depth, c.depth);  // no empty part
    EXPECT_LE(f.splits * c.rows, std::max(c.capacity, c.rows));      // room for the parts
    EXPECT_LE(f.splits, (c.depth + least - 1) / least);
    if (c.teams == 1 || c.capacity < 2 * c.rows || c.depth <= least) EXPECT_EQ(f.splits, 1);
    if (c.must_split && c.depth >= 2 * least) EXPECT_GE(f.splits, 2);
  }
}

// The layer tests' cases reach every tile shape (tstLayer.hpp: 10, 40 and
// 600 rows per expert).
TEST(EXPERTMLP_SUITE, TileShapeFollowsRowsPerExpert) {
  constexpr std::int64_t small_below = Impl::TileCrossovers<Space>::small_tile_rows_below;
  constexpr std::int64_t large_from = Impl::TileCrossovers<Space>::large_tile_rows_from;
  static_assert(small_below < large_from, "a medium shape between");
  EXPECT_EQ(Impl::tile_size_for<Space>(1), Impl::TileSize::small);
  EXPECT_EQ(Impl::tile_size_for<Space>(small_below - 1), Impl::TileSize::small);
  EXPECT_EQ(Impl::tile_size_for<Space>(small_below), Impl::TileSize::medium);
  EXPECT_EQ(Impl::tile_size_for<Space>((small_below + large_from) / 2), Impl::TileSize::medium);
  EXPECT_EQ(Impl::tile_size_for<Space>(large_from - 1), Impl::TileSize::medium);
  EXPECT_EQ(Impl::tile_size_for<Space>(large_from), Impl::TileSize::large);
  EXPECT_EQ(Impl::tile_size_for<Space>(600), Impl::TileSize::large);
}

// The expert stages' workspace within its size query, and at least h (A
// rows) and the expert outputs, for sizes where the tile-major rows differ.
TYPED_TEST(EXPERTMLP_SUITE, WorkspaceWithinItsSizeQuery) {
  using stages = Impl::ExpertStages<Space, TypeParam>;
  using token = token_type_t<TypeParam>;
  for (const auto& [T, batch_invariant] :
       {std::pair<int, bool>{1, false}, {40, false}, {600, false}, {40, true}}) {
    Problem<Space, TypeParam> p(8, 2, 256, 384, T);
    p.config.batch_invariant = batch_invariant;
    const stages s(p.config, p.weights, Space());
    const std::size_t A = std::size_t(T) * 2;
    SCOPED_TRACE(std::to_string(T) + (batch_invariant ? " tokens, batch-invariant" : " tokens"));
    EXPECT_LE(s.bytes(), stages::workspace_bytes(p.config));
    EXPECT_GE(s.bytes(), A * 384 * sizeof(token) + std::max<std::size_t>(A, 512) * 256 * 4);
  }
}

// Every shape of both kernels' fragments (e4m3 weights: the fragments they
// load into, whose operands are of the token type).
TYPED_TEST(EXPERTMLP_SUITE, FragmentMultiplyAccumulate) {
  using Impl::TileSize;
  using T = token_type_t<TypeParam>;
  expect_fragment_mma<Space, T, Impl::Fragment<Space, TypeParam, TileSize::large>>();
  expect_fragment_mma<Space, T, Impl::Fragment<Space, TypeParam, TileSize::medium>>();
  expect_fragment_mma<Space, T, Impl::Fragment<Space, TypeParam, TileSize::small>>();
  expect_fragment_mma<Space, T, Impl::DownFragment<Space, TypeParam, TileSize::large>>();
  expect_fragment_mma<Space, T, Impl::DownFragment<Space, TypeParam, TileSize::medium>>();
}

// Packed panels hold each weight at its layout's offset and zeros past the
// matrix's columns and depth (N and K not multiples of the panel's), for
// single k and pairs of k.
TYPED_TEST(EXPERTMLP_SUITE, PanelsHoldEachWeightAtItsOffset) {
  if constexpr (!is_block_scaled<TypeParam>::value) {
    constexpr int E = 2, N = 19, K = 7;
    Kokkos::View<TypeParam***, Kokkos::LayoutRight, typename Space::memory_space> w("w", E, N, K);
    fill_uniform(w, -1, 1, 5);
    const auto want = to_double(w);
    for (const Impl::PanelLayout layout :
         {Impl::PanelLayout{16, 1}, Impl::PanelLayout{8, 2}, Impl::PanelLayout{4, 1}}) {
      SCOPED_TRACE(std::to_string(layout.columns) + " columns, k by " +
                   std::to_string(layout.k_group));
      const auto panels = Impl::pack_panels<Space, TypeParam>(Space(), w, layout, "panels");
      const int count = (N + layout.columns - 1) / layout.columns;
      ASSERT_EQ(panels.extent_int(1), count);
      ASSERT_EQ(std::int64_t(panels.extent(2)), layout.depth(K) * layout.columns);
      EXPECT_EQ(panels.span(), Impl::panel_elements(layout, E, N, K));
      const auto got = to_double(panels);
      for (int e = 0; e < E; ++e)
        for (int n = 0; n < count * layout.columns; ++n)
          for (int k = 0; k < layout.depth(K); ++k) {
            const double value =
                got[(std::size_t(e) * count + n / layout.columns) * panels.extent(2) +
                    layout.offset(n % layout.columns, k)];
            EXPECT_EQ(value, n < N && k < K ? want[(e * N + n) * K + k] : 0.0)
                << "expert " << e << ", column " << n << ", k " << k;
          }
    }
  }
}

// What a fragment reading panels is told to prefetch (InPlaceWeights::
// ahead): the item's next K step, and after its last step a share of the
// first step of the next column block, the group's row tiles' shares
// covering it; past the last expert, nothing inside the panels.
TYPED_TEST(EXPERTMLP_SUITE, PanelPrefetchTakesTheWeightsReadNext) {
  using kernel = Impl::DownKernel<Space, TypeParam, Impl::TileSize::large>;
  constexpr Impl::PanelLayout layout = kernel::panels;
  if constexpr (layout.columns == 0) {
    GTEST_SKIP() << "the fragment does not pack these weights";
  } else {
    constexpr int BK = kernel::BK, BN = kernel::BN, E = 2, N = BN + 36, K = 2 * BK + 88;
    Kokkos::View<TypeParam***, Kokkos::LayoutRight, typename Space::memory_space> w("w", E, N, K);
    const auto panels = Impl::pack_panels<Space, TypeParam>(Space(), w, layout, "panels");
    const TypeParam* const end = panels.data() + panels.span();
    for (int e = 0; e < E; ++e)
      for (int block = 0; block < 2; ++block)
        for (const int tiles : {1, 3, 16}) {
          SCOPED_TRACE("expert " + std::to_string(e) + ", column block " + std::to_string(block) +
                       ", " + std::to_string(tiles) + " row tiles");
          const int first_col = block * BN, cols = block == 0 ? BN : N - BN;
          const auto from = Impl::WeightRows<TypeParam>::of(panels, panels, e,
                                                            first_col / layout.columns);
          const TypeParam* const next_block = from.first + layout.panels(cols) * from.ld;
          std::vector<bool> covered(BK, false);
          for (int g = 0; g < tiles; ++g) {
            const typename kernel::Work item{0, e, 0, 5, first_col, 0, 0, K, g, tiles};
            for (int k0 = 0; k0 < K; k0 += BK) {
              const int depth = K - k0 < BK ? K - k0 : BK;
              const auto b = kernel::in_place(from, typename kernel::Step{0, k0, depth}, item,
                                              cols);
              EXPECT_EQ(b.first, from.first + std::int64_t(k0) * layout.columns);
              EXPECT_EQ(b.rows, cols);
              EXPECT_EQ(b.tokens, 5);
              if (k0 + depth < K) {  // the item's next step
                EXPECT_EQ(b.ahead, from.first + std::int64_t(k0 + BK) * layout.columns);
                EXPECT_EQ(b.ahead_depth, K - k0 - BK < BK ? K - k0 - BK : BK);
              } else if (b.ahead) {  // a share of the next block's first step
                const std::int64_t at = b.ahead - next_block;
                ASSERT_GT(b.ahead_depth, 0);
                ASSERT_EQ(at % layout.columns, 0);
                const std::int64_t k = at / layout.columns;
                ASSERT_GE(k, 0);
                ASSERT_LE(k + b.ahead_depth, BK + tiles);
                for (std::int64_t i = k; i < k + b.ahead_depth && i < BK; ++i) covered[i] = true;
                if (e == E - 1 && block == 1) EXPECT_GE(b.ahead, end);  // never read
              }
            }
          }
          for (int k = 0; k < BK; ++k) EXPECT_TRUE(covered[k]) << "k " << k << " not prefetched";
        }
  }
}
}  // namespace
