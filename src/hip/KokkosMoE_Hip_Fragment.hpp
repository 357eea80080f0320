// SPDX-License-Identifier: BSD-3-Clause
// The CDNA matrix-core fragment (AMD Instinct MI200: gfx90a; MI300:
// gfx940-942; MI350: gfx950): 16-bit operand tiles in LDS (team scratch)
// multiplied with MFMA instructions (KokkosMoE_Hip_Mfma.hpp), float
// accumulators in registers; and the tile shapes of HIP builds for those
// GPUs (KOKKOSMOE_ENABLE_HIP_MATRIX_CORES, set by CMake from Kokkos' arch).
//
// A team is WavesM x WavesN wavefronts of 64 lanes over the output tile;
// each wavefront owns a (TileM / WavesM) x (TileN / WavesN) block, made of
// M x M instruction blocks (M = 32: v_mfma_f32_32x32x8{bf16_1k,f16}; 16:
// v_mfma_f32_16x16x16{bf16_1k,f16}). Lanes is who runs the lanes:
// mfma::DeviceLanes (a lane a thread) on the GPU, mfma::ModelLanes (one
// thread, every lane of every wavefront, the instructions' host model) in
// the host tests; the loads, multiplies and stores are the same code.
//
// Operand rows are k-contiguous and padded: a lane reads 16 bytes of its
// row (ds_read_b128, the operands of two instructions), and the LDS serves
// such a read in 8 phases of 8 lanes, lanes {0-3, 20-23}, {4-7, 16-19},
// {8-11, 28-31}, {12-15, 24-27} and the same 32 higher, each phase at its
// 32 banks of 4 bytes once (AMD's Composable Kernel documentation on LDS
// bank conflicts). The rows' length in 16-byte chunks puts a phase's 8
// reads in 8 different bank groups: odd for 32 x 32 instructions (a phase
// reads 8 rows at one K slice), 2 modulo 4 for 16 x 16 ones (4 rows at two
// slices). The two instructions of a read take its first and its second 4
// (16-bit) values: their K slices are not the instruction's own order, but
// A and B are read alike, so each product pairs the same k.
#ifndef KOKKOSMOE_HIP_FRAGMENT_HPP
#define KOKKOSMOE_HIP_FRAGMENT_HPP

#ifndef KOKKOSMOE_FRAGMENT_HPP
#error "include KokkosMoE_Fragment.hpp, which includes this file"
#endif

#include <KokkosMoE/KokkosMoE_BuildConfig.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_ColumnRun.hpp"
#include "hip/KokkosMoE_Hip_Mfma.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

template <class ExecutionSpace, class Scalar, class Lanes, int M, int TileM, int TileN, int TileK,
          int WavesM, int WavesN, int Stages = 2>
struct CdnaMatrixFragment {
  using S = mfma::Shape<Scalar, M>;
  using operand_type = Scalar;
  using scratch_space = typename ExecutionSpace::scratch_memory_space;
  using tile = Kokkos::View<Scalar**, Kokkos::LayoutRight, scratch_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  static constexpr int tile_m = TileM, tile_n = TileN, tile_k = TileK;
  static constexpr int waves_m = WavesM, waves_n = WavesN, waves = WavesM * WavesN;
  static constexpr int wave_m = TileM / WavesM, wave_n = TileN / WavesN;
  static constexpr int frags_m = wave_m / S::m, frags_n = wave_n / S::n;
  // A lane's read: 16 bytes, two instructions' operand elements, so a K
  // group of the wavefront is the lanes' slices of them.
  static constexpr int chunk = 16 / int(sizeof(Scalar));
  static_assert(chunk == 2 * S::values, "a 16-byte read holds two instructions' operands");
  static constexpr int k_group = S::slices * chunk;
  static_assert(wave_m % S::m == 0 && wave_n % S::n == 0 && TileK % k_group == 0,
                "wavefronts own whole instruction blocks; K steps of whole groups");

  // Row length in 16-byte chunks: the least from TileK on that spreads an
  // LDS phase over every bank (see the file's comment).
  static constexpr int row_chunks(int c) {
    while (S::m == 32 ? c % 2 != 1 : c % 4 != 2) ++c;
    return c;
  }
  static constexpr int operand_stride = row_chunks(TileK / chunk) * chunk;
  static constexpr bool k_contiguous = true;
  static constexpr int stages = Stages;
  static constexpr int mma_in_flight = 0;

  // Lanes a thread holds, and wavefronts (the model: all of the team's).
  static constexpr int lanes = Lanes::lanes;
  static constexpr int waves_a_thread = Lanes::model ? waves : 1;
  static constexpr int team_threads = Lanes::model ? 1 : waves * mfma::wave_size;
  using launch_bounds = std::conditional_t<Lanes::model, Kokkos::LaunchBounds<>,
                                           Kokkos::LaunchBounds<waves * mfma::wave_size, 1>>;
  static int team_size() { return team_threads; }
  static constexpr int producer_threads = 0;
  static int resident_teams() { return 0; }
  // The model's tiles in level 1: the host backends' level 0 is 32 KiB.
  static constexpr int scratch_level = Lanes::model ? 1 : 0;
  // Split-K aims at a few teams per compute unit (MI300X has 304), or a few
  // per host thread for the model.
  static std::int64_t split_k_teams() { return Lanes::model ? 64 : 2048; }

  struct accumulator_type {
    float c[waves_a_thread][frags_m][frags_n][lanes][S::regs];
  };

  KOKKOS_INLINE_FUNCTION static operand_type to_operand(Scalar v) { return v; }
  // A dequantised weight (block-scaled storage types), rounded to Scalar.
  KOKKOS_INLINE_FUNCTION static operand_type to_operand(float v) { return Scalar(v); }

  KOKKOS_INLINE_FUNCTION static Scalar* element(const tile& t, int r, int c) {
    return t.data() + r * operand_stride + c;
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION static tile operand(const Member& member, int rows) {
    void* p = member.team_scratch(scratch_level)
                  .get_shmem_aligned(std::size_t(rows) * operand_stride * sizeof(Scalar), 16);
    return tile(static_cast<Scalar*>(p), rows, operand_stride);
  }
  template <class Member>
  KOKKOS_INLINE_FUNCTION static accumulator_type accumulator(const Member&) {
    return accumulator_type{};
  }
  static std::size_t operand_bytes(int rows) {
    return std::size_t(rows) * operand_stride * sizeof(Scalar) + 16;
  }
  static std::size_t accumulator_bytes() { return 0; }  // registers only

  // Global to LDS through registers: the next step's loads are issued
  // before this step's multiplies (the kernels' loop order).
  KOKKOS_INLINE_FUNCTION static void copy16(void* dst, const void* src) { copy_chunk(dst, src); }
  KOKKOS_INLINE_FUNCTION static void commit_copies() {}
  template <int pending>
  KOKKOS_INLINE_FUNCTION static void wait_copies() {}

  template <class Member>
  KOKKOS_INLINE_FUNCTION static void zero(const Member&, accumulator_type& acc) {
    float* c = &acc.c[0][0][0][0][0];
    for (std::size_t i = 0; i < sizeof(acc.c) / sizeof(float); ++i) c[i] = 0.0f;
  }

  // acc += a b^T for one or two (b, acc) pairs sharing the reads of a.
  template <class Member, class... Pairs>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const tile& a, Pairs&&... b_acc) {
    for (int w = 0; w < waves_a_thread; ++w) {
      const int row0 = (wave(member, w) / waves_n) * wave_m;
#pragma unroll
      for (int kk = 0; kk < tile_k; kk += k_group) {
        Scalar fa[frags_m][lanes][chunk];
#pragma unroll
        for (int i = 0; i < frags_m; ++i)
          for (int l = 0; l < lanes; ++l) {
            const int ln = lane(member, l);
            copy_chunk(fa[i][l],
                       element(a, row0 + i * S::m + S::a_row(ln), kk + chunk * S::slice(ln)));
          }
        multiply(member, w, kk, fa, b_acc...);
      }
    }
  }

  template <class Member, class... Acc>
  KOKKOS_INLINE_FUNCTION static void finish(const Member&, Acc&...) {}

  // Calls f(m, n, runs...) with a ColumnRun<1> of each accumulator: a lane
  // holds one column of each instruction block (its rows in groups of 4).
  template <int Width, class Member, class F, class... Acc>
  KOKKOS_INLINE_FUNCTION static void store(const Member& member, const F& f, Acc&... acc) {
    static_assert(Width >= 1, "runs of at least one value");
    for (int w = 0; w < waves_a_thread; ++w) {
      const int row0 = (wave(member, w) / waves_n) * wave_m;
      const int col0 = (wave(member, w) % waves_n) * wave_n;
#pragma unroll
      for (int i = 0; i < frags_m; ++i)
#pragma unroll
        for (int j = 0; j < frags_n; ++j)
          for (int l = 0; l < lanes; ++l) {
            const int ln = lane(member, l);
#pragma unroll
            for (int r = 0; r < S::regs; ++r)
              f(row0 + i * S::m + S::d_row(ln, r), col0 + j * S::n + S::d_col(ln),
                ColumnRun<1>{{acc.c[w][i][j][l][r]}}...);
          }
    }
  }

 private:
  struct alignas(16) Chunk {
    std::uint32_t word[4];
  };
  KOKKOS_FORCEINLINE_FUNCTION static void copy_chunk(void* dst, const void* src) {
    *static_cast<Chunk*>(dst) = *static_cast<const Chunk*>(src);
  }
  // The wavefront and lane of a thread's w-th wavefront and l-th lane.
  template <class Member>
  KOKKOS_FORCEINLINE_FUNCTION static int wave(const Member& member, int w) {
    return Lanes::model ? w : member.team_rank() / mfma::wave_size;
  }
  template <class Member>
  KOKKOS_FORCEINLINE_FUNCTION static int lane(const Member& member, int l) {
    return Lanes::model ? l : member.team_rank() % mfma::wave_size;
  }

  template <class Member, class FragA>
  KOKKOS_INLINE_FUNCTION static void multiply(const Member&, int, int, const FragA&) {}

  template <class Member, class FragA, class... Rest>
  KOKKOS_INLINE_FUNCTION static void multiply(const Member& member, int w, int kk, const FragA& fa,
                                              const tile& b, accumulator_type& acc,
                                              Rest&&... rest) {
    const int col0 = (wave(member, w) % waves_n) * wave_n;
#pragma unroll
    for (int j = 0; j < frags_n; ++j) {
      Scalar fb[lanes][chunk];
      for (int l = 0; l < lanes; ++l) {
        const int ln = lane(member, l);
        copy_chunk(fb[l], element(b, col0 + j * S::n + S::b_col(ln), kk + chunk * S::slice(ln)));
      }
#pragma unroll
      for (int i = 0; i < frags_m; ++i) {
        Lanes::template mma<S>(fa[i], fb, 0, acc.c[w][i][j]);
        Lanes::template mma<S>(fa[i], fb, S::values, acc.c[w][i][j]);
      }
    }
    multiply(member, w, kk, fa, rest...);
  }
};

// The CDNA shapes of a storage type, for an execution space and who runs
// the lanes (the HIP space and the device; the host tests' space and the
// model). Large (prefill): 128 x 64 tiles (down 128 x 128), 4 wavefronts of
// 64 x 32 (64 x 64), 32 x 32 instructions. Medium: 64 x 64 (down 64 x
// 128), wavefronts of 32 x 32 (32 x 64). Small (decode, fewer than 16 rows
// per expert): 16 x 64, wavefronts of 16 x 16 instructions side by side.
// K steps of 32 and two stages: at most 40 KiB of LDS for gate/up's three
// operand tiles (30 KiB medium, 27 KiB small), within every Kokkos' HIP
// team scratch and two teams per 64 KiB compute unit for medium and small.
template <class ExecutionSpace, class Lanes, class Scalar, TileSize Size>
struct CdnaFragmentOf
    : ShapeTable<Size, CdnaMatrixFragment<ExecutionSpace, Scalar, Lanes, 32, 128, 64, 32, 2, 2>,
                 CdnaMatrixFragment<ExecutionSpace, Scalar, Lanes, 32, 64, 64, 32, 2, 2>,
                 CdnaMatrixFragment<ExecutionSpace, Scalar, Lanes, 16, 16, 64, 32, 1, 4>,
                 CdnaMatrixFragment<ExecutionSpace, Scalar, Lanes, 32, 128, 128, 32, 2, 2>,
                 CdnaMatrixFragment<ExecutionSpace, Scalar, Lanes, 32, 64, 128, 32, 2, 2>> {};

#if defined(KOKKOS_ENABLE_HIP) && defined(KOKKOSMOE_ENABLE_HIP_MATRIX_CORES)
#if KOKKOS_VERSION >= 40000
using HipExecutionSpace = Kokkos::HIP;
#else
using HipExecutionSpace = Kokkos::Experimental::HIP;
#endif
template <class Scalar, TileSize Size>
using HipFragmentOf = CdnaFragmentOf<HipExecutionSpace, mfma::DeviceLanes, Scalar, Size>;

// bf16 and fp16 on the matrix cores; e4m3 weights dequantised to bf16 as
// they load (OperandLoader), into the bf16 fragments; float keeps the
// portable fragment.
template <TileSize Size>
struct Fragment<HipExecutionSpace, bfloat16, Size> : HipFragmentOf<bfloat16, Size>::gate_up {};
template <TileSize Size>
struct Fragment<HipExecutionSpace, float16, Size> : HipFragmentOf<float16, Size>::gate_up {};
template <TileSize Size>
struct Fragment<HipExecutionSpace, float8_e4m3, Size> : HipFragmentOf<bfloat16, Size>::gate_up {};
template <TileSize Size>
struct DownFragment<HipExecutionSpace, bfloat16, Size> : HipFragmentOf<bfloat16, Size>::down {};
template <TileSize Size>
struct DownFragment<HipExecutionSpace, float16, Size> : HipFragmentOf<float16, Size>::down {};
template <TileSize Size>
struct DownFragment<HipExecutionSpace, float8_e4m3, Size> : HipFragmentOf<bfloat16, Size>::down {};
#endif

}  // namespace Impl
}  // namespace KokkosMoE

#endif
