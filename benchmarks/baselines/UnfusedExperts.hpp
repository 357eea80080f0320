// SPDX-License-Identifier: BSD-3-Clause
// The unfused expert path: per expert, gather its tokens and run three
// KokkosBlas::gemm calls (gate, up, down) with SwiGLU and the weighted
// scatter in between, as a framework would without fused kernels. It is a
// baseline for tests and benchmarks, not a fast path: it reads the routing
// back to the host to size each expert's GEMMs, and keeps float copies of
// the weights (Kokkos Kernels 3.4 has no 16-bit GEMM).
#ifndef KOKKOSMOE_UNFUSEDEXPERTS_HPP
#define KOKKOSMOE_UNFUSEDEXPERTS_HPP

#include <KokkosMoE/KokkosMoE_BuildConfig.hpp>
#ifndef KOKKOSMOE_ENABLE_KOKKOSKERNELS
#error \
    "UnfusedExperts.hpp needs Kokkos Kernels: this KokkosMoE was built without it (KokkosMoE_ENABLE_KOKKOSKERNELS)"
#endif
#include <KokkosMoE/KokkosMoE_Config.hpp>
#include <KokkosMoE/KokkosMoE_Math.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_Weights.hpp>

#include <KokkosBlas3_gemm.hpp>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace KokkosMoE {

namespace Impl {
// A float copy of a weight tensor.
template <class ExecutionSpace, class View>
Kokkos::View<float***, Kokkos::LayoutRight, typename ExecutionSpace::memory_space> widen(
    const View& w, const char* name) {
  Kokkos::View<float***, Kokkos::LayoutRight, typename ExecutionSpace::memory_space> f(
      std::string("KokkosMoE::unfused::") + name, w.extent(0), w.extent(1), w.extent(2));
  Kokkos::parallel_for(
      "KokkosMoE::unfused::widen",
      Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(0,
                                                                           std::int64_t(w.span())),
      KOKKOS_LAMBDA(std::int64_t i) { f.data()[i] = to_float(w.data()[i]); });
  Kokkos::fence();
  return f;
}
}  // namespace Impl

// Requires valid routing (see Layer::check_routing): with a repeated id in a
// row, a token would meet the same expert twice.
template <class ExecutionSpace, class Scalar>
class UnfusedExperts {
 public:
  using memory_space = typename ExecutionSpace::memory_space;
  template <class T>
  using matrix = Kokkos::View<T**, Kokkos::LayoutRight, memory_space>;
  using tensor = Kokkos::View<float***, Kokkos::LayoutRight, memory_space>;

  UnfusedExperts(const Config& c, const Weights<Scalar, memory_space>& w)
      : config_(c),
        gate_(Impl::widen<ExecutionSpace>(w.gate, "gate")),
        up_(Impl::widen<ExecutionSpace>(w.up, "up")),
        down_(Impl::widen<ExecutionSpace>(w.down, "down")),
        rows_("KokkosMoE::unfused::rows", c.max_tokens),
        xe_("KokkosMoE::unfused::x", c.max_tokens, c.hidden_size),
        g_("KokkosMoE::unfused::gate", c.max_tokens, c.ffn_size),
        u_("KokkosMoE::unfused::up", c.max_tokens, c.ffn_size),
        ye_("KokkosMoE::unfused::y", c.max_tokens, c.hidden_size),
        acc_("KokkosMoE::unfused::out", c.max_tokens, c.hidden_size) {}

  // out[t] = sum_j w[t, j] expert_{ids[t, j]}(x[t]); ids outside [0, E) are skipped.
  void forward(const matrix<const Scalar>& x, const matrix<const std::int32_t>& ids,
               const matrix<const float>& weights, const matrix<Scalar>& out,
               std::int64_t num_tokens) {
    const int E = config_.num_experts, k = config_.top_k;
    auto host_ids = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
    Kokkos::deep_copy(acc_, 0.0f);
    std::vector<std::vector<int>> members(E);  // assignments per expert
    for (std::int64_t a = 0; a < num_tokens * k; ++a) {
      const int e = host_ids(a / k, a % k);
      if (e >= 0 && e < E) members[e].push_back(int(a));
    }
    auto host_rows = Kokkos::create_mirror_view(rows_);
    for (int e = 0; e < E; ++e) {
      const int n = int(members[e].size());
      if (n == 0) continue;
      if (n > config_.max_tokens)
        throw std::invalid_argument("KokkosMoE::UnfusedExperts: expert " + std::to_string(e) +
                                    " is chosen twice by one token");
      for (int i = 0; i < n; ++i) host_rows(i) = members[e][i];
      Kokkos::deep_copy(rows_, host_rows);
      expert(e, n, x, weights);
    }
    auto acc = acc_;
    Kokkos::parallel_for(
        "KokkosMoE::unfused::store",
        Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
            0, num_tokens * config_.hidden_size),
        KOKKOS_LAMBDA(std::int64_t i) {
          const std::int64_t H = acc.extent(1);
          out(i / H, i % H) = Impl::from_float<Scalar>(acc(i / H, i % H));
        });
    Kokkos::fence();
  }

  // One expert's n assignments (in rows_): gather, gate/up GEMMs, SwiGLU,
  // down GEMM, weighted scatter-add into acc_ (tokens are distinct within an
  // expert, so the scatter has no races).
  void expert(int e, int n, const matrix<const Scalar>& x, const matrix<const float>& weights) {
    using range = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>;
    const int k = config_.top_k;
    const auto H = config_.hidden_size, F = config_.ffn_size;
    const auto first = Kokkos::make_pair(0, n);
    auto rows = rows_;
    auto xe = Kokkos::subview(xe_, first, Kokkos::ALL());
    auto g = Kokkos::subview(g_, first, Kokkos::ALL());
    auto u = Kokkos::subview(u_, first, Kokkos::ALL());
    auto ye = Kokkos::subview(ye_, first, Kokkos::ALL());
    auto acc = acc_;
    Kokkos::parallel_for(
        "KokkosMoE::unfused::gather", range(0, n * H), KOKKOS_LAMBDA(std::int64_t i) {
          xe(i / H, i % H) = Impl::to_float(x(rows(i / H) / k, i % H));
        });
    Kokkos::fence();
    KokkosBlas::gemm("N", "T", 1.0f, xe, Kokkos::subview(gate_, e, Kokkos::ALL(), Kokkos::ALL()),
                     0.0f, g);
    KokkosBlas::gemm("N", "T", 1.0f, xe, Kokkos::subview(up_, e, Kokkos::ALL(), Kokkos::ALL()),
                     0.0f, u);
    Kokkos::fence();
    Kokkos::parallel_for(
        "KokkosMoE::unfused::swiglu", range(0, n * F), KOKKOS_LAMBDA(std::int64_t i) {
          const float gv = g(i / F, i % F);
          g(i / F, i % F) = gv / (1.0f + Impl::math::exp(-gv)) * u(i / F, i % F);
        });
    Kokkos::fence();
    KokkosBlas::gemm("N", "T", 1.0f, g, Kokkos::subview(down_, e, Kokkos::ALL(), Kokkos::ALL()),
                     0.0f, ye);
    Kokkos::fence();
    Kokkos::parallel_for(
        "KokkosMoE::unfused::scatter", range(0, n * H), KOKKOS_LAMBDA(std::int64_t i) {
          const int a = rows(i / H);
          acc(a / k, i % H) += weights(a / k, a % k) * ye(i / H, i % H);
        });
    Kokkos::fence();
  }

 private:
  Config config_;
  tensor gate_, up_, down_;
  Kokkos::View<int*, memory_space> rows_;
  matrix<float> xe_, g_, u_, ye_, acc_;
};

}  // namespace KokkosMoE

#endif
