// SPDX-License-Identifier: BSD-3-Clause
// A matrix fragment run alone: one tile product through scratch, against
// float64 (the backend tests' and the CDNA model's).
#ifndef KOKKOSMOE_TESTFRAGMENT_HPP
#define KOKKOSMOE_TESTFRAGMENT_HPP

#include "KokkosMoE_FragmentContract.hpp"
#include "KokkosMoE_WeightPanels.hpp"
#include "TestRandom.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace KokkosMoE {
namespace Test {

// Whether a fragment's accumulator is marked zero rather than cleared (the
// host fragments': its memory holds anything until the multiplies).
template <class Acc, class = void>
struct marks_zero : std::false_type {};
template <class Acc>
struct marks_zero<Acc, std::void_t<decltype(std::declval<Acc&>().zero)>> : std::true_type {};

// The part of a tile product that a step takes: `tokens` rows of a, `rows`
// rows of b, `depth` k (the whole tile, or less for the fragments that read
// weights in place).
struct TileShare {
  int tokens, rows, depth;
};

// c += a b^T through the fragment of (Space, Scalar), from global memory via
// scratch tiles, or where in_place, with b read where it lies in memory
// (bs, in Scalar: the fragments with weights_in_place; packed into the
// fragment's panels where it takes them, panel_layout); a and b hold
// values representable in Scalar. Fragments that load tiles themselves
// (loads_rows) load a from as. (A free function: CUDA lambdas cannot live
// in a test body, a private member.)
template <class Space, class Scalar, class frag, class View, class ScalarView>
void fragment_mma(const View& a, const View& b, const ScalarView& as, const ScalarView& bs,
                  const View& c, int team_size, bool in_place, TileShare share) {
  using policy = Kokkos::TeamPolicy<Space, typename frag::launch_bounds>;
  const int M = frag::tile_m, N = frag::tile_n, K = frag::tile_k;
  constexpr Impl::PanelLayout layout = Impl::panel_layout_of<frag, Scalar>();
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, typename Space::memory_space> panels;
  if constexpr (layout.columns > 0)
    panels = Impl::pack_panels<Space, Scalar>(
        Space(),
        Kokkos::View<const Scalar***, Kokkos::LayoutRight, typename Space::memory_space>(bs.data(),
                                                                                         1, N, K),
        layout, "panels");
  const bool packs = layout.columns > 0;
  // Values store hands out that are not finite: none, though an
  // accumulator that marks itself zero starts as NaN bytes.
  Kokkos::View<int, typename Space::memory_space> not_finite("not_finite");
  const std::size_t bytes = frag::operand_bytes(M) + frag::operand_bytes(N) +
                            frag::accumulator_bytes();
  Kokkos::parallel_for(
      policy(1, team_size).set_scratch_size(Impl::scratch_level<frag>(), Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const typename policy::member_type& m) {
        const typename frag::tile at = frag::operand(m, M), bt = frag::operand(m, N);
        typename frag::accumulator_type cs = frag::accumulator(m);
        if constexpr (marks_zero<typename frag::accumulator_type>::value)
          std::memset(cs.v, 0xff, sizeof cs.v);
        // Captured here: nvcc's extended lambdas cannot first capture a
        // variable inside a constexpr-if.
        const ScalarView tokens = as, weights = bs;
        const auto packed = panels;
        const bool from_panels = packs;
        const TileShare part = share;
        const bool read_in_place = in_place;
        const auto not_finite_count = not_finite;
        (void)tokens, (void)weights, (void)packed, (void)from_panels,
            (void)not_finite_count;  // unused: no weights in place, no marked accumulator
        bool loaded = false;
        if constexpr (Impl::loads_rows<frag>)
          loaded = frag::load_rows(at, M, part.tokens, part.depth,
                                   [&](int r) { return &tokens(r, 0); });
        if (!loaded)
          Kokkos::parallel_for(Kokkos::TeamThreadRange(m, M * K), [&](int i) {
            const bool inside = i / K < part.tokens && i % K < part.depth;
            *frag::element(at, i / K,
                           i % K) = frag::to_operand(Scalar(inside ? a(i / K, i % K) : 0));
          });
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, N * K), [&](int i) {
          *frag::element(bt, i / K, i % K) = frag::to_operand(Scalar(b(i / K, i % K)));
        });
        frag::zero(m, cs);
        m.team_barrier();
        // Twice: accumulation carries over.
        if constexpr (Impl::reads_weights_in_place<frag, Scalar>) {
          if (read_in_place) {
            const Impl::InPlaceWeights<Scalar> w =
                from_panels
                    ? Impl::InPlaceWeights<Scalar>{&packed(0, 0, 0), std::int64_t(packed.extent(2)),
                                                   part.rows, part.depth, part.tokens}
                    : Impl::InPlaceWeights<Scalar>{&weights(0, 0), K, part.rows, part.depth,
                                                   part.tokens};
            frag::mma_nt(m, at, w, cs);
            frag::mma_nt(m, at, w, cs);
          }
        }
        if (!read_in_place) {
          frag::mma_nt(m, at, bt, cs);
          frag::mma_nt(m, at, bt, cs);
        }
        frag::finish(m, cs);
        frag::template store<2>(
            m,
            [&](int r, int n, const auto& run) {
              for (int i = 0; i < run.width; ++i) {
                if (r < part.tokens && n + i < part.rows) c(r, n + i) += run.v[i];
                if constexpr (marks_zero<typename frag::accumulator_type>::value)
                  if (!std::isfinite(run.v[i])) Kokkos::atomic_add(&not_finite_count(), 1);
              }
            },
            cs);
      });
  Kokkos::fence();
  int nonfinite = 0;
  Kokkos::deep_copy(nonfinite, not_finite);
  EXPECT_EQ(nonfinite, 0) << "values store hands out that no multiply or zero() wrote";
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
  // Whole tiles through scratch; where the fragment reads weights in place,
  // also in place, whole and in part (fewer token rows, weight rows and k
  // than the tile holds: only those are stored).
  struct Case {
    bool in_place;
    TileShare share;
  };
  std::vector<Case> cases = {{false, {M, N, K}}};
  if (Impl::reads_weights_in_place<frag, Scalar>) {
    cases.push_back({true, {M, N, K}});
    // Every count of token rows (the register blocks' shapes depend on it),
    // with fewer weight rows and k than the tile holds.
    for (int m = 1; m < M; ++m) cases.push_back({true, {m, N - 3, K - 5}});
  }
  for (int team_size : team_sizes)
    for (const Case& kase : cases) {
      SCOPED_TRACE("team size " + std::to_string(team_size) +
                   (kase.in_place ? ", in place " : ", ") + std::to_string(kase.share.tokens) +
                   " x " + std::to_string(kase.share.rows) + " x " +
                   std::to_string(kase.share.depth));
      fill_uniform(c, -1, 1, 3);
      const auto c0 = to_double(c);
      fragment_mma<Space, Scalar, frag>(a, b, as, bs, c, team_size, kase.in_place, kase.share);
      const auto got = to_double(c);
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          const bool stored = i < kase.share.tokens && j < kase.share.rows;
          double want = 0, magnitude = 0;
          for (int q = 0; q < (stored ? kase.share.depth : 0); ++q) {
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
