// The expert MLP kernels: one team per (tile of rows of one expert, block of
// output columns), K swept through scratch tiles by the backend fragment.
#ifndef KOKKOSMOE_EXPERTMLP_IMPL_HPP
#define KOKKOSMOE_EXPERTMLP_IMPL_HPP

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_Divide.hpp"
#include "KokkosMoE_Fragment.hpp"
#include "KokkosMoE_TeamScratch.hpp"
#include "KokkosMoE_ValueRun.hpp"
#include <KokkosMoE/KokkosMoE_Math.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// What both expert kernels share: the tile a team owns and the K sweep.
template <class ExecutionSpace, class Scalar, class Frag>
struct ExpertTileKernel {
  using frag         = Frag;
  using tile         = typename frag::tile;
  using memory_space = typename ExecutionSpace::memory_space;
  using policy       = Kokkos::TeamPolicy<ExecutionSpace, typename frag::launch_bounds>;
  using member       = typename policy::member_type;
  static constexpr int BM = frag::tile_m, BN = frag::tile_n, BK = frag::tile_k;

  DispatchPlan<memory_space> plan;
  int experts;
  int k;              // routing top-k
  int column_blocks;  // ceil(N / BN)
  int splits = 1;     // parts of the K range, each its own team (split-K)
  int split_depth = 0;  // K per split, a multiple of BK
  // Tensor maps of the operands (see copy_maps) or null: the fragment's
  // bulk copies where it has them, else 16-byte copies.
  const std::uint64_t* maps = nullptr;
  KOKKOS_INLINE_FUNCTION const std::uint64_t* map(int slot) const {
    return maps + slot * map_words;
  }
  static constexpr int map_words = 16;

  struct Work {
    int tile, expert, first_row, rows, first_col, split, k_begin, k_end;
  };

  // The (tile, column block, K split) of work item `item`; false for the
  // surplus items of the upper-bound launch (see max_tiles), and then for
  // every later item too (resident teams stop at the first). Items run about
  // in order (teams in league order, or resident teams each taking every
  // league_size-th item), so consecutive items walk the column blocks of a
  // group of row tiles of one expert with the row tile fastest: the teams
  // in flight together share each weight tile (read from memory once, then
  // from L2). An expert's n tiles form ceil(n / max_group) groups of about
  // equal size: a weight tile is read once per group (with groups of 8
  // tiles regardless of experts, an expert cut by a group boundary was read
  // twice: DeepSeek-V3, Zipf 0.5, 4096 tokens moved 1.36x the weights'
  // bytes in its gate/up kernel, ncu on the H200). Item i of expert e lies
  // in [tile_offsets(e), tile_offsets(e + 1)) * per_tile, so tile i /
  // per_tile names e without a search.
  static constexpr int max_group = 16;
  KOKKOS_INLINE_FUNCTION bool work(int item, Work& w, int depth) const {
    const int per_tile = column_blocks * splits;
    const int unit     = item / per_tile;
    if (unit >= plan.tile_offsets(experts)) return false;
    const int e = plan.tiles(unit, 0), first = plan.tile_offsets(e);
    const int n = plan.tile_offsets(e + 1) - first, u = unit - first;
    const int groups = (n + max_group - 1) / max_group;
    const int group  = ((u + 1) * groups - 1) / n;  // tiles [g n / groups, (g + 1) n / groups)
    const int start = group * n / groups, size = (group + 1) * n / groups - start;
    const int index = item - (first + start) * per_tile;
    const int tile  = first + start + index % size;
    const int rest  = index / size;
    w.tile      = tile;
    w.expert    = e;
    w.first_row = plan.tiles(tile, 1);
    w.rows      = plan.tiles(tile, 2) - w.first_row;
    w.first_col = (rest % column_blocks) * BN;
    w.split     = rest / column_blocks;
    w.k_begin   = splits > 1 ? w.split * split_depth : 0;
    w.k_end     = splits > 1 && w.k_begin + split_depth < depth ? w.k_begin + split_depth : depth;
    return true;
  }

  // Splits K until the launch has about `teams` teams (the decode sizes:
  // few tiles, long K), within `capacity` rows of partial results, in at
  // most ceil(depth / (min_split_steps BK)) parts: about min_split_steps K
  // steps deep or more (the parts are whole steps). (On the H200, at 1-2 tokens
  // with Qwen2 and GPT-OSS-20B 12 steps were 1.06-1.12x faster than 4 (more
  // parts, each mostly its pipeline's fill and drain), 1.02-1.03x at
  // Mixtral-8x7B one token and Qwen2 4 tokens, within 2 % elsewhere from 1
  // to 32 tokens; 16 was 1.03-1.04x slower than 12 at GPT-OSS 4 tokens.)
  static constexpr int min_split_steps = 12;
  void split_k(std::int64_t tiles, int depth, std::int64_t rows, std::int64_t capacity,
               std::int64_t teams) {
    const std::int64_t by_teams = (teams + tiles * column_blocks - 1) / (tiles * column_blocks);
    const std::int64_t by_depth = (depth + min_split_steps * BK - 1) / (min_split_steps * BK);
    const std::int64_t by_room  = rows > 0 ? capacity / rows : 1;
    std::int64_t s = by_teams < by_depth ? by_teams : by_depth;
    s              = s < by_room ? s : by_room;
    s              = s < 1 ? 1 : s;
    split_depth    = int(((depth + s - 1) / s + BK - 1) / BK * BK);
    splits         = int((depth + split_depth - 1) / split_depth);
  }

  // Starts loading an operand tile [extent(0) x BK] in the fragment's
  // operand type. row_at(r) points at the tile's first element of source
  // row r (only called for r < rows); rows and columns outside (rows, cols)
  // are zero. Where the fragment keeps the storage type and `aligned` says
  // every source row start is 16-byte aligned, whole 16-byte chunks go
  // through frag::copy16, which may complete later (until
  // frag::wait_copies): the weights stream while the previous tile multiplies.
  // Rows at or past `rows` are zeroed only when zero_rows is true: the
  // kernels ask for it on a buffer's first use, after which nothing writes
  // those rows (a one-token decode tile is 15 such rows out of 16).
  //
  // Thread t copies chunk column t % C of rows t / C, t / C + P, ... (C
  // chunks per row, P = team size / C) when C divides the team: the column
  // stays fixed and each next row is one add away, so a K step costs a few
  // instructions per chunk (index arithmetic per chunk, measured with ncu,
  // was 90 % of the instructions of the prefill kernel).
  // The threads that issue the copies: the whole team, or the fragment's
  // producer warps (frag::producer_threads, numbered from 0 here).
  struct Loader {
    int rank, threads;
  };
  static constexpr int loader_threads =
      frag::producer_threads > 0 ? frag::producer_threads : frag::team_threads;

  static constexpr int V = std::is_same<typename frag::operand_type, Scalar>::value &&
                                   frag::k_contiguous && (BK * sizeof(Scalar)) % 16 == 0
                               ? 16 / sizeof(Scalar)
                               : 1;
  static constexpr int C = BK / V;

  // Whether rows of leading dimension ld starting at p are 16-byte aligned.
  KOKKOS_INLINE_FUNCTION static bool rows_aligned(const Scalar* p, std::int64_t ld) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && (ld * sizeof(Scalar)) % 16 == 0;
  }

  // Elements [c, c + Count) of tile row r in the operand type: source row r
  // converted, zeros past `cols` and for rows at or past `rows`.
  template <int Count, class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void convert(const tile& t, int r, int c, int rows, int cols,
                                             const RowAt& row_at) {
    using operand = typename frag::operand_type;
    if (r >= rows) {
      for (int v = 0; v < Count; ++v) *frag::element(t, r, c + v) = operand(0.0f);
      return;
    }
    const Scalar* src = row_at(r) + c;
    for (int v = 0; v < Count; ++v)
      *frag::element(t, r, c + v) = c + v < cols ? frag::to_operand(src[v]) : operand(0.0f);
  }

  template <class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void load(const Loader& ld, const tile& t, int rows, int cols,
                                          const RowAt& row_at, bool aligned, bool zero_rows) {
    const int height =
        zero_rows ? t.extent_int(0) : (rows < t.extent_int(0) ? rows : t.extent_int(0));
    const int threads = ld.threads, rank = ld.rank;
    // 16-byte chunks need 16-byte aligned destinations too.
    const bool vector = V > 1 && aligned &&
                        (frag::operand_stride * sizeof(typename frag::operand_type)) % 16 == 0 &&
                        reinterpret_cast<std::uintptr_t>(t.data()) % 16 == 0;
    const auto chunk = [&](int r, int c) {
      if (vector && r < rows && c + V <= cols)
        frag::copy16(frag::element(t, r, c), row_at(r) + c);
      else
        convert<V>(t, r, c, rows, cols, row_at);
    };
    if (loader_threads == 0 && threads == 1) {
      // One thread (host backends): row by row, one row start each. (Not
      // compiled into fragments of a fixed team size, the GPU ones.)
      for (int r = 0; r < height; ++r) convert<BK>(t, r, 0, rows, cols, row_at);
    } else if (threads % C == 0) {
      const int c = (rank % C) * V;
      for (int r = rank / C; r < height; r += threads / C) chunk(r, c);
    } else {
      for (int i = rank; i < height * C; i += threads) chunk(i / C, (i % C) * V);
    }
  }

  // The common case in a few instructions per chunk: a whole tile of Height
  // rows, BK deep, 16-byte aligned, by loader_threads threads (thread t:
  // chunk column t % C of rows t / C + j P, P = threads / C; the swizzle of
  // those rows is one constant per thread).
  static constexpr int P = loader_threads >= C ? loader_threads / C : 1;
  template <int Height>
  KOKKOS_INLINE_FUNCTION static constexpr bool has_full_load() {
    return V > 1 && loader_threads >= C && loader_threads % C == 0 && Height % P == 0;
  }
  template <int Height, class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void load_full(const Loader& ld, const tile& t,
                                                    const RowAt& row_at) {
    const int rank = ld.rank, c = (rank % C) * V, r0 = rank / C;
#pragma unroll
    for (int j = 0; j < Height / P; ++j)
      frag::copy16(frag::element(t, r0 + j * P, c), row_at(r0 + j * P) + c);
  }
  // load_full of the first `rows` rows only, the others left as they are (a
  // row of a meets only its own row of the product, which is not stored).
  template <int Height, class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void load_first_rows(const Loader& ld, const tile& t,
                                                          const RowAt& row_at, int rows) {
    const int rank = ld.rank, c = (rank % C) * V, r0 = rank / C;
#pragma unroll
    for (int j = 0; j < Height / P; ++j)
      if (r0 + j * P < rows) frag::copy16(frag::element(t, r0 + j * P, c), row_at(r0 + j * P) + c);
  }
  // load_full where it applies (full: the tile's rows and columns all exist
  // and are aligned), load otherwise. Producer warps, whose issue rate
  // bounds a partial tile's load, also take load_first_rows where the rows
  // past `rows` need not be zeroed. (Not the fragments whose every thread
  // copies: there the wider code takes registers from the multiplies and
  // ptxas serialises their wgmma.)
  template <int Height, class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void load_tile(const Loader& ld, const tile& t, int rows,
                                                    int cols, const RowAt& row_at, bool aligned,
                                                    bool zero_rows) {
    constexpr int full = has_full_load<Height>() ? Height : P;
    if constexpr (frag::producer_threads > 0) {
      if (has_full_load<Height>() && aligned && rows < Height && !zero_rows && cols == BK)
        return load_first_rows<full>(ld, t, row_at, rows);
    }
    if (has_full_load<Height>() && aligned && rows >= Height && cols == BK)
      load_full<full>(ld, t, row_at);
    else
      load(ld, t, rows, cols, row_at, aligned, zero_rows);
  }

  // The token of each row of the tile, in scratch: the gathered rows of x
  // are found with one scratch read instead of a global read and a division.
  KOKKOS_INLINE_FUNCTION static int* tile_tokens(const member& m) {
    return static_cast<int*>(m.team_scratch(0).get_shmem(sizeof(int) * BM));
  }
  KOKKOS_INLINE_FUNCTION void fill_tile_tokens(int* tokens, const Work& w, const Loader& ld) const {
    for (int r = ld.rank; r < BM; r += ld.threads)
      tokens[r] = r < w.rows ? plan.order(w.first_row + r) / k : 0;
  }
  static std::size_t tile_tokens_bytes() { return sizeof(int) * BM + 16; }

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
  // called from two places was not inlined and its captures went to local
  // memory.)
  static constexpr int S = frag::stages;
  static constexpr int F = frag::mma_in_flight;
  static constexpr int L = S - 1 - F;
  static_assert(L >= 1, "a stage to load while another multiplies");

  // Stage b of an S-stage operand tile: rows [b * rows, (b + 1) * rows).
  // (Made from a pointer: choosing between tile objects at run time would
  // put them in local memory.)
  KOKKOS_INLINE_FUNCTION static tile stage(const tile& t, int b, int rows) {
    return tile(t.data() + std::size_t(b) * rows * frag::operand_stride, rows,
                frag::operand_stride);
  }

  // Iteration s of the K loop begins: step s - L has landed for the whole
  // team and buffer s % S is free.
  KOKKOS_INLINE_FUNCTION static void begin_step(const member& m, int s) {
    if (s < L) return;
    frag::template wait_copies<L - 1>();
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
  // them), `multiply`, `zero`, `finish`, `store`): one work
  // item per team with every thread copying and multiplying, or, for a
  // warp-specialised fragment, resident teams over all the items.
  template <class Kernel>
  KOKKOS_FORCEINLINE_FUNCTION void run(const member& m, const Kernel& kernel, int depth) const {
    if constexpr (frag::producer_threads > 0)
      run_specialized(m, kernel, depth);
    else
      run_team(m, kernel, depth);
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
      begin_step(m, s);
      if (s < steps)
        kernel.load_step(t, from, w, ld, w.k_begin + s * BK, depth_of(w, s), s % S, s < S, nullptr);
      frag::commit_copies();
      if (s < L) continue;
      kernel.multiply(m, t, (s - L) % S, acc);
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
        m.team_scratch(0).get_shmem_aligned(pipeline::scratch_bytes(), 8))};
    auto t = kernel.team(m);
    auto acc = kernel.accumulators(m);
    pipe.initialize(m.team_rank(), frag::producer_threads, frag::multiplier_threads / 32);
    m.team_barrier();
    Work w;
    int g = 0;
    if (!frag::multiplier(m)) {
      const Loader ld{m.team_rank() - frag::multiplier_threads, frag::producer_threads};
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
    const int lane = m.team_rank() % 32;
    // Tensor copies write scratch through the async proxy, which wgmma
    // reads through: only the producer's plain and cp.async writes (16-byte
    // copies) need the multipliers' proxy fence after each wait.
    const bool plain_writes = !bulk_kernel();
    for (int item = m.league_rank(); work(item, w, depth); item += m.league_size()) {
      kernel.zero(m, acc);
      const int steps = steps_of(w);
      for (int s = 0; s < steps; ++s, ++g) {
        pipe.wait_loaded(g, plain_writes);
        kernel.multiply(m, t, g % S, acc);
        if (s >= F) pipe.release(g - F, lane);  // its multiplies are done
      }
      kernel.finish(m, acc);
      for (int s = steps < F ? steps : F; s > 0; --s) pipe.release(g - s, lane);
      kernel.store(m, acc, w);
    }
  }

  // The scratch of run: the pipeline's barriers where it has them.
  static std::size_t run_scratch_bytes() {
    if constexpr (frag::producer_threads > 0)
      return frag::pipeline::scratch_bytes();
    else
      return 0;
  }

  // Whether load_step moves its operand tiles by the fragment's bulk copies
  // (the producer's thread 0 issues them after announcing their bytes)
  // instead of load_tile: a warp-specialised fragment whose tensor maps
  // could be made.
  KOKKOS_INLINE_FUNCTION bool bulk_kernel() const {
    return frag::producer_threads > 0 && maps != nullptr;
  }
  KOKKOS_INLINE_FUNCTION bool bulk(const std::uint64_t* barrier) const {
    return bulk_kernel() && barrier != nullptr;
  }
  KOKKOS_INLINE_FUNCTION void acquire_maps(const Loader& ld, int first, int count) const {
    if constexpr (frag::producer_threads > 0)
      if (maps != nullptr && ld.rank == 0)
        for (int i = first; i < first + count; ++i) frag::acquire_map(map(i));
  }

  // Where the rows of an item's tile start in the operands that come by
  // tensor copies (x's gathered rows, h): tile-major, tile t at row t BM,
  // its rows past the last in use zero (GatherRowsKernel; the gate/up
  // kernel stores them as zeros of h), so that a partly filled tile
  // multiplies zeros. Run for long, the H200 holds the large kernels at its
  // power cap (700 W, 1.4-1.5 GHz instead of 1.98), where a product of zero
  // rows costs less: a bf16 GEMM with half of its rows zero ran 1.13x
  // faster, and long runs of the layer 1.01-1.07x.
  // Elsewhere rows are in sorted order.
  KOKKOS_INLINE_FUNCTION bool tile_major() const { return bulk_kernel(); }
  KOKKOS_INLINE_FUNCTION int operand_row(const Work& w) const {
    return tile_major() ? w.tile * BM : w.first_row;
  }

  // Light-weight: the functor travels as a kernel argument even past 512
  // bytes, where Kokkos 3.4 would copy it to constant memory behind a host
  // synchronisation (slower to launch, and not capturable in a CUDA graph).
  // One team per work item, or the fragment's resident teams (at most one
  // per item). A tile shape whose scratch the backend cannot give is an
  // error that names the sizes (require_team_scratch), not a Kokkos abort.
  auto make_policy(const ExecutionSpace& exec, std::int64_t tiles, std::size_t scratch,
                   const char* kernel) const {
    const std::int64_t items    = tiles * column_blocks * splits;
    const std::int64_t resident = frag::resident_teams();
    const std::int64_t teams    = resident > 0 && resident < items ? resident : items;
    auto p = policy(exec, int(teams), frag::team_size());
    require_team_scratch(p, scratch + run_scratch_bytes(), kernel);
    return Kokkos::Experimental::require(
        p.set_scratch_size(0, Kokkos::PerTeam(scratch + run_scratch_bytes())),
        Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  }
};

// Slots of the layer's tensor maps (ExpertTileKernel::maps).
enum CopyMap { gate_map, up_map, down_map, activations_map, gathered_map, copy_map_count };

KOKKOS_INLINE_FUNCTION float silu_times(float g, float u) { return g / (1.0f + math::exp(-g)) * u; }
// The same for values rounded to 16 bits next: on CUDA devices by the
// hardware's exp2 and reciprocal (errors of a few float ulp, far below
// bf16's or fp16's rounding). expf and the IEEE division took 35 dependent
// instructions a value, a branch around each: the large gate/up kernel's
// stores took 15 % of its multiplying warps' samples (ncu, H200).
KOKKOS_INLINE_FUNCTION float silu_times_rounded(float g, float u) {
#ifdef __CUDA_ARCH__
  return __fdividef(g, 1.0f + __expf(-g)) * u;
#else
  return silu_times(g, u);
#endif
}
// silu(g) u to be stored as Scalar.
template <class Scalar>
KOKKOS_INLINE_FUNCTION float silu_times_as(float g, float u) {
  return sizeof(Scalar) == 2 ? silu_times_rounded(g, u) : silu_times(g, u);
}
template <class Scalar, int Width>
KOKKOS_INLINE_FUNCTION ValueRun<Width> silu_times_as(const ValueRun<Width>& g,
                                                     const ValueRun<Width>& u) {
  ValueRun<Width> h;
  for (int i = 0; i < Width; ++i) h.v[i] = silu_times_as<Scalar>(g.v[i], u.v[i]);
  return h;
}

// h[p] = silu(x[token(p)] gate[e]^T) * (x[token(p)] up[e]^T) for the rows p
// of a tile (sorted rows, or tile-major: see operand_row); the gate and up
// products exist only in scratch. Split
// over K (decode: few tiles), each part instead writes its gate and up
// products to rows s * A + p of `partial` ([g | u], 2F wide) and
// ActivationKernel finishes h.
template <class ExecutionSpace, class Scalar, TileSize Size>
struct GateUpKernel
    : ExpertTileKernel<ExecutionSpace, Scalar, Fragment<ExecutionSpace, Scalar, Size>> {
  using base = ExpertTileKernel<ExecutionSpace, Scalar, Fragment<ExecutionSpace, Scalar, Size>>;
  using typename base::member;
  using typename base::tile;
  using typename base::frag;
  using base::BM;
  using base::BN;
  using base::BK;
  using base::S;
  using base::L;
  using memory_space = typename base::memory_space;

  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> x;        // [T, H]
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> gate;    // [E, F, H]
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> up;      // [E, F, H]
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> h;              // [rows, F]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> partial;         // [splits * A, 2F]
  int assignments;                                                          // A = T * k

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(S * 2 * BN) +
           2 * frag::accumulator_bytes() + base::tile_tokens_bytes();
  }

  // The team's scratch and accumulators (see ExpertTileKernel::run). S
  // stages of each operand tile (see begin_step); stage b of the weights is
  // the gate tile then the up tile (ws rows 2b BN and (2b + 1) BN), next to
  // each other as the fragment may multiply them as one tile.
  struct Team {
    tile xs, ws;
    int* tokens;
  };
  struct Accumulators {
    typename frag::accumulator_type g, u;
  };
  KOKKOS_FORCEINLINE_FUNCTION Team team(const member& m) const {
    return Team{frag::operand(m, S * BM), frag::operand(m, S * 2 * BN), base::tile_tokens(m)};
  }
  KOKKOS_FORCEINLINE_FUNCTION static Accumulators accumulators(const member& m) {
    return Accumulators{frag::accumulator(m), frag::accumulator(m)};
  }
  KOKKOS_FORCEINLINE_FUNCTION void prepare(const Team& t, const typename base::Work& w,
                                      const typename base::Loader& ld) const {
    if (!this->bulk_kernel()) this->fill_tile_tokens(t.tokens, w, ld);
    this->acquire_maps(ld, gate_map, 2);
    this->acquire_maps(ld, gathered_map, 1);
  }
  // Row starts: x rows are gathered, weight rows are H apart.
  struct Sources {
    const Scalar *gate0, *up0;
    bool aligned;
  };
  KOKKOS_FORCEINLINE_FUNCTION Sources sources(const typename base::Work& w) const {
    const int H = int(x.extent(1));
    Sources f;
    f.gate0   = &gate(w.expert, w.first_col, 0);
    f.up0     = &up(w.expert, w.first_col, 0);
    f.aligned = base::rows_aligned(x.data(), H) && base::rows_aligned(f.gate0, H) &&
                base::rows_aligned(f.up0, H);
    return f;
  }
  KOKKOS_FORCEINLINE_FUNCTION void load_step(const Team& t, const Sources& from,
                                             const typename base::Work& w,
                                             const typename base::Loader& ld, int k0, int depth,
                                             int b, bool first_use, std::uint64_t* barrier) const {
    const int H = int(x.extent(1)), F = int(gate.extent(1));
    const int cols = F - w.first_col < BN ? F - w.first_col : BN;
    const Scalar *x0 = x.data(), *gate0 = from.gate0, *up0 = from.up0;
    const bool aligned = from.aligned;
    const int* tokens = t.tokens;
    if constexpr (frag::producer_threads > 0) {
      // The rows of x already gathered, tile-major (GatherRowsKernel):
      // every operand tile is one tensor copy. (Partly filled tiles taking
      // only their rows of x by 16-byte copies instead measured 1.04-1.10x
      // slower except on DeepSeek-V3 at 2048 tokens, 1.02x faster.)
      if (this->bulk(barrier)) {
        if (ld.rank == 0) {
          const int row = w.expert * F + w.first_col;
          frag::expect_bytes(barrier, int((BM + 2 * BN) * BK * sizeof(Scalar)));
          frag::bulk_load(base::stage(t.xs, b, BM), this->map(gathered_map),
                          this->operand_row(w), k0, barrier);
          frag::bulk_load(base::stage(t.ws, 2 * b, BN), this->map(gate_map), row, k0, barrier);
          frag::bulk_load(base::stage(t.ws, 2 * b + 1, BN), this->map(up_map), row, k0, barrier);
        }
        return;
      }
    }
    base::template load_tile<BM>(ld, base::stage(t.xs, b, BM), w.rows, depth,
               [&](int r) { return x0 + std::int64_t(tokens[r]) * H + k0; }, aligned, first_use);
    base::template load_tile<BN>(ld, base::stage(t.ws, 2 * b, BN), cols, depth,
               [&](int n) { return gate0 + std::int64_t(n) * H + k0; }, aligned, first_use);
    base::template load_tile<BN>(ld, base::stage(t.ws, 2 * b + 1, BN), cols, depth,
               [&](int n) { return up0 + std::int64_t(n) * H + k0; }, aligned, first_use);
  }
  KOKKOS_FORCEINLINE_FUNCTION static void multiply(const member& m, const Team& t, int b,
                                                   Accumulators& a) {
    frag::mma_nt(m, base::stage(t.xs, b, BM), base::stage(t.ws, 2 * b, BN), a.g,
                 base::stage(t.ws, 2 * b + 1, BN), a.u);
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
    const int cols = F - w.first_col < BN ? F - w.first_col : BN;
    if (this->splits > 1) {
      const std::int64_t row0 = std::int64_t(w.split) * assignments + w.first_row;
      frag::template store<1>(
          m,
          [&](int r, int n, const auto& g, const auto& u) {
            if (r < w.rows && n < cols) {
              store_run(&partial(row0 + r, w.first_col + n), g, cols - n);
              store_run(&partial(row0 + r, F + w.first_col + n), u, cols - n);
            }
          },
          a.g, a.u);
      return;
    }
    // Tile-major h: every row of the tile, the unused ones zero (their x
    // rows are).
    const int row0 = this->operand_row(w), rows = this->tile_major() ? BM : w.rows;
    frag::template store<2>(
        m,
        [&](int r, int n, const auto& g, const auto& u) {
          if (r < rows && n < cols)
            store_run(&h(row0 + r, w.first_col + n), silu_times_as<Scalar>(g, u), cols - n);
        },
        a.g, a.u);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    this->run(m, *this, int(x.extent(1)));
  }
};

// gathered[t BM + r] = x[token of the r-th row of tile t] for the tiles in
// use, zero past each tile's last row (tile-major: see
// ExpertTileKernel::operand_row), so that the large gate/up kernel's tensor
// copies find a tile's rows of x next to each other (one more pass over
// about T k H values).
template <class ExecutionSpace, class Scalar>
struct GatherRowsKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  DispatchPlan<memory_space> plan;
  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> x;     // [T, H]
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> gathered;    // [tiles * BM, H]
  int k, experts;
  int tile_rows;  // BM
  bool aligned;   // x's rows start 16-byte aligned: 8 values per copy

  // Item i: chunks q, q + C / 4, q + 2 C / 4, q + 3 C / 4 of gathered row p,
  // C = H / 8 chunks of 8 values (the tensor maps need H a multiple of 8;
  // every model we know has a multiple of 32): four loads in flight per
  // thread, each coalesced over the warp (with one chunk per item and a
  // 64-bit division each, the pass ran at 58 % of the memory's rate, with
  // four at 79 %: DeepSeek-V3, 4096 tokens, 289 -> 211 us, ncu on the
  // H200). Where C is not a multiple of 4, one chunk per item.
  KOKKOS_INLINE_FUNCTION static int chunks_per_item(std::int64_t H) {
    return (H / 8) % 4 == 0 ? 4 : 1;
  }
  // Over the rows of `tiles` tiles (the launch's upper bound; the tiles
  // not in use return at once).
  static std::int64_t items(std::int64_t tiles, int tile_rows, std::int64_t H) {
    return tiles * tile_rows * (H / 8 / chunks_per_item(H));
  }
  struct alignas(16) Chunk {
    std::uint32_t word[4];
  };
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    const std::int64_t H = x.extent(1), per_item = chunks_per_item(H), stride = H / 8 / per_item;
    std::int64_t p, q;
    divide(i, stride, p, q);
    const int tile = int(p) / tile_rows, r = int(p) - tile * tile_rows;
    if (tile >= plan.tile_offsets(experts)) return;
    const int first = plan.tiles(tile, 1);
    Scalar* to      = &gathered(p, 0);
    // (The tensor map over gathered made sure its rows are 16-byte aligned.)
    auto* dst = reinterpret_cast<Chunk*>(to) + q;
    if (r >= plan.tiles(tile, 2) - first) {
      for (int j = 0; j < per_item; ++j) dst[j * stride] = Chunk{};
      return;
    }
    const Scalar* from = &x(plan.order(first + r) / k, 0);
    if (!aligned) {
      for (std::int64_t c = q * 8; c < H; c += stride * 8)
        for (int v = 0; v < 8; ++v) to[c + v] = from[c + v];
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
    divide(i, F, p, f);
    float g = 0, u = 0;
    for (int s = 0; s < splits; ++s) {
      g += partial(s * assignments + p, f);
      u += partial(s * assignments + p, F + f);
    }
    h(p, f) = from_float<Scalar>(silu_times_as<Scalar>(g, u));
  }
};

// y[s * A + p] = h[p] down[e]^T over the K part s, for the sorted row p (A
// assignments; one part unless split; h's row of p is tile-major where
// operand_row says so). Rows of y in sorted order and unweighted
// (CombineKernel weighs them): a tile's stores are whole rows, with no
// lookups (scattered rows, with a lookup of each row's assignment and
// weight: DeepSeek-V3's down and combine at 4096 tokens 5.95 ms against
// 3.45 on the H200).
template <class ExecutionSpace, class Scalar, TileSize Size>
struct DownKernel
    : ExpertTileKernel<ExecutionSpace, Scalar, DownFragment<ExecutionSpace, Scalar, Size>> {
  using base = ExpertTileKernel<ExecutionSpace, Scalar, DownFragment<ExecutionSpace, Scalar, Size>>;
  using typename base::member;
  using typename base::tile;
  using typename base::frag;
  using base::BM;
  using base::BN;
  using base::BK;
  using base::S;
  using base::L;
  using memory_space = typename base::memory_space;

  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> h;        // [rows, F]
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> down;    // [E, H, F]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> y;               // [splits * T*k, H]
  int assignments;                                                          // A = T * k

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(S * BN) +
           frag::accumulator_bytes();
  }

  struct Team {
    tile hs, ds;
  };
  struct Accumulators {
    typename frag::accumulator_type acc;
  };
  KOKKOS_FORCEINLINE_FUNCTION Team team(const member& m) const {
    return Team{frag::operand(m, S * BM), frag::operand(m, S * BN)};
  }
  KOKKOS_FORCEINLINE_FUNCTION static Accumulators accumulators(const member& m) {
    return Accumulators{frag::accumulator(m)};
  }
  KOKKOS_FORCEINLINE_FUNCTION void prepare(const Team&, const typename base::Work&,
                                      const typename base::Loader& ld) const {
    this->acquire_maps(ld, down_map, 2);
  }
  // Row starts: rows of h and of down are F apart.
  struct Sources {
    const Scalar *h0, *down0;
    int F, H, cols;
    bool aligned;
  };
  KOKKOS_FORCEINLINE_FUNCTION Sources sources(const typename base::Work& w) const {
    Sources f;
    f.F = int(h.extent(1)), f.H = int(down.extent(1));
    f.cols    = f.H - w.first_col < BN ? f.H - w.first_col : BN;
    f.h0      = &h(w.first_row, 0);
    f.down0   = &down(w.expert, w.first_col, 0);
    f.aligned = base::rows_aligned(f.h0, f.F) && base::rows_aligned(f.down0, f.F);
    return f;
  }
  KOKKOS_FORCEINLINE_FUNCTION void load_step(const Team& t, const Sources& from,
                                             const typename base::Work& w,
                                             const typename base::Loader& ld, int k0, int depth,
                                             int b, bool first_use, std::uint64_t* barrier) const {
    const int F = from.F, H = from.H, cols = from.cols;
    const Scalar *h0 = from.h0, *down0 = from.down0;
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
    base::template load_tile<BM>(ld, base::stage(t.hs, b, BM), w.rows, depth,
               [&](int r) { return h0 + std::int64_t(r) * F + k0; }, aligned, first_use);
    base::template load_tile<BN>(ld, base::stage(t.ds, b, BN), cols, depth,
               [&](int n) { return down0 + std::int64_t(n) * F + k0; }, aligned, first_use);
  }
  KOKKOS_FORCEINLINE_FUNCTION static void multiply(const member& m, const Team& t, int b,
                                                   Accumulators& a) {
    frag::mma_nt(m, base::stage(t.hs, b, BM), base::stage(t.ds, b, BN), a.acc);
  }
  KOKKOS_FORCEINLINE_FUNCTION static void zero(const member& m, Accumulators& a) {
    frag::zero(m, a.acc);
  }
  KOKKOS_FORCEINLINE_FUNCTION static void finish(const member& m, Accumulators& a) {
    frag::finish(m, a.acc);
  }

  KOKKOS_FORCEINLINE_FUNCTION void store(const member& m, Accumulators& out,
                                         const typename base::Work& w) const {
    const int H    = int(down.extent(1));
    const int cols = H - w.first_col < BN ? H - w.first_col : BN;
    float* const y0 = &y(std::int64_t(w.split) * assignments + w.first_row, w.first_col);
    frag::template store<2>(
        m,
        [&](int r, int n, const auto& v) {
          if (r < w.rows && n < cols) store_run(y0 + std::int64_t(r) * H + n, v, cols - n);
        },
        out.acc);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    this->run(m, *this, int(h.extent(1)));
  }
};

// out[t] = sum over the k assignments a of token t of w[a] times the expert
// output of a (the sum of its K parts, at a's sorted row), in a fixed order
// so the result does not depend on scheduling. Item i: Width consecutive
// columns of one token (16-byte loads of y where Width is 4: one float per
// item, with a 64-bit division each, ran at a sixth of the copy rate, ncu
// on the H200).
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

  // Width 4 needs H a multiple of 4 and y 16-byte aligned.
  static bool applies(const float* y, std::int64_t H) {
    return Width == 1 || (H % Width == 0 && reinterpret_cast<std::uintptr_t>(y) % 16 == 0);
  }
  static std::int64_t items(std::int64_t tokens, std::int64_t H) { return tokens * (H / Width); }

  struct alignas(Width * sizeof(float)) Values {
    float v[Width];
  };
  KOKKOS_FORCEINLINE_FUNCTION Values row(std::int64_t p, std::int64_t n) const {
    return *reinterpret_cast<const Values*>(&y(p, n));
  }

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t t, n;
    divide(i, H / Width, t, n);
    n *= Width;
    ValueRun<Width> s{};
    for (int j = 0; j < k; ++j) {
      const std::int64_t p = position(t * k + j);
      if (p < 0) continue;
      Values v = row(p, n);
      for (int part = 1; part < splits; ++part) {
        const Values more = row(part * assignments + p, n);
        for (int e = 0; e < Width; ++e) v.v[e] += more.v[e];
      }
      const float w = weights(t, j);
      for (int e = 0; e < Width; ++e) s.v[e] += w * v.v[e];
    }
    store_run(&out(t, n), s, Width);
  }
};

// Whether the layer's large kernels take their operands by tensor copies
// (then the layer keeps x's rows gathered, tile-major, for them).
template <class ExecutionSpace, class Scalar>
constexpr bool bulk_copies() {
  return GateUpKernel<ExecutionSpace, Scalar, TileSize::large>::frag::producer_threads > 0 &&
         DownKernel<ExecutionSpace, Scalar, TileSize::large>::frag::producer_threads > 0;
}

// The tensor maps of the large kernels' operands (gate, up and down
// weights, activations h, gathered rows of x) in device memory, for
// fragments with bulk copies;
// an empty view elsewhere or where a map cannot be made (unaligned rows,
// strided views, no driver entry point): the kernels then copy 16 bytes at
// a time. Made once per layer, so a forward does no host work for them.
template <class ExecutionSpace, class Scalar, class Weights, class Activations>
Kokkos::View<std::uint64_t*, typename ExecutionSpace::memory_space> copy_maps(
    const Weights& w, const Activations& h, const Activations& gathered) {
  using gate_up = GateUpKernel<ExecutionSpace, Scalar, TileSize::large>;
  using down    = DownKernel<ExecutionSpace, Scalar, TileSize::large>;
  Kokkos::View<std::uint64_t*, typename ExecutionSpace::memory_space> maps;
  if constexpr (bulk_copies<ExecutionSpace, Scalar>()) {
    static_assert(gate_up::BM == down::BM, "one tile height for the tile-major x and h");
    constexpr int words = gate_up::map_words;
    alignas(64) std::uint64_t host[copy_map_count][words] = {};
    const std::uint64_t E = w.gate.extent(0), F = w.gate.extent(1), H = w.gate.extent(2);
    const bool made =
        w.gate.span_is_contiguous() && w.up.span_is_contiguous() && w.down.span_is_contiguous() &&
        h.span_is_contiguous() &&
        gate_up::frag::encode_map(host[gate_map], w.gate.data(), E * F, H, gate_up::BN) &&
        gate_up::frag::encode_map(host[up_map], w.up.data(), E * F, H, gate_up::BN) &&
        down::frag::encode_map(host[down_map], w.down.data(), E * H, F, down::BN) &&
        down::frag::encode_map(host[activations_map], h.data(), h.extent(0), F, down::BM) &&
        gathered.span_is_contiguous() &&
        gate_up::frag::encode_map(host[gathered_map], gathered.data(), gathered.extent(0), H,
                                  gate_up::BM);
    if (!made) return maps;
    maps = decltype(maps)("KokkosMoE::tensor_maps", copy_map_count * words);
    if (reinterpret_cast<std::uintptr_t>(maps.data()) % 64 != 0) return decltype(maps)();
    Kokkos::deep_copy(maps, Kokkos::View<const std::uint64_t*, Kokkos::HostSpace,
                                         Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                &host[0][0], copy_map_count * words));
  }
  return maps;
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
