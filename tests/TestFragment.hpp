// SPDX-License-Identifier: BSD-3-Clause
// A matrix fragment run alone: one tile product through scratch, against
// float64 (the backend tests' and the CDNA model's).
#ifndef KOKKOSMOE_TESTFRAGMENT_HPP
#define KOKKOSMOE_TESTFRAGMENT_HPP

#include "KokkosMoE_FragmentContract.hpp"
#include "TestRandom.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace KokkosMoE {
namespace Test {

// c += a b^T through the fragment of (Space, Scalar), from global memory via
// scratch tiles; a and b hold values representable in Scalar. (A free
// function: CUDA lambdas cannot live in a test body, a private member.)
template <class Space, class Scalar, class frag, class View>
void fragment_mma(const View& a, const View& b, const View& c, int team_size) {
  using policy = Kokkos::TeamPolicy<Space, typename frag::launch_bounds>;
  const int M = frag::tile_m, N = frag::tile_n, K = frag::tile_k;
  const std::size_t bytes = frag::operand_bytes(M) + frag::operand_bytes(N) +
                            frag::accumulator_bytes();
  Kokkos::parallel_for(
      policy(1, team_size).set_scratch_size(Impl::scratch_level<frag>(), Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const typename policy::member_type& m) {
        const typename frag::tile as = frag::operand(m, M), bs = frag::operand(m, N);
        typename frag::accumulator_type cs = frag::accumulator(m);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, M * K), [&](int i) {
          *frag::element(as, i / K, i % K) = frag::to_operand(Scalar(a(i / K, i % K)));
        });
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, N * K), [&](int i) {
          *frag::element(bs, i / K, i % K) = frag::to_operand(Scalar(b(i / K, i % K)));
        });
        frag::zero(m, cs);
        m.team_barrier();
        frag::mma_nt(m, as, bs, cs);  // twice: accumulation carries over
        frag::mma_nt(m, as, bs, cs);
        frag::finish(m, cs);
        frag::template store<2>(
            m,
            [&](int r, int n, const auto& run) {
              for (int i = 0; i < run.width; ++i) c(r, n + i) += run.v[i];
            },
            cs);
      });
  Kokkos::fence();
}

// The fragment's products against float64 (c + 2 a b^T: two mma_nt calls).
template <class Space, class Scalar, class frag>
void expect_fragment_mma() {
  constexpr int M = frag::tile_m, N = frag::tile_n, K = frag::tile_k;
  Kokkos::View<float**, Kokkos::LayoutRight, typename Space::memory_space> a("a", M, K),
      b("b", N, K), c("c", M, N);
  // Values exact in every storage type, so only accumulation can differ.
  Kokkos::View<Scalar**, Kokkos::LayoutRight, typename Space::memory_space> as("as", M, K),
      bs("bs", N, K);
  fill_uniform(as, -1, 1, 1);
  fill_uniform(bs, -1, 1, 2);
  const auto a0 = to_double(as), b0 = to_double(bs);
  auto ha = Kokkos::create_mirror_view(a);
  auto hb = Kokkos::create_mirror_view(b);
  for (int i = 0; i < M * K; ++i) ha.data()[i] = float(a0[i]);
  for (int i = 0; i < N * K; ++i) hb.data()[i] = float(b0[i]);
  Kokkos::deep_copy(a, ha);
  Kokkos::deep_copy(b, hb);
  // The fragment's own team size, and where the fragment takes any (the
  // portable one) and the host backend allows it, a team of two (the
  // portable fragment's loop for GPU teams).
  std::vector<int> team_sizes = {frag::team_size()};
  if (frag::team_threads == 0 && frag::team_size() == 1 && Space().concurrency() >= 2)
    team_sizes.push_back(2);
  for (int team_size : team_sizes) {
    SCOPED_TRACE("team size " + std::to_string(team_size));
    fill_uniform(c, -1, 1, 3);
    const auto c0 = to_double(c);
    fragment_mma<Space, Scalar, frag>(a, b, c, team_size);
    const auto got = to_double(c);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double want = 0, magnitude = 0;
        for (int q = 0; q < K; ++q) {
          want += a0[i * K + q] * b0[j * K + q];
          magnitude += std::abs(a0[i * K + q] * b0[j * K + q]);
        }
        // A float sum of n terms in another order than float64's: errors
        // of about sqrt(n) float ulps of the terms' magnitude (n = 2K + 1;
        // deep decode steps, K = 4096, reach past a fixed 1e-4 where
        // baseline x86-64's narrower vectors sum in another order).
        const double spread = 4 * std::sqrt(2.0 * K + 1) * 0x1p-24 *
                              (2 * magnitude + std::abs(c0[i * N + j]));
        EXPECT_NEAR(got[i * N + j], c0[i * N + j] + 2 * want, std::max(1e-4, spread))
            << i << "," << j;
      }
  }
}

}  // namespace Test
}  // namespace KokkosMoE

#endif
