// SPDX-License-Identifier: BSD-3-Clause
// Synthetic routing traces and expert-load statistics.
#ifndef KOKKOSMOE_TRACESYNTH_HPP
#define KOKKOSMOE_TRACESYNTH_HPP

#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace KokkosMoE {

enum class SynthDistribution {
  uniform,  // every expert equally likely
  zipf,     // expert of popularity rank r has weight 1 / r^s
  loads     // given per-expert relative loads
};

struct SynthOptions {
  std::string model = "synthetic";
  int num_experts = 8;
  int top_k = 2;
  std::int64_t hidden_size = 0;
  std::int64_t ffn_size = 0;
  std::int64_t num_tokens = 1024;
  int num_layers = 1;
  SynthDistribution distribution = SynthDistribution::uniform;
  double zipf_exponent = 1.0;  // s, for zipf
  std::vector<double> loads;   // E entries, for loads
  std::uint64_t seed = 1;
};

// Each token draws top_k distinct experts, without replacement, with
// probabilities from the distribution; the popularity order of experts is a
// seeded permutation, different per layer. Weights are softmax-like positive
// values normalised to sum 1 per token. Deterministic for a given seed.
Trace synth_trace(const SynthOptions& options);

struct ExpertLoadStats {
  std::vector<std::int64_t> tokens_per_expert;  // E entries
  double mean_load = 0;
  std::int64_t max_load = 0;
  double busiest_over_mean = 0;  // max_load / mean_load (0 when no tokens)
  int empty_experts = 0;         // experts that received no token
};

// Load statistics of one layer, over the first num_tokens tokens (all when <= 0).
ExpertLoadStats expert_load_stats(const Trace& trace, const TraceLayer& layer,
                                  std::int64_t num_tokens = 0);

}  // namespace KokkosMoE

#endif
