// SPDX-License-Identifier: BSD-3-Clause
// Parameters of one MoE layer, on the layer's memory space.
#ifndef KOKKOSMOE_WEIGHTS_HPP
#define KOKKOSMOE_WEIGHTS_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

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

namespace Impl {
// Element (e, r, c) of a weight tensor as the value it stands for (times
// its block's scale for block-scaled types).
template <class Tensor, class Scales>
KOKKOS_INLINE_FUNCTION float weight_value(const Tensor& t, const Scales& scale, int e,
                                          std::int64_t r, std::int64_t c) {
  using stored = std::remove_const_t<typename Tensor::value_type>;
  if constexpr (is_block_scaled<stored>::value)
    return float(t(e, r, c)) * scale(e, r / weight_block, c / weight_block);
  else return to_float(t(e, r, c));
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
  // Block-scaled types only (is_block_scaled; empty otherwise): the scale of
  // each weight_block x weight_block block of gate, up and down, which
  // multiplies its stored elements (DeepSeek-V3's weight_scale_inv).
  tensor<float> gate_scale;  // [E, ceil(F / 128), ceil(H / 128)]
  tensor<float> up_scale;    // [E, ceil(F / 128), ceil(H / 128)]
  tensor<float> down_scale;  // [E, ceil(H / 128), ceil(F / 128)]

  // Blocks along a dimension of n elements.
  static constexpr std::int64_t blocks(std::int64_t n) {
    return (n + weight_block - 1) / weight_block;
  }

  static Weights allocate(const Config& c) {
    c.validate();  // sizes that wrap around would allocate garbage
    Weights w;
    w.router = matrix<float>("KokkosMoE::router", c.num_experts, c.hidden_size);
    w.bias = Kokkos::View<float*, MemorySpace>("KokkosMoE::bias", c.num_experts);
    w.gate = tensor<Scalar>("KokkosMoE::gate", c.num_experts, c.ffn_size, c.hidden_size);
    w.up = tensor<Scalar>("KokkosMoE::up", c.num_experts, c.ffn_size, c.hidden_size);
    w.down = tensor<Scalar>("KokkosMoE::down", c.num_experts, c.hidden_size, c.ffn_size);
    for (const auto* t : {&w.gate, &w.up, &w.down}) Impl::check_span(*t, "KokkosMoE::Weights");
    if (is_block_scaled<Scalar>::value) {
      const std::int64_t fb = blocks(c.ffn_size), hb = blocks(c.hidden_size);
      w.gate_scale = tensor<float>("KokkosMoE::gate_scale", c.num_experts, fb, hb);
      w.up_scale = tensor<float>("KokkosMoE::up_scale", c.num_experts, fb, hb);
      w.down_scale = tensor<float>("KokkosMoE::down_scale", c.num_experts, hb, fb);
    }
    return w;
  }
};

}  // namespace KokkosMoE

#endif
