// SPDX-License-Identifier: BSD-3-Clause
// kokkos-moe-replay --check-bits: whether a replayed batch's output bits
// come back the same (Config::batch_invariant, docs/api.md "Determinism").
#ifndef KOKKOSMOE_DRIVER_DETERMINISMCHECK_HPP
#define KOKKOSMOE_DRIVER_DETERMINISMCHECK_HPP

#include "ReplayReport.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

namespace KokkosMoE {
namespace Driver {

// Values that differ bitwise between rows of two host views of one shape.
template <class A, class B>
std::int64_t differing_values(const A& a, std::int64_t row_a, const B& b, std::int64_t row_b,
                              std::int64_t rows) {
  using value = typename A::value_type;
  std::int64_t n = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < a.extent(1); ++c)
      n += std::memcmp(&a(row_a + r, c), &b(row_b + r, c), sizeof(value)) != 0;
  return n;
}

// The batch's output (in `out`, from the last run) against the same batch
// run again, enqueued and as `graph`, and each token of `sample` run alone
// on the same layer. Leaves the layer after a batch of one.
template <class Layer, class Graph>
DeterminismCounts check_determinism(Layer& layer, const Graph& graph,
                                    const typename Layer::tokens_view& x,
                                    const typename Layer::ids_view& ids,
                                    const typename Layer::weights_view& routing_weights,
                                    const typename Layer::tokens_view& out, std::int64_t n,
                                    const std::vector<int>& sample) {
  DeterminismCounts b;
  b.checked = true;
  b.batch_invariant = layer.config().batch_invariant;
  const auto first = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  auto again = Kokkos::create_mirror_view(out);
  const std::int64_t H = std::int64_t(out.extent(1));
  for (int run = 0; run < 2; ++run) {
    if (run == 0) layer.forward(x, ids, routing_weights, out, n);
    else graph.launch();
    Kokkos::deep_copy(again, out);
    b.values += n * H;
    b.run_to_run += differing_values(first, 0, again, 0, n);
  }
  const std::int64_t k = std::int64_t(ids.extent(1));
  typename Layer::tokens_view x1("x_alone", 1, H), out1("out_alone", 1, H);
  typename Layer::ids_view ids1("ids_alone", 1, k);
  typename Layer::weights_view w1("routing_weights_alone", 1, k);
  auto alone = Kokkos::create_mirror_view(out1);
  for (int t : sample) {
    const auto row = Kokkos::make_pair(std::int64_t(t), std::int64_t(t) + 1);
    Kokkos::deep_copy(x1, Kokkos::subview(x, row, Kokkos::ALL()));
    Kokkos::deep_copy(ids1, Kokkos::subview(ids, row, Kokkos::ALL()));
    Kokkos::deep_copy(w1, Kokkos::subview(routing_weights, row, Kokkos::ALL()));
    layer.forward(x1, ids1, w1, out1, 1);
    Kokkos::deep_copy(alone, out1);
    ++b.tokens_alone;
    b.alone_differing += differing_values(first, t, alone, 0, 1);
  }
  return b;
}

}  // namespace Driver
}  // namespace KokkosMoE

#endif
