// SPDX-License-Identifier: BSD-3-Clause
// A copy pipeline between producer warps and the warps that multiply,
// synchronised by shared-memory barriers (mbarrier, sm_90) instead of team
// barriers: for each of S stages, `loaded` completes when the producer's
// copies into the stage have landed and `free` when every multiplying warp
// is done reading it. Neither side ever waits for the other's instruction
// issue, only for the data or the buffer it needs.
//
// Step g (counted over the whole life of the team, across work items) uses
// stage g % S in round g / S; a barrier's phase of round r has parity r % 2.
#ifndef KOKKOSMOE_CUDA_PIPELINE_HPP
#define KOKKOSMOE_CUDA_PIPELINE_HPP

#include <Kokkos_Core.hpp>

#include "KokkosMoE_Cuda_Warpgroup.hpp"

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

template <int Stages>
struct CudaStagePipeline {
  std::uint64_t* barriers;  // in team scratch: loaded[S] then free[S]

  KOKKOS_INLINE_FUNCTION static constexpr std::size_t scratch_bytes() {
    return 2 * Stages * sizeof(std::uint64_t) + 8;  // + alignment
  }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Thread 0 sets the barriers up; the caller passes a team barrier after.
  // loaded: each producer thread arrives twice per round, once itself
  // (releasing its plain scratch stores: zero fill) and once when its
  // cp.async copies have landed, and tensor copies count their bytes
  // (expect_bytes); free: one arrival per multiplying warp. (Tensor copies
  // keep the same count: their issuing thread arriving alone would not make
  // them land sooner.)
  __device__ void initialize(int rank, int producer_threads, int multiplier_warps) const {
    if (rank != 0) return;
    for (int s = 0; s < Stages; ++s) {
      init(loaded(s), 2 * producer_threads);
      init(free(s), multiplier_warps);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }

  // Producer: waits until stage g % S may be overwritten (its round before
  // has been read; the first round passes at once).
  __device__ void wait_free(int g) const { wait(free(g % Stages), ((g / Stages) & 1) ^ 1); }
  // Producer, after issuing step g's copies: loaded(g) completes once they
  // (and this thread's plain stores) are in scratch.
  __device__ void loaded_when_landed(int g) const {
    const auto b = address(loaded(g % Stages));
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(b) : "memory");
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(b) : "memory");
  }
  // Producer: the barrier that step g's bulk (TMA) copies complete, and
  // the bytes they bring (before the thread's arrival in loaded_when_landed).
  __device__ std::uint64_t* loaded_barrier(int g) const { return loaded(g % Stages); }
  __device__ static void expect_bytes(std::uint64_t* barrier, int bytes) {
    asm volatile("mbarrier.expect_tx.shared::cta.b64 [%0], %1;\n" ::"r"(address(barrier)),
                 "r"(bytes)
                 : "memory");
  }
  // Multiplier: waits for step g's data, then, where the producer wrote
  // some of it by plain or cp.async stores (plain_writes), makes it visible
  // to wgmma, which reads scratch through the async proxy. (Tensor copies
  // write through that proxy: no fence, which would add a MEMBAR.ALL.CTA to
  // every K step.)
  __device__ void wait_loaded(int g, bool plain_writes) const {
    wait(loaded(g % Stages), (g / Stages) & 1);
    if (plain_writes) warpgroup::fence_shared_for_async();
  }
  // The producer's threads (whole warps), between their own scratch
  // accesses: named barrier 1 (Kokkos' team barrier is barrier 0).
  __device__ static void sync_producer(int threads) {
    asm volatile("bar.sync 1, %0;\n" ::"r"(threads) : "memory");
  }
  // Multiplier warp, once its multiplies of step g have completed.
  __device__ void release(int g, int lane) const {
    __syncwarp();
    if (lane == 0)
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(address(free(g % Stages)))
                   : "memory");
  }

 private:
  __device__ std::uint64_t* loaded(int s) const { return barriers + s; }
  __device__ std::uint64_t* free(int s) const { return barriers + Stages + s; }
  __device__ static std::uint32_t address(const std::uint64_t* p) {
    return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
  }
  __device__ static void init(std::uint64_t* p, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(address(p)), "r"(count)
                 : "memory");
  }
  __device__ static void wait(const std::uint64_t* p, int parity) {
    std::uint32_t done = 0;
    do {
      asm volatile(
          "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
          "selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(done)
          : "r"(address(p)), "r"(parity)
          : "memory");
    } while (!done);
  }
#else
  // Only sm_90 code runs warp-specialised kernels (the fragments that use
  // this pipeline exist only in sm_90a builds); elsewhere, stop loudly.
  KOKKOS_INLINE_FUNCTION void initialize(int, int, int) const { unavailable(); }
  KOKKOS_INLINE_FUNCTION void wait_free(int) const { unavailable(); }
  KOKKOS_INLINE_FUNCTION void loaded_when_landed(int) const { unavailable(); }
  KOKKOS_INLINE_FUNCTION void wait_loaded(int, bool) const { unavailable(); }
  KOKKOS_INLINE_FUNCTION void release(int, int) const { unavailable(); }
  KOKKOS_INLINE_FUNCTION static void sync_producer(int) { unavailable(); }
  KOKKOS_INLINE_FUNCTION std::uint64_t* loaded_barrier(int) const { return unavailable(), nullptr; }
  KOKKOS_INLINE_FUNCTION static void expect_bytes(std::uint64_t*, int) { unavailable(); }
  KOKKOS_INLINE_FUNCTION static void unavailable() {
    Kokkos::abort("KokkosMoE: the mbarrier copy pipeline needs sm_90");
  }
#endif
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
