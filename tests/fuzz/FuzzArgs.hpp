// SPDX-License-Identifier: BSD-3-Clause
// Command-line cases: the drivers' options (their --help and
// drivers/common/CommandLine.hpp) in random order and form ("--x v", "--x=v"), all
// valid (the run must succeed), with one known defect (it must fail in one
// line: a missing value, a non-number, a number out of range, an unknown
// option, preset or choice, a file that is not a trace, ...), or a random
// mixture of options and values (either outcome, never a crash).
#ifndef KOKKOSMOE_FUZZARGS_HPP
#define KOKKOSMOE_FUZZARGS_HPP

#include "FuzzCommon.hpp"

namespace KokkosMoE {
namespace Fuzz {

// kokkos-moe-trace: synth, info, validate and the command itself.
Case trace_args_case(Rng& rng, int id, const Context& ctx);
// kokkos-moe-replay, Kokkos' own options included; `ep_built`: the driver
// has --ep (built with MPI), so that --ep alone is not an error.
Case replay_args_case(Rng& rng, int id, const Context& ctx, bool ep_built);
// Either driver, 0-8 arguments drawn from all options and values.
Case mixed_args_case(Rng& rng, int id, const Context& ctx);

}  // namespace Fuzz
}  // namespace KokkosMoE

#endif
