// SPDX-License-Identifier: BSD-3-Clause
// synth_trace and expert_load_stats.
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <set>
#include <stdexcept>

namespace {

using namespace KokkosMoE;

SynthOptions options(int E, int k, std::int64_t T, SynthDistribution d, std::uint64_t seed = 1) {
  SynthOptions o;
  o.num_experts = E;
  o.top_k = k;
  o.num_tokens = T;
  o.num_layers = 2;
  o.distribution = d;
  o.seed = seed;
  return o;
}

TEST(TraceSynth, DeterministicForASeed) {
  SynthOptions o = options(64, 8, 500, SynthDistribution::zipf, 42);
  o.zipf_exponent = 0.8;
  const Trace a = synth_trace(o);
  const Trace b = synth_trace(o);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    EXPECT_EQ(a.layers[l].expert_ids, b.layers[l].expert_ids);
    EXPECT_EQ(a.layers[l].weights, b.layers[l].weights);
  }
  o.seed = 43;
  EXPECT_NE(synth_trace(o).layers[0].expert_ids, a.layers[0].expert_ids);
  // Layers differ from each other (their own seeded popularity order).
  EXPECT_NE(a.layers[0].expert_ids, a.layers[1].expert_ids);
}

TEST(TraceSynth, PinnedOutput) {
  // Only mt19937_64 and integer/IEEE arithmetic: these values must be the
  // same on every platform and standard library. A change here changes
  // every synthetic trace (and inputs/), so it must be deliberate.
  const Trace t = synth_trace(options(8, 2, 4, SynthDistribution::uniform, 1));
  EXPECT_EQ(t.layers[0].expert_ids, (std::vector<std::int32_t>{4, 5, 6, 4, 1, 4, 4, 0}));
}

TEST(TraceSynth, RowsAreValid) {
  for (auto d : {SynthDistribution::uniform, SynthDistribution::zipf}) {
    for (auto [E, k] : {std::pair{8, 2}, {256, 8}, {4, 4}, {1, 1}}) {
      SynthOptions o = options(E, k, 300, d, 7);
      o.zipf_exponent = 1.5;
      const Trace t = synth_trace(o);
      EXPECT_NO_THROW(validate_trace(t, "synth"));  // ids in range, distinct, finite weights
      for (const TraceLayer& l : t.layers) {
        ASSERT_EQ(l.expert_ids.size(), static_cast<std::size_t>(300 * k));
        for (std::size_t row = 0; row < 300; ++row) {
          std::set<std::int32_t> ids(l.expert_ids.begin() + row * k,
                                     l.expert_ids.begin() + (row + 1) * k);
          EXPECT_EQ(ids.size(), static_cast<std::size_t>(k));
          double sum = 0;
          for (int j = 0; j < k; ++j) {
            const float w = l.weights[row * k + j];
            EXPECT_TRUE(std::isfinite(w));
            EXPECT_GT(w, 0.0f);
            sum += w;
          }
          EXPECT_NEAR(sum, 1.0, 1e-5);
        }
      }
    }
  }
}

TEST(TraceSynth, ZipfSkewGrowsWithExponent) {
  double previous = 0;
  for (double s : {0.0, 0.5, 1.0, 1.5}) {
    SynthOptions o = options(64, 4, 20000, SynthDistribution::zipf, 3);
    o.zipf_exponent = s;
    const Trace t = synth_trace(o);
    const double skew = expert_load_stats(t, t.layers[0]).busiest_over_mean;
    EXPECT_GT(skew, previous) << "s = " << s;
    previous = skew;
  }
  EXPECT_GT(previous, 4.0);
}

TEST(TraceSynth, LoadsFollowGivenLoads) {
  SynthOptions o = options(4, 1, 40000, SynthDistribution::loads, 5);
  o.loads = {1, 2, 3, 4};
  const Trace t = synth_trace(o);
  const ExpertLoadStats s = expert_load_stats(t, t.layers[1]);
  for (int e = 0; e < 4; ++e)
    EXPECT_NEAR(static_cast<double>(s.tokens_per_expert[e]) / 40000.0, (e + 1) / 10.0, 0.01);

  // Zero loads are never chosen; with k = 2 the order of loads is kept.
  o.top_k = 2;
  o.loads = {0, 1, 5, 2};
  const Trace t2 = synth_trace(o);
  const ExpertLoadStats s2 = expert_load_stats(t2, t2.layers[0]);
  EXPECT_EQ(s2.tokens_per_expert[0], 0);
  EXPECT_EQ(s2.empty_experts, 1);
  EXPECT_LT(s2.tokens_per_expert[1], s2.tokens_per_expert[3]);
  EXPECT_LT(s2.tokens_per_expert[3], s2.tokens_per_expert[2]);
}

TEST(TraceSynth, RejectsBadOptions) {
  EXPECT_THROW(synth_trace(options(4, 5, 10, SynthDistribution::uniform)), std::invalid_argument);
  EXPECT_THROW(synth_trace(options(0, 1, 10, SynthDistribution::uniform)), std::invalid_argument);
  EXPECT_THROW(synth_trace(options(4, 1, -1, SynthDistribution::uniform)), std::invalid_argument);
  SynthOptions o = options(4, 2, 10, SynthDistribution::loads);
  o.loads = {1, 2, 3};  // not E entries
  EXPECT_THROW(synth_trace(o), std::invalid_argument);
  o.loads = {1, 0, 0, 0};  // fewer than k experts can be drawn
  EXPECT_THROW(synth_trace(o), std::invalid_argument);
  o.loads = {1, 1, -1, 0};
  EXPECT_THROW(synth_trace(o), std::invalid_argument);
  o = options(4, 2, 10, SynthDistribution::zipf);
  o.zipf_exponent = std::nan("");
  EXPECT_THROW(synth_trace(o), std::invalid_argument);
  // 1 / 2^2000 underflows: only one expert could ever be drawn, not k = 2.
  o.zipf_exponent = 2000;
  EXPECT_THROW(synth_trace(o), std::invalid_argument);
  o.zipf_exponent = 20;  // steep but every expert drawable
  EXPECT_NO_THROW(synth_trace(o));
}

TEST(TraceStats, HandMadeTrace) {
  Trace t;
  t.num_experts = 4;
  t.top_k = 2;
  t.num_tokens = 3;
  TraceLayer l;
  l.index = 0;
  l.expert_ids = {0, 1, 0, 2, 1, 0};
  l.weights.assign(6, 0.5f);
  t.layers = {l};

  const ExpertLoadStats s = expert_load_stats(t, t.layers[0]);
  EXPECT_EQ(s.tokens_per_expert, (std::vector<std::int64_t>{3, 2, 1, 0}));
  EXPECT_DOUBLE_EQ(s.mean_load, 1.5);
  EXPECT_EQ(s.max_load, 3);
  EXPECT_DOUBLE_EQ(s.busiest_over_mean, 2.0);
  EXPECT_EQ(s.empty_experts, 1);

  const ExpertLoadStats first = expert_load_stats(t, t.layers[0], 1);
  // Element by element: g++ 12.2 at -O2 and above with -march=x86-64-v4
  // builds a std::vector literal {1, 1, 0, 0} here as {1, 1, 1, 1} (its SLP
  // vectorizer; -fno-tree-slp-vectorize or AVX2 build it right).
  const std::int64_t first_loads[] = {1, 1, 0, 0};
  ASSERT_EQ(first.tokens_per_expert.size(), std::size(first_loads));
  for (std::size_t e = 0; e < std::size(first_loads); ++e)
    EXPECT_EQ(first.tokens_per_expert[e], first_loads[e]) << "expert " << e;
  EXPECT_DOUBLE_EQ(first.mean_load, 0.5);
  EXPECT_DOUBLE_EQ(first.busiest_over_mean, 2.0);
  EXPECT_EQ(first.empty_experts, 2);

  t.num_tokens = 0;
  const ExpertLoadStats none = expert_load_stats(t, t.layers[0]);
  EXPECT_EQ(none.max_load, 0);
  EXPECT_EQ(none.busiest_over_mean, 0.0);
  EXPECT_EQ(none.empty_experts, 4);
}

TEST(TraceStats, RefusesOutOfRangeIds) {
  Trace t;
  t.num_experts = 2;
  t.top_k = 1;
  t.num_tokens = 1;
  TraceLayer l;
  l.expert_ids = {5};
  l.weights = {1.0f};
  EXPECT_THROW(expert_load_stats(t, l), TraceError);
}

}  // namespace
