// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
// The host fragments' loops without memory, as the kernels call them
// (mma_nt on weights read in place), on operands that stay in the caches:
// the rate each loop can run at when memory is not what bounds it.
// Bench_HostLayer.cpp measures the read stream and the multiply-add peak
// to compare with (docs/performance.md, "Host backends").
//
// - host/decode_loop/<dtype>/rows:<M>: the decode fragment, one 4096-deep
//   K step of 8 weight rows (64 KiB of bf16, 128 KiB of fp32: from L2,
//   which the prefetches then hit) against 1-8 token rows, with the CPU's
//   decode tuning. Its weight bytes per second: where a decode point's rows
//   per expert put it below the memory's read rate, the loop, not memory,
//   bounds that point.
// - host/panel_loop/<dtype>/rows:<M>: the prefill fragment, one 256-deep K
//   step of a 64-column weight tile's panels (64 KiB of fp32) against a
//   token tile of M rows (the 16- and 32-row tiles, and a few rows: the
//   last row tile of an expert), no prefetch ahead. Its flops per second
//   against the multiply-add peak: the register blocks' own rate.
#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_Fragment.hpp"
#include "KokkosMoE_WeightPanels.hpp"

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

// Values of every storage type's range, never zeros (a zero operand could
// take another path through the multiplier on some CPUs).
template <class Scalar>
std::vector<Scalar> spread_values(std::size_t n, std::size_t stride, float scale) {
  std::vector<Scalar> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = Scalar(float(int(i * stride % 1999) - 999) / scale + 1.0f / (4 * scale));
  return v;
}

template <class Scalar>
void decode_loop(benchmark::State& state) {
  using frag = Impl::Fragment<Space, Scalar, Impl::TileSize::small>;
  static_assert(Impl::reads_weights_in_place<frag, Scalar>, "the host decode fragment");
  const int tokens = int(state.range(0)), depth = frag::tile_k;
  const auto weights = spread_values<Scalar>(std::size_t(weight_rows) * depth, 7919, 1024.0f);
  const auto a = spread_values<float>(std::size_t(frag::tile_m) * frag::tile_k, 104729, 2048.0f);
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

// The prefill fragment of a tile of `rows` token rows (16 or fewer: the
// 16-row tile's; else the 32-row one's) on a weight tile's panels, packed
// by the layer's pack_panels in its panel_layout, through mma_nt with one
// weight tile (the gate/up kernel passes gate's and up's, the down kernel
// one).
// The token tile holds bfloat16 values where the weights are bfloat16, as
// the kernels load it (mma_nt converts it to pairs where the build has them).
template <class Scalar, Impl::TileSize Size>
void panel_loop_of(benchmark::State& state, int tokens) {
  using frag = Impl::Fragment<Space, Scalar, Size>;
  static_assert(Impl::reads_weights_in_place<frag, Scalar> && frag::k_contiguous == false,
                "the host prefill fragment");
  constexpr int depth = frag::tile_k, columns = frag::tile_n;
  const auto values = spread_values<Scalar>(std::size_t(columns) * depth, 7919, 1024.0f);
  const auto panels = Impl::pack_panels<Space, Scalar>(
      Space(),
      Kokkos::View<const Scalar***, Kokkos::LayoutRight, Kokkos::HostSpace,
                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>(values.data(), 1, columns, depth),
      frag::template panel_layout<Scalar>(), "panels");
  Kokkos::fence();
  auto a = spread_values<float>(std::size_t(frag::tile_m) * frag::tile_k, 104729, 2048.0f);
  for (float& v : a) v = Impl::to_float(Scalar(v));
  const typename frag::tile tile(a.data(), frag::tile_m, frag::tile_k);
  auto acc = std::make_unique<typename frag::accumulator_type>();
  const Impl::InPlaceWeights<Scalar> b{panels.data(), std::int64_t(panels.extent(2)), columns,
                                       depth, tokens};
  for (auto _ : state) {
    acc->zero = true;
    frag::mma_nt(0, tile, b, *acc);
    benchmark::DoNotOptimize(acc->v);
    benchmark::ClobberMemory();
  }
  state.counters["flops_per_second"] = benchmark::Counter(
      2.0 * tokens * columns * depth, benchmark::Counter::kIsIterationInvariantRate);
}
template <class Scalar>
void panel_loop(benchmark::State& state) {
  const int tokens = int(state.range(0));
  if (tokens <= 16) panel_loop_of<Scalar, Impl::TileSize::medium>(state, tokens);
  else panel_loop_of<Scalar, Impl::TileSize::large>(state, tokens);
}

const bool registered = [] {
  const auto add = [](const char* loop, const char* dtype, void (*f)(benchmark::State&),
                      std::vector<std::int64_t> rows) {
    auto* b = benchmark::RegisterBenchmark((std::string("host/") + loop + "/" + dtype).c_str(), f);
    b->ArgName("rows")->Unit(benchmark::kMicrosecond);
    for (std::int64_t r : rows) b->Arg(r);
  };
  for (const char* dtype : {"fp32", "bf16"}) {
    const bool fp32 = dtype[0] == 'f';
    add("decode_loop", dtype, fp32 ? decode_loop<float> : decode_loop<bfloat16>,
        {1, 2, 3, 4, 5, 6, 7, 8});
    add("panel_loop", dtype, fp32 ? panel_loop<float> : panel_loop<bfloat16>, {4, 16, 32});
  }
  return true;
}();
}  // namespace

#endif
