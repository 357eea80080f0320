// SPDX-License-Identifier: BSD-3-Clause
// Kernels that build the DispatchPlan from routing ids on the device.
#ifndef KOKKOSMOE_DISPATCH_IMPL_HPP
#define KOKKOSMOE_DISPATCH_IMPL_HPP

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

template <class ExecutionSpace>
struct DispatchKernels {
  using memory_space = typename ExecutionSpace::memory_space;
  using ids_view = Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, memory_space>;

  DispatchPlan<memory_space> plan;
  ids_view ids;
  int experts;
  int k;
  int assignments;  // T * k

  struct Reset {};
  struct Count {};
  struct Scan {};
  struct Scatter {};
  struct Tiles {};
  struct OneTeam {};
  using one_team_policy = Kokkos::TeamPolicy<ExecutionSpace, OneTeam>;

  // Batches of up to this many assignments build the plan in one team (one
  // kernel instead of five: at decode sizes each kernel is a few
  // microseconds of a forward of about a hundred).
  static constexpr int one_team_assignments = 1024;
  // and up to this many experts, whose counters (4 bytes each) must fit in
  // team scratch on every backend (Kokkos 3.4 caps it at 40 KiB on CUDA).
  static constexpr int one_team_experts = 4096;

  // Zeroes the counters in a kernel: a deep_copy of a value into a scalar
  // view is a copy from the host stack, which a recorded graph would replay
  // from a dead address.
  KOKKOS_INLINE_FUNCTION void operator()(Reset, int e) const {
    plan.counts(e) = 0;
    if (e == 0) plan.invalid_ids() = 0;
  }

  // Each assignment takes the next free row of its expert (its rank, kept
  // in position until Scatter adds the expert's offset); the row order
  // within an expert does not change any result (rows are independent).
  KOKKOS_INLINE_FUNCTION void operator()(Count, int a) const { count(a, plan.counts.data()); }
  KOKKOS_INLINE_FUNCTION void count(int a, int* counters) const {
    const int e = ids(a / k, a % k);
    if (e < 0 || e >= experts) {
      Kokkos::atomic_add(&plan.invalid_ids(), 1);  // (atomic_increment: gone in Kokkos 5)
      plan.position(a) = -1;
      return;
    }
    plan.position(a) = Kokkos::atomic_fetch_add(&counters[e], 1);
  }

  // One scan yields both prefix sums: rows in the high 32 bits, tiles in the
  // low 32 (each total is below 2^31, so the halves never carry into another).
  KOKKOS_INLINE_FUNCTION void operator()(Scan, int e, std::int64_t& sum, bool final) const {
    const std::int64_t rows = e < experts ? plan.counts(e) : 0;
    const std::int64_t tiles = (rows + plan.tile_rows - 1) / plan.tile_rows;
    if (final) {
      plan.offsets(e) = int(sum >> 32);
      plan.tile_offsets(e) = int(sum & 0xffffffff);
    }
    sum += (rows << 32) + tiles;
  }

  KOKKOS_INLINE_FUNCTION void operator()(Scatter, int a) const {
    const int rank = plan.position(a);
    if (rank < 0) return;
    const int p = plan.offsets(ids(a / k, a % k)) + rank;
    plan.position(a) = p;
    plan.order(p) = a;
  }

  KOKKOS_INLINE_FUNCTION void operator()(Tiles, int e) const {
    const int begin = plan.offsets(e), end = plan.offsets(e + 1);
    for (int i = plan.tile_offsets(e); i < plan.tile_offsets(e + 1); ++i) {
      const int first = begin + (i - plan.tile_offsets(e)) * plan.tile_rows;
      plan.tiles(i, 0) = e;
      plan.tiles(i, 1) = first;
      plan.tiles(i, 2) = first + plan.tile_rows < end ? first + plan.tile_rows : end;
    }
  }

  // The five steps above in one team, the counters in team scratch.
  KOKKOS_INLINE_FUNCTION void operator()(OneTeam,
                                         const typename one_team_policy::member_type& m) const {
    int* counts = static_cast<int*>(m.team_scratch(0).get_shmem(sizeof(int) * experts));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, experts), [&](int e) { counts[e] = 0; });
    Kokkos::single(Kokkos::PerTeam(m), [&]() { plan.invalid_ids() = 0; });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, assignments), [&](int a) { count(a, counts); });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, experts),
                         [&](int e) { plan.counts(e) = counts[e]; });
    m.team_barrier();  // plan.counts is what Scan reads
    Kokkos::parallel_scan(Kokkos::TeamThreadRange(m, experts + 1),
                          [&](int e, std::int64_t& sum, bool final) {
                            (*this)(Scan{}, e, sum, final);
                          });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, assignments),
                         [&](int a) { (*this)(Scatter{}, a); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, experts), [&](int e) { (*this)(Tiles{}, e); });
  }

  // The one-team plan's team on exec: a power of two, up to 256 threads
  // (Kokkos 3.4's team scan on CUDA needs one; it asserts with the team
  // size AUTO chooses on the H200).
  int one_team_threads(const ExecutionSpace& exec) const {
    const int most = one_team_policy(exec, 1, 1).team_size_max(*this, Kokkos::ParallelForTag());
    int t = 1;
    while (t * 2 <= most && t * 2 <= 256) t *= 2;
    return t;
  }

  // threads: one_team_threads(exec), found once by the caller.
  void run(const ExecutionSpace& exec, int threads) const {
    if (assignments <= one_team_assignments && experts <= one_team_experts) {
      Kokkos::parallel_for("KokkosMoE::dispatch::one_team",
                           one_team_policy(exec, 1, threads)
                               .set_scratch_size(0, Kokkos::PerTeam(sizeof(int) * experts)),
                           *this);
      return;
    }
    Kokkos::parallel_for("KokkosMoE::dispatch::reset",
                         Kokkos::RangePolicy<ExecutionSpace, Reset, Kokkos::IndexType<int>>(
                             exec, 0, int(plan.counts.extent(0))),
                         *this);
    Kokkos::parallel_for(
        "KokkosMoE::dispatch::count",
        Kokkos::RangePolicy<ExecutionSpace, Count, Kokkos::IndexType<int>>(exec, 0, assignments),
        *this);
    Kokkos::parallel_scan(
        "KokkosMoE::dispatch::scan",
        Kokkos::RangePolicy<ExecutionSpace, Scan, Kokkos::IndexType<int>>(exec, 0, experts + 1),
        *this);
    Kokkos::parallel_for(
        "KokkosMoE::dispatch::scatter",
        Kokkos::RangePolicy<ExecutionSpace, Scatter, Kokkos::IndexType<int>>(exec, 0, assignments),
        *this);
    Kokkos::parallel_for(
        "KokkosMoE::dispatch::tiles",
        Kokkos::RangePolicy<ExecutionSpace, Tiles, Kokkos::IndexType<int>>(exec, 0, experts),
        *this);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
