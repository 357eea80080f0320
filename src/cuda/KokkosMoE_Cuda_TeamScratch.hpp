// SPDX-License-Identifier: BSD-3-Clause
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
namespace KokkosMoE {
namespace Impl {

template <>
struct TeamScratchLimit<Kokkos::Cuda> {
  template <class Policy>
  static std::size_t level0(const Policy& policy) {
    // A device attribute: no stream work, so also safe while a graph records.
    int optin = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                           policy.space().cuda_device());
    const std::size_t kokkos = std::size_t(policy.scratch_size_max(0));
    return std::size_t(optin) > kokkos ? std::size_t(optin) : kokkos;
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
#endif
