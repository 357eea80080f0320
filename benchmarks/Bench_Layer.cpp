// SPDX-License-Identifier: BSD-3-Clause
// Google Benchmark: each stage and the whole layer at the model presets,
// with bytes/s and flops/s counters (the traffic each run must do). On host
// backends the shapes are divided (H/16, F/16) to keep runs short.
#include <KokkosMoE/KokkosMoE_Layer.hpp>
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>
#include <KokkosMoE/KokkosMoE_BuildConfig.hpp>
#ifdef KOKKOSMOE_ENABLE_KOKKOSKERNELS
#include "UnfusedExperts.hpp"
#endif
#include <KokkosMoE/KokkosMoE_WorkGraph.hpp>

#include "ModelPresets.hpp"
#include "ReplayInputs.hpp"
#include "ReplayReport.hpp"

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

namespace {
using namespace KokkosMoE;
using namespace KokkosMoE::Driver;
using Space = Kokkos::DefaultExecutionSpace;
using Memory = Space::memory_space;
constexpr bool on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible;

template <class Scalar>
struct Bench {
  using layer_type = Layer<Space, Scalar>;
  Shape shape;
  Config config;
  Weights<Scalar, Memory> w;
  typename layer_type::tokens_view x, out;
  typename layer_type::ids_view ids;
  typename layer_type::weights_view rw;
  Traffic traffic;
  // The layer runs on an instance whose work can be recorded (its forward,
  // recorded once, is the graph_forward benchmark).
  Space exec = WorkGraph<Space>::capture_instance();
  std::unique_ptr<layer_type> layer;
  std::unique_ptr<WorkGraph<Space>> graph;
#ifdef KOKKOSMOE_ENABLE_KOKKOSKERNELS
  std::unique_ptr<UnfusedExperts<Space, Scalar>> unfused;  // the KokkosBlas baseline
#endif

  Bench(const Preset& p, std::int64_t tokens, double zipf) {
    shape = Shape{p.experts, p.top_k, on_host ? p.hidden / 16 : p.hidden,
                  on_host ? p.ffn / 16 : p.ffn, on_host ? 16 : 1};
    config = Driver::replay_config(shape, tokens, false);
    w = Weights<Scalar, Memory>::allocate(config);
    x = typename layer_type::tokens_view("x", tokens, shape.hidden);
    out = typename layer_type::tokens_view("out", tokens, shape.hidden);
    // Non-zero inputs so that no arithmetic shortcut applies.
    Kokkos::deep_copy(w.gate, Scalar(0.01f));
    Kokkos::deep_copy(w.up, Scalar(0.02f));
    Kokkos::deep_copy(w.down, Scalar(0.03f));
    Kokkos::deep_copy(x, Scalar(0.5f));
    SynthOptions so;
    so.num_experts = p.experts;
    so.top_k = p.top_k;
    so.num_tokens = tokens;
    so.distribution = zipf > 0 ? SynthDistribution::zipf : SynthDistribution::uniform;
    so.zipf_exponent = zipf;
    const Trace t = synth_trace(so);
    ids = typename layer_type::ids_view("ids", tokens, p.top_k);
    rw = typename layer_type::weights_view("rw", tokens, p.top_k);
    const auto hid = copy_routing(t.layers[0], 0, tokens, ids, rw);
    traffic = count_traffic<Scalar>(shape, hid, tokens);
    layer = std::make_unique<layer_type>(config, w, exec);
    layer->forward(x, ids, rw, out, tokens);  // plan for the per-stage runs
    graph = std::make_unique<WorkGraph<Space>>(exec, [this, tokens] {
      layer->forward(x, ids, rw, out, tokens);
    });
#ifdef KOKKOSMOE_ENABLE_KOKKOSKERNELS
    unfused = std::make_unique<UnfusedExperts<Space, Scalar>>(config, w);
#endif
  }
};

template <class F>
void timed(benchmark::State& state, const Traffic& t, int stage, const F& f) {
  Kokkos::Timer timer;
  for (auto _ : state) {
    Kokkos::fence();  // global: the layer runs on an instance of its own
    timer.reset();
    f();
    Kokkos::fence();
    state.SetIterationTime(timer.seconds());
  }
  state.counters["bytes_per_second"] =
      benchmark::Counter(t.bytes[stage], benchmark::Counter::kIsIterationInvariantRate);
  state.counters["flops_per_second"] =
      benchmark::Counter(t.flops[stage], benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  for (const Preset& p : model_presets()) {
    for (std::int64_t tokens : {1, 32, 512, 2048}) {
      const double zipf = p.experts >= 64 ? 0.5 : 0.0;
      const std::string name = std::string(p.name) + "/bf16/tokens:" + std::to_string(tokens) +
                               (zipf > 0 ? "/zipf0.5" : "/uniform");
      auto bench = std::make_shared<std::unique_ptr<Bench<bfloat16>>>();
      auto get = [bench, p, tokens, zipf]() -> Bench<bfloat16>& {
        if (!*bench) *bench = std::make_unique<Bench<bfloat16>>(p, tokens, zipf);
        return **bench;
      };
      auto reg = [&](const char* stage_name, int stage, auto run) {
        benchmark::RegisterBenchmark((std::string(stage_name) + "/" + name).c_str(),
                                     [get, stage, run](benchmark::State& s) {
                                       auto& b = get();
                                       timed(s, b.traffic, stage, [&] { run(b); });
                                     })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      };
      reg("dispatch", dispatch_stage,
          [tokens](Bench<bfloat16>& b) { b.layer->dispatch(b.ids, tokens); });
      reg("gate_up", gate_up_stage,
          [tokens](Bench<bfloat16>& b) { b.layer->gate_up(b.x, tokens); });
      reg("down_combine", down_combine_stage,
          [tokens](Bench<bfloat16>& b) { b.layer->down_combine(b.rw, b.out, tokens); });
      reg("forward", total_stage,
          [tokens](Bench<bfloat16>& b) { b.layer->forward(b.x, b.ids, b.rw, b.out, tokens); });
      reg("graph_forward", graph_stage, [](Bench<bfloat16>& b) { b.graph->launch(); });
#ifdef KOKKOSMOE_ENABLE_KOKKOSKERNELS
      reg("unfused_forward", total_stage,
          [tokens](Bench<bfloat16>& b) { b.unfused->forward(b.x, b.ids, b.rw, b.out, tokens); });
#endif
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    // The layers hold views: release them before finalize.
    benchmark::ClearRegisteredBenchmarks();
  }
  Kokkos::finalize();
  return 0;
}
