// SPDX-License-Identifier: BSD-3-Clause
// Parameters of one MoE layer, on the layer's memory space.
#ifndef KOKKOSMOE_WEIGHTS_HPP
#define KOKKOSMOE_WEIGHTS_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace KokkosMoE {
namespace Impl {
// The number of values a view holds: the product of its extents, in 64
// bits (Kokkos 5's size() is 0 for a view without data; Kokkos 3.4's is
// computed in 32 bits for ranks of 3 or more).
template <class View>
std::size_t value_count(const View& v) {
  std::size_t n = 1;
  for (unsigned r = 0; r < View::rank; ++r) n *= std::size_t(v.extent(r));
  return n;
}

// Throws unless a span of `span` values holds `values`: Kokkos 3.4
// (unpatched) multiplies the extents of a view of rank 3 or more in 32 bits
// for its span, and a 3-D view of a multiple of 2^32 values then allocates
// nothing.
inline void check_span_holds(std::size_t span, std::size_t values, const std::string& what) {
  if (span < values)
    throw std::invalid_argument(
        what + ": a view of " + std::to_string(values) + " values spans only " +
        std::to_string(span) +
        " (Kokkos' 32-bit extents: a 3-D view of a multiple of 2^32 values; "
        "cmake/patches/kokkos-3.4-view-extents-64bit.patch fixes Kokkos 3.4)");
}
template <class View>
void check_span(const View& v, const std::string& what) {
  check_span_holds(v.span(), value_count(v), what);
}
}  // namespace Impl

template <class Scalar, class MemorySpace>
struct Weights {
  template <class T>
  using matrix = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>;
  template <class T>
  using tensor = Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace>;

  // The router is kept in float, as models do: its logits decide the routing,
  // and its size (E x H) is negligible next to the experts.
  matrix<float> router;                    // [E, H]
  Kokkos::View<float*, MemorySpace> bias;  // [E], selection bias (sigmoid_group_topk)
  tensor<Scalar> gate;                     // [E, F, H]
  tensor<Scalar> up;                       // [E, F, H]
  tensor<Scalar> down;                     // [E, H, F]

  static Weights allocate(const Config& c) {
    c.validate();  // sizes that wrap around would allocate garbage
    Weights w;
    w.router = matrix<float>("KokkosMoE::router", c.num_experts, c.hidden_size);
    w.bias = Kokkos::View<float*, MemorySpace>("KokkosMoE::bias", c.num_experts);
    w.gate = tensor<Scalar>("KokkosMoE::gate", c.num_experts, c.ffn_size, c.hidden_size);
    w.up = tensor<Scalar>("KokkosMoE::up", c.num_experts, c.ffn_size, c.hidden_size);
    w.down = tensor<Scalar>("KokkosMoE::down", c.num_experts, c.hidden_size, c.ffn_size);
    for (const auto* t : {&w.gate, &w.up, &w.down}) Impl::check_span(*t, "KokkosMoE::Weights");
    return w;
  }
};

}  // namespace KokkosMoE

#endif
