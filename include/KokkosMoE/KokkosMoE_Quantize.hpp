// SPDX-License-Identifier: BSD-3-Clause
// Block-scaled e4m3 expert weights made from wider ones, and back: each
// 128 x 128 block of an expert's gate, up and down matrix gets the scale
// e4m3_scale(amax) (amax / 448, amax its largest magnitude; 1 for a block
// of zeros), and its elements value / scale rounded to nearest even (DeepSeek-V3's recipe and
// layout). Runs on the weights' memory space.
#ifndef KOKKOSMOE_QUANTIZE_HPP
#define KOKKOSMOE_QUANTIZE_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_Weights.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace KokkosMoE {
namespace Impl {

// The first element of a [E, R, C] tensor that is not finite, as a flat
// index, or -1.
template <class Tensor>
std::int64_t first_non_finite(const Tensor& t) {
  using exec = typename Tensor::memory_space::execution_space;
  const std::int64_t R = t.extent(1), C = t.extent(2), n = value_count(t);
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  Kokkos::parallel_reduce(
      "KokkosMoE::quantize::check",
      Kokkos::RangePolicy<exec, Kokkos::IndexType<std::int64_t>>(0, n),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t & m) {
        const float v = to_float(t(i / (R * C), (i / C) % R, i % C));
        if ((float_bits(v) & 0x7f800000u) == 0x7f800000u && i < m) m = i;
      },
      Kokkos::Min<std::int64_t>(first));
  return first == std::numeric_limits<std::int64_t>::max() ? -1 : first;
}

// q, scale from t ([E, R, C] and [E, ceil(R / 128), ceil(C / 128)]): one
// team per block, which finds the block's largest magnitude, then converts.
// A non-finite value throws std::invalid_argument("<what> is not finite at
// expert e, row r, column c").
template <class Tensor, class Quantized, class Scales>
void quantize_blocks(const Tensor& t, const Quantized& q, const Scales& scale,
                     const std::string& what) {
  using exec = typename Tensor::memory_space::execution_space;
  using policy = Kokkos::TeamPolicy<exec>;
  const std::int64_t E = t.extent(0), R = t.extent(1), C = t.extent(2);
  if (const std::int64_t bad = first_non_finite(t); bad >= 0)
    throw std::invalid_argument(what + " is not finite at expert " + std::to_string(bad / (R * C)) +
                                ", row " + std::to_string((bad / C) % R) + ", column " +
                                std::to_string(bad % C));
  const int RB = int(scale.extent(1)), CB = int(scale.extent(2));
  constexpr int B = weight_block;
  Kokkos::parallel_for(
      "KokkosMoE::quantize", policy(int(E * RB * CB), Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename policy::member_type& m) {
        const int b = m.league_rank();
        const int e = b / (RB * CB), r0 = (b / CB) % RB * B, c0 = b % CB * B;
        const int rows = R - r0 < B ? int(R - r0) : B, cols = C - c0 < B ? int(C - c0) : B;
        float amax = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, rows * cols),
            [&](int i, float& a) {
              a = max_magnitude(a, to_float(t(e, r0 + i / cols, c0 + i % cols)));
            },
            Kokkos::Max<float>(amax));
        const float s = e4m3_scale(amax);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, rows * cols), [&](int i) {
          const int r = r0 + i / cols, c = c0 + i % cols;
          q(e, r, c) = float8_e4m3(to_float(t(e, r, c)) / s);
        });
        Kokkos::single(Kokkos::PerTeam(m), [&]() { scale(e, r0 / B, c0 / B) = s; });
      });
}

// out = q times its block's scale.
template <class Quantized, class Scales, class Tensor>
void dequantize_blocks(const Quantized& q, const Scales& scale, const Tensor& out) {
  using exec = typename Tensor::memory_space::execution_space;
  const std::int64_t R = q.extent(1), C = q.extent(2), n = value_count(q);
  Kokkos::parallel_for(
      "KokkosMoE::dequantize", Kokkos::RangePolicy<exec, Kokkos::IndexType<std::int64_t>>(0, n),
      KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t e = i / (R * C), r = (i / C) % R, c = i % C;
        out(e, r, c) = float(q(e, r, c)) * scale(e, r / weight_block, c / weight_block);
      });
}

// The configuration whose Weights::allocate gives tensors of gate's
// experts and sizes (E, F, H from gate [E, F, H]).
template <class Tensor>
Config expert_shape(const Tensor& gate) {
  Config c;
  c.num_experts = int(gate.extent(0));
  c.ffn_size = std::int64_t(gate.extent(1));
  c.hidden_size = std::int64_t(gate.extent(2));
  c.max_tokens = 1;
  c.top_k = 1;
  return c;
}

}  // namespace Impl

// e4m3 weights with per-block scales from float, fp16 or bf16 ones (the
// router and bias are shared with w). Throws std::invalid_argument naming
// the first non-finite weight.
template <class Scalar, class MemorySpace>
Weights<float8_e4m3, MemorySpace> quantize_fp8(const Weights<Scalar, MemorySpace>& w) {
  static_assert(!is_block_scaled<Scalar>::value, "the weights are quantised already");
  const Config c = Impl::expert_shape(w.gate);
  if (w.up.extent(0) != w.gate.extent(0) || w.up.extent(1) != w.gate.extent(1) ||
      w.up.extent(2) != w.gate.extent(2) || w.down.extent(0) != w.gate.extent(0) ||
      w.down.extent(1) != w.gate.extent(2) || w.down.extent(2) != w.gate.extent(1))
    throw std::invalid_argument(
        "KokkosMoE::quantize_fp8: gate and up must be [E, F, H] and down [E, H, F]");
  auto q = Weights<float8_e4m3, MemorySpace>::allocate(c);
  q.router = w.router;
  q.bias = w.bias;
  Impl::quantize_blocks(w.gate, q.gate, q.gate_scale, "KokkosMoE::quantize_fp8: weights.gate");
  Impl::quantize_blocks(w.up, q.up, q.up_scale, "KokkosMoE::quantize_fp8: weights.up");
  Impl::quantize_blocks(w.down, q.down, q.down_scale, "KokkosMoE::quantize_fp8: weights.down");
  Kokkos::fence();
  return q;
}

// The values e4m3 weights stand for, in float (what the layer multiplies).
template <class MemorySpace>
Weights<float, MemorySpace> dequantize(const Weights<float8_e4m3, MemorySpace>& q) {
  auto w = Weights<float, MemorySpace>::allocate(Impl::expert_shape(q.gate));
  w.router = q.router;
  w.bias = q.bias;
  Impl::dequantize_blocks(q.gate, q.gate_scale, w.gate);
  Impl::dequantize_blocks(q.up, q.up_scale, w.up);
  Impl::dequantize_blocks(q.down, q.down_scale, w.down);
  Kokkos::fence();
  return w;
}

}  // namespace KokkosMoE

#endif
