// The expert MLP kernels: one team per (tile of rows of one expert, block of
// output columns), K swept through scratch tiles by the backend fragment.
#ifndef KOKKOSMOE_EXPERTMLP_IMPL_HPP
#define KOKKOSMOE_EXPERTMLP_IMPL_HPP

#include <KokkosMoE/KokkosMoE_Dispatch.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_Fragment.hpp"
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

  struct Work {
    int expert, first_row, rows, first_col, split, k_begin, k_end;
  };

  // The (tile, column block, K split) of this team; false for the surplus
  // teams of the upper-bound launch (see max_tiles). Teams run about in
  // league order, so consecutive ranks walk the column blocks of a group of
  // tile_group row tiles with the row tile fastest: the teams in flight
  // together share each weight tile (read from memory once, then from L2).
  // (Groups of 1, 4, 8 and 16 measured alike on the H200.)
  static constexpr int tile_group = 8;
  KOKKOS_INLINE_FUNCTION bool work(const member& m, Work& w, int depth) const {
    const int per_tile = column_blocks * splits;
    const int tiles    = plan.tile_offsets(experts);
    const int group    = m.league_rank() / (tile_group * per_tile);
    const int first    = group * tile_group;
    if (first >= tiles) return false;
    const int in_group = tiles - first < tile_group ? tiles - first : tile_group;
    const int index    = m.league_rank() - group * tile_group * per_tile;
    const int tile     = first + index % in_group;
    const int rest     = index / in_group;
    if (rest >= per_tile) return false;
    w.expert    = plan.tiles(tile, 0);
    w.first_row = plan.tiles(tile, 1);
    w.rows      = plan.tiles(tile, 2) - w.first_row;
    w.first_col = (rest % column_blocks) * BN;
    w.split     = rest / column_blocks;
    w.k_begin   = splits > 1 ? w.split * split_depth : 0;
    w.k_end     = splits > 1 && w.k_begin + split_depth < depth ? w.k_begin + split_depth : depth;
    return true;
  }

  // Splits K until the launch has about `teams` teams (the decode sizes:
  // few tiles, long K), within `capacity` rows of partial results.
  void split_k(std::int64_t tiles, int depth, std::int64_t rows, std::int64_t capacity,
               std::int64_t teams) {
    const std::int64_t by_teams = (teams + tiles * column_blocks - 1) / (tiles * column_blocks);
    const std::int64_t by_depth = (depth + 4 * BK - 1) / (4 * BK);  // at least 4 steps each
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
  KOKKOS_INLINE_FUNCTION static void convert(const tile& t, int r, int c, int rows, int cols,
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
  KOKKOS_INLINE_FUNCTION static void load(const member& m, const tile& t, int rows, int cols,
                                          const RowAt& row_at, bool aligned, bool zero_rows) {
    const int height  = zero_rows ? t.extent_int(0) : (rows < t.extent_int(0) ? rows : t.extent_int(0));
    const int threads = m.team_size(), rank = m.team_rank();
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
    if (frag::team_threads == 0 && threads == 1) {
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
  // rows, BK deep, 16-byte aligned, by a team of frag::team_threads threads
  // (thread t: chunk column t % C of rows t / C + j P, P = threads / C; the
  // swizzle of those rows is one constant per thread).
  static constexpr int P = frag::team_threads >= C ? frag::team_threads / C : 1;
  template <int Height>
  KOKKOS_INLINE_FUNCTION static constexpr bool has_full_load() {
    return V > 1 && frag::team_threads >= C && frag::team_threads % C == 0 && Height % P == 0;
  }
  template <int Height, class RowAt>
  KOKKOS_INLINE_FUNCTION static void load_full(const member& m, const tile& t, const RowAt& row_at) {
    const int rank = m.team_rank(), c = (rank % C) * V, r0 = rank / C;
#pragma unroll
    for (int j = 0; j < Height / P; ++j)
      frag::copy16(frag::element(t, r0 + j * P, c), row_at(r0 + j * P) + c);
  }
  // load_full where it applies (full: the tile's rows and columns all exist
  // and are aligned), load otherwise.
  template <int Height, class RowAt>
  KOKKOS_INLINE_FUNCTION static void load_tile(const member& m, const tile& t, int rows, int cols,
                                               const RowAt& row_at, bool aligned, bool zero_rows) {
    if (has_full_load<Height>() && aligned && rows >= Height && cols == BK)
      load_full<has_full_load<Height>() ? Height : P>(m, t, row_at);
    else
      load(m, t, rows, cols, row_at, aligned, zero_rows);
  }

  // The token of each row of the tile, in scratch: the gathered rows of x
  // are found with one scratch read instead of a global read and a division.
  KOKKOS_INLINE_FUNCTION int* tile_tokens(const member& m, const Work& w) const {
    int* tokens = static_cast<int*>(m.team_scratch(0).get_shmem(sizeof(int) * BM));
    for (int r = m.team_rank(); r < BM; r += m.team_size())
      tokens[r] = r < w.rows ? plan.order(w.first_row + r) / k : 0;
    m.team_barrier();
    return tokens;
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
  // written out in each kernel rather than passed as a lambda: called from
  // two places, the lambda was not inlined and its captures went to local
  // memory.)
  static constexpr int S = frag::stages;
  static constexpr int L = S - 1 - frag::mma_in_flight;
  static_assert(L >= 1, "a stage to load while another multiplies");

  // Stage b of an S-stage operand tile: rows [b * rows, (b + 1) * rows).
  // (Made from a pointer: choosing between tile objects at run time would
  // put them in local memory.)
  KOKKOS_INLINE_FUNCTION static tile stage(const tile& t, int b, int rows) {
    return tile(t.data() + std::size_t(b) * rows * frag::operand_stride, rows, frag::operand_stride);
  }

  // Iteration s of the K loop begins: step s - L has landed for the whole
  // team and buffer s % S is free.
  KOKKOS_INLINE_FUNCTION static void begin_step(const member& m, int s) {
    if (s < L) return;
    frag::template wait_copies<L - 1>();
    m.team_barrier();
  }

  // Light-weight: the functor travels as a kernel argument even past 512
  // bytes, where Kokkos 3.4 would copy it to constant memory behind a host
  // synchronisation (slower to launch, and not capturable in a CUDA graph).
  auto make_policy(const ExecutionSpace& exec, std::int64_t tiles, std::size_t scratch) const {
    return Kokkos::Experimental::require(
        policy(exec, int(tiles * column_blocks * splits), frag::team_size())
            .set_scratch_size(0, Kokkos::PerTeam(scratch)),
        Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  }
};

KOKKOS_INLINE_FUNCTION float silu_times(float g, float u) { return g / (1.0f + math::exp(-g)) * u; }

// h[p] = silu(x[token(p)] gate[e]^T) * (x[token(p)] up[e]^T) for the sorted
// rows p of a tile; the gate and up products exist only in scratch. Split
// over K (decode: few tiles), each part instead writes its gate and up
// products to rows s * A + p of `partial` ([g | u], 2F wide) and
// ActivationKernel finishes h.
template <class ExecutionSpace, class Scalar, TileSize Size>
struct GateUpKernel : ExpertTileKernel<ExecutionSpace, Scalar, Fragment<ExecutionSpace, Scalar, Size>> {
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
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> h;              // [T*k, F]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> partial;         // [splits * A, 2F]
  int assignments;                                                          // A = T * k

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(S * 2 * BN) +
           2 * frag::accumulator_bytes() + base::tile_tokens_bytes();
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    typename base::Work w;
    const int H = int(x.extent(1)), F = int(gate.extent(1));
    if (!this->work(m, w, H)) return;
    const int cols = F - w.first_col < BN ? F - w.first_col : BN;
    // S stages of each operand tile (see begin_step); stage b of the weights is
    // the gate tile then the up tile (ws rows 2b BN and (2b + 1) BN), next to
    // each other as the fragment may multiply them as one tile.
    const tile xs = frag::operand(m, S * BM), ws = frag::operand(m, S * 2 * BN);
    const int* tokens = this->tile_tokens(m, w);
    typename frag::accumulator_type g = frag::accumulator(m), u = frag::accumulator(m);
    frag::zero(m, g);
    frag::zero(m, u);
    // Row starts computed once: x rows are gathered, weight rows are H apart.
    const Scalar* x0    = x.data();
    const Scalar* gate0 = &gate(w.expert, w.first_col, 0);
    const Scalar* up0   = &up(w.expert, w.first_col, 0);
    const bool aligned  = base::rows_aligned(x0, H) && base::rows_aligned(gate0, H) &&
                         base::rows_aligned(up0, H);
    const int steps = (w.k_end - w.k_begin + BK - 1) / BK;
    for (int s = 0; s < steps + L; ++s) {
      base::begin_step(m, s);
      if (s < steps) {
        const int k0 = w.k_begin + s * BK, depth = w.k_end - k0 < BK ? w.k_end - k0 : BK, b = s % S;
        base::template load_tile<BM>(m, base::stage(xs, b, BM), w.rows, depth,
                   [&](int r) { return x0 + std::int64_t(tokens[r]) * H + k0; }, aligned, s < S);
        base::template load_tile<BN>(m, base::stage(ws, 2 * b, BN), cols, depth,
                   [&](int n) { return gate0 + std::int64_t(n) * H + k0; }, aligned, s < S);
        base::template load_tile<BN>(m, base::stage(ws, 2 * b + 1, BN), cols, depth,
                   [&](int n) { return up0 + std::int64_t(n) * H + k0; }, aligned, s < S);
      }
      frag::commit_copies();
      if (s < L) continue;
      const int b = (s - L) % S;
      frag::mma_nt(m, base::stage(xs, b, BM), base::stage(ws, 2 * b, BN), g,
                   base::stage(ws, 2 * b + 1, BN), u);
    }
    frag::finish(m, g, u);
    if (this->splits > 1) {
      const std::int64_t row0 = std::int64_t(w.split) * assignments + w.first_row;
      frag::store(
          m,
          [&](int r, int n, float gv, float uv) {
            if (r < w.rows && n < cols) {
              partial(row0 + r, w.first_col + n)     = gv;
              partial(row0 + r, F + w.first_col + n) = uv;
            }
          },
          g, u);
      return;
    }
    frag::store(
        m,
        [&](int r, int n, float gv, float uv) {
          if (r < w.rows && n < cols)
            h(w.first_row + r, w.first_col + n) = from_float<Scalar>(silu_times(gv, uv));
        },
        g, u);
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
    const std::int64_t p = i / F, f = i % F;
    float g = 0, u = 0;
    for (int s = 0; s < splits; ++s) {
      g += partial(s * assignments + p, f);
      u += partial(s * assignments + p, F + f);
    }
    h(p, f) = from_float<Scalar>(silu_times(g, u));
  }
};

// y[s * A + a] = w[a] * (h[p] down[e]^T) over the K part s, for the
// assignment a at sorted row p (A assignments; one part unless split).
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

  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> h;        // [T*k, F]
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> down;    // [E, H, F]
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> weights;   // [T, k]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> y;               // [splits * T*k, H]
  int assignments;                                                          // A = T * k

  static std::size_t scratch_bytes() {
    return frag::operand_bytes(S * BM) + frag::operand_bytes(S * BN) +
           frag::accumulator_bytes();
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member& m) const {
    typename base::Work w;
    const int F = int(h.extent(1)), H = int(down.extent(1));
    if (!this->work(m, w, F)) return;
    const int cols = H - w.first_col < BN ? H - w.first_col : BN;
    const tile hs = frag::operand(m, S * BM), ds = frag::operand(m, S * BN);
    typename frag::accumulator_type acc = frag::accumulator(m);
    frag::zero(m, acc);
    // Row starts computed once: rows of h and of down are F apart.
    const Scalar* h0    = &h(w.first_row, 0);
    const Scalar* down0 = &down(w.expert, w.first_col, 0);
    const bool aligned  = base::rows_aligned(h0, F) && base::rows_aligned(down0, F);
    const int steps     = (w.k_end - w.k_begin + BK - 1) / BK;
    for (int s = 0; s < steps + L; ++s) {
      base::begin_step(m, s);
      if (s < steps) {
        const int k0 = w.k_begin + s * BK, depth = w.k_end - k0 < BK ? w.k_end - k0 : BK, b = s % S;
        base::template load_tile<BM>(m, base::stage(hs, b, BM), w.rows, depth,
                   [&](int r) { return h0 + std::int64_t(r) * F + k0; }, aligned, s < S);
        base::template load_tile<BN>(m, base::stage(ds, b, BN), cols, depth,
                   [&](int n) { return down0 + std::int64_t(n) * F + k0; }, aligned, s < S);
      }
      frag::commit_copies();
      if (s < L) continue;
      const int b = (s - L) % S;
      frag::mma_nt(m, base::stage(hs, b, BM), base::stage(ds, b, BN), acc);
    }
    frag::finish(m, acc);
    const auto& plan = this->plan;
    const int kk     = this->k;
    frag::store(
        m,
        [&](int r, int n, float v) {
          if (r < w.rows && n < cols) {
            const int a = plan.order(w.first_row + r);
            y(std::int64_t(w.split) * assignments + a, w.first_col + n) = weights(a / kk, a % kk) * v;
          }
        },
        acc);
  }
};

// out[t] = sum of the k weighted expert outputs of token t and of their K
// parts, in a fixed order so the result does not depend on scheduling.
template <class ExecutionSpace, class Scalar>
struct CombineKernel {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> y;   // [splits * T*k, H]
  Kokkos::View<const int*, memory_space> slot;                        // [T*k], -1: invalid
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> out;      // [T, H]
  int k;
  std::int64_t H;
  int splits;
  std::int64_t assignments;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    const std::int64_t t = i / H, n = i % H;
    float s              = 0;
    for (int j = 0; j < k; ++j)
      if (slot(t * k + j) >= 0)
        for (int part = 0; part < splits; ++part) s += y(part * assignments + t * k + j, n);
    out(t, n) = from_float<Scalar>(s);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
