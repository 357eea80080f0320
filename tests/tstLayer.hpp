// SPDX-License-Identifier: BSD-3-Clause
// The whole layer (forward) against the float64 reference.
#include "TestUtils.hpp"

#include <KokkosMoE/KokkosMoE_BuildConfig.hpp>
#ifdef KOKKOSMOE_ENABLE_KOKKOSKERNELS
#include "UnfusedExperts.hpp"
#endif
#include <KokkosMoE/KokkosMoE_WorkGraph.hpp>

#include "KokkosMoE_TeamScratch.hpp"

#define KMOE_CAT_(a, b) a##b
#define KMOE_CAT(a, b) KMOE_CAT_(a, b)
#define LAYER_SUITE KMOE_CAT(Layer_, TEST_CATEGORY)

namespace {
using namespace KokkosMoE;
using namespace KokkosMoE::Test;
using Space = TEST_EXECSPACE;

template <class Scalar>
class LAYER_SUITE : public ::testing::Test {};
TYPED_TEST_SUITE(LAYER_SUITE, LayerTypes);

struct Case {
  const char* name;
  int E, k;
  std::int64_t H, F, T;
  int experts_used;  // tokens choose among the first experts_used experts
};

// The edge cases every kernel must survive: no tokens, one token, experts
// with no tokens, all tokens on one expert, sizes off the tile grid, E and k
// at their extremes.
const Case cases[] = {
    {"mixtral_like", 8, 2, 64, 96, 40, 8},
    {"one_token", 4, 2, 37, 45, 1, 4},
    {"no_tokens", 8, 2, 64, 64, 0, 8},
    {"idle_experts", 16, 4, 48, 80, 33, 6},
    {"all_on_one_expert", 8, 1, 40, 50, 70, 1},
    {"single_expert", 1, 1, 33, 17, 5, 1},
    {"many_experts", 256, 8, 32, 40, 64, 256},
    {"k_equals_E", 6, 6, 20, 24, 9, 6},
    {"off_tile_large", 4, 2, 100, 130, 75, 3},
    {"split_k_decode", 4, 2, 40, 1700, 3, 4},   // few tiles, long F: the down projection splits F
    {"split_k_gate_up", 4, 2, 1700, 40, 3, 4},  // few tiles, long H: gate/up split H
    // Decode tiles with 1 to 8 and more rows per expert (7 on average), K
    // and N past the last whole vector and tile.
    {"decode_tiles_partly_filled", 8, 2, 300, 45, 28, 8},
    // Decode tiles over more than one of the host's 4096-deep K steps, the
    // last one past the last whole vector: gate/up's K (H), then down's (F).
    {"decode_two_k_steps_gate_up", 2, 2, 4200, 40, 3, 2},
    {"decode_two_k_steps_down", 2, 2, 40, 4200, 3, 2},
    // Decode tiles of 7 rows, whose register blocks take
    // HostTuning::decode_depth k at a time on the host (1024 on Zen 5; 512
    // in HostTuning.LayerWithNtaAndDepth512): K (H, then F) past the last
    // whole 1024 and vector.
    {"decode_rows_by_1024_k", 2, 2, 2600, 1100, 7, 2},
    // The layer's other tile shapes: 40 and 600 rows per expert.
    {"medium_tiles", 2, 1, 70, 90, 80, 2},
    {"large_tiles", 1, 1, 40, 72, 600, 1},
    // Large tiles whose last tile per expert is at most half filled (about
    // 300 rows each: 2 x 128 + 44): one multiplying warpgroup's rows unused.
    {"large_tiles_short_last", 2, 1, 64, 200, 600, 2},
    // Partly filled 128-row tiles, more work items (8 x 17 column blocks)
    // than an H200's resident teams of the large kernels, so a team's later
    // items reuse pipeline stages: with tensor copies, and with F not a
    // multiple of 8 (no tensor maps: 16-byte copies of the filled rows).
    {"resident_teams", 8, 2, 256, 2176, 400, 8},
    {"resident_teams_no_maps", 8, 2, 256, 2170, 400, 8},
    // Edge cases whose rows tensor copies of e4m3 codes can read (multiples
    // of 16 bytes; K past the last 128-deep step): with e4m3 weights on
    // sm_90a, the kernels that multiply codes (quantizes_activations).
    {"one_token_copies", 4, 2, 144, 80, 1, 4},
    {"all_on_one_expert_copies", 8, 1, 272, 48, 70, 1},
    {"large_tiles_short_last_copies", 2, 1, 64, 208, 600, 2},
    {"split_k_decode_copies", 4, 2, 48, 1712, 3, 4},
};

// A random problem of the case's shape, with its routing set.
template <class Scalar>
Problem<Space, Scalar> problem_for(const Case& c, std::uint64_t seed) {
  Problem<Space, Scalar> p(c.E, c.k, c.H, c.F, c.T);
  p.set_routing(random_routing(c.T, c.k, first_experts(c.experts_used), seed));
  return p;
}

TYPED_TEST(LAYER_SUITE, ExternalRoutingMatchesReference) {
  using Scalar = TypeParam;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = problem_for<Scalar>(c, 3);
    Layer<Space, Scalar> layer(p.config, p.weights);
    p.ran_on(layer);
    layer.forward(p.x, p.ids, p.routing_weights, p.out, c.T);
    EXPECT_LT(p.error(c.T), p.tolerance());
    EXPECT_EQ(layer.invalid_ids(), 0);
  }
}

TYPED_TEST(LAYER_SUITE, RoutedForwardMatchesReference) {
  using Scalar = TypeParam;
  for (RoutingMode mode : {RoutingMode::softmax_topk, RoutingMode::sigmoid_group_topk}) {
    Problem<Space, Scalar> p(16, 4, 72, 56, 45, mode);
    p.config.n_group = 4;
    p.config.topk_group = 2;
    Layer<Space, Scalar> layer(p.config, p.weights);
    p.ran_on(layer);
    layer.forward(p.x, p.out, 45);
    // The routing itself is checked against its own reference elsewhere.
    EXPECT_LT(p.error(layer.routing_ids(), layer.routing_weights(), 45), p.tolerance())
        << to_string(mode);
  }
}

TYPED_TEST(LAYER_SUITE, BuffersAreReusedAcrossBatchSizes) {
  using Scalar = TypeParam;
  Problem<Space, Scalar> p(8, 2, 40, 48, 64);
  Layer<Space, Scalar> layer(p.config, p.weights);
  p.ran_on(layer);
  for (std::int64_t T : {64, 3, 0, 17, 64}) {
    p.set_routing(random_routing(64, 2, first_experts(8), 100 + T));
    layer.forward(p.x, p.ids, p.routing_weights, p.out, T);
    EXPECT_LT(p.error(T), p.tolerance()) << "T = " << T;
  }
}

// The unfused KokkosBlas baseline computes the same layer. (Built only with
// Kokkos Kernels: without it there is no such baseline to test.)
#ifdef KOKKOSMOE_ENABLE_KOKKOSKERNELS
// (The baseline multiplies one storage type: not e4m3 weights.)
TYPED_TEST(LAYER_SUITE, UnfusedBaselineMatchesReference) {
  using Scalar = TypeParam;
  if constexpr (is_block_scaled<Scalar>::value) {
    GTEST_SKIP() << "no unfused baseline for block-scaled weights";
  } else {
    for (const Case& c : {cases[0], cases[2], cases[3], cases[4], cases[8]}) {
      SCOPED_TRACE(c.name);
      auto p = problem_for<Scalar>(c, 4);
      UnfusedExperts<Space, Scalar> unfused(p.config, p.weights);
      unfused.forward(p.x, p.ids, p.routing_weights, p.out, c.T);
      EXPECT_LT(p.error(c.T), p.tolerance());
    }
  }
}
#endif

// Outermost regions only: the stages' own kernels may open nested ones.
std::vector<std::string>& pushed_regions() {
  static std::vector<std::string> names;
  return names;
}
int& region_depth() {
  static int depth = 0;
  return depth;
}

// Kokkos Tools (and Nsight, through them) see one region per stage.
TEST(LAYER_SUITE, StagesRunInNamedProfilingRegions) {
  Problem<Space, float> p(8, 2, 16, 24, 10, RoutingMode::softmax_topk);
  Layer<Space, float> layer(p.config, p.weights);
  pushed_regions().clear();
  Kokkos::Tools::Experimental::set_push_region_callback([](const char* name) {
    if (region_depth()++ == 0) pushed_regions().push_back(name);
  });
  Kokkos::Tools::Experimental::set_pop_region_callback([] { --region_depth(); });
  layer.forward(p.x, p.out, 10);
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  Kokkos::Tools::Experimental::set_pop_region_callback(nullptr);
  const std::vector<std::string> want = {"KokkosMoE::route", "KokkosMoE::dispatch",
                                         "KokkosMoE::gate_up", "KokkosMoE::down_combine"};
  EXPECT_EQ(pushed_regions(), want);
}

struct LaunchCount {
  int kernels = 0, fences = 0;
};
LaunchCount& launch_count() {
  static LaunchCount c;
  return c;
}

// forward with given routing only enqueues kernels on the layer's instance:
// no fence, so no host round-trip and nothing that breaks graph capture.
TEST(LAYER_SUITE, ForwardEnqueuesKernelsAndNeverFences) {
  namespace tools = Kokkos::Tools::Experimental;
  Problem<Space, bfloat16> p(16, 4, 40, 56, 33);
  p.set_routing(random_routing(33, 4, first_experts(16), 8));
  Layer<Space, bfloat16> layer(p.config, p.weights);
  layer.forward(p.x, p.ids, p.routing_weights, p.out, 33);
  Kokkos::fence();
  launch_count() = LaunchCount{};
  const auto kernel = [](const char*, std::uint32_t, std::uint64_t*) { ++launch_count().kernels; };
  tools::set_begin_parallel_for_callback(kernel);
  tools::set_begin_parallel_reduce_callback(kernel);
  tools::set_begin_parallel_scan_callback(kernel);
  // Since Kokkos 3.5 a tool callback makes Kokkos itself fence around each
  // kernel (named "Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile
  // Tool Fence" in 4.5 and 5.2): those are the tool's, not ours.
  tools::set_begin_fence_callback([](const char* name, std::uint32_t, std::uint64_t*) {
    if (std::string(name).find("Kokkos Profile Tool Fence") == std::string::npos)
      ++launch_count().fences;
  });
  layer.forward(p.x, p.ids, p.routing_weights, p.out, 33);
  tools::set_begin_parallel_for_callback(nullptr);
  tools::set_begin_parallel_reduce_callback(nullptr);
  tools::set_begin_parallel_scan_callback(nullptr);
  tools::set_begin_fence_callback(nullptr);
  Kokkos::fence();
  EXPECT_EQ(launch_count().fences, 0);
  // dispatch: one kernel for 132 assignments (five for more than 1024:
  // reset, count, scan, scatter, tiles); gate_up (+ its activation pass when
  // split over H, or the gather of x's rows before large tiles with tensor
  // copies); down; combine.
  EXPECT_GE(launch_count().kernels, 4);
  EXPECT_LE(launch_count().kernels, 5);
  RecordProperty("kernels_per_forward", launch_count().kernels);
  EXPECT_LT(p.error(33), reference_tolerance<bfloat16>());
}

// The forward recorded once (a CUDA graph on CUDA) and replayed gives the
// reference result; a decode-size batch, so gate/up and down split over K.
TEST(LAYER_SUITE, ForwardReplaysAsOneGraph) {
  Problem<Space, bfloat16> p(8, 2, 1536, 1024, 2);
  p.set_routing(random_routing(2, 2, first_experts(8), 4));
  const Space exec = WorkGraph<Space>::capture_instance();
  Layer<Space, bfloat16> layer(p.config, p.weights, exec);
  layer.forward(p.x, p.ids, p.routing_weights, p.out, 2);
  const WorkGraph<Space> graph(exec,
                               [&] { layer.forward(p.x, p.ids, p.routing_weights, p.out, 2); });
  Kokkos::deep_copy(p.out, bfloat16(0.0f));
  Kokkos::fence();
  graph.launch();
  graph.launch();  // replays are repeatable
  Kokkos::fence();
  EXPECT_LT(p.error(2), reference_tolerance<bfloat16>());
  EXPECT_EQ(layer.invalid_ids(), 0);
  // New routing in the same views: dispatch runs on the device, so the
  // recorded forward follows it.
  p.set_routing(random_routing(2, 2, {6, 7}, 11));
  Kokkos::fence();
  graph.launch();
  Kokkos::fence();
  EXPECT_LT(p.error(2), reference_tolerance<bfloat16>());
}

// Large tiles, forward after forward and replay after replay of a recorded
// one, with new routing each time: nothing one forward leaves in the
// layer's buffers (tile-major rows, a resident team's pipeline state) leaks
// into the next. (About 150 rows per expert: two 128-row tiles each, the
// last at most half filled; 4 x 48 gate/up items, more than an H200's 132
// resident teams.)
TEST(LAYER_SUITE, LargeTileForwardsRepeat) {
  Problem<Space, bfloat16> p(2, 1, 64, 6144, 300);
  const auto routing = [&](std::uint64_t seed) {
    p.set_routing(random_routing(300, 1, first_experts(2), seed));
    Kokkos::deep_copy(p.out, bfloat16(0.0f));
    Kokkos::fence();
  };
  const Space exec = WorkGraph<Space>::capture_instance();
  Layer<Space, bfloat16> layer(p.config, p.weights, exec);
  for (std::uint64_t seed : {5, 6, 7}) {
    routing(seed);
    layer.forward(p.x, p.ids, p.routing_weights, p.out, 300);
    Kokkos::fence();
    EXPECT_LT(p.error(300), reference_tolerance<bfloat16>()) << "forward " << seed;
  }
  const WorkGraph<Space> graph(exec,
                               [&] { layer.forward(p.x, p.ids, p.routing_weights, p.out, 300); });
  for (std::uint64_t seed : {8, 9}) {
    routing(seed);
    graph.launch();
    Kokkos::fence();
    EXPECT_LT(p.error(300), reference_tolerance<bfloat16>()) << "replay " << seed;
  }
}

// Experts whose rows end just past a large tile (129-161 rows: a full tile
// and one of a few rows) or two (288, 300), whose last tile is filled to
// half a tile, one row more, or most of it (192, 193, 250), and one of 40
// rows alone in its tile, in one forward, the experts' rows interleaved.
TYPED_TEST(LAYER_SUITE, ExpertsJustPastALargeTile) {
  using Scalar = TypeParam;
  const std::vector<int> rows = {129, 150, 160, 161, 288, 300, 192, 193, 250, 40};
  const int E = int(rows.size());
  std::vector<int> left = rows;
  HostRouting r;
  for (bool more = true; more;) {
    more = false;
    for (int e = 0; e < E; ++e)
      if (left[e] > 0) {
        --left[e];
        r.ids.push_back(e);
        r.weights.push_back(0.25f + 0.1f * float(e));
        more = true;
      }
  }
  const std::int64_t T = std::int64_t(r.ids.size());
  // F = 208: rows tensor copies of e4m3 codes can read (sm_90a: the
  // kernels that multiply codes); 200: the dequantising kernels.
  for (const std::int64_t F : {200, 208}) {
    Problem<Space, Scalar> p(E, 1, 64, F, T);
    p.set_routing(r);
    Layer<Space, Scalar> layer(p.config, p.weights);
    p.ran_on(layer);
    layer.forward(p.x, p.ids, p.routing_weights, p.out, T);
    EXPECT_LT(p.error(T), p.tolerance()) << "F " << F;
  }
}

TEST(LAYER_SUITE, InvalidIdsAreCountedAndContributeNothing) {
  Problem<Space, float> p(8, 2, 32, 40, 10);
  auto r = random_routing(10, 2, first_experts(8), 5);
  r.ids[3] = -1;
  r.ids[8] = 8;
  r.ids[9] = 1 << 30;
  p.set_routing(r);
  Layer<Space, float> layer(p.config, p.weights);
  layer.forward(p.x, p.ids, p.routing_weights, p.out, 10);
  EXPECT_EQ(layer.invalid_ids(), 3);
  EXPECT_LT(p.error(10), reference_tolerance<float>());
}

TEST(LAYER_SUITE, CheckRoutingNamesTheFirstBadToken) {
  Problem<Space, float> p(8, 3, 16, 16, 12);
  Layer<Space, float> layer(p.config, p.weights);
  const auto good = random_routing(12, 3, first_experts(8), 21);
  p.set_routing(good);
  EXPECT_NO_THROW(layer.check_routing(p.ids, p.routing_weights, 12));
  struct Bad {
    int token, slot, id;
    float weight;
    const char* why;
  };
  for (Bad b : {Bad{4, 1, 8, 0.5f, "id == E"}, Bad{2, 0, -1, 0.5f, "negative id"},
                Bad{7, 2, -2, NAN, "NaN weight"}, Bad{9, 0, -2, INFINITY, "inf weight"},
                Bad{5, 2, -3, 0.5f, "repeated id"}}) {
    auto r = good;
    if (b.id >= -1) r.ids[b.token * 3 + b.slot] = b.id;
    if (b.id == -3) r.ids[b.token * 3 + b.slot] = r.ids[b.token * 3];
    r.weights[b.token * 3 + b.slot] = b.weight;
    p.set_routing(r);
    try {
      layer.check_routing(p.ids, p.routing_weights, 12);
      ADD_FAILURE() << "no error for " << b.why;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("token " + std::to_string(b.token)), std::string::npos)
          << b.why << ": " << e.what();
    }
    // Rows past num_tokens are not looked at.
    EXPECT_NO_THROW(layer.check_routing(p.ids, p.routing_weights, b.token)) << b.why;
  }
}

// Weights whose memory does not hold all their values (Kokkos' 32-bit
// extents: a 3-D view of a multiple of 2^32 values spans 0) are refused.
TEST(LAYER_SUITE, WeightsSpanningFewerValuesThanTheyHoldAreRefused) {
  EXPECT_THROW(Impl::check_span_holds(0, std::size_t(1) << 32, "w"), std::invalid_argument);
  EXPECT_NO_THROW(Impl::check_span_holds(10, 10, "w"));
  // The Kokkos this was built with: patched (cmake/patches), such a view
  // spans all its values; otherwise the check refuses it.
  // (On memory of its own: since Kokkos 5 a view without data has size 0.)
  std::vector<short> one(1);
  Kokkos::View<short***, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> v(
      one.data(), 64, 8192, 8192);
  EXPECT_EQ(Impl::value_count(v), std::size_t(1) << 32);
  if (v.span() == Impl::value_count(v)) EXPECT_NO_THROW(Impl::check_span(v, "w"));
  else EXPECT_THROW(Impl::check_span(v, "w"), std::invalid_argument);
}

// A kernel's team scratch beyond what the backend gives is an error that
// names the sizes, before any launch (Kokkos would abort the process).
TEST(LAYER_SUITE, TeamScratchBeyondTheBackendsLimitIsAnError) {
  const Kokkos::TeamPolicy<Space> policy(1, 1);
  const std::size_t most = Impl::TeamScratchLimit<Space>::level0(policy);
  EXPECT_GE(most, std::size_t(policy.scratch_size_max(0)));
  EXPECT_NO_THROW(Impl::require_team_scratch(policy, most, "KokkosMoE::test"));
  try {
    Impl::require_team_scratch(policy, most + 1, "KokkosMoE::test");
    ADD_FAILURE() << "no error for " << most + 1 << " bytes";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("KokkosMoE::test"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(most + 1)), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(most)), std::string::npos) << what;
  }
}

TEST(LAYER_SUITE, BadShapesAreRejected) {
  Problem<Space, float> p(8, 2, 32, 40, 10);
  Layer<Space, float> layer(p.config, p.weights);
  EXPECT_THROW(layer.forward(p.x, p.ids, p.routing_weights, p.out, 11), std::invalid_argument);
  EXPECT_THROW(layer.forward(p.x, p.ids, p.routing_weights, p.out, -1), std::invalid_argument);
  EXPECT_THROW(layer.route(p.x, 10), std::logic_error);  // external layer has no router
  typename Layer<Space, float>::tokens_view narrow("narrow", 10, 31);
  EXPECT_THROW(layer.gate_up(narrow, 10), std::invalid_argument);
  typename Layer<Space, float>::ids_view wide("wide", 10, 3);
  EXPECT_THROW(layer.dispatch(wide, 10), std::invalid_argument);

  auto w = p.weights;
  w.down = decltype(w.down)("down", 8, 40, 32);  // transposed
  EXPECT_THROW((Layer<Space, float>(p.config, w)), std::invalid_argument);
  Config bad = p.config;
  bad.top_k = 9;
  EXPECT_THROW((Layer<Space, float>(bad, p.weights)), std::invalid_argument);

  // Rows that do not follow one another: a column subview of a wider view
  // (LayoutRight in type, rows 48 apart) and padded weights.
  typename Layer<Space, float>::tokens_view wider("wider", 10, 48);
  const typename Layer<Space, float>::const_tokens_view columns =
      Kokkos::subview(wider, Kokkos::ALL(), std::make_pair(0, 32));
  EXPECT_THROW(layer.forward(columns, p.ids, p.routing_weights, p.out, 10), std::invalid_argument);
  layer.dispatch(p.ids, 10);
  EXPECT_THROW(layer.gate_up(columns, 10), std::invalid_argument);
  w = p.weights;
  w.gate = decltype(w.gate)(Kokkos::view_alloc("padded", Kokkos::AllowPadding), 8, 40, 32);
  if (w.gate.span() != w.gate.size())  // where Kokkos pads at all
    EXPECT_THROW((Layer<Space, float>(p.config, w)), std::invalid_argument);
}

// A refused forward runs nothing: every argument is checked first.
TEST(LAYER_SUITE, RefusedForwardLeavesTheLayerAsItWas) {
  Problem<Space, float> p(8, 2, 32, 40, 10, RoutingMode::softmax_topk);
  Layer<Space, float> layer(p.config, p.weights);
  layer.forward(p.x, p.out, 10);
  Kokkos::fence();
  auto ids_before = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.routing_ids());
  Problem<Space, float> other(8, 2, 32, 40, 10, RoutingMode::softmax_topk, 99);  // other x
  typename Layer<Space, float>::tokens_view narrow_out("narrow_out", 10, 31);
  EXPECT_THROW(layer.forward(other.x, narrow_out, 10), std::invalid_argument);
  auto ids_after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.routing_ids());
  for (int t = 0; t < 10; ++t)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(ids_after(t, j), ids_before(t, j)) << t << " " << j;

  Problem<Space, float> q(8, 2, 32, 40, 10);
  auto r = random_routing(10, 2, first_experts(8), 3);
  r.ids[0] = 8;  // out of range: counted by a dispatch that runs
  q.set_routing(r);
  Layer<Space, float> routed(q.config, q.weights);
  EXPECT_THROW(routed.forward(q.x, q.ids, q.routing_weights, narrow_out, 10),
               std::invalid_argument);
  EXPECT_EQ(routed.invalid_ids(), 0);
}

// Layers and recorded graphs own what they hold: movable, not copyable, on
// every backend; a moved-from graph says so instead of crashing.
TEST(LAYER_SUITE, LayersAndGraphsMoveButDoNotCopy) {
  static_assert(!std::is_copy_constructible<Layer<Space, float>>::value, "");
  static_assert(!std::is_copy_assignable<Layer<Space, float>>::value, "");
  static_assert(std::is_move_constructible<Layer<Space, float>>::value, "");
  static_assert(!std::is_copy_constructible<WorkGraph<Space>>::value, "");
  static_assert(std::is_move_constructible<WorkGraph<Space>>::value, "");
  Problem<Space, float> p(8, 2, 32, 40, 4);
  p.set_routing(random_routing(4, 2, first_experts(8), 5));
  const Space exec = WorkGraph<Space>::capture_instance();
  Layer<Space, float> first(p.config, p.weights, exec);
  first.forward(p.x, p.ids, p.routing_weights, p.out, 4);
  Layer<Space, float> layer(std::move(first));
  WorkGraph<Space> graph(exec, [&] { layer.forward(p.x, p.ids, p.routing_weights, p.out, 4); });
  WorkGraph<Space> moved(std::move(graph));
  Kokkos::deep_copy(p.out, 0.0f);
  Kokkos::fence();
  moved.launch();
  Kokkos::fence();
  EXPECT_LT(p.error(4), reference_tolerance<float>());
  EXPECT_THROW(graph.launch(), std::logic_error);
}
}  // namespace
