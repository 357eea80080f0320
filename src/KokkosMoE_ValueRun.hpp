// A run of accumulator values of consecutive output columns of one row, as a
// fragment's store hands them to the kernels: one value on host fragments,
// the pair of columns a tensor-core thread holds on CUDA, so that kernels
// store a pair with one instruction (whole 32-byte sectors per warp).
#ifndef KOKKOSMOE_VALUERUN_HPP
#define KOKKOSMOE_VALUERUN_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

template <int Width>
struct ValueRun {
  static constexpr int width = Width;
  float v[Width];
};

// Whether this compilation converts a pair of 16-bit values with one
// instruction (CUDA devices from sm_80: cvt to bf16x2 or f16x2, rounded to
// nearest even like from_float, whose software rounding is 8 instructions
// a value).
template <class T, int Width>
KOKKOS_INLINE_FUNCTION constexpr bool converts_pairs() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return Width == 2 && (std::is_same<T, bfloat16>::value || std::is_same<T, float16>::value);
#else
  return false;
#endif
}

// The pair run as T in one word, run.v[0] in its low half (converts_pairs).
template <class T>
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t converted_pair(const ValueRun<2>& run) {
  std::uint32_t pair = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<T, bfloat16>::value)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(pair) : "f"(run.v[1]), "f"(run.v[0]));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(pair) : "f"(run.v[1]), "f"(run.v[0]));
#else
  (void)run;
#endif
  return pair;
}

// Writes the first `valid` values of run as T from dst on: all of them with
// one vector store where the run is whole and dst aligned to its size.
template <class T, int Width>
KOKKOS_FORCEINLINE_FUNCTION void store_run(T* dst, const ValueRun<Width>& run, int valid) {
  if constexpr (Width > 1) {
    struct alignas(Width * sizeof(T)) Whole {
      T v[Width];
    };
    if (valid >= Width && reinterpret_cast<std::uintptr_t>(dst) % sizeof(Whole) == 0) {
      if constexpr (converts_pairs<T, Width>()) {
        *reinterpret_cast<std::uint32_t*>(dst) = converted_pair<T>(run);
      } else {
        Whole w;
        for (int i = 0; i < Width; ++i) w.v[i] = from_float<T>(run.v[i]);
        *reinterpret_cast<Whole*>(dst) = w;
      }
      return;
    }
  }
  for (int i = 0; i < Width; ++i)
    if (i < valid) dst[i] = from_float<T>(run.v[i]);
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
