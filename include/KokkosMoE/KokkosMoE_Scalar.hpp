// SPDX-License-Identifier: BSD-3-Clause
// Storage types of the layer: float, IEEE binary16, bfloat16, and for expert
// weights only, float8 e4m3 with a float scale per 128 x 128 block.
//
// Arithmetic and accumulation are always in float; 16- and 8-bit types are
// storage only. Kokkos 3.4 has no bfloat16 and its half_t is float on host backends,
// so both 16-bit types are defined here, bit-exact on every backend (the GPU
// fragments hand their bits to the matrix instructions as they are).
#ifndef KOKKOSMOE_SCALAR_HPP
#define KOKKOSMOE_SCALAR_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace KokkosMoE {

namespace Impl {
KOKKOS_INLINE_FUNCTION std::uint32_t float_bits(float f) {
  std::uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}
KOKKOS_INLINE_FUNCTION float bits_float(std::uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}
}  // namespace Impl

// bfloat16: the upper 16 bits of a float, rounded to nearest even.
struct bfloat16 {
  std::uint16_t bits;

  bfloat16() = default;
  KOKKOS_INLINE_FUNCTION explicit bfloat16(float f) : bits(from_float(f)) {}
  KOKKOS_INLINE_FUNCTION explicit operator float() const {
    return Impl::bits_float(std::uint32_t(bits) << 16);
  }

  KOKKOS_INLINE_FUNCTION static std::uint16_t from_float(float f) {
    std::uint32_t u = Impl::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN stays a (quiet) NaN
      return std::uint16_t((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return std::uint16_t(u >> 16);
  }
};

// IEEE 754 binary16, round to nearest even, with subnormals and overflow to inf.
struct float16 {
  std::uint16_t bits;

  float16() = default;
  KOKKOS_INLINE_FUNCTION explicit float16(float f) : bits(from_float(f)) {}
  KOKKOS_INLINE_FUNCTION explicit operator float() const { return to_float(bits); }

  KOKKOS_INLINE_FUNCTION static float to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return Impl::bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return Impl::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return Impl::bits_float(sign);
    // Subnormal: value = mant * 2^-24, exact in float.
    const float v = float(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }

  KOKKOS_INLINE_FUNCTION static std::uint16_t from_float(float f) {
    const std::uint32_t u = Impl::float_bits(f);
    const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);   // NaN
    if (a >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // rounds to inf
    if (a < 0x38800000u) {
      // Below the smallest normal (2^-14): scale so that the integer part is
      // the subnormal mantissa, the float addition rounds to nearest even.
      const float scaled = Impl::bits_float(a) * 16777216.0f + 8388608.0f;  // * 2^24 + 2^23
      return std::uint16_t(sign | (Impl::float_bits(scaled) - 0x4b000000u));
    }
    std::uint32_t r = a - 0x38000000u;  // rebias exponent from 127 to 15
    r += 0xfffu + ((r >> 13) & 1u);
    return std::uint16_t(sign | (r >> 13));
  }
};

// OCP float8 e4m3 (as in DeepSeek-V3's checkpoints and Hopper's tensor
// cores): sign, 4 exponent bits (bias 7), 3 mantissa bits, no infinities,
// S.1111.111 is NaN, the largest value is 448. Conversion from float
// rounds to nearest even and saturates to +-448 (NaN stays NaN).
struct float8_e4m3 {
  std::uint8_t bits;

  float8_e4m3() = default;
  KOKKOS_INLINE_FUNCTION explicit float8_e4m3(float f) : bits(from_float(f)) {}
  KOKKOS_INLINE_FUNCTION explicit operator float() const { return to_float(bits); }

  static constexpr float max = 448.0f;

  // The magnitude bits shifted into a float's exponent and mantissa are the
  // value times 2^-120, subnormals included (they become float subnormals,
  // which the multiply keeps: no flush-to-zero in our builds).
  KOKKOS_INLINE_FUNCTION static float to_float(std::uint8_t b) {
    const std::uint32_t m = b & 0x7fu;
    if (m == 0x7fu) return Impl::bits_float(0x7fc00000u);
    const float v = Impl::bits_float(m << 20) * 1.329227995784916e+36f;  // 2^120
    return Impl::bits_float(Impl::float_bits(v) | (std::uint32_t(b & 0x80u) << 24));
  }

  KOKKOS_INLINE_FUNCTION static std::uint8_t from_float(float f) {
    const std::uint32_t u = Impl::float_bits(f);
    const std::uint8_t sign = std::uint8_t((u >> 24) & 0x80u);
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return std::uint8_t(sign | 0x7fu);   // NaN
    if (a >= 0x43e00000u) return std::uint8_t(sign | 0x7eu);  // >= 448: saturate
    if (a < 0x3c800000u) {
      // Below the smallest normal (2^-6): the subnormal mantissa is the
      // value in units of 2^-9, rounded to nearest even by the float
      // addition (8 rounds up to the smallest normal, code 8).
      const float scaled = Impl::bits_float(a) * 512.0f + 8388608.0f;  // * 2^9 + 2^23
      return std::uint8_t(sign | (Impl::float_bits(scaled) - 0x4b000000u));
    }
    std::uint32_t r = a - 0x3c000000u;  // rebias exponent from 127 to 7
    r += 0x7ffffu + ((r >> 20) & 1u);
    r >>= 20;
    return std::uint8_t(sign | (r > 0x7eu ? 0x7eu : r));
  }
};

namespace Impl {
// The scale of a group of values quantised to e4m3 (a weight block, an
// activation group): amax / 448 (amax the largest magnitude), at least the
// smallest normal float (amax / 448 of subnormals would flush to zero on
// some devices), 1 for a group of zeros. Its values are value / scale,
// rounded to nearest even.
KOKKOS_INLINE_FUNCTION float e4m3_scale(float amax) {
  if (!(amax > 0)) return 1.0f;
  const float s = amax / float8_e4m3::max;
  return s > 1.17549435e-38f ? s : 1.17549435e-38f;
}

// The running largest magnitude of a group: max(amax, |v|).
KOKKOS_FORCEINLINE_FUNCTION float max_magnitude(float amax, float v) {
  const float m = v < 0 ? -v : v;
  return amax > m ? amax : m;
}
}  // namespace Impl

// Block-scaled storage types: a value is the stored element times the float
// scale of its block of weight_block x weight_block elements (rows, columns
// of each expert's matrix), DeepSeek-V3's layout.
template <class Scalar>
struct is_block_scaled : std::false_type {};
template <>
struct is_block_scaled<float8_e4m3> : std::true_type {};
constexpr int weight_block = 128;

// The type of a layer's hidden states, activations and outputs for a
// storage type: the type itself, and bfloat16 for e4m3 expert weights.
template <class Scalar>
struct TokenType {
  using type = Scalar;
};
template <>
struct TokenType<float8_e4m3> {
  using type = bfloat16;
};
template <class Scalar>
using token_type_t = typename TokenType<Scalar>::type;

namespace Impl {
template <class Scalar>
KOKKOS_INLINE_FUNCTION float to_float(Scalar x) {
  return static_cast<float>(x);
}
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar from_float(float x) {
  return Scalar(x);
}
}  // namespace Impl

// Names and precision of the storage types, for drivers and tolerances.
template <class Scalar>
struct ScalarTraits;
template <>
struct ScalarTraits<float> {
  static constexpr const char* name = "fp32";
  static constexpr double epsilon = 1.1920928955078125e-07;  // 2^-23
};
template <>
struct ScalarTraits<float16> {
  static constexpr const char* name = "fp16";
  static constexpr double epsilon = 9.765625e-04;  // 2^-10
};
template <>
struct ScalarTraits<bfloat16> {
  static constexpr const char* name = "bf16";
  static constexpr double epsilon = 7.8125e-03;  // 2^-7
};
// epsilon is that of the values the layer rounds, its bf16 activations; the
// weights' own (2^-3) is in the quantisation, not in the layer.
template <>
struct ScalarTraits<float8_e4m3> {
  static constexpr const char* name = "fp8";
  static constexpr double epsilon = 7.8125e-03;       // 2^-7 (bf16)
  static constexpr double weight_epsilon = 1.25e-01;  // 2^-3 (e4m3)
};

}  // namespace KokkosMoE

#endif
