// SPDX-License-Identifier: BSD-3-Clause
// The expert kernels' tile schedule: which (row tile of one expert, column
// block, K part) each work item is, how K is split for decode sizes, and the
// launch that runs the items (one team each, or the fragment's resident
// teams walking them).
#ifndef KOKKOSMOE_EXPERTMLP_SCHEDULE_HPP
#define KOKKOSMOE_EXPERTMLP_SCHEDULE_HPP

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>

#include "KokkosMoE_TeamScratch.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// The kernels' TeamPolicy: with the fragment's optional `schedule` (a
// Kokkos::Schedule) where it has one, else Kokkos' default (static).
template <class ExecutionSpace, class Frag, class = void>
struct ExpertTilePolicy {
  using type = Kokkos::TeamPolicy<ExecutionSpace, typename Frag::launch_bounds>;
};
template <class ExecutionSpace, class Frag>
struct ExpertTilePolicy<ExecutionSpace, Frag, std::void_t<typename Frag::schedule>> {
  using type =
      Kokkos::TeamPolicy<ExecutionSpace, typename Frag::launch_bounds, typename Frag::schedule>;
};

template <class ExecutionSpace, class Frag>
struct ExpertTileSchedule {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy = typename ExpertTilePolicy<ExecutionSpace, Frag>::type;
  static constexpr int BN = Frag::tile_n, BK = Frag::tile_k;

  DispatchPlan<memory_space> plan;
  int experts;
  int k;                // routing top-k
  int column_blocks;    // ceil(N / BN)
  int splits = 1;       // parts of the K range, each its own team (split-K)
  int split_depth = 0;  // K per split, a multiple of BK

  struct Work {
    int tile, expert, first_row, rows, first_col, split, k_begin, k_end;
    // The item's row tile in its group, of group_tiles: the items that take
    // the same weights one after the other.
    int group_tile, group_tiles;
  };

  // The (tile, column block, K split) of work item `item`; false for the
  // surplus items of the upper-bound launch (see max_tiles), and then for
  // every later item too (resident teams stop at the first). Items run about
  // in order (teams in league order, or resident teams each taking every
  // league_size-th item), so consecutive items walk the column blocks of a
  // group of row tiles of one expert with the row tile fastest: the teams
  // in flight together share each weight tile (read from memory once, then
  // from L2). An expert's n tiles form ceil(n / max_group) groups of about
  // equal size: a weight tile is read once per group, so groups never span
  // two experts (a group boundary inside an expert would read its weights
  // twice). Item i of expert e lies in
  // [tile_offsets(e), tile_offsets(e + 1)) * per_tile, so tile i / per_tile
  // names e without a search.
  static constexpr int max_group = 16;
  KOKKOS_INLINE_FUNCTION bool work(int item, Work& w, int depth) const {
    const int per_tile = column_blocks * splits;
    const int unit = item / per_tile;
    if (unit >= plan.tile_offsets(experts)) return false;
    const int e = plan.tiles(unit, 0), first = plan.tile_offsets(e);
    const int n = plan.tile_offsets(e + 1) - first, u = unit - first;
    const int groups = (n + max_group - 1) / max_group;
    const int group = ((u + 1) * groups - 1) / n;  // tiles [g n / groups, (g + 1) n / groups)
    const int start = group * n / groups, size = (group + 1) * n / groups - start;
    const int index = item - (first + start) * per_tile;
    const int tile = first + start + index % size;
    const int rest = index / size;
    w.tile = tile;
    w.expert = e;
    w.first_row = plan.tiles(tile, 1);
    w.rows = plan.tiles(tile, 2) - w.first_row;
    w.first_col = (rest % column_blocks) * BN;
    w.split = rest / column_blocks;
    w.k_begin = splits > 1 ? w.split * split_depth : 0;
    w.k_end = splits > 1 && w.k_begin + split_depth < depth ? w.k_begin + split_depth : depth;
    w.group_tile = index % size;
    w.group_tiles = size;
    return true;
  }

  // Splits K until the launch has about `teams` teams (the decode sizes:
  // few tiles, long K), within `capacity` rows of partial results, in at
  // most ceil(depth / (min_split_steps BK)) parts: about min_split_steps K
  // steps deep or more (the parts are whole steps): shallower parts are
  // mostly their pipeline's fill and drain, deeper ones leave fewer teams.
  static constexpr int min_split_steps = 12;
  void split_k(std::int64_t tiles, int depth, std::int64_t rows, std::int64_t capacity,
               std::int64_t teams) {
    const std::int64_t by_teams = (teams + tiles * column_blocks - 1) / (tiles * column_blocks);
    const std::int64_t by_depth = (depth + min_split_steps * BK - 1) / (min_split_steps * BK);
    const std::int64_t by_room = rows > 0 ? capacity / rows : 1;
    std::int64_t s = by_teams < by_depth ? by_teams : by_depth;
    s = s < by_room ? s : by_room;
    s = s < 1 ? 1 : s;
    split_depth = int(((depth + s - 1) / s + BK - 1) / BK * BK);
    splits = int((depth + split_depth - 1) / split_depth);
  }

  // The scratch the K loop takes besides the kernel's tiles: the
  // pipeline's barriers where the fragment has them (ExpertTileKernel::run).
  static std::size_t run_scratch_bytes() {
    if constexpr (Frag::producer_threads > 0) return Frag::pipeline::scratch_bytes();
    else return 0;
  }

  // Light-weight: the functor travels as a kernel argument even past 512
  // bytes, where Kokkos 3.4 would copy it to constant memory behind a host
  // synchronisation (slower to launch, and not capturable in a graph:
  // WorkGraph). One team per work item, or the fragment's resident teams
  // (at most one per item). A tile shape whose scratch the backend cannot
  // give is an error that names the sizes (require_team_scratch), not a
  // Kokkos abort.
  auto make_policy(const ExecutionSpace& exec, std::int64_t tiles, std::size_t scratch,
                   const char* kernel) const {
    const std::int64_t items = tiles * column_blocks * splits;
    const std::int64_t resident = Frag::resident_teams();
    const std::int64_t teams = resident > 0 && resident < items ? resident : items;
    auto p = policy(exec, int(teams), Frag::team_size());
    constexpr int level = scratch_level<Frag>();
    require_team_scratch(p, scratch + run_scratch_bytes(), kernel, level);
    return Kokkos::Experimental::require(
        p.set_scratch_size(level, Kokkos::PerTeam(scratch + run_scratch_bytes())),
        Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
