// SPDX-License-Identifier: BSD-3-Clause
// The portable matrix-multiply-accumulate fragment: plain loops over float
// scratch tiles, for any execution space. It serves every backend without a
// fragment of its own (the host backends; HIP until it has one), and is the
// reference every backend fragment is tested against. Its tiles are 32 rows
// by 32 columns (16 rows small: Fragment's default), medium and large alike.
#ifndef KOKKOSMOE_PORTABLE_FRAGMENT_HPP
#define KOKKOSMOE_PORTABLE_FRAGMENT_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_ColumnRun.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

template <class ExecutionSpace, int TileM = 32>
struct PortableFragment {
  using scratch_space = typename ExecutionSpace::scratch_memory_space;
  // Tiles live in team scratch as float: 16-bit inputs are widened once on
  // load, so the inner loops are float arithmetic the compiler vectorises.
  using tile = Kokkos::View<float**, Kokkos::LayoutRight, scratch_space,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using operand_type = float;
  using accumulator_type = tile;  // in scratch: each thread owns fixed elements

  // Rows of tokens, columns of outputs and depth per scratch tile. The fused
  // gate/up kernel's team holds two stages of three operand tiles and two
  // accumulators: 32^3 (~33 KiB) fits a GPU's 40 KiB level-0 cap; host
  // backends (32 KiB since Kokkos 5.1) take tiles 16 deep (~21 KiB).
  static constexpr bool on_host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                 typename ExecutionSpace::memory_space>::accessible;
  static constexpr int tile_m = TileM;
  static constexpr int tile_n = 32;
  static constexpr int tile_k = on_host ? 16 : 32;

  // Operand tiles of R rows hold their elements k-major, [tile_k][R] (see
  // element): the multiplication then runs over contiguous rows of outputs,
  // which vectorises without reassociating a sum, and a GPU warp reads
  // consecutive elements. operand_stride * R floats hold a tile.
  static constexpr int operand_stride = tile_k;
  // Elements consecutive in k are not adjacent: loads go one element at a time.
  static constexpr bool k_contiguous = false;

  template <class Scalar>
  KOKKOS_INLINE_FUNCTION static float to_operand(Scalar v) {
    return to_float(v);
  }

  // Where element (r, c) of an operand tile lives: k-major.
  KOKKOS_INLINE_FUNCTION static float* element(const tile& t, int r, int c) {
    return t.data() + c * t.extent_int(0) + r;
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION static tile operand(const Member& member, int rows) {
    return tile(member.team_scratch(0), rows, operand_stride);
  }
  template <class Member>
  KOKKOS_INLINE_FUNCTION static tile accumulator(const Member& member) {
    return tile(member.team_scratch(0), tile_m, tile_n);
  }
  static std::size_t operand_bytes(int rows) { return tile::shmem_size(rows, operand_stride); }
  static std::size_t accumulator_bytes() { return tile::shmem_size(tile_m, tile_n); }

  // Depth of the K pipeline: loads of the next step overlap this one.
  static constexpr int stages = 2;

  // Loads from global memory into scratch: plain copies here (a GPU
  // fragment may make them asynchronous until wait_copies).
  KOKKOS_INLINE_FUNCTION static void copy16(void* dst, const void* src) {
    struct alignas(16) Chunk {
      std::uint32_t word[4];
    };
    *static_cast<Chunk*>(dst) = *static_cast<const Chunk*>(src);
  }
  KOKKOS_INLINE_FUNCTION static void commit_copies() {}
  template <int pending>
  KOKKOS_INLINE_FUNCTION static void wait_copies() {}

  // Teams a launch should have before split-K stops paying: a few per host
  // thread on host backends, about 8 per multiprocessor on GPUs.
  static std::int64_t split_k_teams() { return team_size() == 1 ? 64 : 1024; }

  static constexpr int team_threads = 0;  // chosen at run time (team_size)
  using launch_bounds = Kokkos::LaunchBounds<>;
  // Every thread copies and multiplies (no producer threads), one team per
  // work item (no resident teams walking a list of them).
  static constexpr int producer_threads = 0;
  static int resident_teams() { return 0; }
  static int team_size() { return on_host ? 1 : 128; }

  template <class Member>
  KOKKOS_INLINE_FUNCTION static void zero(const Member& member, const tile& acc) {
    const int n = acc.extent_int(1);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, acc.extent_int(0) * n),
                         [&](int i) { acc(i / n, i % n) = 0; });
  }

  // mma_nt is done when it returns (no multiplies left in flight); finish
  // makes every thread's accumulator writes visible to store.
  static constexpr int mma_in_flight = 0;
  template <class Member, class... Acc>
  KOKKOS_INLINE_FUNCTION static void finish(const Member& member, const Acc&...) {
    member.team_barrier();
  }

  // Calls f(m, n, runs...) once per element, with a ColumnRun<1> of each
  // accumulator (runs of up to Width values: here always one).
  template <int Width, class Member, class F, class... Acc>
  KOKKOS_INLINE_FUNCTION static void store(const Member& member, const F& f, const tile& acc0,
                                           const Acc&... acc) {
    const int n = acc0.extent_int(1);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, acc0.extent_int(0) * n), [&](int i) {
      const int r = i / n, c = i % n;
      f(r, c, ColumnRun<1>{{acc0(r, c)}}, ColumnRun<1>{{acc(r, c)}}...);
    });
  }

  // acc[m][n] += sum_k a[m][k] * b[n][k], for one or two (b, acc) pairs
  // sharing the reads of a (fused gate/up). A one-thread team (host) runs k
  // outermost and n innermost: acc rows and b's k-slices are contiguous.
  // A GPU team gives each thread fixed outputs and sums over k.
  template <class Member, class... Pairs>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const tile& a,
                                            const Pairs&... b_acc) {
    if (member.team_size() == 1) {
      const float* pa = a.data();
      for (int k = 0; k < tile_k; ++k)
        for (int m = 0; m < tile_m; ++m) axpy_rows(pa[k * tile_m + m], k, m, b_acc...);
      return;
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, tile_m * tile_n),
                         [&](int i) { dot_into(a, i / tile_n, i % tile_n, b_acc...); });
  }

 private:
  // acc[m][:] += am * b[k][:] for each (b, acc).
  KOKKOS_INLINE_FUNCTION static void axpy_rows(float, int, int) {}
  template <class... Rest>
  KOKKOS_INLINE_FUNCTION static void axpy_rows(float am, int k, int m, const tile& b,
                                               const tile& acc, const Rest&... rest) {
    const float* pb = b.data() + k * tile_n;
    float* row = &acc(m, 0);
    for (int n = 0; n < tile_n; ++n) row[n] += am * pb[n];
    axpy_rows(am, k, m, rest...);
  }
  // acc[m][n] += sum_k a[k][m] b[k][n] for each (b, acc).
  KOKKOS_INLINE_FUNCTION static void dot_into(const tile&, int, int) {}
  template <class... Rest>
  KOKKOS_INLINE_FUNCTION static void dot_into(const tile& a, int m, int n, const tile& b,
                                              const tile& acc, const Rest&... rest) {
    float s = 0;
    for (int k = 0; k < tile_k; ++k) s += a.data()[k * tile_m + m] * b.data()[k * tile_n + n];
    acc(m, n) += s;
    dot_into(a, m, n, rest...);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
