// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
// The host (CPU) layer against the host's floor and a CBLAS peer, in one run:
// KokkosMoE::Layer on the default host execution space (fp32 and bf16,
// external routing) and the per-expert cblas_sgemm loop a CPU user would
// write (fp32), at the model presets (prefill with H and F divided by 16,
// decode at full shapes), with the copy bandwidth and the sgemm rate
// measured in the same run on the same threads. Each layer benchmark
// reports bytes, flops, floor_ms = max(bytes / copy bandwidth, flops /
// sgemm rate) and fraction_of_floor = floor / time, as docs/performance.md
// does on the GPU, fraction_of_fma_peak against the cores' multiply-add
// peak, measured in the same run too (the sgemm rate of a BLAS built for
// an older instruction set is well below it), and fraction_of_read_stream:
// the time a pure read of the point's bytes takes at the rate the same run
// measured, over the point's (decode reads its weights once, with no
// writes to speak of, and on some machines one core reads slower than the
// copy's reads and writes together move). benchmarks/results/host_table.py makes records and a
// table of its JSON output.
#include <KokkosMoE/KokkosMoE_HostTuning.hpp>
#include <KokkosMoE/KokkosMoE_Layer.hpp>
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include "ModelPresets.hpp"
#include "ReplayInputs.hpp"
#include "ReplayReport.hpp"

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>
#include <benchmark/benchmark.h>

#ifdef KMOE_HOST_BENCH_CBLAS
#include <cblas.h>
#endif
#ifdef __linux__
#include <sched.h>
#endif
#if defined(__AVX512F__) || (defined(__AVX__) && defined(__FMA__))
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#ifndef KMOE_HOST_BENCH_FLAGS
#define KMOE_HOST_BENCH_FLAGS ""
#endif

namespace {
using namespace KokkosMoE;
using Space = Kokkos::DefaultHostExecutionSpace;
using Memory = Kokkos::HostSpace;
using Driver::Preset;
using Driver::Shape;
using Driver::Traffic;

int host_threads() { return Space().concurrency(); }

// A parallel loop over [0, n) on the host threads, finished on return.
template <class F>
void host_for(const char* name, std::int64_t n, const F& f) {
  Kokkos::parallel_for(name, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(0, n), f);
  Space().fence();
}

// The shortest of `runs` timings: a ceiling is what the machine can do, and
// other work on it (a shared host's memory traffic) only lowers a
// measurement.
template <class F>
double best_seconds(int runs, const F& once) {
  double best = once();
  for (int r = 1; r < runs; ++r) best = std::min(best, once());
  return best;
}

// ---------------------------------------------------------------- ceilings

// Measured once at start, before the benchmarks are registered: the floor
// of every layer benchmark divides by these.
struct Ceilings {
  double copy_bytes_per_s = 0;
  double sgemm_flops_per_s = 0;  // 0 without CBLAS: the floor is then the bytes' alone
  // The cores' multiply-add peak (not in the floor: a BLAS built for an
  // older instruction set runs below it, and the layer may beat the BLAS).
  double fma_flops_per_s = 0;
  // With AVX-512 BF16: the peak of bfloat16 pairs' multiply-adds
  // (vdpbf16ps, two a float lane), the bf16 layer's ceiling there; else 0.
  double bf16_pair_flops_per_s = 0;
  // A read stream over the host threads (not in the floor: see above).
  double read_bytes_per_s = 0;
};
Ceilings ceilings;

// Two buffers much larger than the L3 (105 MiB on the development machine).
constexpr std::size_t copy_bytes = std::size_t(512) << 20;
using Bytes = Kokkos::View<char*, Memory>;

// Thread t's contiguous share [begin, end) of copy_bytes among n threads:
// whole 64-byte lines, the last thread taking the rest.
struct Share {
  std::size_t begin, end;
};
KOKKOS_INLINE_FUNCTION Share share_of(int t, int n) {
  const std::size_t share = copy_bytes / n / 64 * 64;
  return Share{t * share, t == n - 1 ? copy_bytes : (t + 1) * share};
}

// One copy of src into dst, counted as read + write bytes: each host thread
// memcpys its contiguous share (glibc streams large copies past the caches,
// as a bandwidth measure should, instead of reading each line before it is
// overwritten).
double copy_seconds(const Bytes& dst, const Bytes& src) {
  const int n = host_threads();
  Kokkos::Timer timer;
  Kokkos::parallel_for("host_copy",
                       Kokkos::RangePolicy<Space, Kokkos::Schedule<Kokkos::Static>>(0, n),
                       [=](int t) {
                         const Share s = share_of(t, n);
                         std::memcpy(dst.data() + s.begin, src.data() + s.begin, s.end - s.begin);
                       });
  Space().fence();
  return timer.seconds();
}

double measure_copy_bandwidth() {
  Bytes src("copy_src", copy_bytes), dst("copy_dst", copy_bytes);  // zeroed: pages touched
  copy_seconds(dst, src);
  return 2.0 * copy_bytes / best_seconds(9, [&] { return copy_seconds(dst, src); });
}

#ifdef KMOE_HOST_BENCH_CBLAS
constexpr int sgemm_n = 4096;  // 137 GFLOP: far from any cache, long enough to time

struct SquareProduct {
  Kokkos::View<float*, Memory> a, b, c;
  SquareProduct()
      : a("sgemm_a", std::size_t(sgemm_n) * sgemm_n),
        b("sgemm_b", std::size_t(sgemm_n) * sgemm_n),
        c("sgemm_c", std::size_t(sgemm_n) * sgemm_n) {
    Driver::fill_hashed(a, 11, 1.0f);  // random: no shortcut for zeros
    Driver::fill_hashed(b, 12, 1.0f);
  }
  double seconds() const {
    Kokkos::Timer timer;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, sgemm_n, sgemm_n, sgemm_n, 1.0f,
                a.data(), sgemm_n, b.data(), sgemm_n, 0.0f, c.data(), sgemm_n);
    return timer.seconds();
  }
  static double flops() { return 2.0 * sgemm_n * double(sgemm_n) * sgemm_n; }
};

double measure_sgemm_rate() {
  SquareProduct p;
  p.seconds();
  return SquareProduct::flops() / best_seconds(3, [&] { return p.seconds(); });
}

#ifdef __linux__
// The CPUs each host thread may run on, by thread.
std::vector<cpu_set_t> host_thread_cpus() {
  const int n = host_threads();
  std::vector<cpu_set_t> each(n);
  Kokkos::parallel_for("host_cpus",
                       Kokkos::RangePolicy<Space, Kokkos::Schedule<Kokkos::Static>>(0, n),
                       [&](int t) { sched_getaffinity(0, sizeof(cpu_set_t), &each[t]); });
  Space().fence();
  return each;
}
#endif

// The BLAS on the run's thread count, its threads where the host threads
// are. OpenBLAS (pthreads) starts a worker with the affinity of the thread
// that asks for it: under OMP_PROC_BIND the master is bound to one core, and
// every BLAS worker would share that core (2 threads would run at the rate
// of one). So the master may run on all the host threads' cores while
// the workers start, then is bound back, and where OpenBLAS can place its
// workers, worker i goes to host thread i + 1's CPUs (the caller computes
// too, on the master's).
void set_blas_threads(int n) {
#ifdef KMOE_HAVE_OPENBLAS_THREADS
#ifdef __linux__
  const std::vector<cpu_set_t> each = host_thread_cpus();
  cpu_set_t mine, all;
  sched_getaffinity(0, sizeof mine, &mine);
  CPU_ZERO(&all);
  for (const cpu_set_t& c : each) CPU_OR(&all, &all, &c);
  sched_setaffinity(0, sizeof all, &all);
  openblas_set_num_threads(n);
  sched_setaffinity(0, sizeof mine, &mine);
#ifdef KMOE_HAVE_OPENBLAS_AFFINITY
  for (int w = 0; w + 1 < n && w + 1 < int(each.size()); ++w) {
    cpu_set_t c = each[w + 1];
    openblas_setaffinity(w, sizeof c, &c);
  }
#endif
#else
  openblas_set_num_threads(n);
#endif
#else
  (void)n;  // a plain CBLAS: its own threading
#endif
}
#endif  // KMOE_HOST_BENCH_CBLAS

// The multiply-add peak of the host threads: each runs independent chains
// of vector multiply-adds in registers (12 chains cover a latency of up to
// 6 cycles at two a cycle), in the build's instruction set, for about 0.1 s.
#if defined(__AVX512F__)
using fma_vector = __m512;
inline fma_vector splat(float v) { return _mm512_set1_ps(v); }
inline fma_vector multiply_add(fma_vector a, fma_vector b, fma_vector c) {
  return _mm512_fmadd_ps(a, b, c);
}
#elif defined(__AVX__) && defined(__FMA__)
using fma_vector = __m256;
inline fma_vector splat(float v) { return _mm256_set1_ps(v); }
inline fma_vector multiply_add(fma_vector a, fma_vector b, fma_vector c) {
  return _mm256_fmadd_ps(a, b, c);
}
#else
using fma_vector = float __attribute__((vector_size(16)));
inline fma_vector splat(float v) { return fma_vector{v, v, v, v}; }
// Two operations where the instruction set has no multiply-add.
inline fma_vector multiply_add(fma_vector a, fma_vector b, fma_vector c) { return a * b + c; }
#endif
constexpr int fma_lanes = sizeof(fma_vector) / sizeof(float);

// Every lane of every vector of acc added up: a measurement's result, used
// so that the loop that made it is not optimised away.
template <class V, int N>
float sum_of_lanes(const V (&acc)[N]) {
  constexpr int lanes = sizeof(V) / sizeof(float);
  float total = 0;
  for (int i = 0; i < N; ++i) {
    float lane[lanes];
    std::memcpy(lane, &acc[i], sizeof lane);
    for (int l = 0; l < lanes; ++l) total += lane[l];
  }
  return total;
}

// The peak of an operation acc = op(acc) on vectors V over the host
// threads: independent chains of it in registers, flops_each a call.
template <class V, class Splat, class Op>
double measure_peak(const Splat& splat_of, const Op& op, double flops_each) {
  constexpr int chains = 12;
  constexpr std::int64_t rounds = 1 << 21;
  const int n = host_threads();
  const auto once = [&] {
    Kokkos::View<float*, Memory> sink("peak_sink", n);
    Kokkos::Timer timer;
    Kokkos::parallel_for(
        "host_peak", Kokkos::RangePolicy<Space, Kokkos::Schedule<Kokkos::Static>>(0, n),
        KOKKOS_LAMBDA(int t) {
          V acc[chains];
          for (int i = 0; i < chains; ++i) acc[i] = splat_of(float(t + i));
          for (std::int64_t r = 0; r < rounds; ++r)
            for (int i = 0; i < chains; ++i) acc[i] = op(acc[i]);
          sink(t) = sum_of_lanes(acc);
        });
    Space().fence();
    return timer.seconds();
  };
  once();
  return flops_each * chains * double(rounds) * n / best_seconds(5, once);
}

double measure_fma_peak() {
  const fma_vector scale = splat(0.999999f), step = splat(1e-7f);
  return measure_peak<fma_vector>([](float v) { return splat(v); },
                                  [=](fma_vector acc) { return multiply_add(acc, scale, step); },
                                  2.0 * fma_lanes);
}

// (As the layer's pairs: AVX-512 BF16 with VL, KOKKOSMOE_HOST_BF16_PAIRS.)
#if defined(__AVX512F__) && defined(__AVX512BF16__) && defined(__AVX512VL__)
double measure_bf16_pair_peak() {
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  return measure_peak<__m512>([](float v) { return _mm512_set1_ps(v); },
                              [=](__m512 acc) { return _mm512_dpbf16_ps(acc, a, a); }, 4.0 * 16);
}
#else
double measure_bf16_pair_peak() { return 0; }
#endif

// One read of src by the host threads, each summing its contiguous share
// in vectors, several sums in flight (as decode's multiply-adds read their
// weight rows), counted as the bytes read.
double read_seconds(const Bytes& src, const Kokkos::View<float*, Memory>& sink) {
  const int n = host_threads();
  Kokkos::Timer timer;
  Kokkos::parallel_for(
      "host_read", Kokkos::RangePolicy<Space, Kokkos::Schedule<Kokkos::Static>>(0, n),
      KOKKOS_LAMBDA(int t) {
        constexpr int sums = 8;
        constexpr std::size_t step = sums * sizeof(fma_vector);
        const Share s = share_of(t, n);
        const char* p = src.data() + s.begin;
        const std::size_t bytes = s.end - s.begin;
        fma_vector acc[sums];
        for (int j = 0; j < sums; ++j) acc[j] = splat(0.0f);
        for (std::size_t i = 0; i + step <= bytes; i += step)
          for (int j = 0; j < sums; ++j) {
            fma_vector v;
            std::memcpy(&v, p + i + j * sizeof v, sizeof v);
            acc[j] = acc[j] + v;
          }
        sink(t) = sum_of_lanes(acc);
      });
  Space().fence();
  return timer.seconds();
}

double measure_read_bandwidth() {
  Bytes src("read_src", copy_bytes);  // zeroed: pages touched
  Kokkos::View<float*, Memory> sink("read_sink", host_threads());
  read_seconds(src, sink);
  return double(copy_bytes) / best_seconds(9, [&] { return read_seconds(src, sink); });
}

Ceilings measure_ceilings() {
  Ceilings c;
  c.copy_bytes_per_s = measure_copy_bandwidth();
  c.read_bytes_per_s = measure_read_bandwidth();
#ifdef KMOE_HOST_BENCH_CBLAS
  c.sgemm_flops_per_s = measure_sgemm_rate();
#endif
  c.fma_flops_per_s = measure_fma_peak();
  c.bf16_pair_flops_per_s = measure_bf16_pair_peak();
  return c;
}

// Times f once per iteration between two fences (the layer may run on an
// instance of its own): the mean seconds per iteration of this repetition.
template <class F>
double time_iterations(benchmark::State& state, const F& f) {
  Kokkos::Timer timer;
  double total = 0;
  for (auto _ : state) {
    Kokkos::fence();
    timer.reset();
    f();
    Kokkos::fence();
    const double s = timer.seconds();
    state.SetIterationTime(s);
    total += s;
  }
  return total / double(state.iterations());
}

void bench_copy_bandwidth(benchmark::State& state) {
  Bytes src("copy_src", copy_bytes), dst("copy_dst", copy_bytes);
  copy_seconds(dst, src);
  for (auto _ : state) state.SetIterationTime(copy_seconds(dst, src));
  state.counters["threads"] = host_threads();
  state.counters["bytes_per_second"] =
      benchmark::Counter(2.0 * copy_bytes, benchmark::Counter::kIsIterationInvariantRate);
}

#ifdef KMOE_HOST_BENCH_CBLAS
void bench_sgemm_rate(benchmark::State& state) {
  SquareProduct p;
  p.seconds();
  for (auto _ : state) state.SetIterationTime(p.seconds());
  state.counters["threads"] = host_threads();
  state.counters["flops_per_second"] =
      benchmark::Counter(SquareProduct::flops(), benchmark::Counter::kIsIterationInvariantRate);
}
#endif

// ---------------------------------------------------------------- points

struct Point {
  std::string label;  // the model, -r16 where H and F were divided by 16, -eN where E was cut
  Shape shape;
  std::int64_t tokens;
};

// One model at one shape and the token counts it runs (the benchmarks of a
// case share its weights).
struct Case {
  std::string label;
  Shape shape;
  std::vector<std::int64_t> tokens;
  Point point(std::int64_t t) const { return {label, shape, t}; }
};

// Prefill: H and F divided by 16, as Bench_Layer's host runs. Decode: the
// full shapes; a model whose fp32 experts take more than 8 GiB keeps 32 of
// them (DeepSeek-V3: 256 experts, 42 GiB; a token touches top_k experts
// whatever E is).
std::vector<Case> cases() {
  constexpr std::int64_t reduce = 16;
  constexpr double max_decode_bytes = 8.0 * (1 << 30);
  constexpr int cut_experts = 32;
  std::vector<Case> out;
  for (const char* name : {"mixtral-8x7b", "qwen2-57b", "deepseek-v3"}) {
    const Preset& p = *Driver::find_preset(name);
    out.push_back({std::string(name) + "-r16",
                   Shape{p.experts, p.top_k, p.hidden / reduce, p.ffn / reduce, reduce},
                   {512, 2048}});
    const double fp32_bytes = 3.0 * p.experts * double(p.hidden) * double(p.ffn) * sizeof(float);
    const int e = fp32_bytes > max_decode_bytes ? cut_experts : p.experts;
    out.push_back({e < p.experts ? name + ("-e" + std::to_string(e)) : std::string(name),
                   Shape{e, p.top_k, p.hidden, p.ffn, 1},
                   {1, 8}});
  }
  return out;
}

// Seeds: a point's routing and hidden states depend on its experts and
// tokens only, so that fp32, bf16, ours and the peer see the same ones;
// weights on the model alone.
std::uint64_t input_seed(const Point& p) { return 7919ull * p.shape.experts + p.tokens; }
constexpr std::uint64_t weight_seed = 2026;

// Uniform top-k distinct experts per token, k positive weights summing to 1.
Trace uniform_routing(const Point& p) {
  SynthOptions o;
  o.num_experts = p.shape.experts;
  o.top_k = p.shape.top_k;
  o.num_tokens = p.tokens;
  o.distribution = SynthDistribution::uniform;
  o.seed = input_seed(p);
  return synth_trace(o);
}

// What the running benchmark keeps between its repetitions. A benchmark of
// another key drops the previous one first: the full shapes take up to 7 GB
// of fp32 weights, and one model's weights are alive at a time.
class Slot {
 public:
  // make() gives a std::shared_ptr<T>; it runs only when the key changes.
  template <class T, class Make>
  T& get(const std::string& key, const Make& make) {
    if (key != key_) {
      clear();
      held_ = make();
      key_ = key;
    }
    return *static_cast<T*>(held_.get());
  }
  void clear() {
    held_.reset();
    key_.clear();
  }

 private:
  std::string key_;
  std::shared_ptr<void> held_;
};
Slot fixture_slot;  // released before weight_slot: fixtures hold views of the weights
Slot weight_slot;

template <class Scalar>
const char* dtype_name() {
  return std::is_same<Scalar, float>::value ? "fp32" : "bf16";
}

// The model's weights in Scalar, drawn as kokkos-moe-replay draws them.
template <class Scalar>
const Weights<Scalar, Memory>& model_weights(const Point& p, const Config& c) {
  return weight_slot.get<Weights<Scalar, Memory>>(p.label + "/" + dtype_name<Scalar>(), [&] {
    return std::make_shared<Weights<Scalar, Memory>>(
        Driver::replay_weights<Scalar, Memory>(c, weight_seed));
  });
}

// The inputs of one point: configuration, hidden states, routing, output,
// and the traffic the floor counts (Driver::count_traffic, as the GPU
// records: touched experts' weights once, x in, out, the routing).
template <class Scalar>
struct Inputs {
  using layer_type = Layer<Space, Scalar>;
  Config config;
  typename layer_type::tokens_view x, out;
  typename layer_type::ids_view ids;
  typename layer_type::weights_view rw;
  Traffic traffic;

  explicit Inputs(const Point& p)
      : config(Driver::replay_config(p.shape, p.tokens, false)),
        x("x", p.tokens, p.shape.hidden),
        out("out", p.tokens, p.shape.hidden),
        ids("ids", p.tokens, p.shape.top_k),
        rw("rw", p.tokens, p.shape.top_k) {
    Driver::fill_hashed(x, input_seed(p), 1.0f);
    Driver::copy_routing(uniform_routing(p).layers[0], 0, p.tokens, ids, rw);
    traffic = Driver::count_traffic<Scalar>(p.shape, ids, p.tokens);
  }
};

// ---------------------------------------------------------------- ours

// The layer with external routing, after one warm-up forward.
template <class Scalar>
struct OursFixture {
  Inputs<Scalar> in;
  Layer<Space, Scalar> layer;
  explicit OursFixture(const Point& p)
      : in(p), layer(in.config, model_weights<Scalar>(p, in.config)) {
    forward();
  }
  void forward() { layer.forward(in.x, in.ids, in.rw, in.out, in.config.max_tokens); }
};

// ---------------------------------------------------------------- peer

#ifdef KMOE_HOST_BENCH_CBLAS
// The per-expert loop a CPU user would write with CBLAS (fp32): the
// assignments grouped by expert, then for each expert with tokens: gather
// its rows of x, gate and up GEMMs (C = X W^T), SwiGLU, down GEMM, weighted
// scatter-add into out. The elementwise steps run on the host threads; the
// buffers are allocated once, as the layer's are.
class CblasLoop {
 public:
  using matrix = Layer<Space, float>::tokens_view;
  using ids_view = Layer<Space, float>::ids_view;
  using weights_view = Layer<Space, float>::weights_view;

  CblasLoop(const Config& c, const Weights<float, Memory>& w)
      : c_(c),
        w_(w),
        offsets_(c.num_experts + 1),
        next_(c.num_experts),
        tokens_(c.max_tokens * c.top_k),
        scales_(c.max_tokens * c.top_k),
        xe_("cblas_x", c.max_tokens, c.hidden_size),
        g_("cblas_gate", c.max_tokens, c.ffn_size),
        u_("cblas_up", c.max_tokens, c.ffn_size),
        y_("cblas_down", c.max_tokens, c.hidden_size) {}

  void forward(const matrix& x, const ids_view& ids, const weights_view& rw, const matrix& out,
               std::int64_t num_tokens) {
    group(ids, rw, num_tokens);
    float* o = out.data();
    host_for("cblas_zero", num_tokens * c_.hidden_size, [=](std::int64_t i) { o[i] = 0; });
    for (int e = 0; e < c_.num_experts; ++e) expert(e, x, out);
  }

 private:
  // Counting sort of the assignments by expert (tokens in order within one).
  void group(const ids_view& ids, const weights_view& rw, std::int64_t num_tokens) {
    std::fill(offsets_.begin(), offsets_.end(), 0);
    for (std::int64_t t = 0; t < num_tokens; ++t)
      for (int j = 0; j < c_.top_k; ++j) ++offsets_[ids(t, j) + 1];
    for (int e = 0; e < c_.num_experts; ++e) offsets_[e + 1] += offsets_[e];
    std::copy(offsets_.begin(), offsets_.end() - 1, next_.begin());
    for (std::int64_t t = 0; t < num_tokens; ++t)
      for (int j = 0; j < c_.top_k; ++j) {
        const std::int64_t slot = next_[ids(t, j)]++;
        tokens_[slot] = t;
        scales_[slot] = rw(t, j);
      }
  }

  void expert(int e, const matrix& x, const matrix& out) {
    const std::int64_t first = offsets_[e], n = offsets_[e + 1] - first;
    if (n == 0) return;
    const int H = int(c_.hidden_size), F = int(c_.ffn_size), rows = int(n);
    const std::int64_t* tok = tokens_.data() + first;
    const float* scale = scales_.data() + first;
    float *xe = xe_.data(), *g = g_.data(), *u = u_.data(), *y = y_.data();
    const float* xs = x.data();
    float* o = out.data();
    host_for("cblas_gather", n,
             [=](std::int64_t r) { std::memcpy(xe + r * H, xs + tok[r] * H, sizeof(float) * H); });
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, F, H, 1.0f, xe, H, &w_.gate(e, 0, 0),
                H, 0.0f, g, F);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, F, H, 1.0f, xe, H, &w_.up(e, 0, 0),
                H, 0.0f, u, F);
    host_for("cblas_swiglu", n * F,
             [=](std::int64_t i) { g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i]; });
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, H, F, 1.0f, g, F, &w_.down(e, 0, 0),
                F, 0.0f, y, H);
    // An expert takes a token once: its rows of out are distinct.
    host_for("cblas_scatter", n, [=](std::int64_t r) {
      for (int j = 0; j < H; ++j) o[tok[r] * H + j] += scale[r] * y[r * H + j];
    });
  }

  Config c_;
  Weights<float, Memory> w_;
  std::vector<std::int64_t> offsets_, next_;  // per expert: its first slot, its next free one
  std::vector<std::int64_t> tokens_;          // per slot: the token
  std::vector<float> scales_;                 // per slot: its routing weight
  matrix xe_, g_, u_, y_;
};

// max |a - b| / max |b| of two outputs.
double relative_difference(const CblasLoop::matrix& a, const CblasLoop::matrix& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.span(); ++i) {
    diff = std::max(diff, double(std::fabs(a.data()[i] - b.data()[i])));
    scale = std::max(scale, double(std::fabs(b.data()[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// The peer after one warm-up forward, checked against the layer in fp32.
struct CblasFixture {
  Inputs<float> in;
  CblasLoop loop;
  double rel_err_vs_ours = 0;
  explicit CblasFixture(const Point& p)
      : in(p), loop(in.config, model_weights<float>(p, in.config)) {
    forward();
    Layer<Space, float> ours(in.config, model_weights<float>(p, in.config));
    CblasLoop::matrix ref("ours_out", in.out.extent(0), in.out.extent(1));
    ours.forward(in.x, in.ids, in.rw, ref, in.config.max_tokens);
    Kokkos::fence();
    rel_err_vs_ours = relative_difference(in.out, ref);
  }
  void forward() { loop.forward(in.x, in.ids, in.rw, in.out, in.config.max_tokens); }
};
#endif  // KMOE_HOST_BENCH_CBLAS

// ---------------------------------------------------------------- benchmarks

// The point's shape and work, and its floor from the ceilings of this run.
void report_floor(benchmark::State& state, const Point& p, const Traffic& t, double seconds) {
  const double bytes = t.bytes[Driver::total_stage], flops = t.flops[Driver::total_stage];
  double floor_s = bytes / ceilings.copy_bytes_per_s;
  if (ceilings.sgemm_flops_per_s > 0)
    floor_s = std::max(floor_s, flops / ceilings.sgemm_flops_per_s);
  auto& c = state.counters;
  c["threads"] = host_threads();
  c["experts"] = p.shape.experts;
  c["top_k"] = p.shape.top_k;
  c["hidden"] = double(p.shape.hidden);
  c["ffn"] = double(p.shape.ffn);
  c["reduce"] = double(p.shape.reduce);
  c["tokens"] = double(p.tokens);
  c["bytes"] = bytes;
  c["flops"] = flops;
  c["floor_ms"] = floor_s * 1e3;
  c["fraction_of_floor"] = floor_s / seconds;
  c["gflops"] = flops / seconds / 1e9;
  c["fraction_of_fma_peak"] = flops / seconds / ceilings.fma_flops_per_s;
  c["fraction_of_read_stream"] = bytes / ceilings.read_bytes_per_s / seconds;
}
// bf16 also against the bfloat16 pairs' peak, where the build has them
// (the floor's flop rate is the fp32 sgemm's: a layer multiplying pairs
// may pass it).
void report_bf16_peak(benchmark::State& state, const Traffic& t, double seconds) {
  if (ceilings.bf16_pair_flops_per_s > 0)
    state.counters["fraction_of_bf16_pair_peak"] = t.flops[Driver::total_stage] / seconds /
                                                   ceilings.bf16_pair_flops_per_s;
}

template <class Scalar>
void bench_ours(benchmark::State& state, const Point& p, const std::string& name) {
  auto& f = fixture_slot.get<OursFixture<Scalar>>(name, [&] {
    return std::make_shared<OursFixture<Scalar>>(p);
  });
  const double seconds = time_iterations(state, [&] { f.forward(); });
  report_floor(state, p, f.in.traffic, seconds);
  if constexpr (std::is_same<Scalar, KokkosMoE::bfloat16>::value)
    report_bf16_peak(state, f.in.traffic, seconds);
}

#ifdef KMOE_HOST_BENCH_CBLAS
void bench_cblas(benchmark::State& state, const Point& p, const std::string& name) {
  auto& f = fixture_slot.get<CblasFixture>(name, [&] { return std::make_shared<CblasFixture>(p); });
  report_floor(state, p, f.in.traffic, time_iterations(state, [&] { f.forward(); }));
  state.counters["rel_err_vs_ours"] = f.rel_err_vs_ours;
}
#endif

using LayerBench = void (*)(benchmark::State&, const Point&, const std::string&);

void register_layer(const std::string& impl, const char* dtype, const Point& p, LayerBench run) {
  const std::string name = "host/" + impl + "/" + dtype + "/" + p.label + "/t" +
                           std::to_string(p.tokens);
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) { run(s, p, name); })
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

// The ceilings first, then each case's fp32 benchmarks (ours and the peer,
// on the same weights) and its bf16 ones: one set of weights at a time.
void register_all() {
  benchmark::RegisterBenchmark("host/copy_bandwidth", bench_copy_bandwidth)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
#ifdef KMOE_HOST_BENCH_CBLAS
  benchmark::RegisterBenchmark("host/sgemm_rate", bench_sgemm_rate)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
#endif
  for (const Case& c : cases()) {
    for (std::int64_t t : c.tokens) {
      register_layer("ours", "fp32", c.point(t), bench_ours<float>);
#ifdef KMOE_HOST_BENCH_CBLAS
      register_layer("cblas", "fp32", c.point(t), bench_cblas);
#endif
    }
    // KokkosMoE:: spelt out: OpenBLAS' cblas.h declares a bfloat16 of its own.
    for (std::int64_t t : c.tokens)
      register_layer("ours", "bf16", c.point(t), bench_ours<KokkosMoE::bfloat16>);
  }
}

// ---------------------------------------------------------------- context

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// The command as run: the settings of threads, BLAS and the layer's host
// tuning from the environment, then the arguments.
std::string command_line(int argc, char** argv) {
  std::string cmd;
  for (const char* v :
       {"OMP_WAIT_POLICY", "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OPENBLAS_CORETYPE",
        "KOKKOSMOE_HOST_DECODE_PREFETCH", "KOKKOSMOE_HOST_DECODE_DEPTH"})
    if (const char* value = std::getenv(v)) cmd += std::string(v) + "=" + value + " ";
  for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
  return cmd;
}

// The layer's compile flags, as CMake gave them (KMOE_HOST_BENCH_FLAGS).
std::string build_flags() {
  std::string flags = KMOE_HOST_BENCH_FLAGS;
  flags.erase(flags.find_last_not_of(' ') + 1);  // no target options leave a space
  return flags;
}

std::string blas_name() {
#if defined(KMOE_HAVE_OPENBLAS_THREADS)
  return std::string(openblas_get_config()) + " (" + std::to_string(openblas_get_num_threads()) +
         " BLAS threads)";
#elif defined(KMOE_HOST_BENCH_CBLAS)
  return "CBLAS";
#else
  return "none (no CBLAS peer; the floor counts bytes only)";
#endif
}

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.6g", v);
  return s;
}

void add_context(const std::string& command) {
  benchmark::AddCustomContext("kokkos_threads", std::to_string(host_threads()));
  benchmark::AddCustomContext("floor_copy_gbps", number(ceilings.copy_bytes_per_s / 1e9));
  benchmark::AddCustomContext("floor_sgemm_gflops", number(ceilings.sgemm_flops_per_s / 1e9));
  benchmark::AddCustomContext("fma_peak_gflops", number(ceilings.fma_flops_per_s / 1e9));
  benchmark::AddCustomContext("read_gbps", number(ceilings.read_bytes_per_s / 1e9));
  if (ceilings.bf16_pair_flops_per_s > 0)
    benchmark::AddCustomContext("bf16_pair_peak_gflops",
                                number(ceilings.bf16_pair_flops_per_s / 1e9));
  benchmark::AddCustomContext("cpu", cpu_model());
  benchmark::AddCustomContext("build_flags", build_flags());
  benchmark::AddCustomContext("blas", blas_name());
  benchmark::AddCustomContext("command", command);
  benchmark::AddCustomContext("loadavg_at_start", first_line("/proc/loadavg"));
  // How the layer's decode kernels stream the weights on this CPU (HostTuning).
  const HostTuning& tuning = host_tuning();
  benchmark::AddCustomContext("host_tuning", std::string("decode prefetch ") +
                                                 to_string(tuning.decode_prefetch) + ", depth " +
                                                 std::to_string(tuning.decode_depth));
}
}  // namespace

int main(int argc, char** argv) {
  const std::string command = command_line(argc, argv);
  Kokkos::initialize(argc, argv);
  {
#ifdef KMOE_HOST_BENCH_CBLAS
    set_blas_threads(host_threads());
#endif
    ceilings = measure_ceilings();
    std::fprintf(stderr,
                 "host threads %d: copy %.1f GB/s, sgemm %.1f GFLOP/s (the floors' ceilings), "
                 "multiply-add peak %.1f GFLOP/s (bf16 pairs: %.1f), read stream %.1f GB/s\n",
                 host_threads(), ceilings.copy_bytes_per_s / 1e9, ceilings.sgemm_flops_per_s / 1e9,
                 ceilings.fma_flops_per_s / 1e9, ceilings.bf16_pair_flops_per_s / 1e9,
                 ceilings.read_bytes_per_s / 1e9);
    register_all();
    add_context(command);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    benchmark::ClearRegisteredBenchmarks();
    // Views before finalize: the fixtures hold the weights' views.
    fixture_slot.clear();
    weight_slot.clear();
  }
  Kokkos::finalize();
  return 0;
}
