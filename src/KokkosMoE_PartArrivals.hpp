// SPDX-License-Identifier: BSD-3-Clause
// Split-K parts finished by the kernel that makes them, with no pass of
// their own: each storing thread of a team counts its arrival at its output
// elements, which are the same elements in every K part (one fragment and
// one tile shape, so one map from threads to elements), and the thread that
// arrives last sums every part of those elements, in the order of the parts
// (so the sum does not depend on which part came last). No team barrier is
// needed, which the warp-specialised teams could not take in their stores
// (their producer warps do not store). A count is zero between launches:
// its last arrival resets it.
#ifndef KOKKOSMOE_PARTARRIVALS_HPP
#define KOKKOSMOE_PARTARRIVALS_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace KokkosMoE {
namespace Impl {

// Whether the caller is the last of `expected` arrivals at `count`: then
// every store the others made before arriving is visible to its loads.
KOKKOS_INLINE_FUNCTION bool last_arrival(int* count, int expected) {
  Kokkos::memory_fence();  // the caller's stores, before it counts
  if (Kokkos::atomic_fetch_add(count, 1) != expected - 1) return false;
  *count = 0;              // no other arrival here in this launch
  Kokkos::memory_fence();  // the others' stores, before the caller loads them
  return true;
}

// A value another team stored in this launch, loaded from memory rather
// than from a cache that may hold an older copy (a GPU multiprocessor's
// first-level cache is not kept coherent with the others').
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T load_arrived(const T& value) {
  return *static_cast<const volatile T*>(&value);
}

// One count per storing thread of each region (a row tile's column block)
// of a split-K launch.
template <class MemorySpace>
struct PartArrivals {
  Kokkos::View<int*, MemorySpace> count;  // [regions * storers]
  int storers = 0;                        // threads of a team that store

  // Whether the calling thread, storer `rank` of a team that has stored its
  // part of `region`, is the last of `parts` parts there.
  KOKKOS_INLINE_FUNCTION bool last(std::int64_t region, int rank, int parts) const {
    return last_arrival(&count(region * storers + rank), parts);
  }

  // The counts for `regions` regions of a kernel whose teams store with
  // `storers` threads, from `counts` (zero, as the kernels leave them).
  // Split-K launches have fewer regions than their team target (split_k),
  // so counts for split_k_teams() regions suffice.
  static PartArrivals of(const Kokkos::View<int*, MemorySpace>& counts, std::int64_t regions,
                         int storers) {
    if (regions * storers > std::int64_t(counts.extent(0)))
      throw std::logic_error("KokkosMoE: " + std::to_string(regions) +
                             " split-K regions of " + std::to_string(storers) +
                             " threads need more arrival counts than the " +
                             std::to_string(counts.extent(0)) + " allocated");
    return PartArrivals{counts, storers};
  }
};

// The threads of a team of Frag that store its outputs: all but the
// producers of a warp-specialised fragment.
template <class Frag>
int storing_threads() {
  return Frag::team_size() - Frag::producer_threads;
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
