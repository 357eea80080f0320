// SPDX-License-Identifier: BSD-3-Clause
// ColumnRun: the accumulator values of consecutive output columns of one
// row, as a fragment's store hands them to the kernels: up to 16 on host
// fragments, the pair of columns a tensor-core thread holds on CUDA (stored
// with one instruction where the target converts pairs: whole 32-byte
// sectors per warp); also the columns a thread of the combine sums
// (target::combine_columns). store_column_run writes one to memory,
// stream_column_run past the caches where the target can.
#ifndef KOKKOSMOE_COLUMNRUN_HPP
#define KOKKOSMOE_COLUMNRUN_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_Target.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

template <int Width>
struct ColumnRun {
  static constexpr int width = Width;
  float v[Width];
};

// Writes the first `valid` values of run as T from dst on: all of them with
// one vector store where the run is whole and dst aligned to its size.
template <class T, int Width>
KOKKOS_FORCEINLINE_FUNCTION void store_column_run(T* dst, const ColumnRun<Width>& run, int valid) {
  if constexpr (Width > 1 && sizeof(T) == 2)
    if (valid >= Width && target::narrow_run<T, Width>(dst, run.v)) return;
  if constexpr (Width > 1) {
    struct alignas(Width * sizeof(T)) Whole {
      T v[Width];
    };
    if (valid >= Width && reinterpret_cast<std::uintptr_t>(dst) % sizeof(Whole) == 0) {
      if constexpr (target::converts_pairs<T, Width>()) {
        struct alignas(Width * sizeof(T)) Words {
          std::uint32_t word[Width / 2];
        };
        Words w;
        for (int i = 0; i < Width / 2; ++i)
          w.word[i] = target::converted_pair<T>(run.v[2 * i], run.v[2 * i + 1]);
        *reinterpret_cast<Words*>(dst) = w;
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

// The same for float outputs that another kernel reads back only after
// many more bytes (the down kernel's expert outputs in prefill): streamed
// past the caches where the target can (stream_run), so that their lines
// are not read from memory before being written; end the kernel's stores
// with target::stream_fence().
template <int Width>
KOKKOS_FORCEINLINE_FUNCTION void stream_column_run(float* dst, const ColumnRun<Width>& run,
                                                   int valid) {
  if (valid >= Width && target::stream_run<Width>(dst, run.v)) return;
  store_column_run(dst, run, valid);
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
