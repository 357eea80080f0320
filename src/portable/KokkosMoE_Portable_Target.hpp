// SPDX-License-Identifier: BSD-3-Clause
// The target operations (KokkosMoE_Target.hpp) in plain C++, for any
// compile target: what a backend's target header forwards to where it has
// no instruction of its own.
#ifndef KOKKOSMOE_PORTABLE_TARGET_HPP
#define KOKKOSMOE_PORTABLE_TARGET_HPP

#include <KokkosMoE/KokkosMoE_Math.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {
namespace portable_target {

// Pairs convert through from_float, a value at a time.
template <class T, int Width>
KOKKOS_INLINE_FUNCTION constexpr bool converts_pairs() {
  return false;
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t converted_pair(float a, float b) {
  return std::uint32_t(from_float<T>(a).bits) | (std::uint32_t(from_float<T>(b).bits) << 16);
}

KOKKOS_FORCEINLINE_FUNCTION float exp(float x) { return math::exp(x); }
KOKKOS_FORCEINLINE_FUNCTION float exp_fp32(float x) { return math::exp(x); }
KOKKOS_FORCEINLINE_FUNCTION float divide(float a, float b) { return a / b; }

KOKKOS_FORCEINLINE_FUNCTION std::uint16_t e4m3_pair(float a, float b) {
  return std::uint16_t(float8_e4m3(a).bits | (unsigned(float8_e4m3(b).bits) << 8));
}

KOKKOS_INLINE_FUNCTION void trap() {}

template <int Width, class Run>
KOKKOS_INLINE_FUNCTION bool silu_runs(const Run&, const Run&, Run&) {
  return false;
}

// No streaming stores: false, nothing stored; nothing to order.
template <int Width>
KOKKOS_INLINE_FUNCTION bool stream_run(float*, const float*) {
  return false;
}
KOKKOS_INLINE_FUNCTION void stream_fence() {}

// No vectors: false, nothing stored (store_column_run converts a value or
// a pair at a time).
template <class T, int Width>
KOKKOS_INLINE_FUNCTION bool narrow_run(T*, const float*) {
  return false;
}

// Four: a 16-byte load of each expert output a thread.
KOKKOS_INLINE_FUNCTION constexpr int combine_columns() { return 4; }

}  // namespace portable_target
}  // namespace Impl
}  // namespace KokkosMoE

#endif
