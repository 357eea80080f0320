// SPDX-License-Identifier: BSD-3-Clause
// Expert-load statistics of one trace layer: how unevenly the router spreads
// tokens, the quantity that drives load imbalance in the expert computation.
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace KokkosMoE {

ExpertLoadStats expert_load_stats(const Trace& trace, const TraceLayer& layer,
                                  std::int64_t num_tokens) {
  const auto k = static_cast<std::size_t>(std::max(trace.top_k, 0));
  const std::int64_t available = k > 0 ? static_cast<std::int64_t>(layer.expert_ids.size() / k) : 0;
  const std::int64_t tokens = std::min(num_tokens > 0 ? num_tokens : trace.num_tokens, available);

  ExpertLoadStats s;
  s.tokens_per_expert.assign(static_cast<std::size_t>(std::max(trace.num_experts, 0)), 0);
  const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(tokens, 0)) * k;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t id = layer.expert_ids[i];
    if (id < 0 || id >= trace.num_experts)  // not validated: refuse, do not index out of bounds
      throw TraceError("layer " + std::to_string(layer.index) + ": expert id " +
                       std::to_string(id) + " out of range [0, " +
                       std::to_string(trace.num_experts) + ")");
    ++s.tokens_per_expert[static_cast<std::size_t>(id)];
  }
  if (s.tokens_per_expert.empty()) return s;
  s.mean_load = static_cast<double>(n) / static_cast<double>(s.tokens_per_expert.size());
  s.max_load = *std::max_element(s.tokens_per_expert.begin(), s.tokens_per_expert.end());
  s.busiest_over_mean = s.mean_load > 0 ? static_cast<double>(s.max_load) / s.mean_load : 0.0;
  s.empty_experts = static_cast<int>(
      std::count(s.tokens_per_expert.begin(), s.tokens_per_expert.end(), std::int64_t(0)));
  return s;
}

}  // namespace KokkosMoE
