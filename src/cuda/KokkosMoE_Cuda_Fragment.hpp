// SPDX-License-Identifier: BSD-3-Clause
// The CUDA tensor-core fragment: 16-bit operand tiles in team scratch
// multiplied with mma.sync (m16n8k16, float accumulation in registers),
// operands read from scratch with ldmatrix; and the tile shapes and
// crossovers of CUDA builds without wgmma's shapes
// (KokkosMoE_Cuda_Wgmma_Fragment.hpp has those of sm_90a builds).
//
// A team is WarpsM x WarpsN warps over the output tile; each warp owns a
// (TileM / WarpsM) x (TileN / WarpsN) block of accumulators in registers, so
// store hands values straight from registers to the caller (no staging).
//
// Shapes whose warps own 16 full-width rows each, 64 deep, are warpgroup
// shapes: in code compiled for sm_90a, each four warps multiply their 64 rows
// with Hopper's wgmma straight from scratch (KokkosMoE_Cuda_Warpgroup.hpp),
// whose accumulators sit in the same registers as mma.sync's.
#ifndef KOKKOSMOE_CUDA_FRAGMENT_HPP
#define KOKKOSMOE_CUDA_FRAGMENT_HPP

#ifndef KOKKOSMOE_FRAGMENT_HPP
#error "include KokkosMoE_Fragment.hpp: it includes this file after the templates it specialises"
#endif

#include <Kokkos_Core.hpp>

// bf16 mma.sync needs compute capability 8.0 or newer.
#if defined(KOKKOS_ENABLE_CUDA) && \
    (defined(KOKKOS_ARCH_AMPERE80) || defined(KOKKOS_ARCH_AMPERE86) || \
     defined(KOKKOS_ARCH_AMPERE87) || defined(KOKKOS_ARCH_ADA89) || defined(KOKKOS_ARCH_HOPPER90))
#define KOKKOSMOE_ENABLE_CUDA_TENSOR_CORES

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_Cuda_Warpgroup.hpp"
#include "KokkosMoE_ColumnRun.hpp"

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// d += a b on the tensor cores: one m16n8k16 mma.sync with float
// accumulators; ptx_type names the 16-bit operand type ("bf16", "f16").
#define KOKKOSMOE_MMA_M16N8K16(ptx_type, d, a, b0, b1) \
  asm("mma.sync.aligned.m16n8k16.row.col.f32." ptx_type "." ptx_type \
      ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

template <class Scalar>
KOKKOS_INLINE_FUNCTION void mma_m16n8k16(float* d, const unsigned* a, unsigned b0, unsigned b1) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same<Scalar, bfloat16>::value) KOKKOSMOE_MMA_M16N8K16("bf16", d, a, b0, b1);
  else KOKKOSMOE_MMA_M16N8K16("f16", d, a, b0, b1);
#else
  (void)d, (void)a, (void)b0, (void)b1;
#endif
}
#undef KOKKOSMOE_MMA_M16N8K16

template <class Scalar, int TileM, int TileN, int TileK, int WarpsM, int WarpsN, int Stages,
          int MinTeams, int InFlight = 0>
struct CudaTensorCoreFragment {
  using operand_type = Scalar;
  using scratch_space = Kokkos::Cuda::scratch_memory_space;
  using tile = Kokkos::View<Scalar**, Kokkos::LayoutRight, scratch_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  static constexpr int tile_m = TileM, tile_n = TileN, tile_k = TileK;
  // Depth of the cp.async pipeline (all stages of a kernel's operand tiles
  // must fit Kokkos 3.4's 40 KiB of team scratch).
  static constexpr int stages = Stages;
  static constexpr int warps_m = WarpsM, warps_n = WarpsN;
  static constexpr int warp_m = tile_m / warps_m, warp_n = tile_n / warps_n;
  static constexpr int frags_m = warp_m / 16, frags_n = warp_n / 8;
  static_assert(warp_m % 16 == 0 && warp_n % 16 == 0 && tile_k % 16 == 0,
                "a warp owns whole 16 x 16 blocks; K steps of 16");

  // Rows are not padded but swizzled: 16-byte chunk c of row r sits at chunk
  // c ^ swizzle(r), so the 8 rows one ldmatrix reads fall in 8 different
  // bank groups. Unpadded tiles let the large shape keep two stages of the
  // gate/up kernel's three operands (32 KiB) under the 40 KiB cap.
  static constexpr int operand_stride = tile_k;
  static constexpr bool k_contiguous = true;  // 8 consecutive k in a 16-byte chunk
  static constexpr int chunks = tile_k / 8;
  // Warpgroup shapes: tile lines are the 128-byte lines of wgmma's swizzle
  // (which is ours at 8 chunks per line), in 1024-byte aligned tiles.
  static constexpr bool warpgroup_shape = warps_n == 1 && warp_m == 16 && warps_m % 4 == 0 &&
                                          tile_k * sizeof(Scalar) == warpgroup::line_bytes &&
                                          (tile_n == 64 || tile_n == 128 || tile_n == 256);
  static constexpr int alignment = warpgroup_shape ? warpgroup::atom_bytes : 128;
  // Batches of multiplies mma_nt leaves running (0 or, for warpgroup shapes,
  // 1: the asynchronous wgmma then overlaps the next K step's waits and
  // barrier, at the cost of one stage of the copy pipeline); finish waits
  // for them.
  static constexpr int mma_in_flight = InFlight;
  static_assert(InFlight == 0 || (InFlight == 1 && warpgroup_shape), "only wgmma runs behind");

  // Threads per team, known at compile time (the kernels' full-tile loads
  // unroll over it); 0 in a fragment whose team size is chosen at run time.
  static constexpr int team_threads = 32 * warps_m * warps_n;
  static int team_size() { return team_threads; }
  // At least MinTeams resident teams per multiprocessor: caps registers.
  static constexpr int min_teams = MinTeams;
  using launch_bounds = Kokkos::LaunchBounds<team_threads, MinTeams>;
  // Every warp copies and multiplies; one team per work item (see
  // CudaWarpSpecialized for the other way).
  static constexpr int producer_threads = 0;
  static int resident_teams() { return 0; }
  // Split-K aims at this many teams: several waves of the ~4-8 resident
  // teams on each of ~132 multiprocessors, so the last wave's idle share
  // stays small.
  static std::int64_t split_k_teams() { return 4096; }

  struct accumulator_type {
    float c[frags_m][frags_n][4];
  };

  KOKKOS_INLINE_FUNCTION static operand_type to_operand(Scalar v) { return v; }
  // A dequantised weight (block-scaled storage types), rounded to Scalar.
  KOKKOS_INLINE_FUNCTION static operand_type to_operand(float v) { return Scalar(v); }

  KOKKOS_INLINE_FUNCTION static int swizzle(int r) {
    return chunks >= 8 ? (r & 7) : (r / (8 / chunks)) & (chunks - 1);
  }
  // Where element (r, c) of an operand tile lives.
  KOKKOS_INLINE_FUNCTION static Scalar* element(const tile& t, int r, int c) {
    return t.data() + r * tile_k + (((c >> 3) ^ swizzle(r)) << 3) + (c & 7);
  }

  // 16 e4m3 values of one block (16 bytes at src) times `scale`, rounded
  // to Scalar, into elements [c, c + 16) of row r (two 16-byte chunks).
  // Returns false where the instructions are missing (the loader then
  // converts element by element). Decode streams weights at the memory's
  // rate, so the conversion must take few instructions, and few of the
  // conversion pipe's (16 a clock per multiprocessor on Hopper: converting
  // each value through f16 and f32 takes longer than reading it):
  // - bf16 (Hopper): one byte permute puts two codes at the top of the two
  //   halves; shifted right by 4 (the sign kept) they are bf16 bit patterns
  //   of the values times 2^-120, subnormals included; two packed bf16
  //   multiplies, by 2^64 (exact) and by the scale times 2^56 (rounded to
  //   bf16 once per chunk), finish them;
  // - fp16 (Ada and later): the two-code conversion to f16 and the scale in
  //   float.
  KOKKOS_INLINE_FUNCTION static bool dequantize16(const tile& t, int r, int c, const void* src,
                                                  float scale) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (std::is_same<Scalar, bfloat16>::value) {
      const uint4 q = *static_cast<const uint4*>(src);
      const unsigned in[4] = {q.x, q.y, q.z, q.w};
      unsigned s2;
      asm("{.reg .b16 h;\n cvt.rn.bf16.f32 h, %1;\n mov.b32 %0, {h, h};}"
          : "=r"(s2)
          : "f"(scale * 72057594037927936.0f));  // 2^56
      unsigned out[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        unsigned y;
        // Codes 2k and 2k + 1 of the word to bytes 1 and 3.
        asm("prmt.b32 %0, %1, 0, %2;" : "=r"(y) : "r"(in[i / 2]), "r"(i % 2 ? 0x3424u : 0x1404u));
        y = ((y >> 4) & 0x07f007f0u) | (y & 0x80008000u);
        asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(y) : "r"(y), "r"(0x5f805f80u));  // 2^64
        asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(out[i]) : "r"(y), "r"(s2));
      }
      *reinterpret_cast<uint4*>(element(t, r, c)) = make_uint4(out[0], out[1], out[2], out[3]);
      *reinterpret_cast<uint4*>(element(t, r, c + 8)) = make_uint4(out[4], out[5], out[6], out[7]);
      return true;
    }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    const uint4 q = *static_cast<const uint4*>(src);
    const unsigned in[4] = {q.x, q.y, q.z, q.w};
    unsigned out[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const unsigned short pair = static_cast<unsigned short>(in[i / 2] >> (16 * (i % 2)));
      unsigned h2;
      float lo, hi;
      asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(pair));
      asm("{.reg .f16 a, b;\n mov.b32 {a, b}, %2;\n cvt.f32.f16 %0, a;\n cvt.f32.f16 %1, b;}"
          : "=f"(lo), "=f"(hi)
          : "r"(h2));
      lo *= scale, hi *= scale;
      if constexpr (std::is_same<Scalar, bfloat16>::value)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out[i]) : "f"(hi), "f"(lo));
      else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(out[i]) : "f"(hi), "f"(lo));
    }
    *reinterpret_cast<uint4*>(element(t, r, c)) = make_uint4(out[0], out[1], out[2], out[3]);
    *reinterpret_cast<uint4*>(element(t, r, c + 8)) = make_uint4(out[4], out[5], out[6], out[7]);
    return true;
#else
    (void)t, (void)r, (void)c, (void)src, (void)scale;
    return false;
#endif
  }

  // Global to scratch without passing through registers (cp.async, sm_80+):
  // the copies of the next K step overlap the multiplication of this one.
  KOKKOS_INLINE_FUNCTION static void copy16(void* dst, const void* src) {
#ifdef __CUDA_ARCH__
    const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(src) : "memory");
#else
    (void)dst, (void)src;
#endif
  }
  KOKKOS_INLINE_FUNCTION static void commit_copies() {
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
  }
  // Waits until at most `pending` committed groups of this thread are in flight.
  // (Where wgmma reads the tiles, also makes this thread's scratch writes
  // visible to it, ahead of the team barrier.)
  template <int pending>
  KOKKOS_INLINE_FUNCTION static void wait_copies() {
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    if constexpr (warpgroup_shape) warpgroup::fence_shared_for_async();
#endif
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION static tile operand(const Member& member, int rows) {
    void* p = member.team_scratch(0).get_shmem_aligned(
        std::size_t(rows) * operand_stride * sizeof(Scalar), alignment);
    return tile(static_cast<Scalar*>(p), rows, operand_stride);
  }
  template <class Member>
  KOKKOS_INLINE_FUNCTION static accumulator_type accumulator(const Member&) {
    return accumulator_type{};
  }
  static std::size_t operand_bytes(int rows) {
    return std::size_t(rows) * operand_stride * sizeof(Scalar) + alignment;
  }
  static std::size_t accumulator_bytes() { return 0; }  // registers only

  template <class Member>
  KOKKOS_INLINE_FUNCTION static void zero(const Member&, accumulator_type& acc) {
#pragma unroll
    for (int i = 0; i < frags_m; ++i)
#pragma unroll
      for (int j = 0; j < frags_n; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc.c[i][j][e] = 0.0f;
  }

  // acc += a b^T for one or two (b, acc) pairs sharing the a fragments.
  template <class Member, class... Pairs>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const tile& a, Pairs&&... b_acc) {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    if constexpr (warpgroup_shape) {
      warpgroup::TileMma<CudaTensorCoreFragment>::mma_nt(member, a, b_acc...);
      return;
    }
#endif
#ifdef __CUDA_ARCH__
    const int warp = member.team_rank() / 32, lane = member.team_rank() % 32;
    const int row0 = (warp / warps_n) * warp_m;
#pragma unroll
    for (int kk = 0; kk < tile_k; kk += 16) {
      // Four 8 x 8 blocks per 16 x 16 fragment: lanes 0-15 name rows 0-15 at
      // column kk, lanes 16-31 the same rows at kk + 8 (the a0..a3 order).
      unsigned fa[frags_m][4];
#pragma unroll
      for (int i = 0; i < frags_m; ++i)
        load_matrix(fa[i], element(a, row0 + i * 16 + lane % 16, kk + (lane / 16) * 8));
      multiply(warp, lane, kk, fa, b_acc...);
    }
#else
    (void)member, (void)a;
#endif
  }

  // Waits for the multiplies mma_nt left running: the accumulators are then
  // final (call before store).
  template <class Member, class... Acc>
  KOKKOS_INLINE_FUNCTION static void finish(const Member&, Acc&... acc) {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    if constexpr (warpgroup_shape) {
      warpgroup::wait<0>();
      (warpgroup::TileMma<CudaTensorCoreFragment>::pin(acc), ...);
    }
#else
    ((void)acc, ...);
#endif
  }

  // Calls f(m, n, runs...) with a ColumnRun of each accumulator, of the
  // pair of columns (n, n + 1) of row m this thread holds (Width 2 or more)
  // or of one element (Width 1: the split-K partial sums of gate/up, stored
  // one float at a time).
  template <int Width, class Member, class F, class... Acc>
  KOKKOS_INLINE_FUNCTION static void store(const Member& member, const F& f, Acc&... acc) {
    static_assert(Width >= 1, "runs of at least one value");
    const int warp = member.team_rank() / 32, lane = member.team_rank() % 32;
    const int row0 = (warp / warps_n) * warp_m + lane / 4;
    const int col0 = (warp % warps_n) * warp_n + (lane % 4) * 2;
    // Accumulator element e of an m16n8 block: row lane/4 (+ 8 for e >= 2),
    // column 2 (lane % 4) + e % 2.
#pragma unroll
    for (int i = 0; i < frags_m; ++i)
#pragma unroll
      for (int j = 0; j < frags_n; ++j)
#pragma unroll
        for (int e = 0; e < 4; e += (Width >= 2 ? 2 : 1)) {
          if constexpr (Width >= 2)
            f(row0 + i * 16 + (e / 2) * 8, col0 + j * 8,
              ColumnRun<2>{{acc.c[i][j][e], acc.c[i][j][e + 1]}}...);
          else
            f(row0 + i * 16 + (e / 2) * 8, col0 + j * 8 + e % 2, ColumnRun<1>{{acc.c[i][j][e]}}...);
        }
  }

 private:
  KOKKOS_INLINE_FUNCTION static void load_matrix(unsigned* r, const Scalar* p) {
#ifdef __CUDA_ARCH__
    const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared)
                 : "memory");
#else
    (void)r, (void)p;
#endif
  }

  template <class FragA>
  KOKKOS_INLINE_FUNCTION static void multiply(int, int, int, const FragA&) {}

  template <class FragA, class... Rest>
  KOKKOS_INLINE_FUNCTION static void multiply(int warp, int lane, int kk, const FragA& fa,
                                              const tile& b, accumulator_type& acc,
                                              Rest&&... rest) {
    const int col0 = (warp % warps_n) * warp_n;
#pragma unroll
    for (int j = 0; j < frags_n; j += 2) {
      // b holds [n][k] rows, the "col" operand of mma as it is. Blocks:
      // (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15),
      // that is b0 b1 of n-block j and b0 b1 of n-block j + 1.
      unsigned fb[4];
      load_matrix(fb,
                  element(b, col0 + j * 8 + lane % 8 + (lane / 16) * 8, kk + ((lane / 8) % 2) * 8));
#pragma unroll
      for (int i = 0; i < frags_m; ++i) {
        mma_m16n8k16<Scalar>(acc.c[i][j], fa[i], fb[0], fb[1]);
        mma_m16n8k16<Scalar>(acc.c[i][j + 1], fa[i], fb[2], fb[3]);
      }
    }
    multiply(warp, lane, kk, fa, rest...);
  }
};

// The fragments of the 16-bit types on CUDA, by the build's table: below,
// or in sm_90a builds with large team scratch the warpgroup shapes'
// (KokkosMoE_Cuda_Wgmma_Fragment.hpp). Looked up once a kernel instantiates
// a shape, after both files.
template <class Scalar, TileSize Size>
struct CudaFragmentOf;
template <TileSize Size>
struct Fragment<Kokkos::Cuda, bfloat16, Size> : CudaFragmentOf<bfloat16, Size>::gate_up {};
template <TileSize Size>
struct Fragment<Kokkos::Cuda, float16, Size> : CudaFragmentOf<float16, Size>::gate_up {};
template <TileSize Size>
struct DownFragment<Kokkos::Cuda, bfloat16, Size> : CudaFragmentOf<bfloat16, Size>::down {};
template <TileSize Size>
struct DownFragment<Kokkos::Cuda, float16, Size> : CudaFragmentOf<float16, Size>::down {};
// e4m3 weights are dequantised to bf16 as they load (OperandLoader), into
// bf16 fragments: the build's table of them (CudaFp8FragmentOf). A
// fragment marked by CudaStagedWeights has its weights' raw bytes copied
// asynchronously into staging tiles and converted a step before they are
// multiplied (the kernels' scratch grows by half a weight tile per stage);
// unmarked ones convert as they load.
template <class Base>
struct CudaStagedWeights : Base {
  static constexpr bool stages_block_scaled = true;
};
template <TileSize Size>
struct CudaFp8FragmentOf;
template <TileSize Size>
struct Fragment<Kokkos::Cuda, float8_e4m3, Size> : CudaFp8FragmentOf<Size>::gate_up {};
template <TileSize Size>
struct DownFragment<Kokkos::Cuda, float8_e4m3, Size> : CudaFp8FragmentOf<Size>::down {};

// Large (prefill): 128 x 64 tiles, 4 warps of 64 x 32, 2 teams per
// multiprocessor. Medium: 64 x 64, 4 warps of 32 x 32, 3 teams. Small
// (decode, fewer than 16 rows per expert): 16 x 64, 4 warps of 16 x 16, 3
// teams (16 rows: decode tiles hold only a few rows, and every row of a
// tile is multiplied). With our Kokkos 3.4 patch (or any Kokkos that opts
// in to the whole shared memory per block) K steps are 64 deep and the
// pipelines 3 or 4 stages (96, 72 and 72 KiB for gate/up:
// KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH, detected by CMake); otherwise
// they fit the 40 KiB cap (2 or 3 stages, K = 32 for large and medium,
// 32 x 32 small tiles).
#if defined(KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH) && !defined(KOKKOSMOE_ENABLE_CUDA_WGMMA)
template <class Scalar, TileSize Size>
struct CudaFragmentOf
    : ShapeTable<Size, CudaTensorCoreFragment<Scalar, 128, 64, 64, 2, 2, 3, 2>,  // large
                 CudaTensorCoreFragment<Scalar, 64, 64, 64, 2, 2, 3, 3>,         // medium
                 CudaTensorCoreFragment<Scalar, 16, 64, 64, 1, 4, 4, 3>> {};     // small
#elif !defined(KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH)
template <class Scalar, TileSize Size>
struct CudaFragmentOf
    : ShapeTable<Size, CudaTensorCoreFragment<Scalar, 128, 64, 32, 2, 2, 2, 2>,  // large
                 CudaTensorCoreFragment<Scalar, 64, 64, 32, 2, 2, 2, 3>,         // medium
                 CudaTensorCoreFragment<Scalar, 32, 32, 64, 2, 2, 3, 4>> {};     // small
#endif

#if !defined(KOKKOSMOE_ENABLE_CUDA_WGMMA) || !defined(KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH)
// e4m3 weights: bf16's shapes converting as they load (no room to stage),
// medium's for large (tensor copies cannot convert).
template <TileSize Size>
struct CudaFp8FragmentOf
    : CudaFragmentOf<bfloat16, Size == TileSize::large ? TileSize::medium : Size> {};

// The mma.sync shapes' crossovers: where the larger shape catches up with
// the smaller (docs/performance.md, "tile shape by rows per expert").
template <>
struct TileCrossovers<Kokkos::Cuda> {
  static constexpr std::int64_t small_tile_rows_below = 16;
  static constexpr std::int64_t large_tile_rows_from = 512;
};
#endif

}  // namespace Impl
}  // namespace KokkosMoE

#endif
#endif
