// SPDX-License-Identifier: BSD-3-Clause
// Activations quantised to e4m3 for fragments that multiply codes
// (multiplies_block_scaled): each row in groups of activation_group columns
// along K, each group with its scale e4m3_scale(amax) (DeepSeek-V3's 1 x 128
// recipe), its values value / scale rounded to nearest even. Rows are
// tile-major (ExpertTileMaps::operand_row): row r of tile t at t BM + r, the
// tile's rows past its last zero with scale 1.
#ifndef KOKKOSMOE_ACTIVATIONGROUPS_HPP
#define KOKKOSMOE_ACTIVATIONGROUPS_HPP

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// One scale per this many values of a row: one K step of the e4m3
// fragments and one weight block, so a step applies one scale per row.
constexpr int activation_group = weight_block;

template <class ExecutionSpace, class Token>
struct QuantizeGroupsKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy = Kokkos::TeamPolicy<ExecutionSpace>;
  // Each group's values are spread over `lanes` vector lanes, `per_lane`
  // consecutive values each.
  static constexpr int lanes = 16, per_lane = activation_group / lanes;

  DispatchPlan<memory_space> plan;
  Kokkos::View<const Token**, Kokkos::LayoutRight, memory_space> source;  // [T, C] or [rows, C]
  Kokkos::View<float8_e4m3**, Kokkos::LayoutRight, memory_space> codes;   // [rows, C]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> scales;        // [rows, groups(C)]
  int k = 1, experts = 0, tile_rows = 0;
  // Row r of tile t takes source row plan.order(...) / k (x, gathered), or
  // the source's row t BM + r (h, already tile-major).
  bool gather = false;

  KOKKOS_INLINE_FUNCTION static std::int64_t groups(std::int64_t C) {
    return (C + activation_group - 1) / activation_group;
  }
  // Over the rows of `tiles` tiles (the launch's upper bound; rows of the
  // tiles not in use return at once).
  static policy make_policy(const ExecutionSpace& exec, std::int64_t tiles, int tile_rows) {
    return policy(exec, int(tiles * tile_rows), Kokkos::AUTO, lanes);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const typename policy::member_type& m) const {
    const int p = m.league_rank(), tile = p / tile_rows, r = p - tile * tile_rows;
    if (tile >= plan.tile_offsets(experts)) return;
    const int first = plan.tiles(tile, 1);
    const bool used = r < plan.tiles(tile, 2) - first;
    const std::int64_t row = gather ? (used ? plan.order(first + r) / k : 0) : p;
    const std::int64_t C = codes.extent(1);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, int(groups(C))), [&](int g) {
      const std::int64_t c0 = std::int64_t(g) * activation_group;
      float amax = 0;
      if (used)
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(m, lanes),
            [&](int v, float& a) {
              for (int e = 0; e < per_lane; ++e) {
                const std::int64_t c = c0 + v * per_lane + e;
                if (c < C) {
                  const float x = to_float(source(row, c));
                  a = a > (x < 0 ? -x : x) ? a : (x < 0 ? -x : x);
                }
              }
            },
            Kokkos::Max<float>(amax));
      const float s = e4m3_scale(amax);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(m, lanes), [&](int v) {
        for (int e = 0; e < per_lane; ++e) {
          const std::int64_t c = c0 + v * per_lane + e;
          if (c < C)
            codes(p, c) = used ? float8_e4m3(to_float(source(row, c)) / s) : float8_e4m3(0.0f);
        }
      });
      Kokkos::single(Kokkos::PerThread(m), [&]() { scales(p, g) = s; });
    });
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
