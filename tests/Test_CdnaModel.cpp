// SPDX-License-Identifier: BSD-3-Clause
// The CDNA matrix-core fragment on the host, through the model of its MFMA
// instructions (src/hip/): the model against a plain matrix product, with
// the lane layouts written out here from AMD's documents; the e4m3 codes'
// conversion to MI300's fnuz codes, bit for bit; the fragment's tile
// products; and the gate/up and down kernels with the fragment against the
// float64 reference, over the edge cases of the layer tests.
#include "TestFragment.hpp"
#include "TestUtils.hpp"

#include "KokkosMoE_Dispatch_Impl.hpp"
#include "KokkosMoE_ExpertMLP_Impl.hpp"
#include "KokkosMoE_Fragment.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {
using namespace KokkosMoE;
using namespace KokkosMoE::Test;
using Space = Kokkos::DefaultHostExecutionSpace;
using Impl::TileSize;
namespace mfma = Impl::mfma;

template <class Scalar, TileSize Size>
using ModelShapes = Impl::CdnaFragmentOf<Space, mfma::ModelLanes, Scalar, Size>;

// ---- The instructions' model -------------------------------------------

template <class Operand>
Operand operand_of(double v);
template <>
bfloat16 operand_of<bfloat16>(double v) {
  return bfloat16(float(v));
}
template <>
float16 operand_of<float16>(double v) {
  return float16(float(v));
}
// An fnuz code near v (|v| < 240): the nearest of all 255 codes.
template <>
mfma::Fp8Code operand_of<mfma::Fp8Code>(double v) {
  int best = 0;
  for (int b = 0; b < 256; ++b)
    if (b != 0x80 && std::abs(mfma::fnuz_value(b) - v) < std::abs(mfma::fnuz_value(best) - v))
      best = b;
  return mfma::Fp8Code{std::uint8_t(best)};
}

double to_double_of(bfloat16 v) { return Impl::to_float(v); }
double to_double_of(float16 v) { return Impl::to_float(v); }
double to_double_of(mfma::Fp8Code v) { return mfma::fnuz_value(v.bits); }

// D += A B by the model, with A, B and D spread over the lanes as AMD's
// CDNA3 ISA guide and Matrix Instruction Calculator give them (written out
// here, not taken from the model), against the product in double.
template <class Operand, int M, int K, int Values>
void expect_model_multiplies() {
  using S = mfma::Shape<Operand, M>;
  static_assert(S::k == K && S::values == Values, "the instruction's K and operands a lane");
  constexpr int N = M, regs = M * N / 64;
  static_assert(S::regs == regs, "accumulators a lane");
  std::mt19937 gen(42 + M + K);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> a(M * K), b(K * N), d(M * N);
  Operand a_lane[64][2 * Values], b_lane[64][2 * Values];
  float d_lane[64][regs];
  // Element i of a lane's second instruction half (first = Values) holds
  // the operand; the first half holds values that must not be read.
  for (int l = 0; l < 64; ++l)
    for (int i = 0; i < Values; ++i) {
      const int row = l % M, kk = Values * (l / M) + i;
      a[row * K + kk] = to_double_of(operand_of<Operand>(u(gen)));
      a_lane[l][Values + i] = operand_of<Operand>(a[row * K + kk]);
      a_lane[l][i] = operand_of<Operand>(1000);
      b[kk * N + row] = to_double_of(operand_of<Operand>(u(gen)));
      b_lane[l][Values + i] = operand_of<Operand>(b[kk * N + row]);
      b_lane[l][i] = operand_of<Operand>(-1000);
    }
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < regs; ++r) {
      const int row = M == 32 ? 8 * (r / 4) + 4 * (l / 32) + r % 4 : 4 * (l / 16) + r;
      const int col = l % M;
      d[row * N + col] = u(gen);
      d_lane[l][r] = float(d[row * N + col]);
      d[row * N + col] = d_lane[l][r];
    }
  mfma::model<S>(a_lane, b_lane, Values, d_lane);
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < regs; ++r) {
      const int row = M == 32 ? 8 * (r / 4) + 4 * (l / 32) + r % 4 : 4 * (l / 16) + r;
      const int col = l % M;
      double want = d[row * N + col];
      for (int q = 0; q < K; ++q) want += a[row * K + q] * b[q * N + col];
      EXPECT_NEAR(d_lane[l][r], want, 1e-4 * (1 + std::abs(want))) << "lane " << l << " reg " << r;
    }
}

TEST(CdnaModel, MfmaMultipliesAsDocumented) {
  expect_model_multiplies<bfloat16, 32, 8, 4>();        // v_mfma_f32_32x32x8bf16_1k
  expect_model_multiplies<bfloat16, 16, 16, 4>();       // v_mfma_f32_16x16x16bf16_1k
  expect_model_multiplies<float16, 32, 8, 4>();         // v_mfma_f32_32x32x8f16
  expect_model_multiplies<float16, 16, 16, 4>();        // v_mfma_f32_16x16x16f16
  expect_model_multiplies<mfma::Fp8Code, 32, 16, 8>();  // v_mfma_f32_32x32x16_fp8_fp8
  expect_model_multiplies<mfma::Fp8Code, 16, 32, 8>();  // v_mfma_f32_16x16x32_fp8_fp8
}

// fp8_e4m3fnuz (MI300) from its definition: bias 8, 0x80 the only NaN.
TEST(CdnaModel, FnuzCodesDecodeAsDefined) {
  EXPECT_EQ(mfma::fnuz_value(0x00), 0.0f);
  EXPECT_EQ(mfma::fnuz_value(0x7f), 240.0f);                 // largest: 2^7 * 1.875
  EXPECT_EQ(mfma::fnuz_value(0xff), -240.0f);                // no NaN but 0x80
  EXPECT_EQ(mfma::fnuz_value(0x08), std::ldexp(1.0f, -7));   // smallest normal
  EXPECT_EQ(mfma::fnuz_value(0x01), std::ldexp(1.0f, -10));  // smallest subnormal
  EXPECT_EQ(mfma::fnuz_value(0x40), 1.0f);
  EXPECT_TRUE(std::isnan(mfma::fnuz_value(0x80)));
}

// Every OCP e4m3 code: its fnuz code stands for half its value, bit for
// bit (so a block's scale doubles); -0 becomes +0 and NaN fnuz's NaN.
TEST(CdnaModel, E4m3CodesToFnuzBitForBit) {
  for (int c = 0; c < 256; ++c) {
    float8_e4m3 v;
    v.bits = std::uint8_t(c);
    const float ocp = float(v);
    const std::uint8_t f = mfma::fnuz_half_of(v);
    SCOPED_TRACE(c);
    if (std::isnan(ocp)) {
      EXPECT_EQ(f, 0x80);
      continue;
    }
    EXPECT_NE(f, 0x80) << "a number became NaN";
    const float twice = 2.0f * mfma::fnuz_value(f);
    if (ocp == 0.0f) {
      EXPECT_EQ(f, 0x00);  // +0 for -0 too: 0x80 is fnuz's NaN
      continue;
    }
    EXPECT_EQ(std::memcmp(&twice, &ocp, sizeof ocp), 0) << ocp << " -> " << twice;
  }
}

// ---- The fragment ---------------------------------------------------------

template <class Scalar>
void expect_fragment_products() {
  expect_fragment_mma<Space, Scalar, typename ModelShapes<Scalar, TileSize::large>::gate_up>();
  expect_fragment_mma<Space, Scalar, typename ModelShapes<Scalar, TileSize::medium>::gate_up>();
  expect_fragment_mma<Space, Scalar, typename ModelShapes<Scalar, TileSize::small>::gate_up>();
  expect_fragment_mma<Space, Scalar, typename ModelShapes<Scalar, TileSize::large>::down>();
  expect_fragment_mma<Space, Scalar, typename ModelShapes<Scalar, TileSize::medium>::down>();
}
TEST(CdnaModel, FragmentMultiplyAccumulateBf16) { expect_fragment_products<bfloat16>(); }
TEST(CdnaModel, FragmentMultiplyAccumulateFp16) { expect_fragment_products<float16>(); }

// The kernels' LDS within 48 KiB (two stages of their operand tiles: 64
// KiB a compute unit, some of which Kokkos keeps), and 32 KiB for decode's
// small tiles (two teams a compute unit); and each of the 8 phases of a
// wavefront's 16-byte reads of a and b (lanes {0-3, 20-23}, {4-7, 16-19},
// {8-11, 28-31}, {12-15, 24-27}, and 32 higher: AMD's Composable Kernel
// documentation) at 8 different 16-byte bank groups, for every K group.
template <class Frag, class Kernel>
void expect_lds_fits(std::size_t most) {
  using S = typename Frag::S;
  EXPECT_LE(Kernel::scratch_bytes(), most);
  const int phase_lanes[4][8] = {{0, 1, 2, 3, 20, 21, 22, 23},
                                 {4, 5, 6, 7, 16, 17, 18, 19},
                                 {8, 9, 10, 11, 28, 29, 30, 31},
                                 {12, 13, 14, 15, 24, 25, 26, 27}};
  const std::size_t row_bytes = Frag::operand_stride * sizeof(bfloat16);
  for (int kk = 0; kk < Frag::tile_k; kk += Frag::k_group)
    for (int half = 0; half < 2; ++half)
      for (const auto& phase : phase_lanes) {
        std::vector<int> groups;
        for (int l : phase) {
          const int lane = l + 32 * half;  // rows l % M of A (and of B: b_col)
          const std::size_t at = S::a_row(lane) * row_bytes +
                                 (kk + Frag::chunk * S::slice(lane)) * sizeof(bfloat16);
          groups.push_back(int(at / 16 % 8));
        }
        std::sort(groups.begin(), groups.end());
        EXPECT_EQ(std::unique(groups.begin(), groups.end()), groups.end())
            << "LDS bank conflict, M = " << S::m << ", row of " << row_bytes << " bytes";
      }
}
TEST(CdnaModel, OperandTilesFitAndSpreadOverBanks) {
  using S = TileSize;
  using large = ModelShapes<bfloat16, S::large>;
  using medium = ModelShapes<bfloat16, S::medium>;
  using small = ModelShapes<bfloat16, S::small>;
  expect_lds_fits<large::gate_up, Impl::GateUpKernel<Space, bfloat16, S::large, large::gate_up>>(
      48 * 1024);
  expect_lds_fits<large::down, Impl::DownKernel<Space, bfloat16, S::large, large::down>>(48 * 1024);
  expect_lds_fits<medium::gate_up, Impl::GateUpKernel<Space, bfloat16, S::medium, medium::gate_up>>(
      48 * 1024);
  expect_lds_fits<medium::down, Impl::DownKernel<Space, bfloat16, S::medium, medium::down>>(48 *
                                                                                            1024);
  expect_lds_fits<small::gate_up, Impl::GateUpKernel<Space, bfloat16, S::small, small::gate_up>>(
      32 * 1024);
  expect_lds_fits<small::down, Impl::DownKernel<Space, bfloat16, S::small, small::down>>(32 * 1024);
}

// ---- The expert kernels with the fragment -----------------------------------

// out = the layer's expert part, by the dispatch, gate/up (split over K
// for small tiles, as the layer does), down and combine kernels with the
// model's fragments of Size, for the problem's routing.
template <class Scalar, TileSize Size>
void expert_part(const Problem<Space, Scalar>& p, std::int64_t T) {
  using token = token_type_t<Scalar>;
  using shapes = ModelShapes<token, Size>;
  using gate_up = Impl::GateUpKernel<Space, Scalar, Size, typename shapes::gate_up>;
  using down = Impl::DownKernel<Space, Scalar, Size, typename shapes::down>;
  static_assert(gate_up::BM == down::BM, "one dispatch for both");
  using mem = Space::memory_space;
  const Config& c = p.config;
  const int E = c.num_experts, k = c.top_k;
  const std::int64_t A = T * k, H = c.hidden_size, F = c.ffn_size;
  if (A == 0) return;  // as the layer: no launch
  const Space exec;
  auto plan = DispatchPlan<mem>::allocate(E, A, gate_up::BM);
  const int threads = Impl::DispatchKernels<Space>{plan, {}, E, k, 0}.one_team_threads(exec);
  Impl::DispatchKernels<Space>{plan, p.ids, E, k, int(A)}.run(exec, threads);
  Kokkos::View<token**, Kokkos::LayoutRight, mem> h("h", A, F);
  Kokkos::View<float**, Kokkos::LayoutRight, mem> parts("parts", 512, 2 * F);
  Kokkos::View<float**, Kokkos::LayoutRight, mem> y("y", std::max<std::int64_t>(A, 512), H);
  const auto tiles = DispatchPlan<mem>::max_tiles(A, E, gate_up::BM);

  gate_up g;
  g.plan = plan, g.experts = E, g.k = k, g.assignments = int(A);
  g.column_blocks = int((F + gate_up::BN - 1) / gate_up::BN);
  g.x = p.x, g.gate = p.weights.gate, g.up = p.weights.up;
  g.gate_scale = p.weights.gate_scale, g.up_scale = p.weights.up_scale;
  g.h = h, g.partial = parts;
  if (Size == TileSize::small)
    g.split_k(tiles, int(H), A, std::int64_t(parts.extent(0)), gate_up::frag::split_k_teams());
  Kokkos::parallel_for(g.make_policy(exec, tiles, gate_up::scratch_bytes(), "gate_up"), g);
  if (g.splits > 1)
    Kokkos::parallel_for(Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(0, A * F),
                         Impl::ActivationKernel<Space, token>{parts, h, F, A, g.splits});

  down d;
  d.plan = plan, d.experts = E, d.k = k, d.assignments = int(A);
  d.column_blocks = int((H + down::BN - 1) / down::BN);
  d.h = h, d.down = p.weights.down, d.down_scale = p.weights.down_scale, d.y = y;
  d.split_k(tiles, int(F), A, std::int64_t(y.extent(0)), down::frag::split_k_teams());
  Kokkos::parallel_for(d.make_policy(exec, tiles, down::scratch_bytes(), "down"), d);
  using combine = Impl::CombineKernel<Space, token, 1>;
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(0, combine::items(T, H)),
      combine{y, plan.position, p.routing_weights, p.out, k, H, d.splits, A});
  Kokkos::fence();
}

struct Case {
  const char* what;
  int E, k;
  std::int64_t H, F, T;
  std::vector<int> experts;  // those the tokens draw from
};

template <class Scalar, TileSize Size>
void expect_expert_part_matches(const Case& c) {
  SCOPED_TRACE(c.what);
  Problem<Space, Scalar> p(c.E, c.k, c.H, c.F, std::max<std::int64_t>(c.T, 1));
  p.set_routing(random_routing(std::max<std::int64_t>(c.T, 1), c.k, c.experts, 5));
  expert_part<Scalar, Size>(p, c.T);
  EXPECT_LE(p.error(c.T), p.tolerance());
}

// The layer tests' edge cases: no tokens, one token, idle experts, every
// token on one expert, widths that are no multiple of a tile or a K step,
// rows per expert past a tile, and K split for small tiles.
template <class Scalar>
void expect_expert_parts_match() {
  const std::vector<Case> cases = {
      {"no tokens", 4, 2, 64, 96, 0, Test::first_experts(4)},
      {"one token", 4, 2, 96, 160, 1, Test::first_experts(4)},
      {"idle experts", 8, 2, 72, 100, 9, {1, 6}},
      {"all tokens on one expert", 4, 1, 40, 72, 70, {2}},
      {"partial tiles and K steps", 6, 2, 130, 90, 37, Test::first_experts(6)},
      {"split K", 4, 2, 700, 1700, 3, Test::first_experts(4)},
  };
  for (const Case& c : cases) {
    expect_expert_part_matches<Scalar, TileSize::small>(c);
    expect_expert_part_matches<Scalar, TileSize::medium>(c);
    expect_expert_part_matches<Scalar, TileSize::large>(c);
  }
}
TEST(CdnaModel, ExpertKernelsMatchFloat64Bf16) { expect_expert_parts_match<bfloat16>(); }
TEST(CdnaModel, ExpertKernelsMatchFloat64Fp16) { expect_expert_parts_match<float16>(); }
// e4m3 weights dequantised into bf16 operand tiles as they load.
TEST(CdnaModel, ExpertKernelsMatchFloat64E4m3) { expect_expert_parts_match<float8_e4m3>(); }

}  // namespace
