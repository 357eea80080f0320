// SPDX-License-Identifier: BSD-3-Clause
// The host backends' matrix fragments (Serial, OpenMP, Threads; builds
// without a GPU backend, whose compilers parse host code as device code and
// whose host spaces keep the portable fragment). A team is one thread, so a
// fragment is a single-threaded matrix micro-kernel: its accumulators live
// on the thread's stack (in registers while it multiplies), its operand
// tiles (all but the decode fragment's weights) in team scratch, as float,
// converted once when loaded.
//
// Two shapes:
//   HostPanelFragment (medium and large tiles: prefill, 16 and 32 token
//     rows) holds the token tile as in memory, a[m][k], and reads the
//     weights from panels the layer packs them into once (panel_layout: a
//     vector of columns per k, contiguous). A register block of MB token
//     rows by NB vectors of columns accumulates c[m][n..] += a[m][k] *
//     b[k][n..]: one broadcast token value times a vector of weights, MB NB
//     independent FMAs per k, over K steps of 256 (e4m3 weights from k-major
//     tiles in scratch the loader dequantises them into); bfloat16 weights
//     with AVX-512 BF16 as pairs of k, the token tile converted to pairs
//     once per step (PairTile).
//   HostDotFragment (small tiles: decode, up to 8 tokens per expert) holds
//     the token tile as in memory, [row][k], K steps of 4096 deep, reads the
//     weights where they lie in memory (weights_in_place: no copy into
//     scratch; 16-bit weights widened in registers, or with AVX-512 BF16
//     bfloat16 weights and 2-8 token rows multiplied as pairs) a few rows at a time
//     over the whole step, and sums dot products over k in vectors of
//     partial sums, added up once when stored: one multiply-add per vector
//     of weights and token, only for the tokens the tile holds, so that
//     reading the weights stays the limit.
// The panel fragment tells its token tiles (tile_m rows) from its weight
// tiles (tile_n rows; never equal) by their rows.
#ifndef KOKKOSMOE_HOST_FRAGMENT_HPP
#define KOKKOSMOE_HOST_FRAGMENT_HPP

#ifndef KOKKOSMOE_FRAGMENT_HPP
#error "include KokkosMoE_Fragment.hpp, which includes this file"
#endif

#include "KokkosMoE_Host_Vector.hpp"

#ifdef KOKKOSMOE_HOST_VECTORS

#include <KokkosMoE/KokkosMoE_HostTuning.hpp>

#include <cstring>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// Weights a register block will read soon, requested while it or the
// block before it multiplies: into L2, or non-temporally (prefetchnta), as
// a decode tile's weights are read once: the CPU's hint (host_tuning()),
// as a template argument chosen before the loops (read in the loop, the
// branch made one bf16 token 1.25x slower on Zen 4). Prefill's panels go
// to L2 (prefetchnta or prefetcht0: 0.94-1.11x the time, slower at 9
// and 10 of the 12 prefill points of the host benchmark).
template <bool NonTemporal>
inline void prefetch_weights(const void* p) {
  __builtin_prefetch(p, 0, NonTemporal ? 0 : 2);
}

// What both host fragments share: one-thread teams, float tiles in team
// scratch of ScratchLevel (TileK deep), accumulators outside it. Derived supplies
// accumulator_type, tile_m, tile_n, multiply(a, b, acc) (one tile pair)
// and run<R>(acc, m, n) (R columns of row m from its layout).
template <class Derived, class ExecutionSpace, int TileK, int ScratchLevel = 0>
struct HostFragmentBase {
  using scratch_space = typename ExecutionSpace::scratch_memory_space;
  using tile = Kokkos::View<float**, Kokkos::LayoutRight, scratch_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using operand_type = float;
  using launch_bounds = Kokkos::LaunchBounds<>;
  // Teams taken as threads free up: the kernels launch an upper bound of
  // tiles whose surplus teams return at once, and split statically the
  // surplus fell to the last threads (at 8 tokens on 2 threads, one thread
  // did 15 % of the multiplies).
  using schedule = Kokkos::Schedule<Kokkos::Dynamic>;

  static constexpr int tile_k = TileK;
  static constexpr int operand_stride = TileK;
  static constexpr int scratch_level = ScratchLevel;
  // One thread loads a step and then multiplies it: no second buffer.
  static constexpr int stages = 1;
  static constexpr int mma_in_flight = 0;
  static constexpr int producer_threads = 0;
  static constexpr int team_threads = 1;
  static int team_size() { return 1; }
  static int resident_teams() { return 0; }
  // A few teams per host thread.
  static std::int64_t split_k_teams() { return 64; }

  template <class Scalar>
  static float to_operand(Scalar v) {
    return to_float(v);
  }
  template <class Member>
  static tile operand(const Member& member, int rows) {
    return tile(member.team_scratch(ScratchLevel), rows, operand_stride);
  }
  static std::size_t operand_bytes(int rows) { return tile::shmem_size(rows, operand_stride); }
  static std::size_t accumulator_bytes() { return 0; }  // on the stack

  static void copy16(void* dst, const void* src) { std::memcpy(dst, src, 16); }
  static void commit_copies() {}
  template <int pending>
  static void wait_copies() {}

  // zero() only marks an accumulator (Derived's `zero` member): its first
  // multiply (first_write) clears or overwrites the values store hands
  // out, and finish clears one no multiply reached. Cleared whole each item
  // (64 KiB in the decode fragment, 16 KiB in the prefill one), it took
  // about 2 % of a prefill forward.
  template <class Member, class Acc>
  static void zero(const Member&, Acc& acc) {
    acc.zero = true;
  }
  // The run store hands out when the caller takes Width: up to 16 columns
  // (a vector of silu and of conversions in the kernels' stores), at most
  // the tile's Columns.
  template <int Width, int Columns>
  static constexpr int run_of() {
    return Width < 16 && Width < Columns ? Width : Columns < 16 ? Columns : 16;
  }
  template <class Member, class... Acc>
  static void finish(const Member&, Acc&... acc) {
    (cleared_if_unwritten(acc), ...);
  }
  // Whether acc was still marked zero; written from here on.
  template <class Acc>
  static bool first_write(Acc& acc) {
    const bool zero = acc.zero;
    acc.zero = false;
    return zero;
  }
  template <class Acc>
  static void cleared_if_unwritten(Acc& acc) {
    if (first_write(acc)) std::memset(acc.v, 0, sizeof acc.v);
  }

  // Default-initialised: its values are left to zero() and the multiplies.
  template <class Member>
  static auto accumulator(const Member&) {
    typename Derived::accumulator_type acc;
    return acc;
  }
  template <class Member, class... Pairs>
  static void mma_nt(const Member&, const tile& a, Pairs&&... b_acc) {
    multiply_pairs(a.data(), b_acc...);
  }
  // Runs of up to 16 columns of a row (run_of), as Derived's layout holds
  // them, for the rows that hold products (Derived::rows_of).
  template <int Width, class Member, class F, class Acc, class... More>
  static void store(const Member&, const F& f, const Acc& acc0, const More&... acc) {
    constexpr int R = run_of<Width, Derived::tile_n>();
    const int rows = Derived::rows_of(acc0);
    for (int m = 0; m < rows; ++m)
      for (int n = 0; n < Derived::tile_n; n += R)
        f(m, n, Derived::template run<R>(acc0, m, n), Derived::template run<R>(acc, m, n)...);
  }

 private:
  static void multiply_pairs(const float*) {}
  template <class Acc, class... Rest>
  static void multiply_pairs(const float* a, const tile& b, Acc& acc, Rest&&... rest) {
    Derived::multiply(a, b.data(), acc);
    multiply_pairs(a, rest...);
  }
  template <class Scalar, class Acc, class... Rest>
  static void multiply_pairs(const float* a, const InPlaceWeights<Scalar>& b, Acc& acc,
                             Rest&&... rest) {
    Derived::multiply_in_place(a, b, acc);
    multiply_pairs(a, rest...);
  }

 public:
};

// Token tiles of 16 and 32 rows (K steps of 256: with 128, the K of 160-448
// of the prefill points took 1.01-1.05x the time in short second steps;
// level-1 scratch: the 32-row token tile is 32 KiB) multiplied with the
// weights' panels
// (panel_layout: packed once by the layer, KokkosMoE_WeightPanels.hpp):
// each register block takes, per k, one vector of each of its panels'
// columns, contiguous in memory, and one broadcast token value per row,
// so that its columns fill whole vectors whatever the rows per expert.
template <class ExecutionSpace, int TileM, int TileN>
struct HostPanelFragment
    : HostFragmentBase<HostPanelFragment<ExecutionSpace, TileM, TileN>, ExecutionSpace, 256, 1> {
  using base = HostFragmentBase<HostPanelFragment, ExecutionSpace, 256, 1>;
  using typename base::tile;
  static constexpr int tile_m = TileM, tile_n = TileN, tile_k = base::tile_k;
  static_assert(tile_m != tile_n, "token and weight tiles are told apart by their rows");
  static constexpr int lanes = host_vector::lanes;
  static_assert(tile_n % lanes == 0 && tile_k % (2 * lanes) == 0, "whole vectors");
  // Token tiles are row-major, [m][k], as their rows lie in memory; weight
  // tiles (e4m3 weights, which the loader dequantises into scratch) k-major,
  // [k][n], as in a panel: not k-contiguous.
  static constexpr bool k_contiguous = false;
  struct accumulator_type {
    alignas(64) float v[tile_m * tile_n];  // [m][n]
    int rows = tile_m;                     // the token rows stored (InPlaceWeights::tokens)
    bool zero = true;  // v zero, not written yet: the first step's blocks start from zero
  };
  // Weights read where they lie, in their panels: no copy into scratch per
  // step. (e4m3 weights come as weight tiles in scratch: multiply.)
  static constexpr bool weights_in_place = true;
  // The down kernel's outputs (a float row of H per assignment: at 512
  // prefill tokens of top-8 routing and H 7168, 117 MB) go past the caches
  // (streams_outputs), written without each line read from memory first;
  // the combine reads them after the launch. Interleaved on Zen 4 at the
  // prefill points (512-2048 tokens, shapes / 16), with the combine's
  // vector of columns: AVX-512 0.90-0.99x the time on one thread, AVX2
  // level.
  static constexpr bool streams_outputs = true;
  // Panels one vector wide; bfloat16 as pairs of k where the build has
  // AVX-512 BF16 (vdpbf16ps takes a vector of pairs).
  template <class Scalar>
  static constexpr PanelLayout panel_layout() {
#ifdef KOKKOSMOE_HOST_BF16_PAIRS
    if constexpr (std::is_same<Scalar, bfloat16>::value) return PanelLayout{lanes, 2};
#endif
    return PanelLayout{lanes, 1};
  }

  // Register blocks of MB token rows by NB vectors of columns: MB NB
  // accumulators, NB weight vectors and a broadcast token within the 32
  // (AVX-512) or 16 registers; per k, NB + MB loads for MB NB multiply-adds.
  static constexpr int MB = 6;
  static constexpr int NB = lanes == 16 ? 4 : 2;

  static float* element(const tile& t, int r, int c) {
    return t.extent_int(0) == tile_m ? t.data() + r * tile_k + c : t.data() + c * tile_n + r;
  }
  // The token tile row by row, widened a vector at a time, zeros past
  // `cols` (the pairs' conversion reads whole vectors of k); weight tiles
  // are left to the loader.
  static constexpr bool loads_rows = true;
  template <class RowAt>
  static bool load_rows(const tile& t, int height, int rows, int cols, const RowAt& row_at) {
    if constexpr (!std::is_pointer<decltype(row_at(0))>::value) {
      return false;
    } else {
      using namespace host_vector;
      if (t.extent_int(0) != tile_m) return false;
      for (int r = 0; r < height; ++r) {
        float* __restrict a = t.data() + r * tile_k;
        int c = 0;
        if (r < rows) {
          const auto src = row_at(r);
          for (; c + lanes <= cols; c += lanes) host_vector::store(a + c, widen(src + c));
          if (c < cols) host_vector::store(a + c, widen_first(src + c, cols - c)), c += lanes;
        }
        for (; c < tile_k; c += lanes) host_vector::store(a + c, broadcast(0.0f));
      }
      return true;
    }
  }
  static int rows_of(const accumulator_type& acc) { return acc.rows; }
  template <int R>
  static ColumnRun<R> run(const accumulator_type& acc, int m, int n) {
    ColumnRun<R> out;
    std::memcpy(out.v, acc.v + m * tile_n + n, sizeof out.v);
    return out;
  }

  // Vector j of a block's columns at its k-th k: first + j vector_stride
  // + k k_stride (panels: ld and lanes; a k-major weight tile: lanes and
  // tile_n).
  template <class Scalar>
  struct Columns {
    const Scalar* first;
    std::int64_t vector_stride;
    int k_stride;
    Columns from(int j) const {
      return Columns{first + j * vector_stride, vector_stride, k_stride};
    }
  };

  // c[m][n] += sum_k a[m][k] b[k][n] over the tile (c zero before the
  // first), b a weight tile the loader dequantised into scratch (every row
  // of a; b zero past its columns and depth).
  static void multiply(const float* __restrict a, const float* __restrict b,
                       accumulator_type& acc) {
    const bool from_zero = base::first_write(acc);
    multiply_blocks(a, Columns<float>{b, lanes, tile_n}, acc.v, tile_m, tile_n / lanes, tile_k,
                    static_cast<const float*>(nullptr), 0, from_zero);
  }
  // The same from the weights' panels (InPlaceWeights: b.first the step's
  // first k of the item's first panel, ld from one panel to the next; a
  // panel's k group one k_stride), the rows of a that hold b.tokens token
  // rows, the vectors of columns that hold b.rows weight rows. (Tokens:
  // the token tile, float, or its bfloat16 pairs: PairTile.)
  template <class Tokens, class Scalar>
  static void multiply_in_place(const Tokens& a, const InPlaceWeights<Scalar>& b,
                                accumulator_type& acc) {
    acc.rows = b.tokens < tile_m ? b.tokens : tile_m;
    const int rows = b.rows < tile_n ? b.rows : tile_n;
    const int vectors = (rows + lanes - 1) / lanes;
    const bool from_zero = base::first_write(acc);
    multiply_blocks(a, Columns<Scalar>{b.first, b.ld, lanes * panel_layout<Scalar>().k_group},
                    acc.v, acc.rows, vectors, b.depth, b.ahead, b.ahead_depth, from_zero);
    // The columns past the weights' rows, which store hands out too.
    if (from_zero && vectors * lanes < tile_n)
      for (int m = 0; m < acc.rows; ++m)
        std::memset(acc.v + m * tile_n + vectors * lanes, 0,
                    sizeof(float) * (tile_n - vectors * lanes));
  }

#ifdef KOKKOSMOE_HOST_BF16_PAIRS
  // bfloat16 weights with AVX-512 BF16: the token tile as pairs of k
  // ([m][k / 2], each 32-bit lane a row's k and k + 1; exact, the tile's
  // floats being bfloat16 values), converted once per step for all the
  // weights it meets, a pair broadcast per row and k / 2 and multiplied by
  // vdpbf16ps with a vector of the panel's pairs: per two k, one
  // instruction a block's accumulator, where floats take two.
  struct PairTile {
    alignas(64) std::uint32_t v[tile_m * tile_k / 2];  // [m][k / 2]
  };
  template <class Member, class... Pairs>
  static void mma_nt(const Member& member, const tile& a, Pairs&&... b_acc) {
    if constexpr (pairs_in_place<std::decay_t<Pairs>...>::value) {
      PairTile pairs;
      to_pair_tile(a.data(), first_of(b_acc...), pairs);
      multiply_pair_tile(pairs, b_acc...);
    } else {
      base::mma_nt(member, a, b_acc...);
    }
  }
#endif

 private:
  // What a register block prefetches into L2 as it multiplies: `bytes` of
  // each of its vectors of columns' panels (vector_stride bytes apart) from
  // `first`, its share of the weights the team reads soon
  // (InPlaceWeights::ahead), whose first block would otherwise wait for
  // memory while the others, reading the same weights from cache, leave
  // memory idle.
  struct Ahead {
    const char* first;  // null: nothing
    std::int64_t vector_stride;
    int bytes;
    Ahead from(int j) const {
      return Ahead{first ? first + j * vector_stride : nullptr, vector_stride, bytes};
    }
    Ahead share(int r) const {
      return Ahead{first ? first + std::int64_t(r) * bytes : nullptr, vector_stride, bytes};
    }
  };
  // The blocks of rows [0, rows) of a by `vectors` vectors of columns
  // (the last blocks narrower or shorter where NB or MB do not divide),
  // added to c or, from_zero, stored over it, prefetching ahead_depth k of
  // each panel from `ahead` where not null, a share each row block.
  template <class Tokens, class Scalar>
  static void multiply_blocks(const Tokens& a, const Columns<Scalar>& b, float* __restrict c,
                              int rows, int vectors, int depth, const Scalar* ahead,
                              int ahead_depth, bool from_zero) {
    const int blocks = (rows + MB - 1) / MB;
    const Ahead next{reinterpret_cast<const char*>(ahead),
                     b.vector_stride * std::int64_t(sizeof(Scalar)),
                     (ahead_depth * lanes * int(sizeof(Scalar)) + blocks - 1) / blocks};
    int j0 = 0;
    for (; j0 + NB <= vectors; j0 += NB)
      row_blocks<NB>(a, b.from(j0), c + j0 * lanes, rows, depth, next.from(j0), from_zero);
    if (j0 < vectors)
      narrow_blocks<NB - 1>(a, b.from(j0), c + j0 * lanes, rows, vectors - j0, depth, next.from(j0),
                            from_zero);
  }
  template <int N, class Tokens, class Scalar>
  static void narrow_blocks(const Tokens& a, const Columns<Scalar>& b, float* __restrict c,
                            int rows, int vectors, int depth, const Ahead& next, bool from_zero) {
    if constexpr (N > 1)
      if (vectors < N) return narrow_blocks<N - 1>(a, b, c, rows, vectors, depth, next, from_zero);
    row_blocks<N>(a, b, c, rows, depth, next, from_zero);
  }
  template <int N, class Tokens, class Scalar>
  static void row_blocks(const Tokens& a, const Columns<Scalar>& b, float* __restrict c, int rows,
                         int depth, const Ahead& next, bool from_zero) {
    int m0 = 0, r = 0;
    for (; m0 + MB <= rows; m0 += MB, ++r)
      multiply_block<MB, N>(a, m0, b, c + m0 * tile_n, depth, next.share(r), from_zero);
    if (m0 < rows)
      short_block<MB - 1, N>(a, m0, b, c + m0 * tile_n, rows - m0, depth, next.share(r), from_zero);
  }
  template <int M, int N, class Tokens, class Scalar>
  static void short_block(const Tokens& a, int m0, const Columns<Scalar>& b, float* __restrict c,
                          int rows, int depth, const Ahead& next, bool from_zero) {
    if constexpr (M > 1)
      if (rows < M) return short_block<M - 1, N>(a, m0, b, c, rows, depth, next, from_zero);
    multiply_block<M, N>(a, m0, b, c, depth, next, from_zero);
  }

  template <int M, int N>
  static void zero_block(host_vector::vfloat (&block)[M][N]) {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) block[i][j] = host_vector::broadcast(0.0f);
  }
  template <int M, int N>
  static void load_block(host_vector::vfloat (&block)[M][N], const float* __restrict c) {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) block[i][j] = host_vector::load(c + i * tile_n + j * lanes);
  }
  template <int M, int N>
  static void store_block(const host_vector::vfloat (&block)[M][N], float* __restrict c) {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) host_vector::store(c + i * tile_n + j * lanes, block[i][j]);
  }
  // A block's steps over k: float token values and weights (16-bit ones
  // widened), one k a multiply-add.
  template <class Scalar>
  struct FloatSteps {
    using weights = host_vector::vfloat;
    using token = float;
    static constexpr int row_stride = tile_k;
    static int steps(int depth) { return depth; }
    static weights load(const Scalar* p) { return host_vector::widen(p); }
    static host_vector::vfloat multiply_add(weights w, token t, host_vector::vfloat acc) {
      return host_vector::fma(w, host_vector::broadcast(t), acc);
    }
  };
  // Rows [m0, m0 + M) of the token tile (its values `row`, Steps::row_stride
  // apart) by N vectors of columns of b, into c (row m0, the block's first
  // column), over `depth` k. Not inlined: inlined into its callers, GCC kept
  // some of the AVX2 build's 12 accumulators on the stack in the loop.
  template <int M, int N, class Steps, bool Prefetch, class Scalar>
  __attribute__((noinline)) static void multiply_block(const typename Steps::token* __restrict row,
                                                       const Columns<Scalar>& b,
                                                       float* __restrict c, int depth,
                                                       const Ahead& next, bool from_zero) {
    host_vector::vfloat block[M][N];
    if (from_zero) zero_block(block);
    else load_block(block, c);
    const Scalar* col[N];
#pragma GCC unroll 4
    for (int j = 0; j < N; ++j) col[j] = b.first + j * b.vector_stride;
    const int steps = Steps::steps(depth);
    // The share spread over the steps: a line of each vector's every
    // `every` steps (a prefetch per vector and step, many to a line where
    // a step reads less of it: bf16 widened, a share of many blocks, took
    // 1.06-1.14x the time at Mixtral-8x7B / 16 with AVX2 on 2 threads).
    const char* ahead = next.first;
    const int every = next.bytes > 0 && 64 * steps > next.bytes ? 64 * steps / next.bytes : 1;
    int countdown = 1;
    for (int k = 0; k < steps; ++k) {
      typename Steps::weights w[N];
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) w[j] = Steps::load(col[j] + k * b.k_stride);
      if constexpr (Prefetch)
        if (--countdown == 0) {
#pragma GCC unroll 4
          for (int j = 0; j < N; ++j) prefetch_weights<false>(ahead + j * next.vector_stride);
          ahead += 64;
          countdown = every;
        }
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        const typename Steps::token t = row[i * Steps::row_stride + k];
#pragma GCC unroll 4
        for (int j = 0; j < N; ++j) block[i][j] = Steps::multiply_add(w[j], t, block[i][j]);
      }
    }
    store_block(block, c);
  }
  // A block of the float token tile, or of its pairs; prefetching where
  // `next` has weights.
  template <int M, int N, class Steps, class Token, class Scalar>
  static void block_of(const Token* row, const Columns<Scalar>& b, float* c, int depth,
                       const Ahead& next, bool from_zero) {
    if (next.first) multiply_block<M, N, Steps, true>(row, b, c, depth, next, from_zero);
    else multiply_block<M, N, Steps, false>(row, b, c, depth, next, from_zero);
  }
  template <int M, int N, class Scalar>
  static void multiply_block(const float* a, int m0, const Columns<Scalar>& b, float* c, int depth,
                             const Ahead& next, bool from_zero) {
    block_of<M, N, FloatSteps<Scalar>>(a + m0 * tile_k, b, c, depth, next, from_zero);
  }

#ifdef KOKKOSMOE_HOST_BF16_PAIRS
  // Whether every (weights, accumulator) pair takes bfloat16 weights in place.
  template <class... Pairs>
  struct pairs_in_place : std::true_type {};
  template <class B, class Acc, class... Rest>
  struct pairs_in_place<B, Acc, Rest...>
      : std::integral_constant<bool, std::is_same<B, InPlaceWeights<bfloat16>>::value &&
                                         pairs_in_place<Rest...>::value> {};
  template <class... Rest>
  static const InPlaceWeights<bfloat16>& first_of(const InPlaceWeights<bfloat16>& b,
                                                  const Rest&...) {
    return b;
  }
  static void multiply_pair_tile(const PairTile&) {}
  template <class Acc, class... Rest>
  static void multiply_pair_tile(const PairTile& a, const InPlaceWeights<bfloat16>& b, Acc& acc,
                                 Rest&&... rest) {
    multiply_in_place(a, b, acc);
    multiply_pair_tile(a, rest...);
  }
  // The step's k of the rows that hold b.tokens token rows, as pairs (the
  // tile is zero past the step's depth: an odd depth's last k meets a zero).
  static void to_pair_tile(const float* __restrict a, const InPlaceWeights<bfloat16>& b,
                           PairTile& p) {
    using namespace host_vector;
    const int rows = b.tokens < tile_m ? b.tokens : tile_m;
    for (int m = 0; m < rows; ++m)
      for (int k = 0; k < b.depth; k += 2 * lanes) {
        const vpairs v = to_pairs(a + m * tile_k + k);
        std::memcpy(p.v + m * (tile_k / 2) + k / 2, &v, sizeof v);
      }
  }
  // The same blocks from the token tile's pairs, two k a multiply-add (b's
  // k_stride: the 2 lanes bfloat16 of a panel's pair of k).
  struct PairSteps {
    using weights = host_vector::vpairs;
    using token = std::uint32_t;
    static constexpr int row_stride = tile_k / 2;
    static int steps(int depth) { return (depth + 1) / 2; }
    static weights load(const bfloat16* p) { return host_vector::load_pairs(p); }
    static host_vector::vfloat multiply_add(weights w, token t, host_vector::vfloat acc) {
      return host_vector::dot_pairs(w, host_vector::broadcast_pair(t), acc);
    }
  };
  template <int M, int N>
  static void multiply_block(const PairTile& a, int m0, const Columns<bfloat16>& b, float* c,
                             int depth, const Ahead& next, bool from_zero) {
    block_of<M, N, PairSteps>(a.v + m0 * (tile_k / 2), b, c, depth, next, from_zero);
  }
#endif
};

template <class ExecutionSpace, int TileN>
struct HostDotFragment
    : HostFragmentBase<HostDotFragment<ExecutionSpace, TileN>, ExecutionSpace, 4096, 1> {
  // K steps of 4096: each weight row is read in runs of 8 or 16 KiB (whole
  // rows where K is at most 4096), which the hardware prefetcher follows
  // once it has found them (with runs of 256, 16 rows at a time, one core
  // read at about half the rate of one sequential stream); each register
  // block's rows are prefetched by software while the block before it
  // multiplies (only their first 512 B or 2 KiB: slower than none). The token
  // tile, 8 x 4096 floats, exceeds the host backends' 32 KiB of level-0
  // scratch: level 1.
  using base = HostFragmentBase<HostDotFragment, ExecutionSpace, 4096, 1>;
  using typename base::tile;
  using vfloat = host_vector::vfloat;
  static constexpr int tile_m = 8, tile_n = TileN, tile_k = base::tile_k;
  static constexpr bool k_contiguous = true;
  static constexpr int lanes = host_vector::lanes;
  // Rows per register block of M token rows: M x 4 sums up to 4 rows,
  // M x 2 past (16 sums, M token vectors and the weights in 32 registers).
  // With 16 registers (x86 without AVX-512) M x 4 up to 3 rows: at 4, GCC
  // kept sums on the stack in the loop, and the loop alone took weights at
  // half the rate of M x 2 in fp32, 0.77 of it in bf16 (AVX2 on Zen 3,
  // Bench_HostFragmentLoops.cpp).
  template <int M>
  static constexpr int block_of = M <= (host_vector::registers >= 32 ? 4 : 3) ? 4 : 2;
  static_assert(tile_n % 4 == 0 && tile_k % (2 * lanes) == 0, "whole register blocks");
  // Each output's sum as a vector of partial sums over k (each lane a share
  // of the k), added up once, when stored.
  struct accumulator_type {
    vfloat v[tile_m * tile_n];  // [m][n]
    // The rows multiplied in place (InPlaceWeights::tokens); the others
    // meet token rows that were not loaded, and are not stored.
    int rows = tile_m;
    bool zero = true;  // v zero, not written yet: the first step clears its rows
  };
  static int rows_of(const accumulator_type& acc) { return acc.rows; }

  static float* element(const tile& t, int r, int c) { return t.data() + r * tile_k + c; }
  // R columns of row m, each output's partial sums added up.
  template <int R>
  static ColumnRun<R> run(const accumulator_type& acc, int m, int n) {
    ColumnRun<R> out;
    for (int i = 0; i < R; ++i) out.v[i] = host_vector::sum(acc.v[m * tile_n + n + i]);
    return out;
  }

  // Weights are multiplied where they lie (InPlaceWeights): each of a
  // tile's weight rows streams from memory once, straight into the
  // multiplies (a copy into scratch would be a second pass over the bytes
  // decode is bound by), and 16-bit weights widen in registers.
  static constexpr bool weights_in_place = true;

  // c += a b^T, b read in place, over the b.rows weight rows, the b.tokens
  // token rows that are stored and the b.depth k of the step (zeros in a
  // tile past them).
  template <class Scalar>
  static void multiply_in_place(const float* __restrict a, const InPlaceWeights<Scalar>& b,
                                accumulator_type& acc) {
    static_assert(tile_m == 8, "one case per row count");
    acc.rows = b.tokens < tile_m ? b.tokens : tile_m;
    vfloat* __restrict c = acc.v;
    if (base::first_write(acc))
      std::memset(c, 0, sizeof(vfloat) * acc.rows * tile_n);  // rows stored
    switch (acc.rows) {
      case 1: return multiply_tokens<1>(a, b, c);
      case 2: return multiply_tokens<2>(a, b, c);
      case 3: return multiply_tokens<3>(a, b, c);
      case 4: return multiply_tokens<4>(a, b, c);
      case 5: return multiply_tokens<5>(a, b, c);
      case 6: return multiply_tokens<6>(a, b, c);
      case 7: return multiply_tokens<7>(a, b, c);
      default: return multiply_tokens<8>(a, b, c);
    }
  }
  // c[m][n] += a[m][k] b[n][k] over the tile from scratch (weights the
  // loader converted: e4m3), as multiply_in_place sums them.
  static void multiply(const float* __restrict a, const float* __restrict b,
                       accumulator_type& acc) {
    base::cleared_if_unwritten(acc);
    multiply_rows<tile_m>(Widened<float>{a},
                          InPlaceWeights<float>{b, tile_k, tile_n, tile_k, tile_m}, acc.v);
  }

 private:
  // The operands of one chunk of k as the multiplies take them. Widened:
  // float products, the weights widened to float, `lanes` k a chunk.
  template <class Scalar>
  struct Widened {
    static constexpr int chunk = lanes;
    const float* a;  // the token tile
    vfloat tokens(int m, int k) const { return host_vector::load(a + m * tile_k + k); }
    static vfloat weights(const Scalar* row, int k) { return host_vector::widen(row + k); }
    static vfloat weights_first(const Scalar* row, int k, int n) {
      return host_vector::widen_first(row + k, n);
    }
    static vfloat multiply(vfloat t, vfloat w, vfloat sum) { return host_vector::fma(t, w, sum); }
  };
#ifdef KOKKOSMOE_HOST_BF16_PAIRS
  // bfloat16 weights times bfloat16 tokens (exact in the float tile) as
  // pairs of k, 2 lanes k a chunk: half the instructions, no widening.
  struct Pairs {
    static constexpr int chunk = 2 * lanes;
    const host_vector::vpairs* a;  // the token rows' chunks, [m][tile_k / chunk]
    host_vector::vpairs tokens(int m, int k) const { return a[m * (tile_k / chunk) + k / chunk]; }
    static host_vector::vpairs weights(const bfloat16* row, int k) {
      return host_vector::load_pairs(row + k);
    }
    static host_vector::vpairs weights_first(const bfloat16* row, int k, int n) {
      return host_vector::load_pairs_first(row + k, n);
    }
    static vfloat multiply(host_vector::vpairs t, host_vector::vpairs w, vfloat sum) {
      return host_vector::dot_pairs(t, w, sum);
    }
  };
#endif

  // Token rows from which bf16 weights multiply as pairs: one row's
  // widened multiply-adds read the weights faster (one token 1.1-1.2x,
  // AVX-512 BF16 on Zen 4), as many rows' take twice the instructions.
  static constexpr int pairs_from = 2;
  // The first M token rows of a as the weights' operands take them.
  template <int M, class Scalar>
  static void multiply_tokens(const float* __restrict a, const InPlaceWeights<Scalar>& b,
                              vfloat* __restrict c) {
#ifdef KOKKOSMOE_HOST_BF16_PAIRS
    if constexpr (std::is_same<Scalar, bfloat16>::value && M >= pairs_from) {
      constexpr int chunk = Pairs::chunk, chunks = tile_k / chunk;
      host_vector::vpairs pairs[M * chunks];
      const int used = (b.depth + chunk - 1) / chunk;
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m)
        for (int q = 0; q < used; ++q)
          pairs[m * chunks + q] = host_vector::to_pairs(a + m * tile_k + q * chunk);
      return multiply_rows<M>(Pairs{pairs}, b, c);
    }
#endif
    multiply_rows<M>(Widened<Scalar>{a}, b, c);
  }

  // Register blocks of block_of<M> weight rows by the M token rows: a few
  // weight rows stream at a time. One token row (whose loads are the
  // weights') takes each block over the whole step; two or more take
  // HostTuning::decode_depth k (a multiple of 512) at a time before the
  // next block: at 1024 the rows' k (up to 32 KiB of floats) stay in L1
  // over the tile's blocks, where over the step's 4096 each block reads them
  // from L2. Which is faster depends on the CPU (on Zen 5, 1024; on Zen 4,
  // 4096), as does the prefetch hint, both read once a step.
  template <int M, class Operands, class Scalar>
  static void multiply_rows(const Operands& op, const InPlaceWeights<Scalar>& b,
                            vfloat* __restrict c) {
    constexpr int NB = block_of<M>, chunk = Operands::chunk;
    static_assert(512 % chunk == 0, "whole chunks but for the step's last");
    const HostTuning& tuning = host_tuning();
    const int depth = M >= 2 ? tuning.decode_depth : b.depth;
    const auto blocks = [&](auto non_temporal) {
      for (int k0 = 0; k0 < b.depth; k0 += depth)
        for (int n0 = 0; n0 < rows_of(b); n0 += NB)
          multiply_block<M, NB, decltype(non_temporal)::value>(op, b, c, n0, k0, depth);
    };
    if (tuning.decode_prefetch == HostWeightPrefetch::non_temporal) blocks(std::true_type{});
    else blocks(std::false_type{});
  }
  // The weight rows of the tile.
  template <class Scalar>
  static int rows_of(const InPlaceWeights<Scalar>& b) {
    return b.rows < tile_n ? b.rows : tile_n;
  }
  // One register block: rows [n0, n0 + NB) over k in [k0, k1) (`depth`
  // from k0, to the step's last k), in whole chunks up to `end` and the
  // step's last k past it, the rows of the block after it prefetched.
  template <int M, int NB, bool NonTemporal, class Operands, class Scalar>
  static void multiply_block(const Operands& op, const InPlaceWeights<Scalar>& b,
                             vfloat* __restrict c, int n0, int k0, int depth) {
    constexpr int chunk = Operands::chunk;
    using operand = decltype(Operands::weights(b.first, 0));
    const int rows = rows_of(b);
    const int k1 = b.depth - k0 < depth ? b.depth : k0 + depth;
    const int whole = b.depth / chunk * chunk, end = k1 < whole ? k1 : whole;
    const Scalar* row[NB];  // rows past b.rows read the last one (never stored)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) row[j] = b.first + (n0 + j < b.rows ? n0 + j : b.rows - 1) * b.ld;
    vfloat sums[M][NB];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) sums[m][j] = c[m * tile_n + n0 + j];
    const auto step = [&](int k, const operand(&weights)[NB]) {
      operand tokens[M];
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m) tokens[m] = op.tokens(m, k);
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m)
#pragma GCC unroll 4
        for (int j = 0; j < NB; ++j)
          sums[m][j] = Operands::multiply(tokens[m], weights[j], sums[m][j]);
    };
    // The next block's rows, NB rows on (past the tile's last block: its
    // first block's next k, or after the step's last k the rows after it,
    // the next tile of the same weights), prefetched as this block reads
    // its own: each block starts NB new streams,
    // whose first lines the hardware prefetcher would leave to wait for
    // memory (a prefetch is a hint: rows past the weights do not fault).
    // One prefetch per vector of weights, not per 64-byte line as the
    // panel fragment's: per line was 1.2x slower at one bf16 token with
    // AVX2, whose vector is a quarter of a line.
    const Scalar* ahead[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
      ahead[j] = n0 + NB >= rows && k1 < b.depth ? b.first + j * b.ld + depth : row[j] + NB * b.ld;
    for (int k = k0; k < end; k += chunk) {
      operand weights[NB];
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) weights[j] = Operands::weights(row[j], k);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) prefetch_weights<NonTemporal>(ahead[j] + k);
      step(k, weights);
    }
    if (end < k1) {
      operand weights[NB];
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) weights[j] = Operands::weights_first(row[j], end, k1 - end);
      step(end, weights);
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) c[m * tile_n + n0 + j] = sums[m][j];
  }
};

// The host spaces take these instead of the portable fragment: weight tiles
// of 64 columns for gate/up (gate and up: 128 rows of weights to a token
// tile; 128 columns each took 1.02-1.08x the time at prefill) and 128 for
// down, the same weights per token tile; token tiles of
// 32 rows (large), 16 (medium: experts of fewer rows, whose 32-row tiles
// would be half zeros) and 8 for decode (small), whose weight tiles are 64
// and 128 rows (a team's fixed costs, loading its token tile and adding up
// its sums, spread over more weights: 1.0-1.16x faster than 16 and 32 rows
// at one and 8 tokens, on one thread).
template <class ExecutionSpace, TileSize Size>
struct DefaultFragment<ExecutionSpace, Size,
                       std::enable_if_t<Kokkos::SpaceAccessibility<
                           Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible>> {
  using type =
      std::conditional_t<Size == TileSize::small, HostDotFragment<ExecutionSpace, 64>,
                         HostPanelFragment<ExecutionSpace, Size == TileSize::medium ? 16 : 32, 64>>;
};
template <class ExecutionSpace, class Scalar, TileSize Size>
struct DefaultDownFragment<
    ExecutionSpace, Scalar, Size,
    std::enable_if_t<Kokkos::SpaceAccessibility<
        Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible>> {
  using type = std::conditional_t<
      Size == TileSize::small, HostDotFragment<ExecutionSpace, 128>,
      HostPanelFragment<ExecutionSpace, Size == TileSize::medium ? 16 : 32, 128>>;
};

// Tokens per expert below which a batch takes the decode shape: one tile of
// eight rows per expert, its weights streamed once (which pays while rows
// are few; panel tiles reuse each weight over more rows: at 16 rows per
// expert, DeepSeek-V3 / 16 with 512 tokens on one thread, the decode shape
// took 2.4x the time of 16-row panel tiles in fp32, 1.5x in bf16); 16-row
// panel tiles below 32.
template <class ExecutionSpace>
struct TileCrossovers<ExecutionSpace,
                      std::enable_if_t<Kokkos::SpaceAccessibility<
                          Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible>> {
  static constexpr std::int64_t small_tile_rows_below = 8;
  static constexpr std::int64_t large_tile_rows_from = 32;
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif  // host-only builds

#endif
