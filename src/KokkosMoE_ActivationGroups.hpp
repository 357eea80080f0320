// SPDX-License-Identifier: BSD-3-Clause
// Activations quantised to e4m3 for fragments that multiply codes
// (multiplies_block_scaled): each row in groups of activation_group columns
// along K, each group with its scale e4m3_scale(amax) (DeepSeek-V3's 1 x 128
// recipe), its values value / scale rounded to nearest even. Rows are
// tile-major (ExpertTileMaps::operand_row): row r of tile t at t BM + r.
// The tile's rows past its last are zero with scale 1 where zero_padding
// (large tiles: zero rows draw less power in prefill-sized multiplies),
// else left as they are: the kernels multiply them but store none of their
// products (the rows of a product are independent), and at decode sizes
// they are nearly all the rows (DeepSeek-V3, 32 tokens: 9856 rows, 256 in
// use). Without zero_padding the pass visits only the rows in use.
// With per_token, the pass quantises the source's rows as they are (x's
// tokens), and GatherGroupScalesKernel with GatherRowsKernel then lay the
// codes and scales out tile-major: each token's row is quantised once
// instead of once per assignment.
#ifndef KOKKOSMOE_ACTIVATIONGROUPS_HPP
#define KOKKOSMOE_ACTIVATIONGROUPS_HPP

#include "KokkosMoE_FlatIndex.hpp"
#include "KokkosMoE_Target.hpp"

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// One scale per this many values of a row: one K step of the e4m3
// fragments and one weight block, so a step applies one scale per row.
constexpr int activation_group = weight_block;

// One item per group of a row, or per 16 values of it (parts): each reads
// the group's 128 values (16-byte loads where the rows allow) for their
// largest magnitude, then converts its values (16-byte stores), with no
// reduction across threads. Small passes (decode) split each group in
// max_parts: on an H100, with one item a group converting all 128 (a
// division each), the two passes took 9.5-10.5 us each at one token, a few
// warps' chains of instructions, and the fp8 layer took 1.08-1.10x the
// time of split groups at one token, 1.01-1.03x at 8 tokens (not yet
// measured side by side on an H200); large passes keep one item a group,
// whose loads split groups repeat (at 512 tokens split groups took
// 1.01-1.02x the time).
template <class ExecutionSpace, class Token>
struct QuantizeGroupsKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  static constexpr int chunk_values = 16 / int(sizeof(Token));
  static constexpr int chunks = activation_group / chunk_values;
  static constexpr int max_parts = activation_group / 16;
  // Groups a pass splits at most (parts_for_pass).
  static constexpr std::int64_t split_groups_up_to = 8192;
  static_assert(activation_group % chunk_values == 0 && activation_group % 16 == 0,
                "whole 16-byte chunks in a group");
  struct alignas(16) Chunk {
    Token v[chunk_values];
  };
  struct alignas(16) Codes {
    std::uint16_t pair[8];
  };

  DispatchPlan<memory_space> plan;
  Kokkos::View<const Token**, Kokkos::LayoutRight, memory_space> source;  // [T, C] or [rows, C]
  Kokkos::View<float8_e4m3**, Kokkos::LayoutRight, memory_space> codes;   // [rows, C]
  // [groups(C), rows]: a K step's scales of a tile's rows are one run.
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> scales;
  int k = 1, experts = 0, tile_rows = 0;
  std::int64_t rows = 0;  // the launch's: its tiles' rows (an upper bound)
  // The batch's assignments (an upper bound of the sorted positions in use).
  std::int64_t assignments = 0;
  // Items per group: 1, or max_parts of 16 values each.
  int parts = 1;
  // Row r of tile t takes source row plan.order(...) / k (x, gathered), or
  // the source's row t BM + r (h, already tile-major).
  bool gather = false;
  bool zero_padding = true;
  // Row p of the codes is the source's row p, for the `rows` rows (no tiles).
  bool per_token = false;

  KOKKOS_INLINE_FUNCTION static std::int64_t groups(std::int64_t C) {
    return (C + activation_group - 1) / activation_group;
  }
  // The pass over the first `rows` rows of source as they are (per_token).
  static QuantizeGroupsKernel tokens(const decltype(source)& from, const decltype(codes)& to,
                                     const decltype(scales)& to_scales, std::int64_t count) {
    QuantizeGroupsKernel q;
    q.source = from;
    q.codes = to;
    q.scales = to_scales;
    q.rows = count;
    q.per_token = true;
    return q;
  }
  // The rows an item's index runs over: with zero_padding every row of the
  // `rows` (rows of the tiles not in use return at once), else the sorted
  // positions, each found in its tile (at DeepSeek-V3 32 tokens, the items
  // of the 16640 rows of the tiles that may be in use took 23 us on an
  // H200 for the 256 rows in use).
  KOKKOS_INLINE_FUNCTION std::int64_t item_rows() const {
    return zero_padding || per_token ? rows : assignments;
  }
  // The groups a pass of these fields quantises.
  std::int64_t pass_groups() const { return item_rows() * groups(std::int64_t(codes.extent(1))); }
  // The parts a pass of these fields takes (small passes split groups).
  int parts_for_pass() const { return pass_groups() <= split_groups_up_to ? max_parts : 1; }
  // Over the groups of item_rows() rows, the rows of a group next to each
  // other: their scales are.
  Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>> policy(
      const ExecutionSpace& exec) const {
    return {exec, 0, pass_groups() * parts};
  }
  // The tile in use that holds sorted position `position` (tiles hold
  // consecutive positions, in order).
  KOKKOS_INLINE_FUNCTION int tile_of(int position) const {
    int lo = 0, hi = plan.tile_offsets(experts) - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (plan.tiles(mid, 1) <= position) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  KOKKOS_INLINE_FUNCTION static bool aligned(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  }

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    const std::int64_t C = codes.extent(1);
    std::int64_t p, g;
    const int part = parts > 1 ? int(i % parts) : 0;
    row_and_column(parts > 1 ? i / parts : i, item_rows(), g, p);
    const std::int64_t c0 = g * activation_group;
    const int n = C - c0 < activation_group ? int(C - c0) : activation_group;
    std::int64_t from_row = p;
    if (!per_token) {
      int tile, r;
      if (zero_padding) {
        tile = int(p / tile_rows), r = int(p - std::int64_t(tile) * tile_rows);
        if (tile >= plan.tile_offsets(experts)) return;
      } else {
        if (p >= plan.offsets(experts)) return;  // past the valid assignments
        tile = tile_of(int(p));
        r = int(p) - plan.tiles(tile, 1);
        p = std::int64_t(tile) * tile_rows + r;
      }
      const int first = plan.tiles(tile, 1);
      if (r >= plan.tiles(tile, 2) - first) {  // past the tile's last row
        if (zero_padding && part == 0) zero_group(p, g, n);
        return;
      }
      from_row = gather ? plan.order(first + r) / k : p;
    }
    float8_e4m3* const to = &codes(p, c0);
    const bool whole = n == activation_group && aligned(to);
    const Token* const from = &source(from_row, c0);
    float amax = 0;
    if (whole && aligned(from)) {
      Chunk v[chunks];
      for (int j = 0; j < chunks; ++j) v[j] = reinterpret_cast<const Chunk*>(from)[j];
      for (int j = 0; j < chunks; ++j)
        for (int e = 0; e < chunk_values; ++e) amax = max_magnitude(amax, to_float(v[j].v[e]));
      const float s = e4m3_scale(amax);
      // Each item's runs of 16 (the loop unrolled, v indexed statically).
      const int per_part = max_parts / parts;
      for (int j = 0; j < max_parts; ++j) {
        if (j / per_part != part) continue;
        Codes q;
        for (int e = 0; e < 8; ++e) {
          const int c = 16 * j + 2 * e;
          q.pair[e] =
              target::e4m3_pair(to_float(v[c / chunk_values].v[c % chunk_values]) / s,
                                to_float(v[(c + 1) / chunk_values].v[(c + 1) % chunk_values]) / s);
        }
        reinterpret_cast<Codes*>(to)[j] = q;
      }
      if (part == 0) scales(g, p) = s;
      return;
    }
    if (part != 0) return;  // a partial or unaligned group: one item
    for (int c = 0; c < n; ++c) amax = max_magnitude(amax, to_float(from[c]));
    const float s = e4m3_scale(amax);
    for (int c = 0; c < n; ++c) to[c] = float8_e4m3(to_float(from[c]) / s);
    scales(g, p) = s;
  }

  // Group g (n values) of row p as a row of no assignment: zero codes,
  // scale 1.
  KOKKOS_INLINE_FUNCTION void zero_group(std::int64_t p, std::int64_t g, int n) const {
    float8_e4m3* const to = &codes(p, g * activation_group);
    if (n == activation_group && aligned(to))
      for (int j = 0; j < activation_group / 16; ++j) reinterpret_cast<Codes*>(to)[j] = Codes{};
    else
      for (int c = 0; c < n; ++c) to[c] = float8_e4m3(0.0f);
    scales(g, p) = 1.0f;
  }
};

// The scales of x's rows quantised per token (QuantizeGroupsKernel with
// per_token), laid out as the tile-major rows' (GatherRowsKernel lays out
// their codes): scales(g, t BM + r) = token_scales(g, token of the r-th row
// of tile t), 1 past each tile's last row (whose codes are zero). One item
// a row of the `tiles` tiles, its token found once for all its groups (56
// at DeepSeek-V3); the stores of a group are runs over the items, the
// loads come from a few hundred KiB of token scales.
template <class ExecutionSpace>
struct GatherGroupScalesKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  DispatchPlan<memory_space> plan;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> token_scales;  // [G, T]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> scales;              // [G, rows]
  int k = 1, experts = 0, tile_rows = 0;
  std::int64_t rows = 0;  // the launch's: its tiles' rows (an upper bound)

  Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>> policy(
      const ExecutionSpace& exec) const {
    return {exec, 0, rows};
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t p) const {
    const int tile = int(p / tile_rows), r = int(p - std::int64_t(tile) * tile_rows);
    if (tile >= plan.tile_offsets(experts)) return;
    const int first = plan.tiles(tile, 1);
    const int G = int(token_scales.extent(0));
    if (r >= plan.tiles(tile, 2) - first) {
      for (int g = 0; g < G; ++g) scales(g, p) = 1.0f;
      return;
    }
    const int token = plan.order(first + r) / k;
    for (int g = 0; g < G; ++g) scales(g, p) = token_scales(g, token);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
