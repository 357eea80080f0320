// SPDX-License-Identifier: BSD-3-Clause
// Synthetic routing traces. Only std::mt19937_64 (whose output the standard
// fixes) and our own arithmetic on its raw draws are used, never the
// std:: distributions, whose output differs between standard libraries: the
// same seed gives the same trace everywhere.
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace {

[[noreturn]] void bad_option(const std::string& problem) {
  throw std::invalid_argument("synth_trace: " + problem);
}

// Uniform double in [0, 1) from the top 53 bits of one draw.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Uniform integer in [0, n) without modulo bias (rejection of the top slice).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                              std::numeric_limits<std::uint64_t>::max() % n;
  std::uint64_t x;
  do x = rng();
  while (x >= limit);
  return x % n;
}

// Decorrelates the per-layer seeds (SplitMix64 finaliser).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void check_options(const SynthOptions& o) {
  if (o.num_experts < 1) bad_option("num_experts must be >= 1");
  if (o.top_k < 1 || o.top_k > o.num_experts) bad_option("top_k must be in [1, num_experts]");
  if (o.num_tokens < 0) bad_option("num_tokens must be >= 0");
  if (o.num_layers < 1) bad_option("num_layers must be >= 1");
  if (o.hidden_size < 0 || o.ffn_size < 0) bad_option("hidden_size and ffn_size must be >= 0");
  // What a valid trace stays within, checked before anything is allocated.
  using L = TraceLimits;
  if (o.num_experts > L::max_experts)
    bad_option("num_experts must be <= " + std::to_string(L::max_experts));
  if (o.hidden_size > L::max_width || o.ffn_size > L::max_width)
    bad_option("hidden_size and ffn_size must be <= " + std::to_string(L::max_width));
  if (o.num_tokens > L::max_layer_values / o.top_k)
    bad_option("num_tokens * top_k must be <= " + std::to_string(L::max_layer_values));
  if (o.num_layers > L::max_layers)
    bad_option("num_layers must be <= " + std::to_string(L::max_layers));
  if (o.num_layers * o.num_tokens * o.top_k > L::max_layer_values * 2)  // 16 GiB of ids, weights
    bad_option("num_layers * num_tokens * top_k must be <= " +
               std::to_string(L::max_layer_values * 2));
  if (o.distribution == SynthDistribution::zipf &&
      (!std::isfinite(o.zipf_exponent) || o.zipf_exponent < 0))
    bad_option("zipf exponent must be finite and >= 0");
  // Each token needs top_k distinct experts that can be drawn at all: the
  // k-th most popular expert's weight, 1 / k^s, must not underflow.
  if (o.distribution == SynthDistribution::zipf && o.top_k >= 1 &&
      !(1.0 / std::pow(static_cast<double>(o.top_k), o.zipf_exponent) > 0)) {
    std::ostringstream s;
    s << "zipf exponent " << o.zipf_exponent
      << " leaves fewer than top_k experts with a nonzero probability";
    bad_option(s.str());
  }
  if (o.distribution == SynthDistribution::loads) {
    if (o.loads.size() != static_cast<std::size_t>(o.num_experts))
      bad_option("loads needs one entry per expert (" + std::to_string(o.num_experts) + "), got " +
                 std::to_string(o.loads.size()));
    int positive = 0;
    for (double l : o.loads) {
      if (!std::isfinite(l) || l < 0) bad_option("loads must be finite and >= 0");
      positive += l > 0;
    }
    // Each token needs top_k distinct experts that can be drawn at all.
    if (positive < o.top_k) bad_option("loads needs at least top_k positive entries");
  }
}

// Relative popularity of every expert in one layer.
std::vector<double> expert_weights(const SynthOptions& o, std::mt19937_64& rng) {
  const auto E = static_cast<std::size_t>(o.num_experts);
  switch (o.distribution) {
    case SynthDistribution::uniform: return std::vector<double>(E, 1.0);
    case SynthDistribution::loads: return o.loads;  // expert e gets loads[e], as given
    case SynthDistribution::zipf: break;
  }
  // Which expert has popularity rank r is a seeded permutation (Fisher-Yates).
  std::vector<std::size_t> order(E);
  for (std::size_t i = 0; i < E; ++i) order[i] = i;
  for (std::size_t i = E - 1; i > 0; --i) std::swap(order[i], order[uniform_below(rng, i + 1)]);
  std::vector<double> w(E);
  for (std::size_t r = 0; r < E; ++r)
    w[order[r]] = 1.0 / std::pow(static_cast<double>(r + 1), o.zipf_exponent);
  return w;
}

// Draws k distinct experts, successively proportionally to the weights of
// those not yet chosen (sampling without replacement).
void draw_row(const std::vector<double>& weights, int k, std::mt19937_64& rng,
              std::vector<char>& taken, std::int32_t* ids) {
  std::fill(taken.begin(), taken.end(), 0);
  for (int j = 0; j < k; ++j) {
    double remaining = 0;
    for (std::size_t e = 0; e < weights.size(); ++e)
      if (!taken[e]) remaining += weights[e];
    const double target = uniform01(rng) * remaining;
    double cumulative = 0;
    std::size_t pick = weights.size();
    for (std::size_t e = 0; e < weights.size(); ++e) {
      if (taken[e] || weights[e] <= 0) continue;
      pick = e;  // the last candidate also catches rounding past the end
      cumulative += weights[e];
      if (target < cumulative) break;
    }
    if (pick == weights.size())  // check_options rules this out
      throw std::logic_error("kokkos-moe-trace synth: no expert left to draw");
    taken[pick] = 1;
    ids[j] = static_cast<std::int32_t>(pick);
  }
}

// Positive, decreasing combine weights summing to 1, like a softmax over the
// chosen experts' logits (the first chosen expert weighs most).
void draw_weights(int k, std::mt19937_64& rng, std::vector<double>& scratch, float* out) {
  double sum = 0;
  for (int j = 0; j < k; ++j) {
    scratch[static_cast<std::size_t>(j)] = 0.05 + uniform01(rng);
    sum += scratch[static_cast<std::size_t>(j)];
  }
  std::sort(scratch.begin(), scratch.begin() + k, [](double a, double b) { return a > b; });
  for (int j = 0; j < k; ++j)
    out[j] = static_cast<float>(scratch[static_cast<std::size_t>(j)] / sum);
}

std::string describe(const SynthOptions& o) {
  switch (o.distribution) {
    case SynthDistribution::uniform: return "uniform";
    case SynthDistribution::zipf: {
      std::ostringstream s;  // shortest form: "0.3", not "0.300000"
      s << "zipf s=" << o.zipf_exponent;
      return s.str();
    }
    case SynthDistribution::loads: return "given per-expert loads";
  }
  return "";
}

}  // namespace

Trace synth_trace(const SynthOptions& o) {
  check_options(o);
  Trace trace;
  trace.model = o.model;
  trace.source = "synthetic (KokkosMoE synth_trace, seed " + std::to_string(o.seed) + ")";
  trace.note = "synthetic routing, expert popularity " + describe(o) +
               "; top-k drawn without replacement, weights random and normalised";
  trace.num_experts = o.num_experts;
  trace.top_k = o.top_k;
  trace.hidden_size = o.hidden_size;
  trace.ffn_size = o.ffn_size;
  trace.num_tokens = o.num_tokens;

  const auto k = static_cast<std::size_t>(o.top_k);
  const auto T = static_cast<std::size_t>(o.num_tokens);
  std::vector<char> taken(static_cast<std::size_t>(o.num_experts));
  std::vector<double> scratch(k);
  for (int l = 0; l < o.num_layers; ++l) {
    // One generator per layer: a layer's routing does not depend on how many
    // tokens the layers before it drew.
    std::mt19937_64 rng(mix(o.seed ^ mix(static_cast<std::uint64_t>(l))));
    const std::vector<double> weights = expert_weights(o, rng);
    TraceLayer layer;
    layer.index = l;
    layer.expert_ids.resize(T * k);
    layer.weights.resize(T * k);
    for (std::size_t t = 0; t < T; ++t) {
      draw_row(weights, o.top_k, rng, taken, layer.expert_ids.data() + t * k);
      draw_weights(o.top_k, rng, scratch, layer.weights.data() + t * k);
    }
    trace.layers.push_back(std::move(layer));
  }
  return trace;
}

}  // namespace KokkosMoE
