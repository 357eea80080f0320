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

// Writes the first `valid` values of run as T from dst on: all of them with
// one vector store where the run is whole and dst aligned to its size.
template <class T, int Width>
KOKKOS_FORCEINLINE_FUNCTION void store_run(T* dst, const ValueRun<Width>& run, int valid) {
  if constexpr (Width > 1) {
    struct alignas(Width * sizeof(T)) Whole {
      T v[Width];
    };
    if (valid >= Width && reinterpret_cast<std::uintptr_t>(dst) % sizeof(Whole) == 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      // A pair of 16-bit values by one conversion instruction (rounded to
      // nearest even like from_float; the software rounding of each value
      // was 8 instructions).
      if constexpr (Width == 2 && (std::is_same<T, bfloat16>::value ||
                                   std::is_same<T, float16>::value)) {
        std::uint32_t pair;
        if constexpr (std::is_same<T, bfloat16>::value)
          asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(pair) : "f"(run.v[1]), "f"(run.v[0]));
        else
          asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(pair) : "f"(run.v[1]), "f"(run.v[0]));
        *reinterpret_cast<std::uint32_t*>(dst) = pair;
        return;
      }
#endif
      Whole w;
      for (int i = 0; i < Width; ++i) w.v[i] = from_float<T>(run.v[i]);
      *reinterpret_cast<Whole*>(dst) = w;
      return;
    }
  }
  for (int i = 0; i < Width; ++i)
    if (i < valid) dst[i] = from_float<T>(run.v[i]);
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
