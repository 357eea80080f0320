// SPDX-License-Identifier: BSD-3-Clause
// What both expert kernels share: the tile a team owns (the schedule), its
// operands' loads and tensor maps, and the K main loop that sweeps K
// through scratch tiles with the backend fragment, either every thread
// loading and multiplying or, warp-specialised, producer threads loading
// for the multipliers through the fragment's stage pipeline.
#ifndef KOKKOSMOE_EXPERTMLP_MAINLOOP_HPP
#define KOKKOSMOE_EXPERTMLP_MAINLOOP_HPP

#include "KokkosMoE_ExpertMLP_Operands.hpp"
#include "KokkosMoE_ExpertMLP_Schedule.hpp"
#include "KokkosMoE_ExpertMLP_TensorMaps.hpp"
#include "KokkosMoE_Fragment.hpp"
#include "KokkosMoE_WeightPanels.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// A kernel derives from this and supplies its own parts (see run).
// Scalar is the weights' storage type; x, h and the outputs are
// token_type_t<Scalar> (OperandLoader's, as inherited; weight tiles load
// through weight_loader).
template <class ExecutionSpace, class Scalar, class Frag>
struct ExpertTileKernel : ExpertTileSchedule<ExecutionSpace, Frag>,
                          ExpertTileMaps<Frag>,
                          OperandLoader<token_type_t<Scalar>, Frag> {
  using schedule = ExpertTileSchedule<ExecutionSpace, Frag>;
  using frag = Frag;
  using tile = typename frag::tile;
  using memory_space = typename ExecutionSpace::memory_space;
  using policy = typename schedule::policy;
  using member = typename policy::member_type;
  static constexpr int BM = frag::tile_m, BN = frag::tile_n, BK = frag::tile_k;
  // The widest run of output columns the kernels' stores take at once
  // (frag::store hands runs as wide as its layout allows, up to this).
  static constexpr int max_run = 16;
  using token = token_type_t<Scalar>;
  using weight_loader = OperandLoader<Scalar, Frag>;
  // The values the operand tiles take: tokens, or where the fragment
  // multiplies block-scaled codes, the codes (activations come quantised).
  static constexpr bool multiplies_codes = multiplies_block_scaled<Frag>;
  using operand_source = std::conditional_t<multiplies_codes, Scalar, token>;
  static_assert(check_fragment<Frag, operand_source, member>(),
                "the expert kernels need a matrix fragment: KokkosMoE_FragmentContract.hpp");

  using typename schedule::Work;
  using typename OperandLoader<token, Frag>::Loader;
  using schedule::work;
  using ExpertTileMaps<Frag>::bulk_kernel;

  // The K loop runs S = frag::stages buffers deep, one team barrier per
  // step: iteration s waits for the copies of step c = s - L, passes the
  // barrier, starts the loads of step s into buffer s % S and multiplies step
  // c, L = S - 1 - F, F the multiplies the fragment leaves in flight (wgmma).
  // Every iteration commits one copy group (empty past the last step), so
  // waiting until at most L - 1 groups are pending means step c has landed,
  // and after the barrier every thread's part of it has. Buffer s % S held
  // step c - 1 - F, which every warp had finished multiplying before this
  // barrier (F = 1: its wait in the multiply of step c - 1). (The loads are
  // each kernel's force-inlined load_step rather than a lambda: a lambda
  // called from two places is not inlined and its captures go to local
  // memory.)
  static constexpr int S = frag::stages;
  static constexpr int F = frag::mma_in_flight;
  static constexpr int L = S - 1 - F;
  // L = 0 (one stage): load a step, then multiply it; for one-thread teams
  // only, whose barrier after the load is the thread's own order.
  static_assert(L >= 1 || (L == 0 && frag::team_threads == 1),
                "a stage to load while another multiplies");

  // Stage b of an S-stage operand tile: rows [b * rows, (b + 1) * rows).
  // (Made from a pointer: choosing between tile objects at run time would
  // put them in local memory.)
  KOKKOS_INLINE_FUNCTION static tile stage(const tile& t, int b, int rows) {
    return tile(t.data() + std::size_t(b) * rows * frag::operand_stride, rows,
                frag::operand_stride);
  }

  // Whether block-scaled weights go through staging tiles (see
  // OperandLoader::load_staged): where the fragment asks for it (its copies
  // asynchronous, room in scratch) and loads run ahead of the multiplies.
  static constexpr bool stages_weights = is_block_scaled<Scalar>::value &&
                                         stages_block_scaled<Frag> && L >= 1;
  // Whether the fragment multiplies the weights where they lie in memory
  // (InPlaceWeights) instead of from operand tiles.
  static constexpr bool weights_in_place = reads_weights_in_place<Frag, Scalar>;
  // Where the fragment packs the weights (panel_layout), the kernels read
  // them from the layer's panels (`panels_view`; elsewhere an empty field).
  static constexpr PanelLayout panels = panel_layout_of<Frag, Scalar>();
  struct NoPanels {};
  using panels_view =
      std::conditional_t<(panels.columns > 0),
                         Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space>,
                         NoPanels>;
  // An item's weight rows from its first column: in the panels, or in the
  // weights as they are.
  template <class Weights, class Scales>
  KOKKOS_INLINE_FUNCTION static WeightRows<Scalar> rows_of(const Weights& weights,
                                                           const panels_view& packed,
                                                           const Scales& scales, int expert,
                                                           int first_col) {
    if constexpr (panels.columns > 0)
      return WeightRows<Scalar>::of(packed, scales, expert, first_col / panels.columns);
    else return WeightRows<Scalar>::of(weights, scales, expert, first_col);
  }
  // Whether the kernel's tensor copies take activation tiles by boxes of a
  // few rows, only those that hold the tile's rows (the layer's maps for
  // them: ExpertStages); a kernel that does says so.
  static constexpr bool few_row_boxes = false;
  // Whether a warp-specialised kernel's producer acquires its tensor maps
  // once, as it starts, instead of in each item's prepare (a kernel that
  // does says so).
  static constexpr bool acquires_maps_once = false;
  // Operand tiles of weights: S, or 2 where staged (converted a step at a
  // time, the one of step c in tile c % 2: with S even, b % 2 of stage b),
  // none where read in place.
  static constexpr int weight_buffers = weights_in_place ? 0 : stages_weights ? 2 : S;
  static_assert(!stages_weights || S % 2 == 0, "staged weights: an even number of stages");
  // Whether a token tile's rows past the item's are zeroed on the tile's
  // first use: not where the fragment reads weights in place, which
  // multiplies and stores only the item's rows (InPlaceWeights::tokens).
  KOKKOS_INLINE_FUNCTION static constexpr bool zero_token_rows(bool first_use) {
    return first_use && !weights_in_place;
  }
  // Tensor copies cannot convert: block-scaled weights need fragments
  // whose threads load (the kernels' bulk paths count sizeof(Scalar) bytes).
  static_assert(!is_block_scaled<Scalar>::value || frag::producer_threads == 0 || multiplies_codes,
                "block-scaled weights with tensor copies");
  KOKKOS_INLINE_FUNCTION static constexpr int weight_buffer(int b) {
    return stages_weights ? b % 2 : b;
  }
  // Bytes of staging for S stages of `rows` weight rows (0 without staging).
  static constexpr std::size_t staged_bytes(int rows) {
    return stages_weights ? S * weight_loader::staged_bytes(rows) + 16 : 0;
  }
  KOKKOS_INLINE_FUNCTION static std::uint8_t* staged(const member& m, int rows) {
    return stages_weights
               ? static_cast<std::uint8_t*>(
                     m.team_scratch(scratch_level<Frag>()).get_shmem_aligned(S * rows * BK, 16))
               : nullptr;
  }

  // A weight tile: rows [0, rows) of `from` (Height at most), columns
  // [k0, k0 + depth), as OperandLoader::load_tile, or into the staging
  // tile `staged` of its stage.
  template <int Height>
  KOKKOS_FORCEINLINE_FUNCTION static void load_weights(const Loader& ld, const tile& t,
                                                       std::uint8_t* staged,
                                                       const WeightRows<Scalar>& from, int rows,
                                                       int k0, int depth, bool aligned,
                                                       bool first_use) {
    const typename weight_loader::Loader wl{ld.rank, ld.threads};
    const auto row_at = [&](int n) { return from.at(n, k0); };
    if constexpr (weights_in_place) return;
    else if constexpr (stages_weights)
      weight_loader::template load_staged<Height>(wl, staged, rows, depth, row_at, aligned);
    else weight_loader::template load_tile<Height>(wl, t, rows, depth, row_at, aligned, first_use);
  }
  // The scales of a weight tile's block row over a work item's K range,
  // read into scratch as the item starts (prepare), up to item_scales
  // blocks (K up to 16384): read from global memory in each step, their
  // latency stalled every conversion.
  static constexpr int item_scales = 128;
  static constexpr std::size_t scales_bytes(int tiles) {
    return stages_weights ? tiles * item_scales * sizeof(float) + 16 : 0;
  }
  KOKKOS_INLINE_FUNCTION static float* scales(const member& m, int tiles) {
    return stages_weights ? static_cast<float*>(
                                m.team_scratch(scratch_level<Frag>())
                                    .get_shmem_aligned(tiles * item_scales * sizeof(float), 16))
                          : nullptr;
  }
  KOKKOS_INLINE_FUNCTION static void load_scales(const Loader& ld, float* to,
                                                 const WeightRows<Scalar>& from, const Work& w) {
    if constexpr (stages_weights) {
      const int first = w.k_begin / weight_block, n = (w.k_end - 1) / weight_block + 1 - first;
      for (int i = ld.rank; i < n && i < item_scales; i += ld.threads)
        to[i] = from.at(0, (first + i) * weight_block).scale();
    }
  }

  // The staged weight tile of a step, converted into its operand tile
  // (its scale from `scales`, load_scales', or where the item has more
  // blocks, from global memory).
  template <int Height>
  KOKKOS_FORCEINLINE_FUNCTION static void convert_weights(
      const Loader& ld, const tile& t, const std::uint8_t* staged, const float* scales,
      const WeightRows<Scalar>& from, const Work& w, int rows, int k0, int depth, bool aligned) {
    if constexpr (stages_weights) {
      const int i = k0 / weight_block - w.k_begin / weight_block;
      weight_loader::template convert_staged<Height>(
          typename weight_loader::Loader{ld.rank, ld.threads}, t, staged, rows, depth,
          [&](int n) { return from.at(n, k0); }, aligned,
          i < item_scales ? scales[i] : from.at(0, k0).scale());
    }
  }
  // The K step a multiply takes: its operand tiles' stage, and where it
  // lies in K (for weights read in place).
  struct Step {
    int buffer, k0, depth;
  };
  // A weight tile's step as a fragment reading weights in place takes it
  // (`rows` weight rows, the item's token rows). From panels, with the
  // weights the team reads soon, to prefetch: the item's next step, or
  // after its last a share of the first step of the panels after the
  // tile's (the next column block, or the next expert's first), which the
  // items after the group's row tiles take, a share each row tile (past
  // the last expert, the panels' end: never read).
  KOKKOS_INLINE_FUNCTION static InPlaceWeights<Scalar> in_place(const WeightRows<Scalar>& from,
                                                                const Step& step, const Work& w,
                                                                int rows) {
    if constexpr (panels.columns > 0) {
      InPlaceWeights<Scalar> b{from.first + std::int64_t(step.k0) * panels.columns, from.ld, rows,
                               step.depth, w.rows};
      const int next = step.k0 + step.depth;
      if (next < w.k_end) {
        b.ahead = from.first + std::int64_t(next) * panels.columns;
        b.ahead_depth = w.k_end - next < BK ? w.k_end - next : BK;
      } else {
        const int first = w.k_end - w.k_begin < BK ? w.k_end - w.k_begin : BK;
        const int share = (first + w.group_tiles - 1) / w.group_tiles;
        const int k0 = w.k_begin + w.group_tile * share;
        if (k0 < w.k_begin + first) {  // the last row tiles' shares may be empty
          b.ahead = from.first + panels.panels(rows) * from.ld + std::int64_t(k0) * panels.columns;
          b.ahead_depth = share;
        }
      }
      return b;
    } else {
      return InPlaceWeights<Scalar>{from.at(0, step.k0), from.ld, rows, step.depth, w.rows};
    }
  }

  // Stage b of an S-stage staging area of `rows` rows.
  KOKKOS_INLINE_FUNCTION static std::uint8_t* staged_stage(std::uint8_t* staged, int b, int rows) {
    return staged + std::size_t(b) * rows * BK;
  }

  // Iteration s of the K loop begins: step s - L has landed for the whole
  // team and buffer s % S is free.
  KOKKOS_INLINE_FUNCTION static void begin_step(const member& m, int s) {
    if (s < L) return;
    if constexpr (L > 0) frag::template wait_copies<L - 1>();
    m.team_barrier();
  }

  KOKKOS_INLINE_FUNCTION static int steps_of(const Work& w) {
    return (w.k_end - w.k_begin + BK - 1) / BK;
  }
  KOKKOS_INLINE_FUNCTION static int depth_of(const Work& w, int s) {
    const int k0 = w.k_begin + s * BK;
    return w.k_end - k0 < BK ? w.k_end - k0 : BK;
  }

  // A team's life, around the kernel's own parts (Kernel: its scratch and
  // accumulators `team(m)`, `prepare` (scratch the loads need, by the
  // loaders), `sources` (an item's operand row starts, made once per item),
  // `load_step` (given the barrier its bulk copies complete on, null without
  // them), `multiply` (a Step), `zero`, `finish`, `store`): one work
  // item per team with every thread copying and multiplying, or, for a
  // warp-specialised fragment, resident teams over all the items.
  template <class Kernel>
  KOKKOS_FORCEINLINE_FUNCTION void run(const member& m, const Kernel& kernel, int depth) const {
    if constexpr (frag::producer_threads > 0) run_specialized(m, kernel, depth);
    else run_team(m, kernel, depth);
  }

  template <class Kernel>
  KOKKOS_FORCEINLINE_FUNCTION void run_team(const member& m, const Kernel& kernel,
                                            int depth) const {
    Work w;
    if (!work(m.league_rank(), w, depth)) return;
    auto t = kernel.team(m);
    const Loader ld{m.team_rank(), m.team_size()};
    kernel.prepare(t, w, ld);
    m.team_barrier();
    auto acc = kernel.accumulators(m);
    kernel.zero(m, acc);
    const auto from = kernel.sources(w);
    const int steps = steps_of(w);
    for (int s = 0; s < steps + L; ++s) {
      if constexpr (stages_weights) {
        // Step s - L has landed: each thread converts its own staged chunks
        // before the barrier after which the team multiplies them.
        if (s >= L) {
          frag::template wait_copies<L - 1>();
          kernel.convert_step(t, from, w, ld, w.k_begin + (s - L) * BK, depth_of(w, s - L),
                              (s - L) % S);
          m.team_barrier();
        }
      } else {
        begin_step(m, s);
      }
      if (s < steps)
        kernel.load_step(t, from, w, ld, w.k_begin + s * BK, depth_of(w, s), s % S, s < S, nullptr);
      frag::commit_copies();
      if (s < L) continue;
      kernel.multiply(m, t, from, w,
                      Step{(s - L) % S, w.k_begin + (s - L) * BK, depth_of(w, s - L)}, acc);
    }
    kernel.finish(m, acc);
    kernel.store(m, acc, w);
  }

  // The producer warps load step g of the team's life into stage g % S once
  // the multipliers have freed it; the multipliers wait for each step's
  // data, multiply, free the stage of step g - F (its wgmma now done: F
  // batches are left in flight) and after an item's last step store while
  // the producer runs ahead into the next item. No team barrier after the
  // start.
  template <class Kernel>
  KOKKOS_FORCEINLINE_FUNCTION void run_specialized(const member& m, const Kernel& kernel,
                                                   int depth) const {
    using pipeline = typename frag::pipeline;
    const pipeline pipe{static_cast<std::uint64_t*>(
        m.team_scratch(scratch_level<Frag>()).get_shmem_aligned(pipeline::scratch_bytes(), 8))};
    auto t = kernel.team(m);
    auto acc = kernel.accumulators(m);
    pipe.initialize(m.team_rank(), frag::producer_threads, frag::multiplier_threads / 32);
    m.team_barrier();
    Work w;
    int g = 0;
    if (!frag::multiplier(m)) {
      frag::start_producer();
      const Loader ld{m.team_rank() - frag::multiplier_threads, frag::producer_threads};
      if constexpr (Kernel::acquires_maps_once) this->acquire_all_maps(ld);
      for (int item = m.league_rank(); work(item, w, depth); item += m.league_size()) {
        // The previous item's loads are done with the scratch prepare writes.
        pipeline::sync_producer(frag::producer_threads);
        kernel.prepare(t, w, ld);
        pipeline::sync_producer(frag::producer_threads);
        const auto from = kernel.sources(w);
        const int steps = steps_of(w);
        for (int s = 0; s < steps; ++s, ++g) {
          pipe.wait_free(g);
          kernel.load_step(t, from, w, ld, w.k_begin + s * BK, depth_of(w, s), g % S, g < S,
                           pipe.loaded_barrier(g));
          pipe.loaded_when_landed(g);
        }
      }
      frag::template wait_copies<0>();  // nothing in flight when the warp exits
      return;
    }
    frag::start_multiplier();
    const int lane = m.team_rank() % 32;
    // Tensor copies write scratch through the async proxy, which wgmma
    // reads through: only the producer's plain and cp.async writes (16-byte
    // copies) need the multipliers' proxy fence after each wait.
    const bool plain_writes = !bulk_kernel();
    for (int item = m.league_rank(); work(item, w, depth); item += m.league_size()) {
      kernel.zero(m, acc);
      // The multipliers need an item's sources only to read weights in place.
      decltype(kernel.sources(w)) from{};
      if constexpr (weights_in_place) from = kernel.sources(w);
      const int steps = steps_of(w);
      for (int s = 0; s < steps; ++s, ++g) {
        pipe.wait_loaded(g, plain_writes);
        kernel.multiply(m, t, from, w, Step{g % S, w.k_begin + s * BK, depth_of(w, s)}, acc);
        if (s >= F) pipe.release(g - F, lane);  // its multiplies are done
      }
      kernel.finish(m, acc);
      for (int s = steps < F ? steps : F; s > 0; --s) pipe.release(g - s, lane);
      kernel.store(m, acc, w);
    }
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
