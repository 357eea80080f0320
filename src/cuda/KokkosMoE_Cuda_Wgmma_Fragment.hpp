// SPDX-License-Identifier: BSD-3-Clause
// The CUDA wgmma fragments: built for sm_90a (KOKKOSMOE_ENABLE_CUDA_WGMMA, a
// CMake option), the warp-specialised fragment (CudaWarpSpecialized) and
// the tile shapes and crossovers of those builds. Its multiplies are the
// tensor-core fragment's warpgroup shapes (KokkosMoE_Cuda_Fragment.hpp),
// fed by tensor copies (KokkosMoE_Cuda_TensorMap.hpp) through an mbarrier
// pipeline (KokkosMoE_Cuda_Pipeline.hpp).
#ifndef KOKKOSMOE_CUDA_WGMMA_FRAGMENT_HPP
#define KOKKOSMOE_CUDA_WGMMA_FRAGMENT_HPP

#ifndef KOKKOSMOE_FRAGMENT_HPP
#error "include KokkosMoE_Fragment.hpp: it includes this file after the templates it specialises"
#endif

#include "KokkosMoE_Cuda_Fragment.hpp"

#if defined(KOKKOSMOE_ENABLE_CUDA_TENSOR_CORES) && defined(KOKKOSMOE_ENABLE_CUDA_WGMMA)

#include "KokkosMoE_Cuda_Pipeline.hpp"
#include "KokkosMoE_Cuda_TensorMap.hpp"
#include "KokkosMoE_Cuda_Warpgroup.hpp"

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// Base with one more warpgroup that only copies (warp specialisation): the
// Base's warps only multiply, waiting for each stage's data on its barrier
// rather than at a team barrier (CudaStagePipeline), and the producer issues
// every copy, so neither waits for the other's instructions. Its teams are
// persistent: MinTeams per multiprocessor walk the work items, the pipeline
// running on across them, so that the next item's first stages load while
// this one's last steps multiply and its outputs are stored. Producers: a
// warpgroup, whose 16-byte copies keep up with the multiplies where tensor
// maps cannot be made (a single producer warp's do not), or one warp where
// every copy is a tensor copy (its registers go to the multipliers).
// MultiplierRegisters (with a producer warpgroup; 0: as launched): the
// registers each multiplying thread takes from the producers once the team
// starts (setmaxnreg), the producers keeping what is left of their
// sub-partition's share. (A multiprocessor's registers are split between
// its four sub-partitions: a single producer warp caps the multipliers as
// a whole producer warpgroup would, at 168 a thread.)
template <class Base, int Producers = 128, int MultiplierRegisters = 0>
struct CudaWarpSpecialized : Base {
  static constexpr int multiplier_threads = Base::team_threads;
  static constexpr int producer_threads = Producers;
  static constexpr int team_threads = multiplier_threads + producer_threads;
  static int team_size() { return team_threads; }
  using launch_bounds = Kokkos::LaunchBounds<team_threads, Base::min_teams>;
  using pipeline = CudaStagePipeline<Base::stages>;
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
    return tensor_map::encode(map, data, rows, cols, std::uint32_t(box_rows),
                              int(sizeof(typename Base::operand_type)));
  }
  KOKKOS_INLINE_FUNCTION static void acquire_map(const void* map) { tensor_map::acquire(map); }
  // Tile t (1024-byte aligned, its rows box_rows of the map) from (row, col).
  KOKKOS_INLINE_FUNCTION static void bulk_load(const typename Base::tile& t, const void* map,
                                               int row, int col, std::uint64_t* barrier) {
    tensor_map::load(t.data(), map, col, row, barrier);
  }
  // `bytes` contiguous bytes (16-byte aligned, a multiple of 16) to dst.
  KOKKOS_INLINE_FUNCTION static void bulk_copy(void* dst, const void* src, int bytes,
                                               std::uint64_t* barrier) {
    tensor_map::copy(dst, src, bytes, barrier);
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
  // Each side's registers, as it starts (see MultiplierRegisters): the
  // producers give up what the multipliers take, out of the team's own
  // registers as launched (setmaxnreg.inc waits for registers the team's
  // setmaxnreg.dec released; asking for more than that never returns).
  static constexpr int launch_registers = 65536 / team_threads / 8 * 8;
  static constexpr int producer_registers =
      MultiplierRegisters == 0
          ? 0
          : (launch_registers * team_threads - multiplier_threads * MultiplierRegisters) /
                Producers / 8 * 8;
  static_assert(MultiplierRegisters == 0 ||
                    (Producers == 128 && Base::min_teams == 1 && MultiplierRegisters % 8 == 0 &&
                     producer_registers >= 24),
                "registers moved from a producer warpgroup of a team alone on its multiprocessor");
  KOKKOS_INLINE_FUNCTION static void start_producer() {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    if constexpr (MultiplierRegisters > 0)
      asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(producer_registers));
#endif
  }
  KOKKOS_INLINE_FUNCTION static void start_multiplier() {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    if constexpr (MultiplierRegisters > 0)
      asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(MultiplierRegisters));
#endif
  }
  // mma_nt, finish and store are Base's: the main loop calls them from the
  // multipliers only (the producers return before).
};

// Large and medium are warpgroup shapes multiplied by wgmma, 4 stages:
// large 128 x 128 (gate and up: one 128 x 256 multiply per K step; 8 warps,
// 1 team per multiprocessor, 192 KiB), medium 64 x 64 (64 x 128; 4 warps, 2
// teams, 96 KiB), and for down 128 x 256 and 64 x 128, the same scratch and
// registers; small is mma.sync's 16 x 64. The large shapes are
// warp-specialised (CudaWarpSpecialized): a producer warpgroup copies
// (weights, x's gathered rows and h by tensor copies), the 8 warps only
// multiply, resident teams walk the work items, each step's wgmma waited
// for at once so that its stage is freed for the next copy: the fastest
// large shape measured on the H200 for prefill (docs/performance.md lists
// the variants). The medium shape, whose batches are streaming weights,
// keeps 3 steps loading with every warp copying, each wgmma waited for at
// once: the weights' stream bounds it, which running behind does not
// shorten. (They need more than the 40 KiB cap: without
// KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH, mma.sync's shapes.)
#ifdef KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH
// Large, medium, small; large and medium for down.
template <class Scalar, TileSize Size>
struct CudaFragmentOf
    : ShapeTable<Size,
                 CudaWarpSpecialized<CudaTensorCoreFragment<Scalar, 128, 128, 64, 8, 1, 4, 1>>,
                 CudaTensorCoreFragment<Scalar, 64, 64, 64, 4, 1, 4, 2>,
                 CudaTensorCoreFragment<Scalar, 16, 64, 64, 1, 4, 4, 3>,
                 CudaWarpSpecialized<CudaTensorCoreFragment<Scalar, 128, 256, 64, 8, 1, 4, 1>>,
                 CudaTensorCoreFragment<Scalar, 64, 128, 64, 4, 1, 4, 2>> {};

// e4m3 weights: staged weights in every shape (two bf16 weight tiles and
// S stages of half their size in e4m3, beside S stages of x or h), as
// deep as two teams per multiprocessor allow where the kernels stream
// weights: small 16 x 64, 6 stages (92 KiB, 2 teams); medium 64 x 64 and
// down's 64 x 128, 4 stages (96 KiB, 2 teams). Large is 128 x 128 (gate and
// up: 128 x 256 per K step; down 128 x 128, whose staged tile must lie in
// one 128-row scale block), 4 stages, one team, without the producer
// warpgroup, whose tensor copies cannot convert.
template <TileSize Size>
struct CudaFp8FragmentOf
    : ShapeTable<Size,
                 CudaStagedWeights<CudaTensorCoreFragment<bfloat16, 128, 128, 64, 8, 1, 4, 1>>,
                 CudaStagedWeights<CudaTensorCoreFragment<bfloat16, 64, 64, 64, 4, 1, 4, 2>>,
                 CudaStagedWeights<CudaTensorCoreFragment<bfloat16, 16, 64, 64, 1, 4, 6, 2>>,
                 CudaStagedWeights<CudaTensorCoreFragment<bfloat16, 128, 128, 64, 8, 1, 4, 1>>,
                 CudaStagedWeights<CudaTensorCoreFragment<bfloat16, 64, 128, 64, 4, 1, 4, 2>>> {};

// With wgmma (its 128-row tiles twice as wide) 128-row tiles from 64 rows
// per expert, where they catch up with 64-row ones (docs/performance.md);
// the small crossover is mma.sync's.
// (Without large team scratch, mma.sync's shapes and crossovers.)
template <>
struct TileCrossovers<Kokkos::Cuda> {
  static constexpr std::int64_t small_tile_rows_below = 16;
  static constexpr std::int64_t large_tile_rows_from = 64;
};
#endif

}  // namespace Impl
}  // namespace KokkosMoE

#endif
#endif
