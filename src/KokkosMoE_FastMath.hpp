// SPDX-License-Identifier: BSD-3-Clause
// A branch-free polynomial e^x, for a float or a vector of floats: the host
// builds' exp (KokkosMoE_Host_Target.hpp, host_vector::exp), where a loop of
// them vectorises and the library's expf is one call a value.
#ifndef KOKKOSMOE_FASTMATH_HPP
#define KOKKOSMOE_FASTMATH_HPP

#include <cstring>

namespace KokkosMoE {
namespace Impl {
namespace fast_math {

// e^x for a float or a GCC vector of floats V (I: the integer type of its
// exponent bits, to_int: V to I): e^x = 2^n e^r, n = round(x log2 e),
// |r| <= ln2 / 2, e^r by its Taylor polynomial to degree 6 (relative error
// about 2^-23), 2^n made in the exponent bits; x clamped where float under-
// or overflows.
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

}  // namespace fast_math
}  // namespace Impl
}  // namespace KokkosMoE

#endif
