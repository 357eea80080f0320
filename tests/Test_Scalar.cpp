// SPDX-License-Identifier: BSD-3-Clause
// The 16- and 8-bit storage types: exhaustive round trips and rounding rules.
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {
using KokkosMoE::bfloat16;
using KokkosMoE::float16;
using KokkosMoE::float8_e4m3;

template <class T>
T from_bits(std::uint16_t b) {
  T v;
  v.bits = decltype(v.bits)(b);
  return v;
}

TEST(Scalar, EveryFloat16RoundTrips) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = float(from_bits<float16>(std::uint16_t(b)));
    if (std::isnan(f)) {
      EXPECT_TRUE(((b >> 10) & 0x1f) == 0x1f && (b & 0x3ff) != 0);
      EXPECT_TRUE(std::isnan(float(float16(f))));
      continue;
    }
    ASSERT_EQ(float16(f).bits, b) << std::hex << b;
  }
}

TEST(Scalar, EveryBfloat16RoundTrips) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = float(from_bits<bfloat16>(std::uint16_t(b)));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float(bfloat16(f))));
      continue;
    }
    ASSERT_EQ(bfloat16(f).bits, b) << std::hex << b;
  }
}

TEST(Scalar, Float16KnownValues) {
  EXPECT_EQ(float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);  // halfway to 2^16 rounds to even: inf
  EXPECT_EQ(float16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(float16(5.9604645e-8f).bits, 0x0001);       // smallest subnormal
  EXPECT_EQ(float16(2.9802322e-8f).bits, 0x0000);       // half of it: ties to even (0)
  EXPECT_EQ(float16(8.940697e-8f).bits, 0x0002);        // 1.5 ulp: ties to even (2)
  EXPECT_EQ(float16(1.0f + 1.0f / 2048).bits, 0x3c00);  // tie, even stays
  EXPECT_EQ(float16(1.0f + 3.0f / 2048).bits, 0x3c02);  // tie, rounds up to even
  EXPECT_EQ(float16(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_EQ(float16(1e-10f).bits, 0x0000);
  EXPECT_EQ(float16(-0.0f).bits, 0x8000);
}

TEST(Scalar, Bfloat16KnownValues) {
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bfloat16(1.0f + 1.0f / 256).bits, 0x3f80);                  // tie to even
  EXPECT_EQ(bfloat16(1.0f + 3.0f / 256).bits, 0x3f82);                  // tie to even, up
  EXPECT_EQ(bfloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // overflow to inf
  EXPECT_EQ(bfloat16(-3.0f).bits, 0xc040);
}

// e4m3's value of each code from its definition (bias 7, subnormals of
// 2^-9 units, S.1111.111 NaN).
double e4m3_definition(std::uint8_t b) {
  const int e = (b >> 3) & 0xf, m = b & 7;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return (b & 0x80) ? -v : v;
}

TEST(Scalar, EveryE4m3CodeDecodesAndRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const float8_e4m3 q = from_bits<float8_e4m3>(std::uint8_t(b));
    if ((b & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(float(q))) << b;
      EXPECT_EQ(float8_e4m3(float(q)).bits & 0x7f, 0x7f) << b;
      continue;
    }
    EXPECT_EQ(double(float(q)), e4m3_definition(std::uint8_t(b))) << b;
    EXPECT_EQ(float8_e4m3(float(q)).bits, b) << b;
  }
}

TEST(Scalar, E4m3KnownValues) {
  EXPECT_EQ(float8_e4m3(1.0f).bits, 0x38);
  EXPECT_EQ(float8_e4m3(448.0f).bits, 0x7e);
  EXPECT_EQ(float8_e4m3(1e30f).bits, 0x7e);  // saturates
  EXPECT_EQ(float8_e4m3(-1e30f).bits, 0xfe);
  EXPECT_EQ(float8_e4m3(std::numeric_limits<float>::infinity()).bits, 0x7e);
  EXPECT_EQ(float8_e4m3(1.0625f).bits, 0x38);   // tie (1 + 1/16) to even: 1
  EXPECT_EQ(float8_e4m3(1.1875f).bits, 0x3a);   // tie (1 + 3/16) to even: 1.25
  EXPECT_EQ(float8_e4m3(0x1p-9f).bits, 0x01);   // smallest subnormal
  EXPECT_EQ(float8_e4m3(0x1p-10f).bits, 0x00);  // tie to even: zero
  EXPECT_EQ(float8_e4m3(0x1.8p-10f).bits, 0x01);
  EXPECT_EQ(float8_e4m3(0x1.ep-7f).bits, 0x08);  // 7.5 units of 2^-9: rounds to 2^-6
  EXPECT_EQ(float8_e4m3(-0.0f).bits, 0x80);
}

// Every float in range rounds to the nearest e4m3 value, ties to even
// (a sampled sweep against the decoded neighbours).
TEST(Scalar, E4m3RoundingIsToNearestEven) {
  for (std::uint32_t u = 0x3a000000u; u < 0x43e00000u; u += 0x2345u) {
    float f;
    std::memcpy(&f, &u, 4);
    const std::uint8_t b = float8_e4m3(f).bits;
    const double got = e4m3_definition(b), want = f;
    const double below = b == 0 ? -want : e4m3_definition(std::uint8_t(b - 1));
    const double above = e4m3_definition(std::uint8_t(b + 1));
    EXPECT_LE(std::abs(got - want), std::abs(below - want)) << f;
    if (b < 0x7e) EXPECT_LE(std::abs(got - want), std::abs(above - want)) << f;
    const bool tie = (b != 0 && std::abs(got - want) == std::abs(below - want)) ||
                     std::abs(got - want) == std::abs(above - want);
    if (tie) EXPECT_EQ(b % 2, 0) << f;
  }
}

// Every float rounds to the nearest representable value (sampled sweep).
TEST(Scalar, RoundingIsToNearest) {
  // From below the smallest subnormal to the largest finite float16.
  for (std::uint32_t u = 0x33800000u; u < 0x477fe000u; u += 0x1357u) {
    float f;
    std::memcpy(&f, &u, 4);
    const float h = float(float16(f));
    const std::uint16_t bits = float16(f).bits;
    const float below = bits == 0 ? -f : float(from_bits<float16>(std::uint16_t(bits - 1)));
    const float above = float(from_bits<float16>(std::uint16_t(bits + 1)));
    EXPECT_LE(std::abs(h - f), std::abs(below - f)) << f;
    if (!std::isinf(above)) EXPECT_LE(std::abs(h - f), std::abs(above - f)) << f;
    const float b = float(bfloat16(f));
    EXPECT_LE(std::abs(b - f), std::abs(f) * (1.0f / 256)) << f;
  }
}
}  // namespace
