// SPDX-License-Identifier: BSD-3-Clause
// The gate/up stage of the expert MLP: the fused gate/up kernel with its
// SwiGLU epilogue and the activation pass that finishes split-K gate/up
// products.
#ifndef KOKKOSMOE_EXPERTMLP_GATEUP_HPP
#define KOKKOSMOE_EXPERTMLP_GATEUP_HPP

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>
#include <KokkosMoE/KokkosMoE_Math.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_FlatIndex.hpp"
#include "KokkosMoE_ExpertMLP_MainLoop.hpp"
#include "KokkosMoE_Target.hpp"
#include "KokkosMoE_ColumnRun.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

KOKKOS_INLINE_FUNCTION float silu_times(float g, float u) {
  return g / (1.0f + target::exp_fp32(-g)) * u;
}
// The same for values rounded to 16 bits next (KokkosMoE_Target.hpp: errors of a
// few float ulp, far below bf16's or fp16's rounding).
KOKKOS_INLINE_FUNCTION float silu_times_rounded(float g, float u) {
  return target::divide(g, 1.0f + target::exp(-g)) * u;
}
// silu(g) u to be stored as Scalar.
template <class Scalar>
KOKKOS_INLINE_FUNCTION float silu_times_as(float g, float u) {
  return sizeof(Scalar) == 2 ? silu_times_rounded(g, u) : silu_times(g, u);
}
// By whole vectors where the target has them (host builds: the host
// fragments' vectors), else value by value.
template <class Scalar, int Width>
KOKKOS_INLINE_FUNCTION ColumnRun<Width> silu_times_as(const ColumnRun<Width>& g,
                                                      const ColumnRun<Width>& u) {
  ColumnRun<Width> h;
  if (target::silu_runs<Width>(g, u, h)) return h;
  for (int i = 0; i < Width; ++i) h.v[i] = silu_times_as<Scalar>(g.v[i], u.v[i]);
  return h;
}

// h[p] = silu(x[token(p)] gate[e]^T) * (x[token(p)] up[e]^T) for the rows p
// of a tile (sorted rows, or tile-major: see operand_row); the gate and up
// products exist only in scratch. Split
// over K (decode: few tiles), each part instead writes its gate and up
// products to rows s * A + p of `partial` ([g | u], 2F wide) and
// ActivationKernel finishes h. (Frag: the shape's fragment, or a kernel's
// that derives from this one with other operands: GateUpE4m3Kernel.)
template <class ExecutionSpace, class Scalar, TileSize Size,
          class Frag = Fragment<ExecutionSpace, Scalar, Size>>
struct GateUpKernel : ExpertTileKernel<ExecutionSpace, Scalar, Frag> {
  using base = ExpertTileKernel<ExecutionSpace, Scalar, Frag>;
  static constexpr TileSize tile_size = Size;
  using base::BK;
  using base::BM;
  using base::BN;
  using base::L;
  using base::S;
  using typename base::frag;
  using typename base::member;
  using typename base::tile;
  using memory_space = typename base::memory_space;

  using token = token_type_t<Scalar>;
  using scales = Kokkos::View<const float***, Kokkos::LayoutRight, memory_space>;
  Kokkos::View<const token**, Kokkos::LayoutRight, memory_space> x;       // [T, H]
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> gate;  // [E, F, H]
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> up;    // [E, F, H]
  scales gate_scale, up_scale;                                 // block-scaled Scalar only (Weights)
  typename base::panels_view gate_panels, up_panels;           // packing fragments only
  Kokkos::View<token**, Kokkos::LayoutRight, memory_space> h;  // [rows, F]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> partial;  // [splits * A, 2F]
  int assignments;                                                   // A = T * k

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(base::weight_buffers * 2 * BN) +
           2 * frag::accumulator_bytes() + tile_tokens_bytes() + base::staged_bytes(2 * BN) +
           base::scales_bytes(2);
  }

  // The token of each row of the tile, in scratch: the gathered rows of x
  // are found with one scratch read instead of a global read and a division.
  KOKKOS_INLINE_FUNCTION static int* tile_tokens(const member& m) {
    return static_cast<int*>(m.team_scratch(scratch_level<Frag>()).get_shmem(sizeof(int) * BM));
  }
  KOKKOS_INLINE_FUNCTION void fill_tile_tokens(int* tokens, const typename base::Work& w,
                                               const typename base::Loader& ld) const {
    for (int r = ld.rank; r < BM; r += ld.threads)
      tokens[r] = r < w.rows ? this->plan.order(w.first_row + r) / this->k : 0;
  }
  static std::size_t tile_tokens_bytes() { return sizeof(int) * BM + 16; }

  // The team's scratch and accumulators (see ExpertTileKernel::run). S
  // stages of each operand tile (see begin_step); stage b of the weights is
  // the gate tile then the up tile (ws rows 2b BN and (2b + 1) BN), next to
  // each other as the fragment may multiply them as one tile.
  struct Team {
    tile xs, ws;
    int* tokens;
    std::uint8_t* staged;  // staged weights, gate then up per stage (stages_weights)
    float* scales;         // the item's block scales of gate, then up (stages_weights)
  };
  struct Accumulators {
    typename frag::accumulator_type g, u;
  };
  KOKKOS_FORCEINLINE_FUNCTION Team team(const member& m) const {
    return Team{frag::operand(m, S * BM), frag::operand(m, base::weight_buffers * 2 * BN),
                tile_tokens(m), base::staged(m, 2 * BN), base::scales(m, 2)};
  }
  KOKKOS_FORCEINLINE_FUNCTION static Accumulators accumulators(const member& m) {
    return Accumulators{frag::accumulator(m), frag::accumulator(m)};
  }
  KOKKOS_FORCEINLINE_FUNCTION void prepare(const Team& t, const typename base::Work& w,
                                           const typename base::Loader& ld) const {
    if (!this->bulk_kernel()) fill_tile_tokens(t.tokens, w, ld);
    if constexpr (base::stages_weights) {
      base::load_scales(ld, t.scales,
                        WeightRows<Scalar>::of(gate, gate_scale, w.expert, w.first_col), w);
      base::load_scales(ld, t.scales + base::item_scales,
                        WeightRows<Scalar>::of(up, up_scale, w.expert, w.first_col), w);
    }
    this->acquire_maps(ld, gate_map, 2);
    this->acquire_maps(ld, gathered_map, 1);
  }
  // Row starts: x rows are gathered, weight rows are H apart.
  struct Sources {
    WeightRows<Scalar> gate, up;
    bool aligned;
  };
  // The weight rows (columns of h) of an item's tile: BN, fewer in the last.
  KOKKOS_INLINE_FUNCTION int tile_cols(const typename base::Work& w) const {
    const int F = int(gate.extent(1));
    return F - w.first_col < BN ? F - w.first_col : BN;
  }
  KOKKOS_FORCEINLINE_FUNCTION Sources sources(const typename base::Work& w) const {
    const int H = int(x.extent(1));
    Sources f;
    f.gate = base::rows_of(gate, gate_panels, gate_scale, w.expert, w.first_col);
    f.up = base::rows_of(up, up_panels, up_scale, w.expert, w.first_col);
    f.aligned = base::rows_aligned(x.data(), H) &&
                base::weight_loader::rows_aligned(f.gate.first, H) &&
                base::weight_loader::rows_aligned(f.up.first, H);
    return f;
  }
  KOKKOS_FORCEINLINE_FUNCTION void load_step(const Team& t, const Sources& from,
                                             const typename base::Work& w,
                                             const typename base::Loader& ld, int k0, int depth,
                                             int b, bool first_use, std::uint64_t* barrier) const {
    const int H = int(x.extent(1)), F = int(gate.extent(1));
    const int cols = tile_cols(w);
    const token* x0 = x.data();
    const bool aligned = from.aligned;
    const int* tokens = t.tokens;
    if constexpr (frag::producer_threads > 0) {
      // The rows of x already gathered, tile-major (GatherRowsKernel):
      // every operand tile is one tensor copy, partly filled ones too: one
      // instruction of one thread instead of the producers' 16-byte copies.
      if (this->bulk(barrier)) {
        if (ld.rank == 0) {
          const int row = w.expert * F + w.first_col;
          frag::expect_bytes(barrier, int((BM + 2 * BN) * BK * sizeof(Scalar)));
          frag::bulk_load(base::stage(t.xs, b, BM), this->map(gathered_map), this->operand_row(w),
                          k0, barrier);
          frag::bulk_load(base::stage(t.ws, 2 * b, BN), this->map(gate_map), row, k0, barrier);
          frag::bulk_load(base::stage(t.ws, 2 * b + 1, BN), this->map(up_map), row, k0, barrier);
        }
        return;
      }
    }
    base::template load_tile<BM>(
        ld, base::stage(t.xs, b, BM), w.rows, depth,
        [&](int r) { return x0 + std::int64_t(tokens[r]) * H + k0; }, aligned,
        base::zero_token_rows(first_use));
    const int wb = base::weight_buffer(b);
    base::template load_weights<BN>(ld, base::stage(t.ws, 2 * wb, BN),
                                    base::staged_stage(t.staged, 2 * b, BN), from.gate, cols, k0,
                                    depth, aligned, first_use);
    base::template load_weights<BN>(ld, base::stage(t.ws, 2 * wb + 1, BN),
                                    base::staged_stage(t.staged, 2 * b + 1, BN), from.up, cols, k0,
                                    depth, aligned, first_use);
  }
  // Staged weights of the step at k0 into stage b (base::stages_weights).
  KOKKOS_FORCEINLINE_FUNCTION void convert_step(const Team& t, const Sources& from,
                                                const typename base::Work& w,
                                                const typename base::Loader& ld, int k0, int depth,
                                                int b) const {
    const int cols = tile_cols(w);
    const int wb = base::weight_buffer(b);
    base::template convert_weights<BN>(ld, base::stage(t.ws, 2 * wb, BN),
                                       base::staged_stage(t.staged, 2 * b, BN), t.scales, from.gate,
                                       w, cols, k0, depth, from.aligned);
    base::template convert_weights<BN>(ld, base::stage(t.ws, 2 * wb + 1, BN),
                                       base::staged_stage(t.staged, 2 * b + 1, BN),
                                       t.scales + base::item_scales, from.up, w, cols, k0, depth,
                                       from.aligned);
  }
  KOKKOS_FORCEINLINE_FUNCTION void multiply(const member& m, const Team& t, const Sources& from,
                                            const typename base::Work& w,
                                            const typename base::Step& step,
                                            Accumulators& a) const {
    const tile xs = base::stage(t.xs, step.buffer, BM);
    if constexpr (base::weights_in_place) {
      const int cols = tile_cols(w);
      frag::mma_nt(m, xs, base::in_place(from.gate, step, w, cols), a.g,
                   base::in_place(from.up, step, w, cols), a.u);
    } else {
      const int wb = base::weight_buffer(step.buffer);
      frag::mma_nt(m, xs, base::stage(t.ws, 2 * wb, BN), a.g, base::stage(t.ws, 2 * wb + 1, BN),
                   a.u);
    }
  }
  KOKKOS_FORCEINLINE_FUNCTION static void zero(const member& m, Accumulators& a) {
    frag::zero(m, a.g);
    frag::zero(m, a.u);
  }
  KOKKOS_FORCEINLINE_FUNCTION static void finish(const member& m, Accumulators& a) {
    frag::finish(m, a.g, a.u);
  }

  KOKKOS_FORCEINLINE_FUNCTION void store(const member& m, Accumulators& a,
                                         const typename base::Work& w) const {
    const int F = int(gate.extent(1));
    const int cols = tile_cols(w);
    if (this->splits > 1) {
      const std::int64_t row0 = std::int64_t(w.split) * assignments + w.first_row;
      frag::template store<1>(
          m,
          [&](int r, int n, const auto& g, const auto& u) {
            if (r < w.rows && n < cols) {
              store_column_run(&partial(row0 + r, w.first_col + n), g, cols - n);
              store_column_run(&partial(row0 + r, F + w.first_col + n), u, cols - n);
            }
          },
          a.g, a.u);
      return;
    }
    // Tile-major h stores the unused rows too where they are zero (their x
    // rows are; see QuantizeGroupsKernel), else the rows in use.
    const int row0 = this->operand_row(w);
    const int rows = this->tile_major() && zeroes_padding_rows(Size) ? BM : w.rows;
    frag::template store<base::max_run>(
        m,
        [&](int r, int n, const auto& g, const auto& u) {
          if (r < rows && n < cols)
            store_column_run(&h(row0 + r, w.first_col + n), silu_times_as<token>(g, u), cols - n);
        },
        a.g, a.u);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    this->run(m, *this, int(x.extent(1)));
  }
};

// h[p][f] from the K parts of a split gate/up (see GateUpKernel), summed in
// a fixed order.
template <class ExecutionSpace, class Scalar>
struct ActivationKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> partial;  // [splits * A, 2F]
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> h;             // [A, F]
  std::int64_t F, assignments;
  int splits;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t p, f;
    row_and_column(i, F, p, f);
    float g = 0, u = 0;
    for (int s = 0; s < splits; ++s) {
      g += partial(s * assignments + p, f);
      u += partial(s * assignments + p, F + f);
    }
    h(p, f) = from_float<Scalar>(silu_times_as<Scalar>(g, u));
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
