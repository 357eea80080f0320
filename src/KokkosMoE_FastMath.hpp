// SPDX-License-Identifier: BSD-3-Clause
// Float exp and division for values rounded to 16 bits next, where errors of
// a few float ulp are far below bf16's or fp16's rounding: the hardware's
// approximations where the compilation target has them (CUDA devices: ex2
// and reciprocal), the IEEE functions elsewhere. (On CUDA, expf and the IEEE
// division are 35 dependent instructions a value, a branch around each:
// enough to slow the large gate/up kernel's stores.)
#ifndef KOKKOSMOE_FASTMATH_HPP
#define KOKKOSMOE_FASTMATH_HPP

#include <KokkosMoE/KokkosMoE_Math.hpp>

#include <Kokkos_Core.hpp>

namespace KokkosMoE {
namespace Impl {
namespace fast_math {

KOKKOS_FORCEINLINE_FUNCTION float exp(float x) {
#ifdef __CUDA_ARCH__
  return __expf(x);
#else
  return math::exp(x);
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
