// SPDX-License-Identifier: BSD-3-Clause
// The expert kernels for fragments that multiply e4m3 codes
// (multiplies_block_scaled, E4m3Fragment): gate/up and down as
// GateUpKernel and DownKernel (their schedule, epilogues and stores), with
// operand tiles of codes that come by tensor copies only (the weights as
// stored; x's rows and h quantised and tile-major, KokkosMoE_ActivationGroups.hpp)
// and each K step multiplied with its scales.
#ifndef KOKKOSMOE_EXPERTMLP_E4M3_HPP
#define KOKKOSMOE_EXPERTMLP_E4M3_HPP

#include "KokkosMoE_ExpertMLP_DownCombine.hpp"
#include "KokkosMoE_ExpertMLP_GateUp.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// What both kernels share, on top of theirs (Base), for the kernel Derived:
// the quantised activations' scales, K (depth), no row sources (every copy
// is a tensor copy), and a K step's loads: the activation tile (rows of the
// tile-major codes at ActivationMap, by boxes of rows), its rows' scales (one bulk
// copy: read from global memory by each multiplying thread, their latency
// was exposed at every step) and Weights weight tiles (the maps from
// FirstWeightMap on, 64 rows per box), one after the other in scratch, from
// Derived::weight_row(w).
template <class Base, class Derived, int Weights, int ActivationMap, int FirstWeightMap>
struct E4m3Operands : Base {
  using typename Base::frag;
  using typename Base::member;
  using typename Base::tile;
  using typename Base::Work;
  using Loader = typename Base::Loader;
  static constexpr int BM = Base::BM, BN = Base::BN, BK = Base::BK, S = Base::S;
  // Rows of a tensor copy's box: a tile is loaded by several, so that every
  // shape's weight tiles come from one set of maps. The shapes that leave
  // their padding rows alone load an activation tile by the boxes of 16
  // rows that hold its rows (few_row_boxes; at decode a few of its 64: the
  // whole tile's codes, rows of no assignment, made the e4m3 kernels read
  // 5-7 % more from memory than the weights at DeepSeek-V3 32 tokens on an
  // H200, where bf16 read the weights' bytes; past those boxes a stage
  // holds an earlier step's codes, whose rows' products are not stored).
  // Large tiles load all their rows by boxes of 64 (by boxes of 16, gate/up
  // took 1.05-1.07x the time at Mixtral-8x7B 2048 and DeepSeek-V3 4096
  // tokens on an H200).
  static constexpr bool few_row_boxes = !zeroes_padding_rows(Base::tile_size);
  static constexpr int activation_box = few_row_boxes ? 16 : 64, weight_box = 64;
  static_assert(BM % activation_box == 0 && BN % weight_box == 0, "whole boxes of tile rows");
  KOKKOS_FORCEINLINE_FUNCTION static int activation_boxes(const Work& w) {
    return few_row_boxes ? (w.rows + activation_box - 1) / activation_box : BM / activation_box;
  }
  static_assert(Base::multiplies_codes, "a fragment that multiplies e4m3 codes");

  // The activations' scales: [ceil(K / 128), tile-major rows], so that a K
  // step's are one run of the tile's rows.
  Kokkos::View<const float**, Kokkos::LayoutRight, typename Base::memory_space> activation_scales;
  int depth = 0;  // K: H for gate/up, F for down

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(S * Weights * BN) + row_scale_bytes() +
           16;
  }
  KOKKOS_INLINE_FUNCTION static constexpr std::size_t row_scale_bytes() {
    return std::size_t(S) * BM * sizeof(float);
  }
  static_assert(BM * sizeof(float) % 16 == 0, "bulk copies of whole 16-byte chunks of scales");
  struct Team {
    tile xs, ws;        // S stages of activations; of Weights weight tiles each
    float* row_scales;  // S stages of the activation rows' scales
  };
  struct Sources {};
  KOKKOS_FORCEINLINE_FUNCTION Team team(const member& m) const {
    const tile xs = frag::operand(m, S * BM), ws = frag::operand(m, S * Weights * BN);
    return Team{xs, ws,
                static_cast<float*>(m.team_scratch(0).get_shmem_aligned(row_scale_bytes(), 16))};
  }
  // The shapes below large acquire their maps once per team: before each
  // item (a dozen to a few dozen K steps at decode), the fp8 layer took
  // 1.01-1.03x the time at 8-512 tokens on an H100 (down at DeepSeek-V3, 8
  // tokens: 1.06x). Large tiles keep the acquire before each item: once per
  // team, the layer took 1.02x the time at 2048-4096 tokens.
  static constexpr bool acquires_maps_once = few_row_boxes;
  KOKKOS_FORCEINLINE_FUNCTION void prepare(const Team&, const Work&, const Loader& ld) const {
    if constexpr (acquires_maps_once) return;
    this->acquire_maps(ld, FirstWeightMap, Weights);
    this->acquire_maps(ld, ActivationMap, 1);
  }
  KOKKOS_FORCEINLINE_FUNCTION Sources sources(const Work&) const { return {}; }
  KOKKOS_FORCEINLINE_FUNCTION void load_step(const Team& t, const Sources&, const Work& w,
                                             const Loader& ld, int k0, int, int b, bool,
                                             std::uint64_t* barrier) const {
    if (!this->bulk(barrier)) return no_bulk_copies();
    if (ld.rank != 0) return;
    const int boxes = activation_boxes(w);
    frag::expect_bytes(barrier,
                       (boxes * activation_box + Weights * BN) * BK + BM * int(sizeof(float)));
    load_boxes<activation_box>(Base::stage(t.xs, b, BM), ActivationMap, this->operand_row(w), k0,
                               boxes, barrier);
    frag::bulk_copy(t.row_scales + b * BM, &activation_scales(k0 / BK, this->operand_row(w)),
                    BM * int(sizeof(float)), barrier);
    const int row = static_cast<const Derived&>(*this).weight_row(w);
    for (int i = 0; i < Weights; ++i)
      load_boxes<weight_box>(weights(t, b, i), FirstWeightMap + i, row, k0, BN / weight_box,
                             barrier);
  }
  // The first boxes x Box rows of tile `to` from map `map`'s rows from
  // `row` on, by boxes of Box rows.
  template <int Box>
  KOKKOS_FORCEINLINE_FUNCTION void load_boxes(const tile& to, int map, int row, int k0, int boxes,
                                              std::uint64_t* barrier) const {
    for (int i = 0; i < boxes; ++i)
      frag::bulk_load(tile(to.data() + std::size_t(i) * Box * BK, Box, BK), this->map(map),
                      row + i * Box, k0, barrier);
  }
  // Weight tile i of stage b.
  KOKKOS_FORCEINLINE_FUNCTION static tile weights(const Team& t, int b, int i) {
    return Base::stage(t.ws, Weights * b + i, BN);
  }
  // A K step: the activation tile times the weight tiles (gate and up, or
  // down), with the scales of the step (Derived::weight_scales(i): tile i's).
  KOKKOS_FORCEINLINE_FUNCTION void multiply(const member& m, const Team& t, const Sources&,
                                            const Work& w, const typename Base::Step& step,
                                            typename Base::Accumulators& a) const {
    const Derived& d = static_cast<const Derived&>(*this);
    const tile xs = Base::stage(t.xs, step.buffer, BM);
    const BlockScales s = step_scales(t.row_scales + step.buffer * BM, w, step.k0,
                                      d.weight_scales(0), d.weight_scales(Weights - 1));
    if constexpr (Weights == 2)
      frag::mma_nt(m, xs, weights(t, step.buffer, 0), a.g, weights(t, step.buffer, 1), a.u, s);
    else frag::mma_nt(m, xs, weights(t, step.buffer, 0), a.acc, s);
  }
  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    this->run(m, static_cast<const Derived&>(*this), depth);
  }

  // The step's scales of the tile's rows (in its stage) and of its weight
  // tiles.
  template <class Scales>
  KOKKOS_FORCEINLINE_FUNCTION BlockScales step_scales(const float* rows, const Work& w, int k0,
                                                      const Scales& s0, const Scales& s1) const {
    const int kb = k0 / weight_block, nb = w.first_col / weight_block;
    BlockScales s;
    s.rows = rows;
    s.weights[0] = s0(w.expert, nb, kb);
    s.weights[1] = s1(w.expert, nb, kb);
    return s;
  }
  // Only tensor copies fill e4m3 operand tiles (the layer takes this path
  // where its maps exist).
  KOKKOS_INLINE_FUNCTION static void no_bulk_copies() { target::trap(); }
};

// h = silu(x gate^T) (x up^T) from x's quantised rows (the codes at
// gathered_map) and e4m3 gate and up weights; one K part (never split).
template <class ExecutionSpace, TileSize Size>
struct GateUpE4m3Kernel
    : E4m3Operands<GateUpKernel<ExecutionSpace, float8_e4m3, Size,
                                typename E4m3Fragment<ExecutionSpace, Size>::gate_up>,
                   GateUpE4m3Kernel<ExecutionSpace, Size>, 2, gathered_map, gate_map> {
  using base = E4m3Operands<GateUpKernel<ExecutionSpace, float8_e4m3, Size,
                                         typename E4m3Fragment<ExecutionSpace, Size>::gate_up>,
                            GateUpE4m3Kernel, 2, gathered_map, gate_map>;

  KOKKOS_FORCEINLINE_FUNCTION int weight_row(const typename base::Work& w) const {
    return w.expert * int(this->gate.extent(1)) + w.first_col;
  }
  KOKKOS_FORCEINLINE_FUNCTION typename base::scales weight_scales(int i) const {
    return i == 0 ? this->gate_scale : this->up_scale;
  }
};

// y = h down^T per K part from h's quantised rows (the codes at
// activations_map) and e4m3 down weights.
template <class ExecutionSpace, TileSize Size>
struct DownE4m3Kernel
    : E4m3Operands<DownKernel<ExecutionSpace, float8_e4m3, Size,
                              typename E4m3Fragment<ExecutionSpace, Size>::down>,
                   DownE4m3Kernel<ExecutionSpace, Size>, 1, activations_map, down_map> {
  using base = E4m3Operands<DownKernel<ExecutionSpace, float8_e4m3, Size,
                                       typename E4m3Fragment<ExecutionSpace, Size>::down>,
                            DownE4m3Kernel, 1, activations_map, down_map>;

  KOKKOS_FORCEINLINE_FUNCTION int weight_row(const typename base::Work& w) const {
    return w.expert * int(this->down.extent(1)) + w.first_col;
  }
  KOKKOS_FORCEINLINE_FUNCTION decltype(base::down_scale) weight_scales(int) const {
    return this->down_scale;
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
