// SPDX-License-Identifier: BSD-3-Clause
// kokkos-moe-replay --check on the device: a sample of a batch's tokens
// against the float64 reference, each row within its error bound
// (ErrorModel.hpp). Shared by the one-device and the expert-parallel replay.
#ifndef KOKKOSMOE_DRIVER_REFERENCECHECK_HPP
#define KOKKOSMOE_DRIVER_REFERENCECHECK_HPP

#include <KokkosMoE/KokkosMoE_Reference.hpp>

#include "ErrorModel.hpp"
#include "ModelPresets.hpp"
#include "ReplayInputs.hpp"
#include "ReplayReport.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <vector>

namespace KokkosMoE {
namespace Driver {

// The error model of a replay of shape s in Scalar; `roundings`: how often
// the storage type rounds an output (twice where each expert's result is
// stored before the combine).
template <class Scalar>
ErrorModel replay_error_model(const Shape& s, double roundings = 1) {
  ErrorModel model;
  model.storage_epsilon = roundings * ScalarTraits<Scalar>::epsilon;
  model.weight_epsilon = weight_rounding<Scalar>();
  model.floor = reference_tolerance<Scalar>();
  model.hidden = s.hidden, model.ffn = s.ffn, model.top_k = s.top_k;
  return model;
}

// The rows of `sample` of a forward's output (host_out, host memory) against
// the float64 reference of the same inputs; gives the row that decides,
// worse than `worst` or `worst` itself. quantized: the layer quantised its
// activations (Layer::quantizes_activations).
template <class Scalar, class X, class Ids, class RoutingWeights, class HostOut>
RowCheck check_against_reference(const Weights<Scalar, Space::memory_space>& w, const X& x,
                                 const Ids& ids, const RoutingWeights& rw, const HostOut& host_out,
                                 const std::vector<int>& sample, bool quantized,
                                 const ErrorModel& model, RowCheck worst) {
  Kokkos::View<int*, Space::memory_space> tokens("tokens", sample.size());
  Kokkos::deep_copy(tokens, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                sample.data(), sample.size()));
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> rss;
  const auto ref = reference_experts<Space, Scalar>(Space(), w, x, ids, rw, tokens, &rss,
                                                    quantized);
  std::vector<double> row(std::size_t(model.hidden));
  for (std::size_t i = 0; i < sample.size(); ++i) {
    for (std::size_t c = 0; c < row.size(); ++c)
      row[c] = double(Impl::to_float(host_out(sample[i], c)));
    worst = worse(worst, check_row(row.data(), &ref(i, 0), &rss(i, 0), row.size(), model));
  }
  return worst;
}

}  // namespace Driver
}  // namespace KokkosMoE

#endif
