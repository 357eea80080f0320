// SPDX-License-Identifier: BSD-3-Clause
// The down stage of the expert MLP: the down kernel (each sorted row's
// expert output, unweighted, one K part per split) and the weighted combine
// of each token's expert outputs.
#ifndef KOKKOSMOE_EXPERTMLP_DOWNCOMBINE_HPP
#define KOKKOSMOE_EXPERTMLP_DOWNCOMBINE_HPP

#include "KokkosMoE_FlatIndex.hpp"
#include "KokkosMoE_ExpertMLP_MainLoop.hpp"
#include "KokkosMoE_ColumnRun.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// y[s * A + p] = h[p] down[e]^T over the K part s, for the sorted row p (A
// assignments; one part unless split; h's row of p is tile-major where
// operand_row says so). Rows of y in sorted order and unweighted
// (CombineKernel weighs them): a tile's stores are whole rows, with no
// lookup of each row's assignment and weight, so they fill whole 32-byte
// sectors. (Frag as GateUpKernel's.)
template <class ExecutionSpace, class Scalar, TileSize Size,
          class Frag = DownFragment<ExecutionSpace, Scalar, Size>>
struct DownKernel : ExpertTileKernel<ExecutionSpace, Scalar, Frag> {
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
  Kokkos::View<const token**, Kokkos::LayoutRight, memory_space> h;            // [rows, F]
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> down;       // [E, H, F]
  Kokkos::View<const float***, Kokkos::LayoutRight, memory_space> down_scale;  // block-scaled
  typename base::panels_view down_panels;                      // packing fragments only
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> y;  // [splits * T*k, H]
  int assignments;                                             // A = T * k

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(base::weight_buffers * BN) +
           frag::accumulator_bytes() + base::staged_bytes(BN) + base::scales_bytes(1);
  }

  struct Team {
    tile hs, ds;
    std::uint8_t* staged;  // staged weights (base::stages_weights)
    float* scales;         // the item's block scales (base::stages_weights)
  };
  struct Accumulators {
    typename frag::accumulator_type acc;
  };
  KOKKOS_FORCEINLINE_FUNCTION Team team(const member& m) const {
    return Team{frag::operand(m, S * BM), frag::operand(m, base::weight_buffers * BN),
                base::staged(m, BN), base::scales(m, 1)};
  }
  KOKKOS_FORCEINLINE_FUNCTION static Accumulators accumulators(const member& m) {
    return Accumulators{frag::accumulator(m)};
  }
  KOKKOS_FORCEINLINE_FUNCTION void prepare(const Team& t, const typename base::Work& w,
                                           const typename base::Loader& ld) const {
    this->acquire_maps(ld, down_map, 2);
    if constexpr (base::stages_weights)
      base::load_scales(ld, t.scales,
                        WeightRows<Scalar>::of(down, down_scale, w.expert, w.first_col), w);
  }
  // Row starts: rows of h and of down are F apart.
  struct Sources {
    const token* h0;
    WeightRows<Scalar> down;
    int F, H, cols;
    bool aligned;
  };
  KOKKOS_FORCEINLINE_FUNCTION Sources sources(const typename base::Work& w) const {
    Sources f;
    f.F = int(h.extent(1)), f.H = int(down.extent(1));
    f.cols = f.H - w.first_col < BN ? f.H - w.first_col : BN;
    f.h0 = &h(w.first_row, 0);
    f.down = base::rows_of(down, down_panels, down_scale, w.expert, w.first_col);
    f.aligned = base::rows_aligned(f.h0, f.F) &&
                base::weight_loader::rows_aligned(f.down.first, f.F);
    return f;
  }
  KOKKOS_FORCEINLINE_FUNCTION void load_step(const Team& t, const Sources& from,
                                             const typename base::Work& w,
                                             const typename base::Loader& ld, int k0, int depth,
                                             int b, bool first_use, std::uint64_t* barrier) const {
    const int F = from.F, H = from.H, cols = from.cols;
    const token* h0 = from.h0;
    const bool aligned = from.aligned;
    if constexpr (frag::producer_threads > 0) {
      if (this->bulk(barrier)) {
        if (ld.rank == 0) {
          frag::expect_bytes(barrier, int((BM + BN) * BK * sizeof(Scalar)));
          frag::bulk_load(base::stage(t.hs, b, BM), this->map(activations_map),
                          this->operand_row(w), k0, barrier);
          frag::bulk_load(base::stage(t.ds, b, BN), this->map(down_map), w.expert * H + w.first_col,
                          k0, barrier);
        }
        return;
      }
    }
    base::template load_tile<BM>(
        ld, base::stage(t.hs, b, BM), w.rows, depth,
        [&](int r) { return h0 + std::int64_t(r) * F + k0; }, aligned,
        base::zero_token_rows(first_use));
    base::template load_weights<BN>(ld, base::stage(t.ds, base::weight_buffer(b), BN),
                                    base::staged_stage(t.staged, b, BN), from.down, cols, k0, depth,
                                    aligned, first_use);
  }
  // Staged weights of the step at k0 into stage b (base::stages_weights).
  KOKKOS_FORCEINLINE_FUNCTION void convert_step(const Team& t, const Sources& from,
                                                const typename base::Work& w,
                                                const typename base::Loader& ld, int k0, int depth,
                                                int b) const {
    base::template convert_weights<BN>(ld, base::stage(t.ds, base::weight_buffer(b), BN),
                                       base::staged_stage(t.staged, b, BN), t.scales, from.down, w,
                                       from.cols, k0, depth, from.aligned);
  }
  KOKKOS_FORCEINLINE_FUNCTION static void multiply(const member& m, const Team& t,
                                                   const Sources& from,
                                                   const typename base::Work& w,
                                                   const typename base::Step& step,
                                                   Accumulators& a) {
    const tile hs = base::stage(t.hs, step.buffer, BM);
    if constexpr (base::weights_in_place)
      frag::mma_nt(m, hs, base::in_place(from.down, step, w, from.cols), a.acc);
    else frag::mma_nt(m, hs, base::stage(t.ds, base::weight_buffer(step.buffer), BN), a.acc);
  }
  KOKKOS_FORCEINLINE_FUNCTION static void zero(const member& m, Accumulators& a) {
    frag::zero(m, a.acc);
  }
  KOKKOS_FORCEINLINE_FUNCTION static void finish(const member& m, Accumulators& a) {
    frag::finish(m, a.acc);
  }

  KOKKOS_FORCEINLINE_FUNCTION void store(const member& m, Accumulators& out,
                                         const typename base::Work& w) const {
    const int H = int(down.extent(1));
    const int cols = H - w.first_col < BN ? H - w.first_col : BN;
    float* const y0 = &y(std::int64_t(w.split) * assignments + w.first_row, w.first_col);
    frag::template store<base::max_run>(
        m,
        [&](int r, int n, const auto& v) {
          if (r >= w.rows || n >= cols) return;
          float* const to = y0 + std::int64_t(r) * H + n;
          if constexpr (streams_outputs<frag>) stream_column_run(to, v, cols - n);
          else store_column_run(to, v, cols - n);
        },
        out.acc);
    if constexpr (streams_outputs<frag>) target::stream_fence();
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    this->run(m, *this, int(h.extent(1)));
  }
};

// out[t] = sum over the k assignments a of token t of w[a] times the expert
// output of a (the sum of its K parts, at a's sorted row), in a fixed order
// so the result does not depend on scheduling. Item i: Width consecutive
// columns of one token (target::combine_columns: on GPUs 4, a 16-byte load
// of each row of y; on the host a vector): 1 / Width of the items, each
// with its division (see row_and_column), and wider loads. Wider than 4
// (host vectors), one K part: the stages take split-K batches a column an
// item (applies).
template <class ExecutionSpace, class Scalar, int Width>
struct CombineKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> y;        // [splits * T*k, H]
  Kokkos::View<const int*, memory_space> position;                         // [T*k], -1: invalid
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> weights;  // [T, k]
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> out;           // [T, H]
  int k;
  std::int64_t H;
  int splits;
  std::int64_t assignments;

  // Width > 1 needs H a multiple of Width and y aligned to Width floats;
  // wider than 4, one K part (split-K batches combine a column an item).
  static bool applies(const float* y, std::int64_t H, int splits) {
    return Width == 1 || ((Width <= 4 || splits == 1) && H % Width == 0 &&
                          reinterpret_cast<std::uintptr_t>(y) % sizeof(Values) == 0);
  }
  static std::int64_t items(std::int64_t tokens, std::int64_t H) { return tokens * (H / Width); }

  struct alignas(Width * sizeof(float)) Values {
    float v[Width];
  };
  KOKKOS_FORCEINLINE_FUNCTION const Values& row(std::int64_t p, std::int64_t n) const {
    return *reinterpret_cast<const Values*>(&y(p, n));
  }

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t t, n;
    row_and_column(i, H / Width, t, n);
    n *= Width;
    ColumnRun<Width> s{};
    for (int j = 0; j < k; ++j) {
      const std::int64_t p = position(t * k + j);
      if (p < 0) continue;
      const float w = weights(t, j);
      if constexpr (Width > 4) {
        // A host vector (target::combine_columns), one K part (applies),
        // read in place: from a copy of the run (Values), GCC summed it
        // one column at a time (4 % of a prefill forward).
        const Values& v = row(p, n);
        for (int e = 0; e < Width; ++e) s.v[e] += w * v.v[e];
      } else {
        Values v = row(p, n);  // four: one 16-byte load on GPUs
        for (int part = 1; part < splits; ++part) {
          const Values more = row(part * assignments + p, n);
          for (int e = 0; e < Width; ++e) v.v[e] += more.v[e];
        }
        for (int e = 0; e < Width; ++e) s.v[e] += w * v.v[e];
      }
    }
    store_column_run(&out(t, n), s, Width);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
