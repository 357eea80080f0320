// The CUDA fragment: 16-bit operand tiles in team scratch multiplied on the
// tensor cores (WMMA, 16x16x16, float accumulation in registers).
//
// A team is 4 warps in a 2 x 2 grid over the output tile (64 x 64 for many
// tokens per expert: each warp owns 2 x 2 accumulator fragments; 32 x 32 for
// few: one fragment each, K steps twice as long).
#ifndef KOKKOSMOE_CUDA_FRAGMENT_HPP
#define KOKKOSMOE_CUDA_FRAGMENT_HPP

#include <Kokkos_Core.hpp>

// bf16 WMMA needs compute capability 8.0 or newer.
#if defined(KOKKOS_ENABLE_CUDA) &&                                                   \
    (defined(KOKKOS_ARCH_AMPERE80) || defined(KOKKOS_ARCH_AMPERE86) ||               \
     defined(KOKKOS_ARCH_AMPERE87) || defined(KOKKOS_ARCH_ADA89) ||                  \
     defined(KOKKOS_ARCH_HOPPER90))
#define KOKKOSMOE_ENABLE_CUDA_TENSOR_CORES

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

namespace KokkosMoE {
namespace Impl {

// The CUDA type with the same bits as our storage type.
template <class Scalar>
struct CudaMmaType;
template <>
struct CudaMmaType<bfloat16> {
  using type = __nv_bfloat16;
};
template <>
struct CudaMmaType<float16> {
  using type = __half;
};

template <class Scalar, int TileM, int TileN, int TileK>
struct CudaTensorCoreFragment {
  using operand_type  = Scalar;
  using scratch_space = Kokkos::Cuda::scratch_memory_space;
  using tile = Kokkos::View<Scalar**, Kokkos::LayoutRight, scratch_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using mma_type = typename CudaMmaType<Scalar>::type;

  static constexpr int tile_m = TileM, tile_n = TileN, tile_k = TileK;
  // Depth of the cp.async pipeline. Two stages of the gate/up kernel's three
  // operand tiles and its staging (39 KiB) fit Kokkos 3.4's 40 KiB team
  // scratch. (Four stages, 70 KiB with the shared-memory opt-in, measured
  // slower on the H200 at every size: 3 instead of 4 teams per multiprocessor.)
  static constexpr int stages = 2;
  static constexpr int warps_m = 2, warps_n = 2;
  static constexpr int frags_m = tile_m / warps_m / 16, frags_n = tile_n / warps_n / 16;
  // 8 elements (16 bytes) of padding: rows stay 16-byte aligned, as WMMA
  // needs, and consecutive rows start in different shared-memory banks.
  static constexpr int operand_stride = tile_k + 8;
  // WMMA loads and stores need 256-bit aligned pointers.
  static constexpr int alignment = 128;

  static int team_size() { return 32 * warps_m * warps_n; }
  // About 8 resident teams on each of ~132 multiprocessors.
  static std::int64_t split_k_teams() { return 1024; }

  struct accumulator_type {
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> f[frags_m][frags_n];
    float* staging;  // 16 x 16 floats per warp, for store
  };

  KOKKOS_INLINE_FUNCTION static operand_type to_operand(Scalar v) { return v; }

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
  template <int pending>
  KOKKOS_INLINE_FUNCTION static void wait_copies() {
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION static tile operand(const Member& member, int rows) {
    void* p = member.team_scratch(0).get_shmem_aligned(
        std::size_t(rows) * operand_stride * sizeof(Scalar), alignment);
    return tile(static_cast<Scalar*>(p), rows, operand_stride);
  }
  template <class Member>
  KOKKOS_INLINE_FUNCTION static accumulator_type accumulator(const Member& member) {
    accumulator_type acc;
    acc.staging = static_cast<float*>(member.team_scratch(0).get_shmem_aligned(
        std::size_t(warps_m * warps_n) * 256 * sizeof(float), alignment));
    return acc;
  }
  static std::size_t operand_bytes(int rows) {
    return std::size_t(rows) * operand_stride * sizeof(Scalar) + alignment;
  }
  static std::size_t accumulator_bytes() {
    return std::size_t(warps_m * warps_n) * 256 * sizeof(float) + alignment;
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION static void zero(const Member&, accumulator_type& acc) {
#ifdef __CUDA_ARCH__
#pragma unroll
    for (int i = 0; i < frags_m; ++i)
#pragma unroll
      for (int j = 0; j < frags_n; ++j) nvcuda::wmma::fill_fragment(acc.f[i][j], 0.0f);
#else
    (void)acc;
#endif
  }

  // acc += a b^T for one or two (b, acc) pairs sharing the a fragments.
  template <class Member, class... Pairs>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const tile& a,
                                            Pairs&&... b_acc) {
#ifdef __CUDA_ARCH__
    using namespace nvcuda;
    const int warp = member.team_rank() / 32;
    const int row0 = (warp / warps_n) * (tile_m / warps_m);
    const mma_type* pa = reinterpret_cast<const mma_type*>(a.data());
#pragma unroll
    for (int kk = 0; kk < tile_k; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, mma_type, wmma::row_major> fa[frags_m];
#pragma unroll
      for (int i = 0; i < frags_m; ++i)
        wmma::load_matrix_sync(fa[i], pa + (row0 + i * 16) * operand_stride + kk, operand_stride);
      multiply(warp, kk, fa, b_acc...);
    }
#else
    (void)member, (void)a;
#endif
  }

  // Calls f(m, n, values...) once per element of the tile.
  template <class Member, class F, class... Acc>
  KOKKOS_INLINE_FUNCTION static void store(const Member& member, const F& f, Acc&... acc) {
#ifdef __CUDA_ARCH__
    using namespace nvcuda;
    const int warp = member.team_rank() / 32, lane = member.team_rank() % 32;
    const int row0 = (warp / warps_n) * (tile_m / warps_m);
    const int col0 = (warp % warps_n) * (tile_n / warps_n);
#pragma unroll
    for (int i = 0; i < frags_m; ++i)
#pragma unroll
      for (int j = 0; j < frags_n; ++j) {
        (wmma::store_matrix_sync(acc.staging + warp * 256, acc.f[i][j], 16, wmma::mem_row_major),
         ...);
        __syncwarp();
        for (int e = lane; e < 256; e += 32)
          f(row0 + i * 16 + e / 16, col0 + j * 16 + e % 16, acc.staging[warp * 256 + e]...);
        __syncwarp();
      }
#else
    (void)member, (void)f;
#endif
  }

 private:
  template <class FragA>
  KOKKOS_INLINE_FUNCTION static void multiply(int, int, const FragA&) {}

  template <class FragA, class... Rest>
  KOKKOS_INLINE_FUNCTION static void multiply(int warp, int kk, const FragA& fa, const tile& b,
                                              accumulator_type& acc, Rest&&... rest) {
#ifdef __CUDA_ARCH__
    using namespace nvcuda;
    const int col0     = (warp % warps_n) * (tile_n / warps_n);
    const mma_type* pb = reinterpret_cast<const mma_type*>(b.data());
#pragma unroll
    for (int j = 0; j < frags_n; ++j) {
      // b holds [n][k] rows: read as a column-major K x N matrix.
      wmma::fragment<wmma::matrix_b, 16, 16, 16, mma_type, wmma::col_major> fb;
      wmma::load_matrix_sync(fb, pb + (col0 + j * 16) * operand_stride + kk, operand_stride);
#pragma unroll
      for (int i = 0; i < frags_m; ++i) wmma::mma_sync(acc.f[i][j], fa[i], fb, acc.f[i][j]);
    }
    multiply(warp, kk, fa, rest...);
#else
    (void)warp, (void)kk, (void)fa, (void)b, (void)acc;
#endif
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
#endif
