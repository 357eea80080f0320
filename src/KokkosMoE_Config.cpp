// SPDX-License-Identifier: BSD-3-Clause
#include <KokkosMoE/KokkosMoE_Config.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace KokkosMoE {

const char* to_string(RoutingMode mode) {
  switch (mode) {
    case RoutingMode::softmax_topk: return "softmax_topk";
    case RoutingMode::sigmoid_group_topk: return "sigmoid_group_topk";
    case RoutingMode::external: return "external";
  }
  return "unknown";
}

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("KokkosMoE::Config: " + what);
}
}  // namespace

void Config::validate() const {
  require(num_experts >= 1, "num_experts must be >= 1, got " + std::to_string(num_experts));
  require(top_k >= 1 && top_k <= num_experts,
          "top_k must be in [1, num_experts=" + std::to_string(num_experts) + "], got " +
              std::to_string(top_k));
  require(hidden_size >= 1, "hidden_size must be >= 1, got " + std::to_string(hidden_size));
  require(ffn_size >= 1, "ffn_size must be >= 1, got " + std::to_string(ffn_size));
  require(max_tokens >= 0, "max_tokens must be >= 0, got " + std::to_string(max_tokens));
  // The kernels take H and F as int; assignment indices (token * k + slot)
  // are 32-bit on the device; buffers hold E F H and T k max(H, F) values.
  // Products are checked by division: a wrapped product would pass.
  const std::int64_t int_max = std::numeric_limits<int>::max();
  require(hidden_size <= int_max,
          "hidden_size must fit in an int, got " + std::to_string(hidden_size));
  require(ffn_size <= int_max, "ffn_size must fit in an int, got " + std::to_string(ffn_size));
  require(max_tokens <= int_max / top_k,
          "max_tokens * top_k must fit in an int, got max_tokens " + std::to_string(max_tokens));
  const std::int64_t max_values = std::int64_t(1) << 56;  // 2^56 values: far beyond any memory
  require(hidden_size * ffn_size <= max_values / num_experts,
          "num_experts * ffn_size * hidden_size is too large");
  require(max_tokens * top_k <= max_values / std::max(hidden_size, ffn_size),
          "max_tokens * top_k * max(hidden_size, ffn_size) is too large");
  if (routing == RoutingMode::sigmoid_group_topk) {
    require(n_group >= 1 && n_group <= 64, "n_group must be in [1, 64]");
    require(num_experts % n_group == 0, "num_experts must be a multiple of n_group");
    require(topk_group >= 1 && topk_group <= n_group, "topk_group must be in [1, n_group]");
    require(top_k <= topk_group * (num_experts / n_group),
            "top_k exceeds the experts in topk_group groups");
    require(std::isfinite(routed_scaling) && routed_scaling > 0,
            "routed_scaling must be finite and positive");
  }
}

}  // namespace KokkosMoE
