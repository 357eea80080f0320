// SPDX-License-Identifier: BSD-3-Clause
// The row and column of item i of a flat element-wise loop.
#ifndef KOKKOSMOE_DIVIDE_HPP
#define KOKKOSMOE_DIVIDE_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// q = i / n and r = i % n (i >= 0, n > 0) in 32-bit arithmetic where both
// fit: a 64-bit division is a long instruction sequence on GPUs, and the
// element-wise kernels do one per item (with a 64-bit division a value, the
// combine runs at only a sixth of the copy rate on the H200).
KOKKOS_FORCEINLINE_FUNCTION void divide(std::int64_t i, std::int64_t n, std::int64_t& q,
                                        std::int64_t& r) {
  if (i <= 0x7fffffff && n <= 0x7fffffff) {
    const auto i32 = std::uint32_t(i), n32 = std::uint32_t(n);
    q = std::int64_t(i32 / n32), r = std::int64_t(i32 % n32);
  } else {
    q = i / n, r = i % n;
  }
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
