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
// use).
#ifndef KOKKOSMOE_ACTIVATIONGROUPS_HPP
#define KOKKOSMOE_ACTIVATIONGROUPS_HPP

#include "KokkosMoE_Divide.hpp"

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// One scale per this many values of a row: one K step of the e4m3
// fragments and one weight block, so a step applies one scale per row.
constexpr int activation_group = weight_block;

// The codes of a and b, a in the low byte: float8_e4m3's rounding (nearest
// even, saturating), by one instruction where the device has it (sm_89 and
// later; float8_e4m3(float) is some 15 instructions with branches).
KOKKOS_FORCEINLINE_FUNCTION std::uint16_t e4m3_pair(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  std::uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(b), "f"(a));
  return r;
#else
  return std::uint16_t(float8_e4m3(a).bits | (unsigned(float8_e4m3(b).bits) << 8));
#endif
}

// One group of a row per team thread, its 16-byte chunks over the
// thread's vector lanes on GPUs (a lane a chunk: a group's loads and
// stores are contiguous across its lanes, and each thread holds one chunk,
// so that enough of them run to keep the memory busy): the group's largest
// magnitude reduced over the lanes, then each lane's codes from the chunk
// it read (read again: still in L1).
template <class ExecutionSpace, class Token>
struct QuantizeGroupsKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using member = typename policy::member_type;
  static constexpr int chunk_values = 16 / int(sizeof(Token));
  static constexpr int chunks = activation_group / chunk_values;
  static_assert(activation_group % chunk_values == 0 && chunk_values % 2 == 0,
                "whole 16-byte chunks in a group, codes in pairs");
  static constexpr bool on_host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
  // Groups a team: 256 threads on GPUs, one thread on the host.
  static constexpr int team_groups = on_host ? 1 : 256 / chunks;
  struct alignas(16) Chunk {
    Token v[chunk_values];
  };
  struct alignas(chunk_values) ChunkCodes {
    std::uint16_t pair[chunk_values / 2];
  };

  DispatchPlan<memory_space> plan;
  Kokkos::View<const Token**, Kokkos::LayoutRight, memory_space> source;  // [T, C] or [rows, C]
  Kokkos::View<float8_e4m3**, Kokkos::LayoutRight, memory_space> codes;   // [rows, C]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> scales;        // [rows, groups(C)]
  int k = 1, experts = 0, tile_rows = 0;
  // The launch's upper bound on the tiles in use (rows of tiles not in
  // use return at once).
  std::int64_t tiles = 0;
  // Row r of tile t takes source row plan.order(...) / k (x, gathered), or
  // the source's row t BM + r (h, already tile-major).
  bool gather = false;
  bool zero_padding = true;

  KOKKOS_INLINE_FUNCTION static std::int64_t groups(std::int64_t C) {
    return (C + activation_group - 1) / activation_group;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t items() const {
    return tiles * tile_rows * groups(std::int64_t(codes.extent(1)));
  }
  void run(const ExecutionSpace& exec) const {
    const std::int64_t teams = (items() + team_groups - 1) / team_groups;
    if (teams == 0) return;
    const auto p = on_host ? policy(exec, int(teams), 1, 1)
                           : policy(exec, int(teams), team_groups, chunks);
    Kokkos::parallel_for("KokkosMoE::quantize_rows", p, *this);
  }

  KOKKOS_INLINE_FUNCTION static bool aligned(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    const std::int64_t i = std::int64_t(m.league_rank()) * team_groups + m.team_rank();
    if (i >= items()) return;
    const std::int64_t C = codes.extent(1);
    std::int64_t p, g;
    divide(i, groups(C), p, g);
    const int tile = int(p / tile_rows), r = int(p - std::int64_t(tile) * tile_rows);
    if (tile >= plan.tile_offsets(experts)) return;
    const int first = plan.tiles(tile, 1);
    const std::int64_t c0 = g * activation_group;
    const int n = C - c0 < activation_group ? int(C - c0) : activation_group;
    float8_e4m3* const to = &codes(p, c0);
    if (r >= plan.tiles(tile, 2) - first) {  // past the tile's last row
      if (!zero_padding) return;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(m, n),
                           [&](int c) { to[c] = float8_e4m3(0.0f); });
      Kokkos::single(Kokkos::PerThread(m), [&] { scales(p, g) = 1.0f; });
      return;
    }
    const Token* const from = &source(gather ? plan.order(first + r) / k : p, c0);
    float amax = 0, s = 1;
    if (n == activation_group && aligned(to) && aligned(from)) {
      const Chunk* const in = reinterpret_cast<const Chunk*>(from);
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(m, chunks),
          [&](int l, float& a) {
            const Chunk v = in[l];
            for (int e = 0; e < chunk_values; ++e) a = max_magnitude(a, to_float(v.v[e]));
          },
          Kokkos::Max<float>(amax));
      s = e4m3_scale(amax);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(m, chunks), [&](int l) {
        const Chunk v = in[l];
        ChunkCodes q;
        for (int e = 0; e < chunk_values / 2; ++e)
          q.pair[e] = e4m3_pair(to_float(v.v[2 * e]) / s, to_float(v.v[2 * e + 1]) / s);
        reinterpret_cast<ChunkCodes*>(to)[l] = q;
      });
    } else {
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(m, n),
          [&](int c, float& a) { a = max_magnitude(a, to_float(from[c])); },
          Kokkos::Max<float>(amax));
      s = e4m3_scale(amax);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(m, n),
                           [&](int c) { to[c] = float8_e4m3(to_float(from[c]) / s); });
    }
    Kokkos::single(Kokkos::PerThread(m), [&] { scales(p, g) = s; });
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
