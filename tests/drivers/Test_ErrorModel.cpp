// SPDX-License-Identifier: BSD-3-Clause
// The error model of kokkos-moe-replay --check (drivers/common/ErrorModel.hpp):
// rows the layer can produce pass at any width, errors it cannot produce
// fail.
#include "ErrorModel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace KokkosMoE::Driver;

constexpr double bf16_eps = 0x1.0p-7, fp16_eps = 0x1.0p-10, fp32_eps = 0x1.0p-23;

ErrorModel model(double eps, double floor, std::int64_t H, std::int64_t F, int k) {
  ErrorModel m;
  m.storage_epsilon = eps;
  m.floor = floor;
  m.hidden = H, m.ffn = F, m.top_k = k;
  return m;
}

// Rounds to a binary format of p significant bits (round to nearest even),
// as the layer's storage types do.
double round_bits(double v, int p) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);
  const double scale = std::ldexp(1.0, p - e);
  return std::nearbyint(v * scale) / scale;
}

// One token as the layer computes it, for random data: terms a_jf = w_j
// down(n, f) h_jf with h rounded to `bits`, sums in double (float's error is
// far below 16-bit rounding), the output rounded to `bits`. Returns the
// layer's row, the exact row and Q, and the check's verdict.
RowCheck simulate(std::mt19937_64& rng, const ErrorModel& m, int bits, double relative_bug = 0) {
  std::uniform_real_distribution<double> u(-1, 1);
  const auto H = std::size_t(m.hidden), F = std::size_t(m.ffn);
  std::vector<double> out(H), ref(H), rss(H);
  std::vector<double> w(m.top_k), h(m.top_k * F), hr(m.top_k * F);
  for (double& v : w) v = 0.05 + (u(rng) + 1) / 2;
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = u(rng), hr[i] = round_bits(h[i], bits);
  for (std::size_t n = 0; n < H; ++n) {
    double exact = 0, layer = 0, squares = 0;
    for (int j = 0; j < m.top_k; ++j)
      for (std::size_t f = 0; f < F; ++f) {
        const double d = round_bits(u(rng), bits);
        exact += w[j] * d * h[j * F + f];
        layer += w[j] * d * hr[j * F + f];
        squares += std::pow(w[j] * d * h[j * F + f], 2);
      }
    ref[n] = exact;
    rss[n] = std::sqrt(squares);
    out[n] = round_bits(layer, bits);
  }
  if (relative_bug != 0) {  // a wrong result: the largest output off by that much
    std::size_t big = 0;
    for (std::size_t n = 0; n < H; ++n)
      if (std::abs(ref[n]) > std::abs(ref[big])) big = n;
    out[big] = ref[big] * (1 + relative_bug);
  }
  return check_row(out.data(), ref.data(), rss.data(), H, m);
}

TEST(ErrorModel, RowsOfAnyWidthPass) {
  // 16-bit storage at the widths where the fixed tolerance failed (H = 1,
  // F = 1..5, k = 2: outputs that are the difference of two terms) and at
  // wide ones: thousands of rows each, no false failure.
  std::mt19937_64 rng(3);
  struct Case {
    double eps;
    int bits;
    std::int64_t H, F;
    int k, rows;
  };
  const Case cases[] = {{bf16_eps, 8, 1, 1, 2, 20000},  {bf16_eps, 8, 1, 3, 2, 20000},
                        {bf16_eps, 8, 2, 1, 2, 20000},  {bf16_eps, 8, 3, 5, 8, 5000},
                        {fp16_eps, 11, 1, 1, 2, 20000}, {fp16_eps, 11, 1, 3, 2, 20000},
                        {bf16_eps, 8, 64, 32, 2, 500},  {fp16_eps, 11, 256, 128, 8, 20},
                        {bf16_eps, 8, 1024, 128, 2, 10}};
  for (const Case& c : cases) {
    const ErrorModel m = model(c.eps, c.eps, c.H, c.F, c.k);
    RowCheck worst{0, m.floor};
    for (int r = 0; r < c.rows; ++r) worst = worse(worst, simulate(rng, m, c.bits));
    EXPECT_TRUE(worst.passed()) << "H=" << c.H << " F=" << c.F << " k=" << c.k << ": error "
                                << worst.error << " > tolerance " << worst.tolerance;
  }
}

TEST(ErrorModel, FixedToleranceFailedTinyRows) {
  // What the width-blind tolerance (eps of the row's largest output) made
  // of H = 1: some rows are cancellations, far beyond eps.
  std::mt19937_64 rng(5);
  const ErrorModel m = model(bf16_eps, bf16_eps, 1, 1, 2);
  double largest = 0;
  for (int r = 0; r < 20000; ++r) largest = std::max(largest, simulate(rng, m, 8).error);
  EXPECT_GT(largest, bf16_eps);
}

TEST(ErrorModel, WrongResultsFail) {
  std::mt19937_64 rng(7);
  // A 1 % error in the largest output of a wide row (as any stage's bug
  // would give) fails, as with the fixed tolerance.
  const ErrorModel wide = model(bf16_eps, bf16_eps, 4096, 256, 2);
  EXPECT_FALSE(simulate(rng, wide, 8, 0.01).passed());
  EXPECT_TRUE(simulate(rng, wide, 8).passed());
  const ErrorModel wide16 = model(fp16_eps, fp16_eps, 2048, 128, 8);
  EXPECT_FALSE(simulate(rng, wide16, 11, 0.005).passed());
  // Tiny rows: an output off by 10 % of its terms' scale fails.
  const ErrorModel tiny = model(bf16_eps, bf16_eps, 1, 1, 2);
  const double ref = 0.5, rss = 0.4;
  const double bad = ref + 0.1 * rss;
  EXPECT_FALSE(check_row(&bad, &ref, &rss, 1, tiny).passed());
  const double good = ref * (1 + bf16_eps / 2) + 0.5 * bf16_eps * rss;
  EXPECT_TRUE(check_row(&good, &ref, &rss, 1, tiny).passed());
}

TEST(ErrorModel, NaNAndZeroRows) {
  const ErrorModel m = model(bf16_eps, bf16_eps, 2, 1, 2);
  const double ref[2] = {1, 2}, rss[2] = {1, 2};
  const double nan[2] = {1, std::numeric_limits<double>::quiet_NaN()};
  EXPECT_FALSE(check_row(nan, ref, rss, 2, m).passed());
  // A reference row of zeros: absolute comparison.
  const double zero[2] = {0, 0};
  EXPECT_TRUE(check_row(zero, zero, zero, 2, m).passed());
  const double off[2] = {0, 0.5};
  EXPECT_FALSE(check_row(off, zero, zero, 2, m).passed());
}

TEST(ErrorModel, ToleranceIsEpsilonForWideRowsAndNeverBelowTheFloor) {
  const ErrorModel m = model(bf16_eps, bf16_eps, 4096, 14336, 2);
  EXPECT_DOUBLE_EQ(m.terms_factor(), 3.5);
  // Wide rows: the largest output is about 3.5 Q.
  const double ref[2] = {3.5, 0.1}, rss[2] = {1, 1}, out[2] = {3.5, 0.1};
  const RowCheck r = check_row(out, ref, rss, 2, m);
  EXPECT_GE(r.tolerance, bf16_eps);
  EXPECT_LT(r.tolerance, 1.2 * bf16_eps);
  const ErrorModel f32 = model(fp32_eps, 1e-4, 4096, 14336, 2);
  EXPECT_DOUBLE_EQ(check_row(out, ref, rss, 2, f32).tolerance, 1e-4);
}

}  // namespace
