// SPDX-License-Identifier: BSD-3-Clause
// e4m3 operands on Hopper's tensor cores (sm_90a builds with large team
// scratch): tiles of e4m3 codes 128 deep (one 128-byte swizzle line, one
// scale block of K) multiplied by wgmma's e4m3 shapes. The weights come by
// tensor copies as they are stored; the activations come quantised, in
// groups of 1 x 128 along K with a scale each (KokkosMoE_ActivationGroups.hpp).
// A K step's product lands in temporary accumulators and is added to the
// tile's float accumulators times the scale of its activation row and that
// of the weight tile's 128 x 128 block (DeepSeek-V3's recipe): the scales
// change every 128 of K, which the tensor cores cannot apply.
#ifndef KOKKOSMOE_CUDA_E4M3FRAGMENT_HPP
#define KOKKOSMOE_CUDA_E4M3FRAGMENT_HPP

#ifndef KOKKOSMOE_FRAGMENT_HPP
#error "include KokkosMoE_Fragment.hpp: it includes this file after the templates it specialises"
#endif

#include "KokkosMoE_Cuda_Wgmma_Fragment.hpp"

#if defined(KOKKOSMOE_ENABLE_CUDA_TENSOR_CORES) && defined(KOKKOSMOE_ENABLE_CUDA_WGMMA) && \
    defined(KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH)

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// Base: a warpgroup shape of CudaTensorCoreFragment (its accumulators,
// stores and launch), whose operand tiles become e4m3 ones.
template <class Base>
struct CudaE4m3Operands : Base {
  static_assert(Base::warpgroup_shape && Base::mma_in_flight == 0,
                "e4m3 operands: a warpgroup shape, each step's product scaled once it is done");
  using operand_type = float8_e4m3;
  using tile = Kokkos::View<float8_e4m3**, Kokkos::LayoutRight, typename Base::scratch_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using accumulator_type = typename Base::accumulator_type;
  static constexpr int tile_k = warpgroup::line_bytes;  // 128 codes: one scale block of K
  static constexpr int operand_stride = tile_k;
  static constexpr int tile_n = Base::tile_n, frags_n = Base::frags_n;
  static constexpr bool multiplies_block_scaled = true;

  KOKKOS_INLINE_FUNCTION static operand_type to_operand(operand_type v) { return v; }
  // 16-byte chunk c of line r at chunk c ^ (r % 8), as the 16-bit tiles.
  KOKKOS_INLINE_FUNCTION static operand_type* element(const tile& t, int r, int c) {
    return t.data() + r * tile_k + (((c >> 4) ^ (r & 7)) << 4) + (c & 15);
  }
  template <class Member>
  KOKKOS_INLINE_FUNCTION static tile operand(const Member& member, int rows) {
    void* p = member.team_scratch(0).get_shmem_aligned(std::size_t(rows) * tile_k,
                                                       warpgroup::atom_bytes);
    return tile(static_cast<operand_type*>(p), rows, operand_stride);
  }
  static std::size_t operand_bytes(int rows) {
    return std::size_t(rows) * tile_k + warpgroup::atom_bytes;
  }

  // acc += (a b^T) times the step's scales (BlockScales), for one or two
  // (b, acc) pairs sharing a; two b tiles one after the other in scratch
  // are one multiply twice as wide. Without scales, the codes' product.
  template <class Member>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const tile& a, const tile& b,
                                            accumulator_type& acc, const BlockScales& s = {}) {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    multiply(member, a, b, acc, acc, std::integral_constant<int, tile_n>(), s.weights[0],
             s.weights[0], s);
#else
    (void)member, (void)a, (void)b, (void)acc, (void)s;
#endif
  }
  template <class Member>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const tile& a, const tile& b0,
                                            accumulator_type& acc0, const tile& b1,
                                            accumulator_type& acc1, const BlockScales& s = {}) {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    // The wide multiply only where its temporaries (as many registers as
    // the columns of one tile) leave room for the accumulators: tiles of
    // 64 columns.
    if constexpr (tile_n <= 64) {
      if (b1.data() == b0.data() + tile_n * tile_k) {
        multiply(member, a, b0, acc0, acc1, std::integral_constant<int, 2 * tile_n>(), s.weights[0],
                 s.weights[1], s);
        return;
      }
    }
    multiply(member, a, b0, acc0, acc0, std::integral_constant<int, tile_n>(), s.weights[0],
             s.weights[0], s);
    multiply(member, a, b1, acc1, acc1, std::integral_constant<int, tile_n>(), s.weights[1],
             s.weights[1], s);
#else
    (void)member, (void)a, (void)b0, (void)acc0, (void)b1, (void)acc1, (void)s;
#endif
  }

#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
 private:
  // Each warpgroup: its 64 rows of a times the N rows of b, K in steps of
  // 32 (32 bytes on in both descriptors), into temporaries, then added in
  // times the scales of the thread's two rows and of the columns' weight
  // tile (lo: columns [0, N / 2), hi: the rest; one accumulator where N is
  // one tile wide). The row scales are read before the multiply is
  // waited for, so their latency hides under it.
  template <class Member, int N>
  __device__ __forceinline__ static void multiply(const Member& member, const tile& a,
                                                  const tile& b, accumulator_type& lo,
                                                  accumulator_type& hi,
                                                  std::integral_constant<int, N>, float scale_lo,
                                                  float scale_hi, const BlockScales& s) {
    const int rank = member.team_rank();
    const std::uint64_t da = warpgroup::descriptor(a.data() + warpgroup::index(rank) * 64 * tile_k);
    const std::uint64_t db = warpgroup::descriptor(b.data());
    accumulator_type t_lo, t_hi;
    float* const l = &t_lo.c[0][0][0];
    float* const h = N == tile_n ? l + N / 4 : &t_hi.c[0][0][0];
    pin(t_lo);
    if constexpr (N != tile_n) pin(t_hi);
    warpgroup::fence();
#pragma unroll
    for (int kk = 0; kk < tile_k / 32; ++kk)
      warpgroup::mma_m64k32_e4m3<N>(l, h, da + 2 * kk, db + 2 * kk, kk);
    warpgroup::commit();
    // The thread's rows of the tile: (warp) 16 + lane / 4, and 8 below.
    const int row = (rank / 32) * 16 + (rank % 32) / 4;
    const float r0 = s.rows ? s.rows[row] : 1.0f;
    const float r1 = s.rows ? s.rows[row + 8] : 1.0f;
    warpgroup::wait<0>();
    pin(t_lo);
    if constexpr (N != tile_n) pin(t_hi);
    add_scaled(lo, t_lo, r0 * scale_lo, r1 * scale_lo);
    if constexpr (N != tile_n) add_scaled(hi, t_hi, r0 * scale_hi, r1 * scale_hi);
  }
  __device__ __forceinline__ static void add_scaled(accumulator_type& acc,
                                                    const accumulator_type& t, float s0, float s1) {
#pragma unroll
    for (int j = 0; j < frags_n; ++j) {
      acc.c[0][j][0] += t.c[0][j][0] * s0;
      acc.c[0][j][1] += t.c[0][j][1] * s0;
      acc.c[0][j][2] += t.c[0][j][2] * s1;
      acc.c[0][j][3] += t.c[0][j][3] * s1;
    }
  }
  __device__ __forceinline__ static void pin(accumulator_type& acc) {
    warpgroup::TileMma<Base>::pin(acc);
  }
#endif
};

// The e4m3 shapes: large 128 x 128 for gate/up (gate and up one after the
// other, 4 stages: 192 KiB) and for down (5 stages: 160 KiB), one team per
// multiprocessor; medium, and small alike, 64 x 64 and 64 x 128, 4 stages
// (96 KiB, two teams). Every operand comes by tensor copy (weight tiles by
// boxes of 64 rows, so one set of maps serves every shape), issued by one
// producer warp, or for large gate/up by a producer warpgroup whose
// registers go to the multipliers (setmaxnreg), whose accumulators of gate
// and up and one tile's temporaries take 192: its K step reads 48 KiB of
// operands from L2 for the multiplies of 64 KiB at 128 x 64 (whose runs
// kept L2 about as busy as the tensor cores). 208 registers for each
// multiplier leave 88 to each producer (with 40, ptxas spilled 184 bytes
// and gate/up at DeepSeek-V3, 4096 tokens, took twice as long).
template <class Base>
using CudaE4m3Shape = CudaWarpSpecialized<CudaE4m3Operands<Base>, 32>;
template <class Base>
using CudaE4m3WideShape = CudaWarpSpecialized<CudaE4m3Operands<Base>, 128, 208>;
template <TileSize Size>
struct CudaE4m3FragmentOf
    : ShapeTable<Size == TileSize::small ? TileSize::medium : Size,
                 CudaE4m3WideShape<CudaTensorCoreFragment<bfloat16, 128, 128, 64, 8, 1, 4, 1>>,
                 CudaE4m3Shape<CudaTensorCoreFragment<bfloat16, 64, 64, 64, 4, 1, 4, 2>>, void,
                 CudaE4m3Shape<CudaTensorCoreFragment<bfloat16, 128, 128, 64, 8, 1, 5, 1>>,
                 CudaE4m3Shape<CudaTensorCoreFragment<bfloat16, 64, 128, 64, 4, 1, 4, 2>>> {};

template <TileSize Size>
struct E4m3Fragment<Kokkos::Cuda, Size> {
  using gate_up = typename CudaE4m3FragmentOf<Size>::gate_up;
  using down = typename CudaE4m3FragmentOf<Size>::down;
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
#endif
