// The matrix-multiply-accumulate fragment the expert kernels are written
// against: zero, mma_nt (acc += a b^T on scratch tiles, possibly still
// running when it returns: mma_in_flight), finish (waits for it) and store,
// plus the tile shape and the copy pipeline. Kernels above this header never
// name a backend.
#ifndef KOKKOSMOE_FRAGMENT_HPP
#define KOKKOSMOE_FRAGMENT_HPP

#include <KokkosMoE/KokkosMoE_BuildConfig.hpp>

#include "KokkosMoE_Cuda_Fragment.hpp"
#include "KokkosMoE_Host_Fragment.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// Tile shapes: `large` for many tokens per expert (prefill: most reuse of
// each weight tile), `small` for few (decode: fewer wasted rows, weights
// streamed by many teams), `medium` between. The layer picks one per batch.
enum class TileSize { large, medium, small };

// The tile shape of a batch from its rows (assignments) per active expert,
// at the crossovers measured on the H200 (benchmarks/results/README.md):
// 32-row tiles are 1.06x faster than 64-row ones at 8 rows per expert, even
// at 16 and 1.08x slower at 16 with skew (DeepSeek-V3, Zipf 0.5). With
// mma.sync, 64-row tiles are 1.2-1.5x faster than 128-row ones from 32 to
// 256 rows, even at 384 and 1.05x slower at 512; with wgmma (its 128-row
// tiles twice as wide) 128-row tiles are even at 64 rows (Mixtral, 256
// tokens: 1.0x; 32 rows: 1.1x slower) and 1.14-1.6x faster from 128.
constexpr std::int64_t small_tile_rows_below = 16;
#ifdef KOKKOSMOE_ENABLE_CUDA_WGMMA
constexpr std::int64_t large_tile_rows_from = 64;
#else
constexpr std::int64_t large_tile_rows_from = 512;
#endif
inline TileSize tile_size_for(std::int64_t rows_per_expert) {
  return rows_per_expert < small_tile_rows_below  ? TileSize::small
         : rows_per_expert < large_tile_rows_from ? TileSize::medium
                                                  : TileSize::large;
}

// Backends specialise this (CUDA tensor cores, AMD matrix cores); until a
// backend has its own, the portable fragment serves it.
template <class ExecutionSpace, class Scalar, TileSize Size = TileSize::large>
struct Fragment : PortableFragment<ExecutionSpace, Size == TileSize::small ? 16 : 32> {};

// The down kernel multiplies one weight tile per K step where gate/up
// multiplies two (gate and up): a weight tile twice as wide gives it the
// same scratch, registers and operand reuse. Where a backend has no such
// shape, the gate/up fragment.
template <class ExecutionSpace, class Scalar, TileSize Size = TileSize::large>
struct DownFragment : Fragment<ExecutionSpace, Scalar, Size> {};

#ifdef KOKKOSMOE_ENABLE_CUDA_TENSOR_CORES
// Large (prefill): 128 x 64 tiles, 4 warps of 64 x 32, 2 teams per
// multiprocessor. Medium: 64 x 64, 4 warps of 32 x 32, 3 teams. Small
// (decode, fewer than 16 rows per expert): 16 x 64, 4 warps of 16 x 16, 3
// teams (against 32 x 32 tiles: 1.1-1.25x faster at one token, up to 1.07x
// at 8 to 32). With our Kokkos 3.4 patch (or any Kokkos that opts in to the
// whole shared memory per block) K steps are 64 deep and the pipelines 3 or
// 4 stages (96, 72 and 72 KiB for gate/up: KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH,
// detected by CMake); otherwise they fit the 40 KiB
// cap (2 or 3 stages, K = 32 for large and medium, 32 x 32 small tiles).
//
// Built for sm_90a (KOKKOSMOE_ENABLE_CUDA_WGMMA, a CMake option), large and
// medium are warpgroup shapes multiplied by wgmma, 4 stages: large 128 x 128
// (gate and up: one 128 x 256 multiply per K step; 8 warps, 1 team per
// multiprocessor, 192 KiB), medium 64 x 64 (64 x 128; 4 warps, 2 teams, 96
// KiB), and for down 128 x 256 and 64 x 128, the same scratch and registers.
// The large shapes are warp-specialised (CudaWarpSpecialized): a producer
// warpgroup copies (weights, x's gathered rows and h by tensor copies),
// the 8 warps only multiply, resident teams walk the work items. The medium
// shape, whose batches are streaming weights, keeps 3 steps loading with
// every warp copying. Measured on the H200 (Mixtral-8x7B at 4096 tokens,
// whole forward): 128 x 64 tiles with synchronous wgmma 8.93 ms, 128 x 128
// also synchronous 8.06, running behind 6.80 (6.61 with one barrier per K
// step, 6.58 in the run below); warp-specialised with a producer warp of
// 16-byte copies 12.9, a producer warpgroup 7.06, tensor copies for the
// weights 6.41, each step's wgmma waited for at once (its stage freed a
// step earlier) 6.10. The medium shape running behind is 1.02-1.04x slower
// (DeepSeek-V3 and Qwen2 at 512-1024 tokens, Mixtral-8x7B at 128), with 5
// stages and 1 team 1.4-1.6x slower.
template <class Scalar>
struct CudaFragmentOf {
#if defined(KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH) && defined(KOKKOSMOE_ENABLE_CUDA_WGMMA)
  using large       = CudaWarpSpecialized<CudaTensorCoreFragment<Scalar, 128, 128, 64, 8, 1, 4, 1>>;
  using large_down  = CudaWarpSpecialized<CudaTensorCoreFragment<Scalar, 128, 256, 64, 8, 1, 4, 1>>;
  using medium      = CudaTensorCoreFragment<Scalar, 64, 64, 64, 4, 1, 4, 2>;
  using medium_down = CudaTensorCoreFragment<Scalar, 64, 128, 64, 4, 1, 4, 2>;
  using small       = CudaTensorCoreFragment<Scalar, 16, 64, 64, 1, 4, 4, 3>;
#elif defined(KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH)
  using large  = CudaTensorCoreFragment<Scalar, 128, 64, 64, 2, 2, 3, 2>;
  using medium = CudaTensorCoreFragment<Scalar, 64, 64, 64, 2, 2, 3, 3>;
  using small  = CudaTensorCoreFragment<Scalar, 16, 64, 64, 1, 4, 4, 3>;
#else
  using large  = CudaTensorCoreFragment<Scalar, 128, 64, 32, 2, 2, 2, 2>;
  using medium = CudaTensorCoreFragment<Scalar, 64, 64, 32, 2, 2, 2, 3>;
  using small  = CudaTensorCoreFragment<Scalar, 32, 32, 64, 2, 2, 3, 4>;
#endif
#if !defined(KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH) || !defined(KOKKOSMOE_ENABLE_CUDA_WGMMA)
  using large_down  = large;
  using medium_down = medium;
#endif
  template <TileSize Size>
  using of = std::conditional_t<Size == TileSize::large, large,
                                std::conditional_t<Size == TileSize::medium, medium, small>>;
  template <TileSize Size>
  using down_of =
      std::conditional_t<Size == TileSize::large, large_down,
                         std::conditional_t<Size == TileSize::medium, medium_down, small>>;
};
template <TileSize Size>
struct Fragment<Kokkos::Cuda, bfloat16, Size> : CudaFragmentOf<bfloat16>::of<Size> {};
template <TileSize Size>
struct Fragment<Kokkos::Cuda, float16, Size> : CudaFragmentOf<float16>::of<Size> {};
template <TileSize Size>
struct DownFragment<Kokkos::Cuda, bfloat16, Size> : CudaFragmentOf<bfloat16>::down_of<Size> {};
template <TileSize Size>
struct DownFragment<Kokkos::Cuda, float16, Size> : CudaFragmentOf<float16>::down_of<Size> {};
#endif

// Rows per tile of each shape, and the fewest over all shapes (the dispatch
// plan is sized for the most tiles).
template <class ExecutionSpace, class Scalar>
int tile_rows(TileSize size) {
  return size == TileSize::small    ? Fragment<ExecutionSpace, Scalar, TileSize::small>::tile_m
         : size == TileSize::medium ? Fragment<ExecutionSpace, Scalar, TileSize::medium>::tile_m
                                    : Fragment<ExecutionSpace, Scalar, TileSize::large>::tile_m;
}
template <class ExecutionSpace, class Scalar>
int min_tile_rows() {
  const int rows[] = {tile_rows<ExecutionSpace, Scalar>(TileSize::small),
                      tile_rows<ExecutionSpace, Scalar>(TileSize::medium),
                      tile_rows<ExecutionSpace, Scalar>(TileSize::large)};
  return *std::min_element(rows, rows + 3);
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
