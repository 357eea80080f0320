// SPDX-License-Identifier: BSD-3-Clause
// The target operations (KokkosMoE_Target.hpp) of CUDA builds: in device
// code, one instruction where the portable C++ takes many (pairs of 16-bit
// values and of e4m3 codes converted at once, ex2 and the reciprocal: expf
// and the IEEE division are 35 dependent instructions a value, a branch
// around each); the portable ones in the host pass.
#ifndef KOKKOSMOE_CUDA_TARGET_HPP
#define KOKKOSMOE_CUDA_TARGET_HPP

#include "portable/KokkosMoE_Portable_Target.hpp"

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {
namespace target {

// cvt to bf16x2 or f16x2 from sm_80, rounded to nearest even like from_float.
template <class T, int Width>
KOKKOS_INLINE_FUNCTION constexpr bool converts_pairs() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return Width % 2 == 0 && (std::is_same<T, bfloat16>::value || std::is_same<T, float16>::value);
#else
  return portable_target::converts_pairs<T, Width>();
#endif
}

template <class T>
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t converted_pair(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  std::uint32_t pair;
  if constexpr (std::is_same<T, bfloat16>::value)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(pair) : "f"(b), "f"(a));
  else asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(pair) : "f"(b), "f"(a));
  return pair;
#else
  return portable_target::converted_pair<T>(a, b);
#endif
}

KOKKOS_FORCEINLINE_FUNCTION float exp(float x) {
#ifdef __CUDA_ARCH__
  return __expf(x);
#else
  return portable_target::exp(x);
#endif
}
KOKKOS_FORCEINLINE_FUNCTION float exp_fp32(float x) { return portable_target::exp_fp32(x); }
KOKKOS_FORCEINLINE_FUNCTION float divide(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdividef(a, b);
#else
  return portable_target::divide(a, b);
#endif
}

// Nearest even and saturating, as float8_e4m3, by one instruction from
// sm_89 (float8_e4m3(float) is some 15 instructions with branches).
KOKKOS_FORCEINLINE_FUNCTION std::uint16_t e4m3_pair(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  std::uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(b), "f"(a));
  return r;
#else
  return portable_target::e4m3_pair(a, b);
#endif
}

// A trap, not Kokkos::abort: a call in a kernel would make ptxas serialise
// every wgmma (C7510).
KOKKOS_INLINE_FUNCTION void trap() {
#ifdef __CUDA_ARCH__
  __trap();
#endif
}

template <int Width, class Run>
KOKKOS_INLINE_FUNCTION bool silu_runs(const Run& g, const Run& u, Run& h) {
  return portable_target::silu_runs<Width>(g, u, h);
}
using portable_target::combine_columns;
using portable_target::narrow_run;
using portable_target::stream_fence;
using portable_target::stream_run;

}  // namespace target
}  // namespace Impl
}  // namespace KokkosMoE

#endif
