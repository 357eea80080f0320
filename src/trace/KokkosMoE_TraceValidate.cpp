// SPDX-License-Identifier: BSD-3-Clause
// In-memory invariants of a routing trace (docs/trace-format.md,
// "Invariants"). Shared by the reader, the writer and synth_trace's users.
#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& problem) {
  throw TraceError(printable_text(where, std::string::npos) + ": " + problem);
}

[[noreturn]] void fail_layer(const std::string& where, int layer, const std::string& problem) {
  fail(where, "layer " + std::to_string(layer) + ": " + problem);
}

void validate_layer(const Trace& trace, const TraceLayer& layer, const std::string& where,
                    std::vector<std::int64_t>& last_row_seen) {
  const auto k = static_cast<std::size_t>(trace.top_k);
  const auto expected = static_cast<std::size_t>(trace.num_tokens) * k;
  if (layer.expert_ids.size() != expected || layer.weights.size() != expected)
    fail_layer(where, layer.index,
               "holds " + std::to_string(layer.expert_ids.size()) + " expert ids and " +
                   std::to_string(layer.weights.size()) + " weights, expected " +
                   std::to_string(expected) + " (" + std::to_string(trace.num_tokens) +
                   " tokens x top_k " + std::to_string(trace.top_k) + ")");

  // last_row_seen[e] == t marks expert e as already chosen in row t: a
  // repeated id is found in O(k) per row without clearing anything.
  std::fill(last_row_seen.begin(), last_row_seen.end(), -1);
  for (std::int64_t t = 0; t < trace.num_tokens; ++t) {
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t i = static_cast<std::size_t>(t) * k + j;
      const std::int32_t id = layer.expert_ids[i];
      const auto fail_token = [&](const std::string& problem) {
        fail_layer(where, layer.index, "token " + std::to_string(t) + ": " + problem);
      };
      if (id < 0 || id >= trace.num_experts)
        fail_token("expert id " + std::to_string(id) + " out of range [0, " +
                   std::to_string(trace.num_experts) + ")");
      if (last_row_seen[static_cast<std::size_t>(id)] == t)
        fail_token("expert id " + std::to_string(id) + " chosen twice in one row");
      last_row_seen[static_cast<std::size_t>(id)] = t;
      if (!std::isfinite(layer.weights[i]))
        fail_token("weight " + std::to_string(layer.weights[i]) + " is not finite");
    }
  }
}

}  // namespace

void validate_trace(const Trace& trace, const std::string& where) {
  if (trace.num_experts < 1 || trace.num_experts > TraceLimits::max_experts)
    fail(where, "num_experts is " + std::to_string(trace.num_experts) + ", must be in [1, " +
                    std::to_string(TraceLimits::max_experts) + "]");
  if (trace.top_k < 1 || trace.top_k > trace.num_experts)
    fail(where, "top_k is " + std::to_string(trace.top_k) +
                    ", must be in [1, num_experts = " + std::to_string(trace.num_experts) + "]");
  if (trace.hidden_size < 0 || trace.ffn_size < 0)
    fail(where, "hidden_size and ffn_size must be >= 0 (0 when unknown)");
  if (trace.hidden_size > TraceLimits::max_width || trace.ffn_size > TraceLimits::max_width)
    fail(where, "hidden_size " + std::to_string(trace.hidden_size) + " or ffn_size " +
                    std::to_string(trace.ffn_size) + " exceeds " +
                    std::to_string(TraceLimits::max_width));
  if (trace.num_tokens < 0) fail(where, "num_tokens is negative");
  if (trace.layers.empty()) fail(where, "no layer");
  if (std::int64_t(trace.layers.size()) > TraceLimits::max_layers)
    fail(where, std::to_string(trace.layers.size()) + " layers, more than " +
                    std::to_string(TraceLimits::max_layers));
  for (std::size_t i = 0; i < trace.layers.size(); ++i) {
    const int index = trace.layers[i].index;
    if (index < 0) fail_layer(where, index, "negative layer index");
    if (i > 0 && index <= trace.layers[i - 1].index)
      fail_layer(where, index, "layers must be sorted by index without repeats");
  }
  if (!trace.sequence_id.empty() &&
      trace.sequence_id.size() != static_cast<std::size_t>(trace.num_tokens))
    fail(where, "sequence_id holds " + std::to_string(trace.sequence_id.size()) +
                    " entries, expected one per token (" + std::to_string(trace.num_tokens) + ")");

  std::vector<std::int64_t> last_row_seen(static_cast<std::size_t>(trace.num_experts));
  for (const TraceLayer& layer : trace.layers) validate_layer(trace, layer, where, last_row_seen);
}

}  // namespace KokkosMoE
