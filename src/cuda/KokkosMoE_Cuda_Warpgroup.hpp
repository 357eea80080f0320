// SPDX-License-Identifier: BSD-3-Clause
// Hopper's warpgroup matrix multiply (wgmma, PTX ISA 8.0, sm_90a only): four
// consecutive warps multiply a 64-row operand tile by an N-row one, both read
// from shared memory through descriptors, into float accumulators in
// registers; and with it a tensor-core fragment's K step (TileMma). The
// instructions exist only in code compiled for sm_90a
// (__CUDA_ARCH_FEAT_SM90_ALL); callers keep an mma.sync path for the rest.
//
// Operand tiles are K-major lines of 64 16-bit values (128 bytes) in the
// hardware's 128-byte swizzle: 16-byte chunk c of line r at chunk c ^ (r % 8),
// eight lines (1024 bytes, the alignment it needs) per swizzle atom.
#ifndef KOKKOSMOE_CUDA_WARPGROUP_HPP
#define KOKKOSMOE_CUDA_WARPGROUP_HPP

#include <Kokkos_Core.hpp>

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <cstdint>
#include <type_traits>

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KOKKOSMOE_CUDA_WARPGROUP_MMA
#endif

namespace KokkosMoE {
namespace Impl {
namespace warpgroup {

constexpr int line_bytes = 128;   // one swizzled K line: 64 16-bit values
constexpr int atom_bytes = 1024;  // 8 lines, the swizzle's period and alignment

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Generic shared-memory writes (cp.async, stores) become visible to wgmma,
// which reads through the async proxy, after this and a barrier (or an
// mbarrier wait). (sm_90: the copy pipeline uses it too.)
__device__ inline void fence_shared_for_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#endif

#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
// The shared-memory matrix descriptor of a K-major, 128-byte-swizzled tile
// starting at p (1024-byte aligned): start address, stride between 8-line
// atoms, swizzle mode; the leading offset is unused in this mode. Later K
// steps of 16 values are 32 bytes on: descriptor + 2.
__device__ inline std::uint64_t descriptor(const void* p) {
  const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
  return std::uint64_t((address & 0x3FFFF) >> 4) | (std::uint64_t(1) << 16) |
         (std::uint64_t(atom_bytes >> 4) << 32) | (std::uint64_t(1) << 62);
}

// Orders earlier register and shared-memory accesses before the next
// wgmma (needed before the first of a batch).
__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most `pending` committed batches are in flight.
template <int pending>
__device__ inline void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}

// The warpgroup of team rank `rank` (128 threads each), as a value ptxas
// knows is the same across the warp (a shuffle from lane 0): branches on it
// are not divergent. (Branching on a plain rank / 128 around wgmma, ptxas
// serialised every wgmma of a batch left in flight, C7518.)
__device__ inline int index(int rank) { return __shfl_sync(0xffffffffu, rank / 128, 0); }

// Keeps the compiler from moving accesses of accumulator v across the
// asynchronous multiply (the wgmma reads and writes it behind its back).
__device__ inline void pin(float& v) { asm volatile("" : "+f"(v)::"memory"); }

#define KOKKOSMOE_F4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define KOKKOSMOE_F16(d, i) \
  KOKKOSMOE_F4(d, i), KOKKOSMOE_F4(d, i + 4), KOKKOSMOE_F4(d, i + 8), KOKKOSMOE_F4(d, i + 12)
#define KOKKOSMOE_F32(d, i) KOKKOSMOE_F16(d, i), KOKKOSMOE_F16(d, i + 16)
#define KOKKOSMOE_F64(d, i) KOKKOSMOE_F32(d, i), KOKKOSMOE_F32(d, i + 32)
#define KOKKOSMOE_R32 \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22," \
  "%23,%24,%25,%26,%27,%28,%29,%30,%31}"
#define KOKKOSMOE_R64 \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22," \
  "%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43," \
  "%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"
#define KOKKOSMOE_R128 \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22," \
  "%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43," \
  "%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64," \
  "%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85," \
  "%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104," \
  "%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121," \
  "%122,%123,%124,%125,%126,%127}"
// One m64nNk16 multiply-accumulate; the N / 2 accumulators of a thread are
// N / 4 in lo (columns [0, N / 2)) then N / 4 in hi (the rest).
#define KOKKOSMOE_WGMMA(n, ptx_type, regs, a_op, b_op, lo_hi) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32." ptx_type "." ptx_type " " regs ", %" #a_op \
      ", %" #b_op ", p, 1, 1, 0, 0;\n}\n" \
      : lo_hi \
      : "l"(a), "l"(b))
#define KOKKOSMOE_LO_HI16 KOKKOSMOE_F16(lo, 0), KOKKOSMOE_F16(hi, 0)
#define KOKKOSMOE_LO_HI32 KOKKOSMOE_F32(lo, 0), KOKKOSMOE_F32(hi, 0)
#define KOKKOSMOE_LO_HI64 KOKKOSMOE_F64(lo, 0), KOKKOSMOE_F64(hi, 0)

// lo | hi += a b^T over 16 of K: a the warpgroup's 64 rows, b N rows.
template <class Scalar, int N>
__device__ inline void mma_m64k16(float* lo, float* hi, std::uint64_t a, std::uint64_t b) {
  static_assert(N == 64 || N == 128 || N == 256, "warpgroup tiles are 64, 128 or 256 wide");
  constexpr bool bf16 = std::is_same<Scalar, bfloat16>::value;
  if constexpr (N == 64 && bf16)
    KOKKOSMOE_WGMMA(64, "bf16", KOKKOSMOE_R32, 32, 33, KOKKOSMOE_LO_HI16);
  else if constexpr (N == 64) KOKKOSMOE_WGMMA(64, "f16", KOKKOSMOE_R32, 32, 33, KOKKOSMOE_LO_HI16);
  else if constexpr (N == 128 && bf16)
    KOKKOSMOE_WGMMA(128, "bf16", KOKKOSMOE_R64, 64, 65, KOKKOSMOE_LO_HI32);
  else if constexpr (N == 128)
    KOKKOSMOE_WGMMA(128, "f16", KOKKOSMOE_R64, 64, 65, KOKKOSMOE_LO_HI32);
  else if constexpr (bf16)
    KOKKOSMOE_WGMMA(256, "bf16", KOKKOSMOE_R128, 128, 129, KOKKOSMOE_LO_HI64);
  else KOKKOSMOE_WGMMA(256, "f16", KOKKOSMOE_R128, 128, 129, KOKKOSMOE_LO_HI64);
}

// e4m3 operands (K-major lines of 128 values, the same 128-byte swizzle):
// lo | hi = a b^T over 32 of K, plus lo | hi where `accumulate` is not 0.
#define KOKKOSMOE_WGMMA_E4M3(n, regs, a_op, b_op, flag_op, lo_hi) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #flag_op \
               ", 0;\n" \
               "wgmma.mma_async.sync.aligned.m64n" #n "k32.f32.e4m3.e4m3 " regs ", %" #a_op \
               ", %" #b_op ", p, 1, 1;\n}\n" \
               : lo_hi \
               : "l"(a), "l"(b), "r"(accumulate))
template <int N>
__device__ inline void mma_m64k32_e4m3(float* lo, float* hi, std::uint64_t a, std::uint64_t b,
                                       int accumulate) {
  static_assert(N == 64 || N == 128 || N == 256, "warpgroup tiles are 64, 128 or 256 wide");
  if constexpr (N == 64) KOKKOSMOE_WGMMA_E4M3(64, KOKKOSMOE_R32, 32, 33, 34, KOKKOSMOE_LO_HI16);
  else if constexpr (N == 128)
    KOKKOSMOE_WGMMA_E4M3(128, KOKKOSMOE_R64, 64, 65, 66, KOKKOSMOE_LO_HI32);
  else KOKKOSMOE_WGMMA_E4M3(256, KOKKOSMOE_R128, 128, 129, 130, KOKKOSMOE_LO_HI64);
}
#undef KOKKOSMOE_WGMMA_E4M3
#undef KOKKOSMOE_LO_HI64
#undef KOKKOSMOE_LO_HI32
#undef KOKKOSMOE_LO_HI16
#undef KOKKOSMOE_WGMMA
#undef KOKKOSMOE_R128
#undef KOKKOSMOE_R64
#undef KOKKOSMOE_R32
#undef KOKKOSMOE_F64
#undef KOKKOSMOE_F32
#undef KOKKOSMOE_F16
#undef KOKKOSMOE_F4

// One K step of a warpgroup shape of a tensor-core fragment Frag
// (CudaTensorCoreFragment: accumulators of 16-row warps, c[0][j][e]).
template <class Frag>
struct TileMma {
  using tile = typename Frag::tile;
  using accumulator_type = typename Frag::accumulator_type;
  static constexpr int tile_n = Frag::tile_n, tile_k = Frag::tile_k;

  // Each warpgroup: its 64 rows of a times b, K in steps of 16 (32 bytes on
  // in both descriptors), as one batch; returns when at most mma_in_flight
  // batches (this one) are still running. Two b tiles one after the
  // other in scratch (as the gate/up kernel lays gate and up) are one tile
  // twice as wide: one instruction, half the reads of a.
  template <class Member>
  __device__ static void mma_nt(const Member& member, const tile& a, const tile& b,
                                accumulator_type& acc) {
    mma_nt(member, a, b, acc, acc, std::integral_constant<int, tile_n>());
  }
  template <class Member>
  __device__ static void mma_nt(const Member& member, const tile& a, const tile& b0,
                                accumulator_type& acc0, const tile& b1, accumulator_type& acc1) {
    if (b1.data() == b0.data() + tile_n * tile_k) {
      mma_nt(member, a, b0, acc0, acc1, std::integral_constant<int, 2 * tile_n>());
    } else {
      mma_nt(member, a, b0, acc0);
      mma_nt(member, a, b1, acc1);
    }
  }
  // b is N rows; the accumulators of columns [0, N / 2) are in lo, the rest
  // in hi (the same accumulator when N is one tile wide).
  template <class Member, int N>
  __device__ static void mma_nt(const Member& member, const tile& a, const tile& b,
                                accumulator_type& lo, accumulator_type& hi,
                                std::integral_constant<int, N>) {
    const std::uint64_t da = descriptor(a.data() + index(member.team_rank()) * 64 * tile_k);
    const std::uint64_t db = descriptor(b.data());
    float* const l = &lo.c[0][0][0];
    float* const h = N == tile_n ? l + N / 4 : &hi.c[0][0][0];
    pin(lo), pin(hi);
    fence();
#pragma unroll
    for (int kk = 0; kk < tile_k / 16; ++kk)
      mma_m64k16<typename Frag::operand_type, N>(l, h, da + 2 * kk, db + 2 * kk);
    commit();
    wait<Frag::mma_in_flight>();
    pin(lo), pin(hi);
  }
  __device__ static void pin(accumulator_type& acc) {
#pragma unroll
    for (int j = 0; j < Frag::frags_n; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) warpgroup::pin(acc.c[0][j][e]);
  }
};
#endif

}  // namespace warpgroup
}  // namespace Impl
}  // namespace KokkosMoE

#endif
