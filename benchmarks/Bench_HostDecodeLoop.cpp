// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
// The host decode fragment's loop without memory: one 4096-deep K step of
// 8 weight rows (64 KiB of bf16, 128 KiB of fp32: from L2, which the
// prefetches then hit) against 1-8 token rows, as the decode kernels call
// it (multiply_in_place, the CPU's decode tuning). Its weight bytes per
// second is the rate the loop can take weights at when memory is not what
// bounds it: where a decode point's rows per expert put it below the
// memory's read rate, the loop, not memory, bounds that point
// (docs/performance.md, "Host backends"). Named
// host/decode_loop/<dtype>/rows:<M>; Bench_HostLayer.cpp measures the read
// stream and the multiply-add peak to compare with.
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_Fragment.hpp"

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#ifdef KOKKOSMOE_HOST_VECTORS

#include <memory>
#include <string>
#include <vector>

namespace {
using namespace KokkosMoE;
using Space = Kokkos::DefaultHostExecutionSpace;

constexpr int weight_rows = 8;

template <class Scalar>
void decode_loop(benchmark::State& state) {
  using frag = Impl::Fragment<Space, Scalar, Impl::TileSize::small>;
  static_assert(Impl::reads_weights_in_place<frag, Scalar>, "the host decode fragment");
  const int tokens = int(state.range(0)), depth = frag::tile_k;
  // Values of every storage type's range, never zeros (a zero operand
  // could take another path through the multiplier on some CPUs).
  std::vector<Scalar> weights(std::size_t(weight_rows) * depth);
  for (std::size_t i = 0; i < weights.size(); ++i)
    weights[i] = Scalar(float(int(i * 7919 % 1999) - 999) / 1024.0f + 1.0f / 4096);
  std::vector<float> a(std::size_t(frag::tile_m) * frag::tile_k);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i * 104729 % 1999) - 999) / 2048.0f + 1.0f / 8192;
  auto acc = std::make_unique<typename frag::accumulator_type>();
  const Impl::InPlaceWeights<Scalar> b{weights.data(), depth, weight_rows, depth, tokens};
  for (auto _ : state) {
    acc->zero = true;
    frag::multiply_in_place(a.data(), b, *acc);
    benchmark::DoNotOptimize(acc->v);
    benchmark::ClobberMemory();
  }
  const double per_call = double(weight_rows) * depth;
  state.counters["weight_bytes_per_second"] =
      benchmark::Counter(per_call * sizeof(Scalar), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flops_per_second"] =
      benchmark::Counter(2.0 * tokens * per_call, benchmark::Counter::kIsIterationInvariantRate);
}

const bool registered = [] {
  const auto add = [](const char* dtype, void (*f)(benchmark::State&)) {
    auto* b = benchmark::RegisterBenchmark((std::string("host/decode_loop/") + dtype).c_str(), f);
    b->ArgName("rows")->DenseRange(1, 8)->Unit(benchmark::kMicrosecond);
  };
  add("fp32", decode_loop<float>);
  add("bf16", decode_loop<bfloat16>);
  return true;
}();
}  // namespace

#endif
