// SPDX-License-Identifier: BSD-3-Clause
// The target operations (KokkosMoE_Target.hpp) of HIP builds: the portable
// ones, device and host pass alike. (CDNA3's fp8 conversions make the
// fnuz variant, not float8_e4m3's OCP codes.)
#ifndef KOKKOSMOE_HIP_TARGET_HPP
#define KOKKOSMOE_HIP_TARGET_HPP

#include "portable/KokkosMoE_Portable_Target.hpp"

namespace KokkosMoE {
namespace Impl {
namespace target {

using portable_target::converted_pair;
using portable_target::converts_pairs;
using portable_target::divide;
using portable_target::e4m3_pair;
using portable_target::exp;
using portable_target::exp_fp32;
using portable_target::silu_runs;
using portable_target::trap;

}  // namespace target
}  // namespace Impl
}  // namespace KokkosMoE

#endif
