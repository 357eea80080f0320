// SPDX-License-Identifier: BSD-3-Clause
// Operand loading of the expert kernels: a tile of rows of a row-major
// source (x's gathered rows, h, weights), BK deep, into a fragment's scratch
// tile in its layout and operand type.
#ifndef KOKKOSMOE_EXPERTMLP_OPERANDS_HPP
#define KOKKOSMOE_EXPERTMLP_OPERANDS_HPP

#include "KokkosMoE_ExpertMLP_WeightRows.hpp"
#include "KokkosMoE_FragmentContract.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

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
// Block-scaled weights (Scalar e4m3, row_at giving BlockScaledRows) are
// read 16 elements (16 bytes) per chunk and stored converted, each element
// times its block's scale, by plain stores (never asynchronous).
//
// Thread t copies chunk column t % C of rows t / C, t / C + P, ... (C
// chunks per row, P = team size / C) when C divides the team: the column
// stays fixed and each next row is one add away, so a K step costs a few
// instructions per chunk (index arithmetic per chunk would be most of the
// prefill kernel's instructions).
// Whether a fragment dequantises 16 e4m3 values itself (optional:
// KokkosMoE_FragmentContract.hpp).
template <class Frag, class = void>
struct has_dequantize16 : std::false_type {};
template <class Frag>
struct has_dequantize16<Frag, std::void_t<decltype(&Frag::dequantize16)>> : std::true_type {};
// Whether a fragment has block-scaled weights staged (stages_block_scaled).
template <class Frag>
using stages_block_scaled_flag = std::integral_constant<bool, Frag::stages_block_scaled>;
template <class Frag>
constexpr bool stages_block_scaled = optional_flag<stages_block_scaled_flag, Frag>();

template <class Scalar, class Frag>
struct OperandLoader {
  using frag = Frag;
  using tile = typename frag::tile;
  static constexpr int BK = frag::tile_k;

  // The threads that issue the copies: the whole team, or the fragment's
  // producer warps (frag::producer_threads, numbered from 0 here).
  struct Loader {
    int rank, threads;
  };
  static constexpr int loader_threads = frag::producer_threads > 0 ? frag::producer_threads
                                                                   : frag::team_threads;

  static constexpr bool dequantizes = is_block_scaled<Scalar>::value;
  static constexpr int V =
      (dequantizes ||
       (std::is_same<typename frag::operand_type, Scalar>::value && frag::k_contiguous)) &&
              (BK * sizeof(Scalar)) % 16 == 0
          ? 16 / sizeof(Scalar)
          : 1;
  static constexpr int C = BK / V;

  // One 16-byte chunk of source row `src` to elements [c, c + V) of tile
  // row r: copied as is, or dequantised (16 e4m3 values of one block).
  template <class Source>
  KOKKOS_FORCEINLINE_FUNCTION static void copy_chunk(const tile& t, int r, int c,
                                                     const Source& src) {
    if constexpr (dequantizes) {
      struct alignas(16) Chunk {
        std::uint32_t word[4];
      };
      const float scale = src.scale();
      if constexpr (has_dequantize16<frag>::value)
        if (frag::dequantize16(t, r, c, src.p, scale)) return;
      const Chunk q = *reinterpret_cast<const Chunk*>(src.p);
#pragma unroll
      for (int v = 0; v < V; ++v)
        *frag::element(t, r, c + v) = frag::to_operand(
            Scalar::to_float(std::uint8_t(q.word[v / 4] >> (8 * (v % 4)))) * scale);
    } else {
      frag::copy16(frag::element(t, r, c), src);
    }
  }

  // Whether rows of leading dimension ld starting at p are 16-byte aligned.
  KOKKOS_INLINE_FUNCTION static bool rows_aligned(const void* p, std::int64_t ld) {
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
    const auto src = row_at(r) + c;
    if (c + Count <= cols) {  // the whole run: no bound to test
      if constexpr (dequantizes) {
        // By blocks, one scale each: the conversions vectorise.
        for (int v0 = 0; v0 < Count;) {
          const int in_block = weight_block - (src.col + v0) % weight_block;
          const int end = Count - v0 < in_block ? Count : v0 + in_block;
          const float scale = (src + v0).scale();
          for (int v = v0; v < end; ++v)
            *frag::element(t, r, c + v) = frag::to_operand(Scalar::to_float(src.p[v].bits) * scale);
          v0 = end;
        }
      } else {
        for (int v = 0; v < Count; ++v) *frag::element(t, r, c + v) = frag::to_operand(src[v]);
      }
      return;
    }
    for (int v = 0; v < Count; ++v)
      *frag::element(t, r, c + v) = c + v < cols ? frag::to_operand(src[v]) : operand(0.0f);
  }

  template <class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void load(const Loader& ld, const tile& t, int rows, int cols,
                                               const RowAt& row_at, bool aligned, bool zero_rows) {
    const int height = zero_rows ? t.extent_int(0)
                                 : (rows < t.extent_int(0) ? rows : t.extent_int(0));
    const int threads = ld.threads, rank = ld.rank;
    // 16-byte copies need 16-byte aligned destinations too.
    const bool vector = V > 1 && aligned &&
                        (dequantizes ||
                         ((frag::operand_stride * sizeof(typename frag::operand_type)) % 16 == 0 &&
                          reinterpret_cast<std::uintptr_t>(t.data()) % 16 == 0));
    const auto chunk = [&](int r, int c) {
      if (vector && r < rows && c + V <= cols) copy_chunk(t, r, c, row_at(r) + c);
      else convert<V>(t, r, c, rows, cols, row_at);
    };
    if (loader_threads <= 1 && threads == 1) {
      // One thread (host backends): the fragment's own load where it has
      // one (loads_rows), else row by row, one row start each, whole rows
      // of a full K step without the bound on columns. (Not compiled into
      // fragments of a fixed team size, the GPU ones.)
      if constexpr (loads_rows<frag>)
        if (frag::load_rows(t, height, rows, cols, row_at)) return;
      if (cols == BK)
        for (int r = 0; r < height; ++r) convert<BK>(t, r, 0, rows, BK, row_at);
      else
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
    for (int j = 0; j < Height / P; ++j) copy_chunk(t, r0 + j * P, c, row_at(r0 + j * P) + c);
  }
  // load_full of the first `rows` rows only, the others left as they are (a
  // row of a meets only its own row of the product, which is not stored).
  template <int Height, class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void load_first_rows(const Loader& ld, const tile& t,
                                                          const RowAt& row_at, int rows) {
    const int rank = ld.rank, c = (rank % C) * V, r0 = rank / C;
#pragma unroll
    for (int j = 0; j < Height / P; ++j)
      if (r0 + j * P < rows) copy_chunk(t, r0 + j * P, c, row_at(r0 + j * P) + c);
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
    else load(ld, t, rows, cols, row_at, aligned, zero_rows);
  }

  // Block-scaled weights through staging tiles (fragments with
  // asynchronous copy16 and dequantize16): a full tile's raw e4m3 bytes are
  // copied like 16-bit operands, S - 1 steps ahead, into `staged` (Height x
  // BK bytes, row-major); convert_staged, once they have landed
  // (wait_copies), turns each thread's own chunks into the operand tile
  // just before the barrier that precedes their multiply, so two operand
  // tiles serve all stages. A tile that is not full is read element by
  // element then, from global memory, its rows past `rows` zeroed.
  static constexpr std::size_t staged_bytes(int rows) { return std::size_t(rows) * BK; }
  template <int Height>
  KOKKOS_INLINE_FUNCTION static constexpr bool stages_full(bool aligned, int rows, int cols) {
    return has_full_load<Height>() && aligned && rows >= Height && cols == BK;
  }
  template <int Height, class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void load_staged(const Loader& ld, std::uint8_t* staged,
                                                      int rows, int cols, const RowAt& row_at,
                                                      bool aligned) {
    if (!stages_full<Height>(aligned, rows, cols)) return;
    constexpr int full = has_full_load<Height>() ? Height : P;
    const int rank = ld.rank, c = (rank % C) * V, r0 = rank / C;
#pragma unroll
    for (int j = 0; j < full / P; ++j)
      frag::copy16(staged + std::size_t(r0 + j * P) * BK + c, (row_at(r0 + j * P) + c).p);
  }
  template <int Height, class RowAt>
  KOKKOS_FORCEINLINE_FUNCTION static void convert_staged(const Loader& ld, const tile& t,
                                                         const std::uint8_t* staged, int rows,
                                                         int cols, const RowAt& row_at,
                                                         bool aligned, float scale) {
    static_assert(weight_block % BK == 0 && weight_block % Height == 0,
                  "a staged tile lies in one scale block");
    if (!stages_full<Height>(aligned, rows, cols))
      return load(ld, t, rows, cols, row_at, aligned, true);
    constexpr int full = has_full_load<Height>() ? Height : P;
    const int rank = ld.rank, c = (rank % C) * V, r0 = rank / C;
    // One block: the tile's rows and this step share its scale.
    const float* scales = &scale;
#pragma unroll
    for (int j = 0; j < full / P; ++j) {
      const BlockScaledRow<Scalar> src{
          reinterpret_cast<const Scalar*>(staged + std::size_t(r0 + j * P) * BK + c), scales, 0};
      copy_chunk(t, r0 + j * P, c, src);
    }
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
