// SPDX-License-Identifier: BSD-3-Clause
// Install test: a consumer of the installed KokkosMoE package runs a forward
// for every storage type and checks it against the float64 reference of the
// package (KokkosMoE_Reference.hpp). With the trace component, the routing
// also goes through an HDF5 trace file and back into a replay forward.
#include <KokkosMoE/KokkosMoE_Layer.hpp>
#include <KokkosMoE/KokkosMoE_Reference.hpp>
#ifdef KOKKOSMOE_INSTALL_TEST_TRACE
#include <KokkosMoE/KokkosMoE_Trace.hpp>
#endif

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;

template <class View>
void fill(const View& v, double scale, unsigned seed) {
  using T = typename View::non_const_value_type;
  auto host = Kokkos::create_mirror_view(v);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-scale, scale);
  for (std::size_t i = 0; i < host.span(); ++i) host.data()[i] = T(float(d(rng)));
  Kokkos::deep_copy(v, host);
}

// The layer's output against the reference on its own routing, and (with
// the trace component) a replay of that routing read back from a file.
template <class Scalar>
bool check(const char* name) {
  using Layer = KokkosMoE::Layer<Space, Scalar>;
  KokkosMoE::Config c;
  c.num_experts = 8;
  c.top_k = 2;
  c.hidden_size = 64;
  c.ffn_size = 96;
  c.max_tokens = 40;
  const std::int64_t T = 37;
  auto w = Layer::weights_type::allocate(c);
  fill(w.router, 0.125, 1);
  fill(w.gate, 0.25, 2);
  fill(w.up, 0.25, 3);
  fill(w.down, 0.2, 4);
  typename Layer::tokens_view x("x", T, c.hidden_size), out("out", T, c.hidden_size);
  fill(x, 1.0, 5);

  Layer layer(c, w);
  layer.forward(x, out, T);
  std::vector<int> tokens(T);
  std::iota(tokens.begin(), tokens.end(), 0);
  Kokkos::View<int*, Mem> dev_tokens("tokens", T);
  Kokkos::deep_copy(dev_tokens, Kokkos::View<const int*, Kokkos::HostSpace>(tokens.data(), T));
  const auto ref = KokkosMoE::reference_experts<Space, Scalar>(Space(), w, x, layer.routing_ids(),
                                                               layer.routing_weights(), dev_tokens,
                                                               nullptr,
                                                               layer.quantizes_activations());
  const double err = KokkosMoE::max_row_relative_error(out, ref, tokens);
  const double tol = layer.quantizes_activations() ? KokkosMoE::quantized_activations_tolerance()
                                                   : KokkosMoE::reference_tolerance<Scalar>();
  bool ok = err <= tol;
  std::printf("install test %s: forward T=%lld, max error %.2e (tolerance %.1e)", name,
              (long long)T, err, tol);

#ifdef KOKKOSMOE_INSTALL_TEST_TRACE
  KokkosMoE::Trace trace;
  trace.model = "install-test";
  trace.num_experts = c.num_experts;
  trace.top_k = c.top_k;
  trace.num_tokens = T;
  KokkosMoE::TraceLayer tl;
  auto ids = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.routing_ids());
  auto weights = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.routing_weights());
  tl.expert_ids.assign(ids.data(), ids.data() + T * c.top_k);
  tl.weights.assign(weights.data(), weights.data() + T * c.top_k);
  trace.layers.push_back(tl);
  const std::string path = std::string("install-test-") + name + ".h5";
  KokkosMoE::write_trace(path, trace);
  KokkosMoE::TraceReadOptions options;
  options.isolate = false;
  const auto back = KokkosMoE::read_trace(path, options);
  const auto& layer0 = back.layers.at(0);
  typename Layer::ids_view rids("ids", T, c.top_k);
  typename Layer::weights_view rweights("weights", T, c.top_k);
  using HostIds = Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Kokkos::HostSpace>;
  using HostWeights = Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace>;
  Kokkos::deep_copy(rids, HostIds(layer0.expert_ids.data(), T, c.top_k));
  Kokkos::deep_copy(rweights, HostWeights(layer0.weights.data(), T, c.top_k));
  typename Layer::tokens_view replay("replay", T, c.hidden_size);
  layer.forward(x, rids, rweights, replay, T);
  const double err_replay = KokkosMoE::max_row_relative_error(replay, ref, tokens);
  ok = ok && err_replay <= tol;
  std::printf(", trace replay %.2e", err_replay);
#endif
  std::printf(", %s\n", ok ? "PASSED" : "FAILED");
  return ok;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  bool ok = true;
  {
    ok = check<float>("fp32") && ok;
    ok = check<KokkosMoE::float16>("fp16") && ok;
    ok = check<KokkosMoE::bfloat16>("bf16") && ok;
  }
  Kokkos::finalize();
  return ok ? 0 : 1;
}
