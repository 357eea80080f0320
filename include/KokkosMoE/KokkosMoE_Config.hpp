// SPDX-License-Identifier: BSD-3-Clause
// Shape and routing configuration of one MoE layer.
#ifndef KOKKOSMOE_CONFIG_HPP
#define KOKKOSMOE_CONFIG_HPP

#include <cstdint>
#include <string>

namespace KokkosMoE {

enum class RoutingMode {
  // softmax over the E logits, then top-k; optionally renormalise the k
  // weights to sum 1 (Mixtral).
  softmax_topk,
  // sigmoid scores; a per-expert bias is added for selection only;
  // group-limited top-k (topk_group best of n_group groups, a group scored by
  // the sum of its two best biased scores); weights are the unbiased scores,
  // optionally renormalised, times routed_scaling (DeepSeek-V3).
  sigmoid_group_topk,
  // expert ids and weights are given by the caller (trace replay).
  external
};

const char* to_string(RoutingMode mode);

struct Config {
  int num_experts = 8;           // E
  int top_k = 2;                 // k
  std::int64_t hidden_size = 0;  // H
  std::int64_t ffn_size = 0;     // F, per-expert intermediate width
  std::int64_t max_tokens = 0;   // buffers are sized once for this many tokens

  RoutingMode routing = RoutingMode::softmax_topk;
  bool renormalize = true;      // k weights sum to 1 before scaling
  int n_group = 1;              // sigmoid_group_topk: groups of experts
  int topk_group = 1;           // sigmoid_group_topk: groups kept per token
  float routed_scaling = 1.0f;  // sigmoid_group_topk: weight multiplier

  // What a forward guarantees about its bits (docs/api.md, "Determinism").
  // Always: the same inputs, routing, batch, configuration and build on the
  // same device give bitwise-equal outputs, run after run (no floating-point
  // atomics; every sum has a fixed order whatever the threads' timing).
  // Default (false): the tile shape, the K splits of few-token batches and
  // (with Kokkos Kernels) the router GEMM's algorithm follow the batch size,
  // so a token's output may differ in its last bits between batches.
  // true: one tile shape, no K splits and the layer's own router kernel for
  // every batch, so a token's output (and routing) is bitwise independent of
  // the batch size and of the other tokens in its batch. Slower where the
  // batch-size-dependent choices pay: decode sizes most (docs/performance.md).
  bool batch_invariant = false;

  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
};

}  // namespace KokkosMoE

#endif
