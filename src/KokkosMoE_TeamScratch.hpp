// SPDX-License-Identifier: BSD-3-Clause
// The team scratch a kernel asks for, checked against what its backend gives
// at level 0 before the launch: Kokkos aborts the process on a request above
// the limit (Serial and OpenMP since Kokkos 5.1 allow 32 KiB; CUDA 40 KiB
// unless the launch opts in to more).
#ifndef KOKKOSMOE_TEAMSCRATCH_HPP
#define KOKKOSMOE_TEAMSCRATCH_HPP

#include <KokkosMoE/KokkosMoE_BuildConfig.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace KokkosMoE {
namespace Impl {

// The most level-0 scratch a team of ExecutionSpace may have: Kokkos'
// scratch_size_max(0), unless the backend's file below knows better.
template <class ExecutionSpace>
struct TeamScratchLimit {
  template <class Policy>
  static std::size_t level0(const Policy& policy) {
    return std::size_t(policy.scratch_size_max(0));
  }
};

template <class Policy>
void require_team_scratch(const Policy& policy, std::size_t bytes, const char* kernel,
                          int level = 0) {
  const std::size_t most = level == 0
                               ? TeamScratchLimit<typename Policy::execution_space>::level0(policy)
                               : std::size_t(policy.scratch_size_max(level));
  if (bytes > most)
    throw std::runtime_error(
        std::string(kernel) + ": a team needs " + std::to_string(bytes) + " bytes of level-" +
        std::to_string(level) + " team scratch, but " + Policy::execution_space::name() +
        " gives at most " + std::to_string(most) +
        " (a tile shape this build of Kokkos cannot run: see docs/building.md)");
}

}  // namespace Impl
}  // namespace KokkosMoE

// The backends' own limits.
#include "cuda/KokkosMoE_Cuda_TeamScratch.hpp"

#endif
