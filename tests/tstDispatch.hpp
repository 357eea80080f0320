// SPDX-License-Identifier: BSD-3-Clause
// The dispatch stage: counts, prefix sums, order by expert and tiles.
#include "TestUtils.hpp"

#define KMOE_CAT_(a, b) a##b
#define KMOE_CAT(a, b) KMOE_CAT_(a, b)
#define DISPATCH_SUITE KMOE_CAT(Dispatch_, TEST_CATEGORY)

namespace {
using namespace KokkosMoE;
using namespace KokkosMoE::Test;
using Space = TEST_EXECSPACE;

void expect_valid_plan(int E, int k, std::int64_t T, const std::vector<int>& experts,
                       bool with_invalid) {
  Problem<Space, float> p(E, k, 8, 8, T);
  auto r = random_routing(T, k, experts, E * 7 + T);
  if (with_invalid && T > 0) r.ids[0] = E;
  p.set_routing(r);
  Layer<Space, float> layer(p.config, p.weights);
  layer.dispatch(p.ids, T);
  const auto& plan = layer.plan();
  auto counts = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.counts);
  auto offsets = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.offsets);
  auto order = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.order);
  auto tile_offsets = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.tile_offsets);
  auto tiles = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.tiles);
  auto position = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), plan.position);

  std::vector<int> want(E, 0);
  int invalid = 0;
  for (int id : r.ids) (id >= 0 && id < E) ? ++want[id] : ++invalid;
  EXPECT_EQ(layer.invalid_ids(), invalid);
  ASSERT_EQ(offsets(0), 0);
  std::vector<int> seen(T * k, 0);
  for (int e = 0; e < E; ++e) {
    ASSERT_EQ(counts(e), want[e]) << "expert " << e;
    ASSERT_EQ(offsets(e + 1), offsets(e) + want[e]);
    for (int p2 = offsets(e); p2 < offsets(e + 1); ++p2) {
      const int a = order(p2);
      ASSERT_GE(a, 0);
      ASSERT_LT(a, T * k);
      EXPECT_EQ(r.ids[a], e) << "sorted row " << p2;
      ++seen[a];
    }
    // Tiles of expert e cover its rows in order, each at most tile_rows long.
    int next = offsets(e);
    for (int i = tile_offsets(e); i < tile_offsets(e + 1); ++i) {
      EXPECT_EQ(tiles(i, 0), e);
      EXPECT_EQ(tiles(i, 1), next);
      EXPECT_GT(tiles(i, 2), tiles(i, 1));
      EXPECT_LE(tiles(i, 2) - tiles(i, 1), plan.tile_rows);
      next = tiles(i, 2);
    }
    EXPECT_EQ(next, offsets(e + 1));
  }
  for (std::int64_t a = 0; a < T * k; ++a) {
    const bool valid = r.ids[a] >= 0 && r.ids[a] < E;
    EXPECT_EQ(seen[a], valid ? 1 : 0) << "assignment " << a;
    // position is the inverse of order, -1 for invalid ids.
    if (valid) {
      ASSERT_GE(position(a), 0) << "assignment " << a;
      ASSERT_LT(position(a), T * k) << "assignment " << a;
      EXPECT_EQ(order(position(a)), a) << "assignment " << a;
    } else {
      EXPECT_EQ(position(a), -1) << "assignment " << a;
    }
  }
  EXPECT_LE(tile_offsets(E),
            DispatchPlan<Space::memory_space>::max_tiles(T * k, E, plan.tile_rows));
}

TEST(DISPATCH_SUITE, PlanIsConsistent) {
  expect_valid_plan(8, 2, 100, first_experts(8), false);
  expect_valid_plan(8, 2, 0, first_experts(8), false);
  expect_valid_plan(8, 2, 1, first_experts(8), false);
  expect_valid_plan(64, 4, 300, first_experts(10), false);  // most experts idle
  expect_valid_plan(8, 1, 500, {5}, false);                 // one expert takes all
  expect_valid_plan(256, 8, 77, first_experts(256), false);
  expect_valid_plan(1, 1, 33, {0}, false);
  expect_valid_plan(8, 2, 50, first_experts(8), true);
  // Thousands of assignments, with and without invalid ids (the cases above
  // build the plan in one team, these with five kernels).
  expect_valid_plan(16, 2, 3000, first_experts(16), false);
  expect_valid_plan(256, 8, 700, first_experts(200), true);
  // More experts than one team's scratch holds counters for: five kernels
  // even for a few assignments.
  expect_valid_plan(20000, 4, 5, first_experts(20000), false);
}
}  // namespace
