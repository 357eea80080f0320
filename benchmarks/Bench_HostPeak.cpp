// SPDX-License-Identifier: BSD-3-Clause
// The host's fp32 FMA peak, measured in the same run as the layer: every
// host thread runs chains of independent fused multiply-adds on the widest
// vectors the CPU has (AVX-512, else AVX2, else one float at a time), enough
// chains to cover the FMA latency. flops_per_second is 2 flops per lane per
// FMA. The layer's host build need not use these instructions (it is
// compiled for the baseline ISA unless told otherwise): this is the
// machine's limit, not the build's. (Not in GPU builds, whose compilers
// parse every file as device code: their host peak is not what they measure.)
#if !defined(__CUDACC__) && !defined(__HIPCC__)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KMOE_X86_PEAK 1
#endif

namespace {
constexpr int chains = 16;  // FMAs in flight per thread: latency 4 x 2 ports, twice over
constexpr std::int64_t iterations = 1 << 22;

#ifdef KMOE_X86_PEAK
__attribute__((target("avx512f"))) float fma_avx512(float seed) {
  __m512 acc[chains];
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(seed * 1e-7f);
  for (int c = 0; c < chains; ++c) acc[c] = _mm512_set1_ps(seed + c);
  for (std::int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < chains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  __m512 s = acc[0];
  for (int c = 1; c < chains; ++c) s = _mm512_add_ps(s, acc[c]);
  return _mm512_reduce_add_ps(s);
}
__attribute__((target("avx2,fma"))) float fma_avx2(float seed) {
  __m256 acc[chains];
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(seed * 1e-7f);
  for (int c = 0; c < chains; ++c) acc[c] = _mm256_set1_ps(seed + c);
  for (std::int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < chains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  float out[8], s = 0;
  for (int c = 1; c < chains; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  _mm256_storeu_ps(out, acc[0]);
  for (float v : out) s += v;
  return s;
}
#endif
float fma_scalar(float seed) {
  float acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = seed + c;
  for (std::int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 16
    for (int c = 0; c < chains; ++c) acc[c] = acc[c] * 0.999999f + seed * 1e-7f;
  float s = 0;
  for (float v : acc) s += v;
  return s;
}

struct Isa {
  const char* name;
  int lanes;
  float (*run)(float);
};
Isa widest() {
#ifdef KMOE_X86_PEAK
  if (__builtin_cpu_supports("avx512f")) return {"avx512", 16, fma_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2", 8, fma_avx2};
#endif
  return {"scalar", 1, fma_scalar};
}

void host_fma_peak(benchmark::State& state) {
  const int threads = int(state.range(0));
  const Isa isa = widest();
  std::vector<float> sink(threads);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sink[t] = isa.run(1.0f + t); });
    for (auto& th : pool) th.join();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  benchmark::DoNotOptimize(sink.data());
  state.SetLabel(isa.name);
  state.counters["flops_per_second"] =
      benchmark::Counter(2.0 * isa.lanes * chains * double(iterations) * threads,
                         benchmark::Counter::kIsIterationInvariantRate);
}

// 1 thread and every thread Kokkos' host space runs on.
const bool registered = [] {
  auto* b = benchmark::RegisterBenchmark("host_fma_peak", host_fma_peak);
  b->Arg(1)->ArgName("threads")->UseManualTime()->Unit(benchmark::kMillisecond);
  const int all = int(std::thread::hardware_concurrency());
  if (all > 1) b->Arg(all);
  return true;
}();
}  // namespace
#endif
