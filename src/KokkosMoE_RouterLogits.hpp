// SPDX-License-Identifier: BSD-3-Clause
// Router logits [T, E] = x [T, H] router [E, H]^T in float, for builds
// without Kokkos Kernels (with it, KokkosBlas::gemm computes them). The
// router is small next to the experts (E x H), so one kernel of plain dot
// products serves: a team takes `tokens_per_team` tokens, stages a chunk of
// their rows of x in scratch, and each thread sums one expert's dot products
// with them over its vector lanes; every expert row is then read once per
// token block instead of once per token.
#ifndef KOKKOSMOE_ROUTERLOGITS_HPP
#define KOKKOSMOE_ROUTERLOGITS_HPP

#include "KokkosMoE_TeamScratch.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

template <class ExecutionSpace>
struct RouterLogitsKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using member = typename policy::member_type;
  using scratch_rows =
      Kokkos::View<float**, Kokkos::LayoutRight, typename ExecutionSpace::scratch_memory_space,
                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static constexpr int tokens_per_team = 8;
  static constexpr int chunk = 256;  // columns of x per scratch stage
  static constexpr bool on_host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;

  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> x;       // [T, H]
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> router;  // [E, H]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> logits;        // [T, E]

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    const int T = int(x.extent(0)), H = int(x.extent(1)), E = int(router.extent(0));
    const int t0 = m.league_rank() * tokens_per_team;
    const int rows = T - t0 < tokens_per_team ? T - t0 : tokens_per_team;
    scratch_rows xs(m.team_scratch(0), tokens_per_team, chunk);
    for (int h0 = 0; h0 < H; h0 += chunk) {
      const int width = H - h0 < chunk ? H - h0 : chunk;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, rows * width), [&](int i) {
        xs(i / width, i % width) = x(t0 + i / width, h0 + i % width);
      });
      m.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, E), [&](int e) {
        const float* w = &router(e, h0);
        for (int t = 0; t < rows; ++t) {
          float sum = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(m, width), [&](int h, float& s) { s += w[h] * xs(t, h); },
              sum);
          Kokkos::single(Kokkos::PerThread(m),
                         [&] { logits(t0 + t, e) = h0 == 0 ? sum : logits(t0 + t, e) + sum; });
        }
      });
      m.team_barrier();
    }
  }

  void run(const ExecutionSpace& exec) const {
    const int T = int(x.extent(0));
    if (T == 0) return;
    const int teams = (T + tokens_per_team - 1) / tokens_per_team;
    auto p = on_host ? policy(exec, teams, 1, 1) : policy(exec, teams, 8, 32);
    const std::size_t bytes = scratch_rows::shmem_size(tokens_per_team, chunk);
    require_team_scratch(p, bytes, "KokkosMoE::route::logits");
    Kokkos::parallel_for("KokkosMoE::route::logits", p.set_scratch_size(0, Kokkos::PerTeam(bytes)),
                         *this);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
