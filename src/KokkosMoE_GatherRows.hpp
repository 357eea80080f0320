// SPDX-License-Identifier: BSD-3-Clause
// The gather of x's rows (or of their e4m3 codes) into the tile-major
// layout that the large kernels' tensor copies read.
#ifndef KOKKOSMOE_GATHERROWS_HPP
#define KOKKOSMOE_GATHERROWS_HPP

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>

#include "KokkosMoE_FlatIndex.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// gathered[t BM + r] = x[token of the r-th row of tile t] for the tiles in
// use, zero past each tile's last row (tile-major: see
// ExpertTileKernel::operand_row), so that the large gate/up kernel's tensor
// copies find a tile's rows of x next to each other (one more pass over
// about T k H values). Scalar: x's type, or e4m3 for x's codes quantised
// per token (KokkosMoE_ActivationGroups.hpp).
template <class ExecutionSpace, class Scalar>
struct GatherRowsKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  DispatchPlan<memory_space> plan;
  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> x;   // [T, H]
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> gathered;  // [tiles * BM, H]
  int k, experts;
  int tile_rows;  // BM
  bool aligned;   // x's rows start 16-byte aligned: 16 bytes per copy
  static constexpr int chunk_values = 16 / int(sizeof(Scalar));
  static_assert(16 % sizeof(Scalar) == 0, "whole values in a 16-byte chunk");

  // Item i: chunks q, q + C / 4, q + 2 C / 4, q + 3 C / 4 of gathered row p,
  // C = H / chunk_values chunks of 16 bytes (the tensor maps need rows of
  // whole chunks; every model we know has a multiple of 32 values): four
  // loads in flight per thread, each coalesced over the warp, so that
  // enough bytes are in flight to near the memory's rate. Where C is not a
  // multiple of 4, one chunk per item.
  KOKKOS_INLINE_FUNCTION static int chunks_per_item(std::int64_t H) {
    return (H / chunk_values) % 4 == 0 ? 4 : 1;
  }
  // Over the rows of `tiles` tiles (the launch's upper bound; the tiles
  // not in use return at once).
  static std::int64_t items(std::int64_t tiles, int tile_rows, std::int64_t H) {
    return tiles * tile_rows * (H / chunk_values / chunks_per_item(H));
  }
  struct alignas(16) Chunk {
    std::uint32_t word[4];
  };
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    const std::int64_t H = x.extent(1), per_item = chunks_per_item(H),
                       stride = H / chunk_values / per_item;
    std::int64_t p, q;
    row_and_column(i, stride, p, q);
    const int tile = int(p) / tile_rows, r = int(p) - tile * tile_rows;
    if (tile >= plan.tile_offsets(experts)) return;
    const int first = plan.tiles(tile, 1);
    Scalar* to = &gathered(p, 0);
    // (The tensor map over gathered made sure its rows are 16-byte aligned.)
    auto* dst = reinterpret_cast<Chunk*>(to) + q;
    if (r >= plan.tiles(tile, 2) - first) {
      for (int j = 0; j < per_item; ++j) dst[j * stride] = Chunk{};
      return;
    }
    const Scalar* from = &x(plan.order(first + r) / k, 0);
    if (!aligned) {
      for (std::int64_t c = q * chunk_values; c < H; c += stride * chunk_values)
        for (int v = 0; v < chunk_values; ++v) to[c + v] = from[c + v];
      return;
    }
    const auto* src = reinterpret_cast<const Chunk*>(from) + q;
    if (per_item == 4) {
      Chunk c[4];
      for (int j = 0; j < 4; ++j) c[j] = src[j * stride];
      for (int j = 0; j < 4; ++j) dst[j * stride] = c[j];
    } else {
      *dst = *src;
    }
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
