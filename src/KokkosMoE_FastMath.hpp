// SPDX-License-Identifier: BSD-3-Clause
// Float exp and division for values rounded to 16 bits next, where errors of
// a few float ulp are far below bf16's or fp16's rounding: the hardware's
// approximations where the compilation target has them (CUDA devices: ex2
// and reciprocal), a polynomial exp in host builds (vectorised by the
// compiler), the IEEE functions elsewhere. (On CUDA, expf and the IEEE
// division are 35 dependent instructions a value, a branch around each:
// enough to slow the large gate/up kernel's stores.)
#ifndef KOKKOSMOE_FASTMATH_HPP
#define KOKKOSMOE_FASTMATH_HPP

#include <KokkosMoE/KokkosMoE_Math.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace KokkosMoE {
namespace Impl {
namespace fast_math {

// Host builds' e^x, for a float or a GCC vector of floats V (I: the integer
// type of its exponent bits, to_int: V to I): e^x = 2^n e^r, n = round(x
// log2 e), |r| <= ln2 / 2, e^r by its Taylor polynomial to degree 6
// (relative error about 2^-23), 2^n made in the exponent bits; x clamped
// where float under- or overflows. Branch-free, so that a loop of them
// (the kernels' runs of outputs) vectorises, where the library's expf is
// one call a value; the vector form (host_vector::exp) gives the same
// values.
template <class I, class V, class ToInt>
inline V exp_polynomial(V x, V lo, V hi, const ToInt& to_int) {
  x = x < lo ? lo : x > hi ? hi : x;
  const V n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest
  const V r = (x - n * 0.693145752f) - n * 1.42860677e-6f;    // ln 2 in two parts
  V p = (lo - lo) + 1.0f / 720;  // (lo - lo: zero as a float or a vector)
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I scale = (to_int(n) + 127) << 23;
  V two_n;
  std::memcpy(&two_n, &scale, sizeof two_n);
  return p * two_n;
}

KOKKOS_FORCEINLINE_FUNCTION float exp(float x) {
#if defined(__CUDA_ARCH__)
  return __expf(x);
#elif defined(__HIP_DEVICE_COMPILE__) || defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  return math::exp(x);
#else
  return exp_polynomial<std::int32_t>(x, -87.0f, 88.0f, [](float n) { return std::int32_t(n); });
#endif
}

// exp for fp32 results: the IEEE function, except in host builds, where the
// polynomial above (a float ulp or two, below the error of the K-long sums
// it follows) vectorises with the rest of the kernels' stores.
KOKKOS_FORCEINLINE_FUNCTION float exp_fp32(float x) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  return math::exp(x);
#else
  return exp(x);
#endif
}

KOKKOS_FORCEINLINE_FUNCTION float divide(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdividef(a, b);
#else
  return a / b;
#endif
}

}  // namespace fast_math
}  // namespace Impl
}  // namespace KokkosMoE

#endif
