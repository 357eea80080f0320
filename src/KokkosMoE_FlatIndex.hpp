// SPDX-License-Identifier: BSD-3-Clause
// The row and column of item i of a flat element-wise loop.
#ifndef KOKKOSMOE_FLATINDEX_HPP
#define KOKKOSMOE_FLATINDEX_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// row = i / n and col = i % n (i >= 0, n > 0, n items a row), in 32-bit
// arithmetic where both fit: a 64-bit division is a long instruction
// sequence on GPUs, and the element-wise kernels, bound by memory, do one
// per item.
KOKKOS_FORCEINLINE_FUNCTION void row_and_column(std::int64_t i, std::int64_t n, std::int64_t& row,
                                                std::int64_t& col) {
  if (i <= 0x7fffffff && n <= 0x7fffffff) {
    const auto i32 = std::uint32_t(i), n32 = std::uint32_t(n);
    row = std::int64_t(i32 / n32), col = std::int64_t(i32 % n32);
  } else {
    row = i / n, col = i % n;
  }
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
