// Parameters of one MoE layer, on the layer's memory space.
#ifndef KOKKOSMOE_WEIGHTS_HPP
#define KOKKOSMOE_WEIGHTS_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>

#include <Kokkos_Core.hpp>

namespace KokkosMoE {

template <class Scalar, class MemorySpace>
struct Weights {
  template <class T>
  using matrix = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>;
  template <class T>
  using tensor = Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace>;

  // The router is kept in float, as models do: its logits decide the routing,
  // and its size (E x H) is negligible next to the experts.
  matrix<float> router;                   // [E, H]
  Kokkos::View<float*, MemorySpace> bias; // [E], selection bias (sigmoid_group_topk)
  tensor<Scalar> gate;                    // [E, F, H]
  tensor<Scalar> up;                      // [E, F, H]
  tensor<Scalar> down;                    // [E, H, F]

  static Weights allocate(const Config& c) {
    Weights w;
    w.router = matrix<float>("KokkosMoE::router", c.num_experts, c.hidden_size);
    w.bias   = Kokkos::View<float*, MemorySpace>("KokkosMoE::bias", c.num_experts);
    w.gate   = tensor<Scalar>("KokkosMoE::gate", c.num_experts, c.ffn_size, c.hidden_size);
    w.up     = tensor<Scalar>("KokkosMoE::up", c.num_experts, c.ffn_size, c.hidden_size);
    w.down   = tensor<Scalar>("KokkosMoE::down", c.num_experts, c.hidden_size, c.ffn_size);
    return w;
  }
};

}  // namespace KokkosMoE

#endif
