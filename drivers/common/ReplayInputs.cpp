// SPDX-License-Identifier: BSD-3-Clause
#include "ReplayInputs.hpp"

namespace KokkosMoE {
namespace Driver {

std::uint64_t layer_seed(std::uint64_t seed, int layer) {
  return seed * 1000003ull + std::uint64_t(layer) * 16;
}

Config replay_config(const Shape& s, std::int64_t max_tokens, bool batch_invariant) {
  Config c;
  c.num_experts = s.experts;
  c.top_k = s.top_k;
  c.hidden_size = s.hidden;
  c.ffn_size = s.ffn;
  c.max_tokens = max_tokens;
  c.routing = RoutingMode::external;
  c.batch_invariant = batch_invariant;
  return c;
}

}  // namespace Driver
}  // namespace KokkosMoE
