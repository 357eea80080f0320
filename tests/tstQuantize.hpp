// SPDX-License-Identifier: BSD-3-Clause
// e4m3 expert weights with 128 x 128 block scales: the quantiser against
// its definition, the activations' 1 x 128 groups against theirs, the layer against float64 on the
// values they stand for across block edges, zero blocks and blocks of very different scale, and bad
// weights refused.
#include "TestUtils.hpp"

#include "KokkosMoE_ActivationGroups.hpp"
#include "KokkosMoE_GatherRows.hpp"

#include <KokkosMoE/KokkosMoE_Layer.hpp>
#include <KokkosMoE/KokkosMoE_Quantize.hpp>
#include <KokkosMoE/KokkosMoE_Reference.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#define KMOE_CAT_(a, b) a##b
#define KMOE_CAT(a, b) KMOE_CAT_(a, b)
#define QUANTIZE_SUITE KMOE_CAT(Quantize_, TEST_CATEGORY)

namespace {
using namespace KokkosMoE;
using namespace KokkosMoE::Test;
using Space = TEST_EXECSPACE;
using mem = Space::memory_space;

// Float weights of 3 experts (F, H > 128, H > 256: blocks 2 x 3 and 3 x 2
// at F = 200, H = 300, the last ones partial), with the block (0, 1) of
// expert 0's gate zero,
// expert 1's up block (1, 2) times 2^6 and its down block (0, 0) times
// 2^-12.
Weights<float, mem> uneven_weights(const Config& c) {
  auto w = random_weights<float, mem>(c, 21);
  auto gate = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.gate);
  auto up = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.up);
  auto down = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.down);
  for (int r = 0; r < 128; ++r)
    for (int col = 128; col < 256; ++col) gate(0, r, col) = 0;
  for (std::int64_t r = 128; r < c.ffn_size; ++r)
    for (std::int64_t col = 256; col < c.hidden_size; ++col) up(1, r, col) *= 64.0f;
  for (int r = 0; r < 128; ++r)
    for (int col = 0; col < 128; ++col) down(1, r, col) *= 1.0f / 4096;
  Kokkos::deep_copy(w.gate, gate);
  Kokkos::deep_copy(w.up, up);
  Kokkos::deep_copy(w.down, down);
  return w;
}

Config uneven_config(std::int64_t T, std::int64_t H = 300, std::int64_t F = 200) {
  Config c;
  c.num_experts = 3;
  c.top_k = 2;
  c.hidden_size = H;
  c.ffn_size = F;
  c.max_tokens = T;
  return c;
}

// Each block's scale is its largest magnitude / 448 (1 for zeros), each
// element within half an e4m3 ulp of value / scale.
template <class Float, class Quantized, class Scales>
void expect_quantized(const Float& w, const Quantized& q, const Scales& s, const char* name) {
  SCOPED_TRACE(name);
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
  auto hq = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s);
  const std::int64_t R = w.extent(1), C = w.extent(2);
  ASSERT_EQ(std::int64_t(s.extent(1)), (R + 127) / 128);
  ASSERT_EQ(std::int64_t(s.extent(2)), (C + 127) / 128);
  for (std::size_t e = 0; e < w.extent(0); ++e)
    for (std::int64_t br = 0; br < std::int64_t(s.extent(1)); ++br)
      for (std::int64_t bc = 0; bc < std::int64_t(s.extent(2)); ++bc) {
        float amax = 0;
        for (std::int64_t r = br * 128; r < std::min(R, br * 128 + 128); ++r)
          for (std::int64_t c = bc * 128; c < std::min(C, bc * 128 + 128); ++c)
            amax = std::max(amax, std::abs(hw(e, r, c)));
        const float scale = amax > 0 ? amax / 448.0f : 1.0f;
        ASSERT_EQ(hs(e, br, bc), scale) << e << " " << br << " " << bc;
        for (std::int64_t r = br * 128; r < std::min(R, br * 128 + 128); ++r)
          for (std::int64_t c = bc * 128; c < std::min(C, bc * 128 + 128); ++c) {
            const double v = double(hw(e, r, c)) / scale, got = double(float(hq(e, r, c)));
            // Half an ulp: 2^-4 relative for normals, 2^-10 for subnormals.
            const double bound = std::abs(v) >= 0x1p-6 ? std::abs(v) * 0x1p-4 : 0x1p-10;
            ASSERT_LE(std::abs(got - v), bound) << e << " " << r << " " << c;
          }
      }
}

TEST(QUANTIZE_SUITE, BlocksScaleByTheirLargestMagnitude) {
  const Config c = uneven_config(1);
  const auto w = uneven_weights(c);
  const auto q = quantize_fp8(w);
  expect_quantized(w.gate, q.gate, q.gate_scale, "gate");
  expect_quantized(w.up, q.up, q.up_scale, "up");
  expect_quantized(w.down, q.down, q.down_scale, "down");
  // dequantize gives the values the codes stand for.
  const auto d = dequantize(q);
  auto hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.down);
  auto hq = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q.down);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q.down_scale);
  for (int r : {0, 127, 128, 299})
    for (int col : {0, 127, 128, 199})
      EXPECT_EQ(hd(1, r, col), float(hq(1, r, col)) * hs(1, r / 128, col / 128));
}

// x's rows quantised in 1 x 128 groups and gathered tile-major, as the
// kernels that multiply e4m3 codes take them: each used row is its token's
// row of x, each group scaled by its largest magnitude, its codes those of
// float8_e4m3(value / scale) bit for bit (the device's conversion
// instruction included); a zero group gets scale 1, a group 2^-20 times
// smaller than the others its own scale; rows past a tile's last are zero
// with scale 1, or without zero_padding as they were. H = 300: the last
// group partial, every other row not 16-byte aligned (the kernel's
// element-wise path); H = 512: whole aligned groups (its 16-byte path).
// invalid_ids: some assignments routed out of range, so fewer sorted
// positions are in use than the batch has assignments. T = 200: several
// tiles per expert on every backend. Rows of tiles not in use are left as
// they were. split: each group by max_parts items of 16 values (the
// layer's small passes), which must give the same codes and scales.
void check_activation_groups(std::int64_t H, bool zero_padding, bool invalid_ids = false,
                             std::int64_t T = 40, bool split = false) {
  const int k = 2;
  Problem<Space, float8_e4m3> p(4, k, H, 64, T);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.x);
  for (std::int64_t c = 128; c < 256; ++c) hx(3, c) = bfloat16(0.0f);
  for (std::int64_t c = 0; c < 128; ++c) hx(5, c) = bfloat16(float(hx(5, c)) * 0x1p-20f);
  hx(7, 1) = bfloat16(1000.0f);  // a group scale above 1
  Kokkos::deep_copy(p.x, hx);
  auto routing = random_routing(T, k, first_experts(3), 17);
  if (invalid_ids)
    for (std::size_t a = 0; a < routing.ids.size(); a += 9) routing.ids[a] = a % 2 ? -1 : 4;
  p.set_routing(routing);
  Layer<Space, float8_e4m3> layer(p.config, p.weights);
  layer.dispatch(p.ids, T);
  ASSERT_EQ(layer.invalid_ids(), invalid_ids ? int((T * k + 8) / 9) : 0);
  const auto& plan = layer.plan();
  const int rows = plan.tile_rows;
  const std::int64_t tiles = DispatchPlan<mem>::max_tiles(T * k, 4, rows);
  using kernel = Impl::QuantizeGroupsKernel<Space, bfloat16>;
  const std::int64_t G = kernel::groups(H);
  kernel q;
  q.plan = plan;
  q.source = p.x;
  q.codes = decltype(q.codes)("codes", tiles * rows, H);
  q.scales = decltype(q.scales)("scales", G, tiles * rows);
  // Every row in use written; the others as zero_padding says.
  Kokkos::deep_copy(q.scales, -1.0f);
  const float8_e4m3 before(-0.8125f);
  Kokkos::deep_copy(q.codes, before);
  q.k = k;
  q.experts = 4;
  q.tile_rows = rows;
  q.rows = tiles * rows;
  q.assignments = T * k;
  q.gather = true;
  q.zero_padding = zero_padding;
  EXPECT_EQ(q.parts_for_pass(), kernel::max_parts) << "a pass this small splits its groups";
  q.parts = split ? kernel::max_parts : 1;
  Kokkos::parallel_for(q.policy(Space()), q);
  auto codes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q.codes);
  auto scales = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), q.scales);
  auto order = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.order);
  auto tile = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.tiles);
  auto used = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.tile_offsets);
  for (std::int64_t row = std::int64_t(used(4)) * rows; row < tiles * rows; ++row)
    for (std::int64_t g = 0; g < G; ++g) {
      ASSERT_EQ(scales(g, row), -1.0f) << "H " << H << " row " << row << " of no tile in use";
      for (std::int64_t c = g * 128; c < std::min<std::int64_t>(H, g * 128 + 128); ++c)
        ASSERT_EQ(int(codes(row, c).bits), int(before.bits)) << "H " << H << " row " << row;
    }
  int checked_zero = 0, checked_small = 0, checked_large = 0;
  for (int t = 0; t < used(4); ++t)
    for (int r = 0; r < rows; ++r) {
      const std::int64_t row = std::int64_t(t) * rows + r;
      const bool filled = tile(t, 1) + r < tile(t, 2);
      const int token = filled ? order(tile(t, 1) + r) / k : -1;
      for (std::int64_t g = 0; g < G; ++g) {
        const std::int64_t c0 = g * 128, c1 = std::min<std::int64_t>(H, c0 + 128);
        float amax = 0;
        for (std::int64_t c = c0; c < c1 && filled; ++c)
          amax = std::max(amax, std::abs(float(hx(token, c))));
        const float scale = !filled && !zero_padding ? -1.0f
                            : amax > 0               ? std::max(amax / 448, 0x1p-126f)
                                                     : 1.0f;
        ASSERT_EQ(scales(g, row), scale) << "H " << H << " row " << row << " group " << g;
        checked_zero += token == 3 && g == 1;
        checked_small += token == 5 && g == 0;
        checked_large += token == 7 && g == 0;
        for (std::int64_t c = c0; c < c1; ++c) {
          const float8_e4m3 want = filled         ? float8_e4m3(float(hx(token, c)) / scale)
                                   : zero_padding ? float8_e4m3(0.0f)
                                                  : before;
          ASSERT_EQ(int(codes(row, c).bits), int(want.bits))
              << "H " << H << " row " << row << " column " << c;
        }
      }
    }
  EXPECT_GT(checked_zero + checked_small + checked_large, 0) << "tokens 3, 5 and 7 were not routed";
}

TEST(QUANTIZE_SUITE, ActivationGroupsScaleByTheirLargestMagnitude) {
  check_activation_groups(300, true);
  check_activation_groups(512, true);
  check_activation_groups(512, false);
  check_activation_groups(300, false, true);
  check_activation_groups(512, true, true);
  check_activation_groups(512, false, false, 200);
  check_activation_groups(300, true, false, 40, true);
  check_activation_groups(512, true, true, 40, true);
  check_activation_groups(512, false, false, 200, true);
}

// x's rows quantised once per token, then their codes gathered tile-major
// (GatherRowsKernel) and their scales (GatherGroupScalesKernel), as large
// tiles take them where each token has 4 or more assignments: bit for bit
// the codes and scales of the rows quantised as gathered (zero_padding),
// rows past each tile's last zero with scale 1, the rows of tiles not in
// use untouched. H = 400: 25 chunks of codes a row (one per gather item)
// and a partial last group; H = 512: four chunks per item.
void check_tokens_then_gather(std::int64_t H, std::int64_t T) {
  const int k = 4, E = 5;
  Problem<Space, float8_e4m3> p(E, k, H, 64, T);
  p.set_routing(random_routing(T, k, first_experts(4), 23));
  Layer<Space, float8_e4m3> layer(p.config, p.weights);
  layer.dispatch(p.ids, T);
  const auto& plan = layer.plan();
  const int rows = plan.tile_rows;
  const std::int64_t tiles = DispatchPlan<mem>::max_tiles(T * k, E, rows);
  using kernel = Impl::QuantizeGroupsKernel<Space, bfloat16>;
  using codes_view = decltype(kernel::codes);
  using scales_view = decltype(kernel::scales);
  const std::int64_t G = kernel::groups(H);
  kernel gathered;
  gathered.plan = plan;
  gathered.source = p.x;
  gathered.codes = codes_view("codes", tiles * rows, H);
  gathered.scales = scales_view("scales", G, tiles * rows);
  gathered.k = k;
  gathered.experts = E;
  gathered.tile_rows = rows;
  gathered.rows = tiles * rows;
  gathered.assignments = T * k;
  gathered.gather = true;
  Kokkos::parallel_for(gathered.policy(Space()), gathered);
  const auto tokens = kernel::tokens(p.x, codes_view("token_codes", T, H),
                                     scales_view("token_scales", G, T), T);
  Kokkos::parallel_for(tokens.policy(Space()), tokens);
  const float8_e4m3 before(-0.8125f);
  codes_view codes("gathered_codes", tiles * rows, H);
  scales_view scales("gathered_scales", G, tiles * rows);
  Kokkos::deep_copy(codes, before);
  Kokkos::deep_copy(scales, -1.0f);
  using gather = Impl::GatherRowsKernel<Space, float8_e4m3>;
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(0, gather::items(tiles, rows, H)),
      gather{plan, tokens.codes, codes, k, E, rows, true});
  const Impl::GatherGroupScalesKernel<Space> s{plan, tokens.scales, scales,      k,
                                               E,    rows,          tiles * rows};
  Kokkos::parallel_for(s.policy(Space()), s);
  auto want = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gathered.codes);
  auto want_scales = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), gathered.scales);
  auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), codes);
  auto got_scales = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), scales);
  auto tile = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.tiles);
  auto used = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.tile_offsets);
  int padding_rows = 0;
  for (std::int64_t row = 0; row < tiles * rows; ++row) {
    const int t = int(row / rows);
    const bool in_use = t < used(E);
    padding_rows += in_use && tile(t, 1) + int(row % rows) >= tile(t, 2);
    for (std::int64_t g = 0; g < G; ++g)
      ASSERT_EQ(got_scales(g, row), in_use ? want_scales(g, row) : -1.0f)
          << "H " << H << " row " << row << " group " << g;
    for (std::int64_t c = 0; c < H; ++c)
      ASSERT_EQ(int(got(row, c).bits), int(in_use ? want(row, c).bits : before.bits))
          << "H " << H << " row " << row << " column " << c;
  }
  EXPECT_GT(padding_rows, 0) << "no tile with rows past its last";
  EXPECT_LT(used(E), tiles) << "every tile of the launch in use";
}

TEST(QUANTIZE_SUITE, ActivationGroupsQuantisedPerTokenThenGathered) {
  check_tokens_then_gather(400, 37);
  check_tokens_then_gather(512, 200);
}

TEST(QUANTIZE_SUITE, NonFiniteWeightsAreRefused) {
  const Config c = uneven_config(1);
  auto w = uneven_weights(c);
  auto up = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.up);
  up(2, 150, 7) = std::nanf("");
  Kokkos::deep_copy(w.up, up);
  try {
    quantize_fp8(w);
    ADD_FAILURE() << "a NaN weight was quantised";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("weights.up is not finite at expert 2, row 150, column 7"),
              std::string::npos)
        << e.what();
  }
}

// The layer refuses e4m3 NaN codes, non-finite scales and scales of the
// wrong shape, naming the tensor.
TEST(QUANTIZE_SUITE, LayerRefusesBadBlockScaledWeights) {
  const Config c = uneven_config(4);
  const auto good = quantize_fp8(uneven_weights(c));
  const auto expect_refused = [&](const Weights<float8_e4m3, mem>& w, const std::string& what) {
    try {
      Layer<Space, float8_e4m3> layer(c, w);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  {
    auto w = quantize_fp8(uneven_weights(c));
    auto gate = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.gate);
    gate(1, 3, 4).bits = 0xff;
    Kokkos::deep_copy(w.gate, gate);
    expect_refused(w, "weights.gate holds 1 e4m3 NaN values");
  }
  {
    auto w = quantize_fp8(uneven_weights(c));
    auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.down_scale);
    s(2, 1, 0) = std::numeric_limits<float>::infinity();
    Kokkos::deep_copy(w.down_scale, s);
    expect_refused(w, "weights.down_scale holds 1 scales that are not finite");
  }
  {
    auto w = good;
    w.up_scale = decltype(w.up_scale)("up_scale", 3, 2, 2);
    expect_refused(w, "weights.up_scale has extent 2 in dimension 2, expected 3");
  }
  {
    auto w = good;
    w.gate_scale = decltype(w.gate_scale)();
    expect_refused(w, "weights.gate_scale has extent 0 in dimension 0, expected 3");
  }
}

// The layer against float64 on the dequantised weights, across the block
// edges, the zero block and the scaled blocks: no tokens, one, a batch
// over all experts, all on one expert (rows past a tile). Rows not 16-byte
// aligned (H = 300, F = 200: element by element), aligned with partial
// blocks (H = 320, F = 192: 16 values per copy, the backend's own
// conversion), and deep (H = 1664: decode splits K).
TEST(QUANTIZE_SUITE, LayerMatchesReferenceAcrossBlocks) {
  const std::int64_t max_tokens = 150;
  for (const auto& hf :
       {std::pair<std::int64_t, std::int64_t>{300, 200}, {320, 192}, {1664, 144}}) {
    SCOPED_TRACE("H = " + std::to_string(hf.first) + ", F = " + std::to_string(hf.second));
    Problem<Space, float8_e4m3> p(3, 2, hf.first, hf.second, max_tokens);
    p.weights = quantize_fp8(uneven_weights(p.config));
    Layer<Space, float8_e4m3> layer(p.config, p.weights);
    p.ran_on(layer);
    for (const std::int64_t T : {std::int64_t(0), std::int64_t(1), std::int64_t(37), max_tokens}) {
      for (const bool one_expert : {false, true}) {
        if (one_expert && T == 0) continue;
        SCOPED_TRACE("T = " + std::to_string(T) + (one_expert ? ", all on experts 1 and 2" : ""));
        p.set_routing(random_routing(
            max_tokens, 2, one_expert ? std::vector<int>{1, 2} : first_experts(3), T + 5));
        layer.forward(p.x, p.ids, p.routing_weights, p.out, T);
        EXPECT_LT(p.error(T), p.tolerance());
      }
    }
  }
}

// Four experts a token (x quantised once per token where the backend's
// large e4m3 tiles take it): 150 tokens over 6 experts give each about 100
// rows, large tiles on every backend that has them; fewer tokens, smaller
// tiles.
TEST(QUANTIZE_SUITE, LayerMatchesReferenceAtFourExpertsAToken) {
  const std::int64_t max_tokens = 150;
  Problem<Space, float8_e4m3> p(6, 4, 320, 192, max_tokens);
  p.weights = quantize_fp8(uneven_weights(p.config));
  Layer<Space, float8_e4m3> layer(p.config, p.weights);
  p.ran_on(layer);
  for (const std::int64_t T : {std::int64_t(1), std::int64_t(37), max_tokens}) {
    for (const bool four_experts : {false, true}) {
      SCOPED_TRACE("T = " + std::to_string(T) + (four_experts ? ", all on experts 1-4" : ""));
      p.set_routing(random_routing(
          max_tokens, 4, four_experts ? std::vector<int>{1, 2, 3, 4} : first_experts(6), T + 9));
      layer.forward(p.x, p.ids, p.routing_weights, p.out, T);
      EXPECT_LT(p.error(T), p.tolerance());
    }
  }
}

}  // namespace
