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

// What both kernels add: the quantised activations' scales and the tensor
// copy of an activation tile (rows of the tile-major codes, 64 per box).
template <class Base>
struct E4m3Operands : Base {
  using typename Base::frag;
  using typename Base::tile;
  using typename Base::Work;
  static constexpr int BM = Base::BM, BK = Base::BK;
  static constexpr int activation_box = 64;
  static_assert(BM % activation_box == 0, "whole boxes of activation rows");
  static_assert(Base::multiplies_codes, "a fragment that multiplies e4m3 codes");

  // The activations' scales: [tile-major rows, ceil(K / 128)].
  Kokkos::View<const float**, Kokkos::LayoutRight, typename Base::memory_space> activation_scales;

  KOKKOS_FORCEINLINE_FUNCTION void load_activations(const tile& t, int map, const Work& w, int k0,
                                                    std::uint64_t* barrier) const {
    for (int r = 0; r < BM; r += activation_box)
      frag::bulk_load(tile(t.data() + std::size_t(r) * BK, activation_box, BK), this->map(map),
                      this->operand_row(w) + r, k0, barrier);
  }
  // The step's scales of the tile's rows and of its weight tiles.
  template <class Scales>
  KOKKOS_FORCEINLINE_FUNCTION BlockScales step_scales(const Work& w, int k0, const Scales& s0,
                                                      const Scales& s1) const {
    const int kb = k0 / weight_block, nb = w.first_col / weight_block;
    BlockScales s;
    s.rows = &activation_scales(this->operand_row(w), kb);
    s.stride = std::int64_t(activation_scales.extent(1));
    s.weights[0] = s0(w.expert, nb, kb);
    s.weights[1] = s1(w.expert, nb, kb);
    return s;
  }
  // Only tensor copies fill e4m3 operand tiles (the layer takes this path
  // where its maps exist). A trap, not Kokkos::abort: a call in the kernel
  // would make ptxas serialise every wgmma (C7510).
  KOKKOS_INLINE_FUNCTION static void no_bulk_copies() {
#ifdef __CUDA_ARCH__
    __trap();
#endif
  }
};

// h = silu(x gate^T) (x up^T) from x's quantised rows (`activations`'s codes
// at gathered_map) and e4m3 gate and up weights; one K part (never split).
template <class ExecutionSpace, TileSize Size>
struct GateUpE4m3Kernel
    : E4m3Operands<GateUpKernel<ExecutionSpace, float8_e4m3, Size,
                                typename E4m3Fragment<ExecutionSpace, Size>::gate_up>> {
  using base = E4m3Operands<GateUpKernel<ExecutionSpace, float8_e4m3, Size,
                                         typename E4m3Fragment<ExecutionSpace, Size>::gate_up>>;
  using typename base::Accumulators;
  using typename base::frag;
  using typename base::member;
  using typename base::tile;
  using typename base::Work;
  using Loader = typename base::Loader;
  using Step = typename base::Step;
  static constexpr int BM = base::BM, BN = base::BN, BK = base::BK, S = base::S;
  int depth = 0;  // H

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(S * 2 * BN);
  }
  struct Team {
    tile xs, ws;
  };
  struct Sources {};
  KOKKOS_FORCEINLINE_FUNCTION Team team(const member& m) const {
    return Team{frag::operand(m, S * BM), frag::operand(m, S * 2 * BN)};
  }
  KOKKOS_FORCEINLINE_FUNCTION void prepare(const Team&, const Work&, const Loader& ld) const {
    this->acquire_maps(ld, gate_map, 2);
    this->acquire_maps(ld, gathered_map, 1);
  }
  KOKKOS_FORCEINLINE_FUNCTION Sources sources(const Work&) const { return {}; }
  KOKKOS_FORCEINLINE_FUNCTION void load_step(const Team& t, const Sources&, const Work& w,
                                             const Loader& ld, int k0, int, int b, bool,
                                             std::uint64_t* barrier) const {
    if (!this->bulk(barrier)) return base::no_bulk_copies();
    if (ld.rank != 0) return;
    const int row = w.expert * int(this->gate.extent(1)) + w.first_col;
    frag::expect_bytes(barrier, (BM + 2 * BN) * BK);
    this->load_activations(base::stage(t.xs, b, BM), gathered_map, w, k0, barrier);
    frag::bulk_load(base::stage(t.ws, 2 * b, BN), this->map(gate_map), row, k0, barrier);
    frag::bulk_load(base::stage(t.ws, 2 * b + 1, BN), this->map(up_map), row, k0, barrier);
  }
  KOKKOS_FORCEINLINE_FUNCTION void multiply(const member& m, const Team& t, const Sources&,
                                            const Work& w, const Step& step,
                                            Accumulators& a) const {
    frag::mma_nt(m, base::stage(t.xs, step.buffer, BM), base::stage(t.ws, 2 * step.buffer, BN), a.g,
                 base::stage(t.ws, 2 * step.buffer + 1, BN), a.u,
                 this->step_scales(w, step.k0, this->gate_scale, this->up_scale));
  }
  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const { this->run(m, *this, depth); }
};

// y = h down^T per K part from h's quantised rows (`activations`'s codes at
// activations_map) and e4m3 down weights.
template <class ExecutionSpace, TileSize Size>
struct DownE4m3Kernel
    : E4m3Operands<DownKernel<ExecutionSpace, float8_e4m3, Size,
                              typename E4m3Fragment<ExecutionSpace, Size>::down>> {
  using base = E4m3Operands<DownKernel<ExecutionSpace, float8_e4m3, Size,
                                       typename E4m3Fragment<ExecutionSpace, Size>::down>>;
  using typename base::Accumulators;
  using typename base::frag;
  using typename base::member;
  using typename base::tile;
  using typename base::Work;
  using Loader = typename base::Loader;
  using Step = typename base::Step;
  static constexpr int BM = base::BM, BN = base::BN, BK = base::BK, S = base::S;
  int depth = 0;  // F

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(S * BN);
  }
  struct Team {
    tile hs, ds;
  };
  struct Sources {};
  KOKKOS_FORCEINLINE_FUNCTION Team team(const member& m) const {
    return Team{frag::operand(m, S * BM), frag::operand(m, S * BN)};
  }
  KOKKOS_FORCEINLINE_FUNCTION void prepare(const Team&, const Work&, const Loader& ld) const {
    this->acquire_maps(ld, down_map, 2);
  }
  KOKKOS_FORCEINLINE_FUNCTION Sources sources(const Work&) const { return {}; }
  KOKKOS_FORCEINLINE_FUNCTION void load_step(const Team& t, const Sources&, const Work& w,
                                             const Loader& ld, int k0, int, int b, bool,
                                             std::uint64_t* barrier) const {
    if (!this->bulk(barrier)) return base::no_bulk_copies();
    if (ld.rank != 0) return;
    frag::expect_bytes(barrier, (BM + BN) * BK);
    this->load_activations(base::stage(t.hs, b, BM), activations_map, w, k0, barrier);
    frag::bulk_load(base::stage(t.ds, b, BN), this->map(down_map),
                    w.expert * int(this->down.extent(1)) + w.first_col, k0, barrier);
  }
  KOKKOS_FORCEINLINE_FUNCTION void multiply(const member& m, const Team& t, const Sources&,
                                            const Work& w, const Step& step,
                                            Accumulators& a) const {
    frag::mma_nt(m, base::stage(t.hs, step.buffer, BM), base::stage(t.ds, step.buffer, BN), a.acc,
                 this->step_scales(w, step.k0, this->down_scale, this->down_scale));
  }
  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const { this->run(m, *this, depth); }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
