// SPDX-License-Identifier: BSD-3-Clause
// The dispatch plan: token assignments grouped by expert, and the tiles the
// expert kernels work on. Built on the device from the routing ids, so that
// forward needs no host round-trip.
#ifndef KOKKOSMOE_DISPATCH_HPP
#define KOKKOSMOE_DISPATCH_HPP

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {

// An assignment is one (token, slot) pair, numbered a = token * top_k + slot.
template <class MemorySpace>
struct DispatchPlan {
  using index_view = Kokkos::View<int*, MemorySpace>;

  index_view counts;        // [E]    assignments per expert
  index_view offsets;       // [E+1]  exclusive prefix sum of counts
  index_view position;      // [T*k]  sorted position of each assignment (-1: invalid id)
  index_view order;         // [T*k]  assignment at each sorted position
  index_view tile_offsets;  // [E+1]  first tile of each expert; tile_offsets[E] = tiles in use
  Kokkos::View<int* [3], MemorySpace> tiles;  // (expert, first row, end row) in sorted positions
  Kokkos::View<int, MemorySpace>
      invalid_ids;    // routing ids outside [0, E) seen by the last dispatch
  int tile_rows = 0;  // rows per tile

  // Tiles never exceed this bound: sum over experts of ceil(c_e / rows)
  // <= assignments / rows + non-empty experts. Kernels launch this many and
  // the surplus teams return at once, so no count travels to the host.
  static std::int64_t max_tiles(std::int64_t assignments, int experts, int rows) {
    const std::int64_t nonempty = assignments < experts ? assignments : experts;
    return assignments / rows + nonempty;
  }

  static DispatchPlan allocate(int experts, std::int64_t max_assignments, int rows) {
    DispatchPlan p;
    p.counts = index_view("KokkosMoE::dispatch::counts", experts);
    p.offsets = index_view("KokkosMoE::dispatch::offsets", experts + 1);
    p.position = index_view("KokkosMoE::dispatch::position", max_assignments);
    p.order = index_view("KokkosMoE::dispatch::order", max_assignments);
    p.tile_offsets = index_view("KokkosMoE::dispatch::tile_offsets", experts + 1);
    p.tiles = Kokkos::View<int* [3], MemorySpace>("KokkosMoE::dispatch::tiles",
                                                  max_tiles(max_assignments, experts, rows));
    p.invalid_ids = Kokkos::View<int, MemorySpace>("KokkosMoE::dispatch::invalid_ids");
    p.tile_rows = rows;
    return p;
  }
};

}  // namespace KokkosMoE

#endif
