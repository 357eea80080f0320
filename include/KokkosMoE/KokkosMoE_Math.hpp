// SPDX-License-Identifier: BSD-3-Clause
// Device math functions under one name across Kokkos versions: they lived in
// Kokkos::Experimental until 3.7 and are in Kokkos:: since.
#ifndef KOKKOSMOE_MATH_HPP
#define KOKKOSMOE_MATH_HPP

#include <Kokkos_Core.hpp>

namespace KokkosMoE {
namespace Impl {
namespace math {
#if KOKKOS_VERSION >= 30700
using Kokkos::exp;
using Kokkos::fmax;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fmax;
#endif
}  // namespace math
}  // namespace Impl
}  // namespace KokkosMoE

#endif
