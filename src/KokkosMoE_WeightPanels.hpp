// SPDX-License-Identifier: BSD-3-Clause
// Expert weights packed once into panels, for fragments that multiply
// vectors of weight columns (panel_layout: the host panel fragment). Each
// expert's [N, K] matrix becomes ceil(N / P) panels of P columns, K deep
// (the PanelLayout), so that a register block reads one contiguous run of
// each panel per K step instead of a few elements of each of its rows, H
// apart, and its columns fill whole vectors whatever the token rows.
#ifndef KOKKOSMOE_WEIGHTPANELS_HPP
#define KOKKOSMOE_WEIGHTPANELS_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_FragmentContract.hpp"

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace KokkosMoE {
namespace Impl {

// The panels of an [E, N, K] weight tensor: [E, ceil(N / P), depth(K) P],
// zero past N and K.
template <class Scalar, class MemorySpace>
using weight_panels = Kokkos::View<Scalar***, Kokkos::LayoutRight, MemorySpace>;

inline std::size_t panel_elements(PanelLayout layout, std::int64_t experts, std::int64_t n,
                                  std::int64_t k) {
  return std::size_t(experts) * std::size_t(layout.panels(n)) *
         std::size_t(layout.depth(k) * layout.columns);
}

template <class Scalar, class MemorySpace>
struct PackPanelsKernel {
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, MemorySpace> weights;  // [E, N, K]
  weight_panels<Scalar, MemorySpace> panels;
  PanelLayout layout;

  // Panel p of expert e: its columns one after another, each read along
  // its row.
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    const std::int64_t per_expert = std::int64_t(panels.extent(1));
    const int e = int(i / per_expert), p = int(i % per_expert);
    const int N = int(weights.extent(1)), P = layout.columns;
    const std::int64_t K = std::int64_t(weights.extent(2)), depth = layout.depth(K);
    Scalar* out = &panels(e, p, 0);
    for (int c = 0; c < P; ++c) {
      const int n = p * P + c;
      for (std::int64_t k = 0; k < depth; ++k)
        out[layout.offset(c, k)] = n < N && k < K ? weights(e, n, k) : Scalar(0.0f);
    }
  }
};

// weights ([E, N, K]) packed into panels of `layout`, on exec.
template <class ExecutionSpace, class Scalar>
weight_panels<Scalar, typename ExecutionSpace::memory_space> pack_panels(
    const ExecutionSpace& exec,
    const Kokkos::View<const Scalar***, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>&
        weights,
    PanelLayout layout, const char* label) {
  using memory_space = typename ExecutionSpace::memory_space;
  const std::int64_t E = std::int64_t(weights.extent(0)), N = std::int64_t(weights.extent(1)),
                     K = std::int64_t(weights.extent(2));
  const std::int64_t panels = layout.panels(N);
  weight_panels<Scalar, memory_space> out(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                             std::string(label)),
                                          E, panels, layout.depth(K) * layout.columns);
  Kokkos::parallel_for(
      "KokkosMoE::pack_panels",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, E * panels),
      PackPanelsKernel<Scalar, memory_space>{weights, out, layout});
  return out;
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
