// SPDX-License-Identifier: BSD-3-Clause
// The target operations (KokkosMoE_Target.hpp) of HIP builds: the portable
// ones, device and host pass alike. (CDNA3's fp8 conversions make the
// fnuz variant, not float8_e4m3's OCP codes.)
#ifndef KOKKOSMOE_HIP_TARGET_HPP
#define KOKKOSMOE_HIP_TARGET_HPP

#include "portable/KokkosMoE_Portable_Target.hpp"

namespace KokkosMoE {
namespace Impl {
namespace target = portable_target;
}  // namespace Impl
}  // namespace KokkosMoE

#endif
