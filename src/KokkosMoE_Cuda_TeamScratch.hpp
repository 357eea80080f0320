// CUDA's level-0 team scratch limit where the Kokkos launches opt in to the
// device's whole shared memory per block (KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH):
// our patched Kokkos 3.4 still reports its fixed 40 KiB as scratch_size_max(0),
// Kokkos 5.2 the opt-in size; the device attribute is the limit of both.
#ifndef KOKKOSMOE_CUDA_TEAMSCRATCH_HPP
#define KOKKOSMOE_CUDA_TEAMSCRATCH_HPP

#ifndef KOKKOSMOE_TEAMSCRATCH_HPP
#error "include KokkosMoE_TeamScratch.hpp, which includes the backends' limits"
#endif

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSMOE_ENABLE_CUDA_LARGE_TEAM_SCRATCH)
#include <atomic>

namespace KokkosMoE {
namespace Impl {

template <>
struct TeamScratchLimit<Kokkos::Cuda> {
  template <class Policy>
  static std::size_t level0(const Policy& policy) {
    // Per device, asked once (cheap, but forward calls this per launch).
    static std::atomic<int> optin[64];
    const int device = policy.space().cuda_device();
    int bytes        = device >= 0 && device < 64 ? optin[device].load() : 0;
    if (bytes == 0) {
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
      if (device >= 0 && device < 64) optin[device].store(bytes);
    }
    const std::size_t kokkos = std::size_t(policy.scratch_size_max(0));
    return std::size_t(bytes) > kokkos ? std::size_t(bytes) : kokkos;
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
#endif
