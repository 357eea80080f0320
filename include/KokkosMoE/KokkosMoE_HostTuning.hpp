// SPDX-License-Identifier: BSD-3-Clause
// How the host backends' decode kernels stream expert weights, chosen per
// CPU at run time: which prefetch hint and which block depth read the
// weights fastest depends on the cache hierarchy (docs/performance.md,
// "Host backends"), so one build takes the CPU's choice, or the
// environment's.
#ifndef KOKKOSMOE_HOSTTUNING_HPP
#define KOKKOSMOE_HOSTTUNING_HPP

namespace KokkosMoE {

// How each register block's weights are prefetched while the block before
// it multiplies.
enum class HostWeightPrefetch {
  l2,            // into L2 (prefetcht1)
  non_temporal,  // prefetchnta: a tile's weights are read once
};

const char* to_string(HostWeightPrefetch hint);

// The decode fragment's (up to 8 token rows per expert; prefill's panel
// fragment prefetches into L2 on every CPU).
struct HostTuning {
  HostWeightPrefetch decode_prefetch = HostWeightPrefetch::l2;
  // The k a register block of 2-8 token rows takes before the next block:
  // 4096 (a whole K step) or less, so that the token rows' k stay in L1
  // over the tile's blocks.
  int decode_depth = 4096;
};

// The host kernels' tuning, chosen once per process. From the environment
// where set: KOKKOSMOE_HOST_DECODE_PREFETCH (l2 or nta) and
// KOKKOSMOE_HOST_DECODE_DEPTH (512, 1024, 2048 or 4096). Otherwise by the
// CPU: AMD family 0x1A (Zen 5) and later prefetch non-temporally with
// blocks 1024 deep, other CPUs into L2 with 4096. Throws
// std::invalid_argument naming the variable for any other value (a Layer
// on a host space calls it as it is constructed).
const HostTuning& host_tuning();

namespace Impl {
// The tuning host_tuning() chooses for the variables' values (null or
// empty: unset) on a CPU of an x86 family (amd: whether its vendor is
// AMD; family 0: unknown or not x86).
HostTuning choose_host_tuning(const char* decode_prefetch, const char* decode_depth, bool amd,
                              unsigned family);
}  // namespace Impl

}  // namespace KokkosMoE

#endif
