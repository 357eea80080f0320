// SPDX-License-Identifier: BSD-3-Clause
// The 16-bit storage types: exhaustive round trips and rounding rules.
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {
using KokkosMoE::bfloat16;
using KokkosMoE::float16;

template <class T>
T from_bits(std::uint16_t b) {
  T v;
  v.bits = b;
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
