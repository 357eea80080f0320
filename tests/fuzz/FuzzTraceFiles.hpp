// SPDX-License-Identifier: BSD-3-Clause
// Trace-file cases: a file written with the HDF5 C API, valid or malformed
// in one known way (docs/trace-format.md), or a valid file with damaged
// bytes, read by kokkos-moe-trace validate or info or kokkos-moe-replay.
#ifndef KOKKOSMOE_FUZZTRACEFILES_HPP
#define KOKKOSMOE_FUZZTRACEFILES_HPP

#include "FuzzCommon.hpp"

namespace KokkosMoE {
namespace Fuzz {

// Writes the case's file under ctx.dir (case-<id>.h5) and returns the case.
Case trace_file_case(Rng& rng, int id, const Context& ctx);

}  // namespace Fuzz
}  // namespace KokkosMoE

#endif
