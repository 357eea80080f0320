// The CUDA fragment: 16-bit operand tiles in team scratch multiplied on the
// tensor cores with mma.sync (m16n8k16, float accumulation in registers),
// operands read from scratch with ldmatrix.
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

#include <Kokkos_Core.hpp>

// bf16 mma.sync needs compute capability 8.0 or newer.
#if defined(KOKKOS_ENABLE_CUDA) &&                                                   \
    (defined(KOKKOS_ARCH_AMPERE80) || defined(KOKKOS_ARCH_AMPERE86) ||               \
     defined(KOKKOS_ARCH_AMPERE87) || defined(KOKKOS_ARCH_ADA89) ||                  \
     defined(KOKKOS_ARCH_HOPPER90))
#define KOKKOSMOE_ENABLE_CUDA_TENSOR_CORES

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_Cuda_Pipeline.hpp"
#include "KokkosMoE_Cuda_TensorMap.hpp"
#include "KokkosMoE_Cuda_Warpgroup.hpp"
#include "KokkosMoE_ValueRun.hpp"

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// d += a b on the tensor cores: one m16n8k16 mma.sync with float
// accumulators; ptx_type names the 16-bit operand type ("bf16", "f16").
#define KOKKOSMOE_MMA_M16N8K16(ptx_type, d, a, b0, b1)                                         \
  asm("mma.sync.aligned.m16n8k16.row.col.f32." ptx_type "." ptx_type                          \
      ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                         \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

template <class Scalar>
KOKKOS_INLINE_FUNCTION void mma_m16n8k16(float* d, const unsigned* a, unsigned b0, unsigned b1) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same<Scalar, bfloat16>::value)
    KOKKOSMOE_MMA_M16N8K16("bf16", d, a, b0, b1);
  else
    KOKKOSMOE_MMA_M16N8K16("f16", d, a, b0, b1);
#else
  (void)d, (void)a, (void)b0, (void)b1;
#endif
}
#undef KOKKOSMOE_MMA_M16N8K16

template <class Scalar, int TileM, int TileN, int TileK, int WarpsM, int WarpsN, int Stages,
          int MinTeams, int InFlight = 0>
struct CudaTensorCoreFragment {
  using operand_type  = Scalar;
  using scratch_space = Kokkos::Cuda::scratch_memory_space;
  using tile = Kokkos::View<Scalar**, Kokkos::LayoutRight, scratch_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  static constexpr int tile_m = TileM, tile_n = TileN, tile_k = TileK;
  // Depth of the cp.async pipeline (all stages of a kernel's operand tiles
  // must fit Kokkos 3.4's 40 KiB of team scratch).
  static constexpr int stages  = Stages;
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
  static constexpr bool k_contiguous  = true;  // 8 consecutive k in a 16-byte chunk
  static constexpr int chunks         = tile_k / 8;
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
  using launch_bounds            = Kokkos::LaunchBounds<team_threads, MinTeams>;
  // Every warp copies and multiplies; one team per work item (see
  // CudaWarpSpecialized for the other way).
  static constexpr int producer_threads = 0;
  static int resident_teams() { return 0; }
  // Split-K aims at this many teams: several waves of the ~4-8 resident
  // teams on each of ~132 multiprocessors, so the last wave's idle share
  // stays small.
  static std::int64_t split_k_teams() {
    return 4096;
  }

  struct accumulator_type {
    float c[frags_m][frags_n][4];
  };

  KOKKOS_INLINE_FUNCTION static operand_type to_operand(Scalar v) { return v; }

  KOKKOS_INLINE_FUNCTION static int swizzle(int r) {
    return chunks >= 8 ? (r & 7) : (r / (8 / chunks)) & (chunks - 1);
  }
  // Where element (r, c) of an operand tile lives.
  KOKKOS_INLINE_FUNCTION static Scalar* element(const tile& t, int r, int c) {
    return t.data() + r * tile_k + (((c >> 3) ^ swizzle(r)) << 3) + (c & 7);
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
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const tile& a,
                                            Pairs&&... b_acc) {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    if constexpr (warpgroup_shape) {
      warpgroup_mma(member, a, b_acc...);
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
      (pin(acc), ...);
    }
#else
    ((void)acc, ...);
#endif
  }

  // Calls f(m, n, runs...) with a ValueRun of each accumulator, of the
  // pair of columns (n, n + 1) of row m this thread holds (Width 2) or of
  // one element (Width 1: the split-K partial sums of gate/up, stored one
  // float at a time).
  template <int Width, class Member, class F, class... Acc>
  KOKKOS_INLINE_FUNCTION static void store(const Member& member, const F& f, Acc&... acc) {
    static_assert(Width == 1 || Width == 2, "a thread holds pairs of columns");
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
        for (int e = 0; e < 4; e += Width) {
          if constexpr (Width == 2)
            f(row0 + i * 16 + (e / 2) * 8, col0 + j * 8,
              ValueRun<2>{{acc.c[i][j][e], acc.c[i][j][e + 1]}}...);
          else
            f(row0 + i * 16 + (e / 2) * 8, col0 + j * 8 + e % 2, ValueRun<1>{{acc.c[i][j][e]}}...);
        }
  }

 private:
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
  // Each warpgroup: its 64 rows of a times b, K in steps of 16 (32 bytes on
  // in both descriptors), as one batch; returns when at most mma_in_flight
  // batches (this one) are still running. Two b tiles one after the
  // other in scratch (as the gate/up kernel lays gate and up) are one tile
  // twice as wide: one instruction, half the reads of a.
  template <class Member>
  __device__ static void warpgroup_mma(const Member& member, const tile& a, const tile& b,
                                       accumulator_type& acc) {
    warpgroup_mma(member, a, b, acc, acc, std::integral_constant<int, tile_n>());
  }
  template <class Member>
  __device__ static void warpgroup_mma(const Member& member, const tile& a, const tile& b0,
                                       accumulator_type& acc0, const tile& b1,
                                       accumulator_type& acc1) {
    if (b1.data() == b0.data() + tile_n * tile_k) {
      warpgroup_mma(member, a, b0, acc0, acc1, std::integral_constant<int, 2 * tile_n>());
    } else {
      warpgroup_mma(member, a, b0, acc0);
      warpgroup_mma(member, a, b1, acc1);
    }
  }
  // b is N rows; the accumulators of columns [0, N / 2) are in lo, the rest
  // in hi (the same accumulator when N is one tile wide).
  template <class Member, int N>
  __device__ static void warpgroup_mma(const Member& member, const tile& a, const tile& b,
                                       accumulator_type& lo, accumulator_type& hi,
                                       std::integral_constant<int, N>) {
    const std::uint64_t da =
        warpgroup::descriptor(a.data() + warpgroup::index(member.team_rank()) * 64 * tile_k);
    const std::uint64_t db = warpgroup::descriptor(b.data());
    float* const l = &lo.c[0][0][0];
    float* const h = N == tile_n ? l + N / 4 : &hi.c[0][0][0];
    pin(lo), pin(hi);
    warpgroup::fence();
#pragma unroll
    for (int kk = 0; kk < tile_k / 16; ++kk)
      warpgroup::mma_m64k16<Scalar, N>(l, h, da + 2 * kk, db + 2 * kk);
    warpgroup::commit();
    warpgroup::wait<mma_in_flight>();
    pin(lo), pin(hi);
  }
  __device__ static void pin(accumulator_type& acc) {
#pragma unroll
    for (int j = 0; j < frags_n; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) warpgroup::pin(acc.c[0][j][e]);
  }
#endif

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

// Base with one more warpgroup that only copies (warp specialisation): the
// Base's warps only multiply, waiting for each stage's data on its barrier
// rather than at a team barrier (CudaStagePipeline), and the producer issues
// every copy, so neither waits for the other's instructions. Its teams are
// persistent: MinTeams per multiprocessor walk the work items, the pipeline
// running on across them, so that the next item's first stages load while
// this one's last steps multiply and its outputs are stored.
template <class Base>
struct CudaWarpSpecialized : Base {
  static constexpr int multiplier_threads = Base::team_threads;
  // A warpgroup: where tensor maps cannot be made, its 16-byte copies keep
  // up (one producer warp's made the large kernels 2x slower, H200).
  static constexpr int producer_threads   = 128;
  static constexpr int team_threads       = multiplier_threads + producer_threads;
  static int team_size() { return team_threads; }
  using launch_bounds = Kokkos::LaunchBounds<team_threads, Base::min_teams>;
  using pipeline      = CudaStagePipeline<Base::stages>;
  static_assert(Base::warpgroup_shape, "the pipeline's consumers are wgmma warpgroups (sm_90a)");

  static int resident_teams() {
    static const int teams = [] {
      int device = 0, multiprocessors = 0;
      cudaGetDevice(&device);
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
      return multiprocessors * Base::min_teams;
    }();
    return teams;
  }

  // Whole operand tiles of row-major matrices (weights, activations) come by
  // bulk tensor copies where a map could be made (see tensor_map::encode):
  // one instruction of one producer thread per tile instead of 16-byte
  // copies by every producer thread.
  static bool encode_map(void* map, const void* data, std::uint64_t rows, std::uint64_t cols,
                         int box_rows) {
    return tensor_map::encode(map, data, rows, cols, std::uint32_t(box_rows));
  }
  KOKKOS_INLINE_FUNCTION static void acquire_map(const void* map) { tensor_map::acquire(map); }
  // Tile t (1024-byte aligned, its rows box_rows of the map) from (row, col).
  KOKKOS_INLINE_FUNCTION static void bulk_load(const typename Base::tile& t, const void* map,
                                               int row, int col, std::uint64_t* barrier) {
    tensor_map::load(t.data(), map, col, row, barrier);
  }
  KOKKOS_INLINE_FUNCTION static void expect_bytes(std::uint64_t* barrier, int bytes) {
    pipeline::expect_bytes(barrier, bytes);
  }

  // Whether the calling thread multiplies (the producer warps take no part
  // in the multiplies), warp-uniform to the compiler (see warpgroup::index).
  template <class Member>
  KOKKOS_INLINE_FUNCTION static bool multiplier(const Member& member) {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    return warpgroup::index(member.team_rank()) < multiplier_threads / 128;
#else
    return member.team_rank() < multiplier_threads;
#endif
  }
  template <class Member, class... Pairs>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const typename Base::tile& a,
                                            Pairs&&... b_acc) {
    if (multiplier(member)) Base::mma_nt(member, a, b_acc...);
  }
  template <class Member, class... Acc>
  KOKKOS_INLINE_FUNCTION static void finish(const Member& member, Acc&... acc) {
    if (multiplier(member)) Base::finish(member, acc...);
  }
  template <int Width, class Member, class F, class... Acc>
  KOKKOS_INLINE_FUNCTION static void store(const Member& member, const F& f, Acc&... acc) {
    if (multiplier(member)) Base::template store<Width>(member, f, acc...);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
#endif
