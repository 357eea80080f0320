// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// The expert-parallel layer under mpiexec -n P (P = 1..4): its outputs
// against the single-device layer on each rank's tokens (bitwise for fp32
// with batch_invariant, within the storage type's tolerance otherwise) and
// against the float64 reference; placements P does not divide, ranks with
// no tokens or no experts, experts with no tokens, all tokens to one rank;
// and errors of one rank (arguments, routing, capacity, a configuration or
// placement that differs) thrown alike on every rank, after which the
// layer still works.
//
//   Test_ExpertParallel [outputs|errors|all]
//
// Every rank counts its failed checks; the process exits 1 when any rank
// has one (so mpiexec does), 0 otherwise.
#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>
#include <KokkosMoE/KokkosMoE_Reference.hpp>

#include "TestRandom.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace KokkosMoE;
using Test::fill_uniform;
using Test::random_weights;

int g_rank = 0, g_size = 1, g_failures = 0;
std::string g_test;
// The transport of every layer the tests make: KOKKOSMOE_EP_TEST_TRANSPORT
// (mpi, the default, or nccl), so that the same tests check either.
ExpertParallelOptions::Transport g_transport = ExpertParallelOptions::Transport::mpi;

template <class Space>
constexpr bool is_cuda() {
#ifdef KOKKOS_ENABLE_CUDA
  return std::is_same<Space, Kokkos::Cuda>::value;
#else
  return false;
#endif
}

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  std::printf("rank %d: FAILED %s: %s\n", g_rank, g_test.c_str(), what.c_str());
  std::fflush(stdout);
}

// Every token draws k distinct experts among `experts`, weights in [0.05, 1).
template <class Ids, class W>
void random_routing(const Ids& ids, const W& weights, std::int64_t T, int k,
                    std::vector<int> experts, std::uint64_t seed) {
  auto hi = Kokkos::create_mirror_view(ids);
  auto hw = Kokkos::create_mirror_view(weights);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> w(0.05f, 1.0f);
  for (std::int64_t t = 0; t < T; ++t) {
    std::shuffle(experts.begin(), experts.end(), rng);
    for (int j = 0; j < k; ++j) hi(t, j) = experts[std::size_t(j)], hw(t, j) = w(rng);
  }
  Kokkos::deep_copy(ids, hi);
  Kokkos::deep_copy(weights, hw);
}

std::vector<int> all_but(int E, int skipped) {
  std::vector<int> e;
  for (int i = 0; i < E; ++i)
    if (i != skipped) e.push_back(i);
  return e;
}

// How two outputs differ over their first n rows: values whose bits differ
// and the largest row-relative difference (against b's row scale).
struct Difference {
  std::int64_t bits = 0;
  double relative = 0;
};
template <class View>
Difference difference(const View& a, const View& b, std::int64_t n) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  using T = typename View::non_const_value_type;
  Difference d;
  for (std::int64_t t = 0; t < n; ++t) {
    double diff = 0, scale = 0;
    for (std::size_t c = 0; c < ha.extent(1); ++c) {
      if (std::memcmp(&ha(t, c), &hb(t, c), sizeof(T)) != 0) ++d.bits;
      const double x = double(Impl::to_float(ha(t, c))), y = double(Impl::to_float(hb(t, c)));
      diff = std::isnan(x) ? INFINITY : std::max(diff, std::abs(x - y));
      scale = std::max(scale, std::abs(y));
    }
    d.relative = std::max(d.relative, scale > 0 ? diff / scale : diff);
  }
  return d;
}

// Each expert's result is rounded to the storage type on its rank before
// it travels back, and the combine rounds once more: twice the rounding of
// the single-device layer for 16-bit types (exact for fp32).
template <class Scalar>
double tolerance() {
  return (std::is_same<Scalar, float>::value ? 1 : 2) * reference_tolerance<Scalar>();
}

struct Shape {
  int E = 10, k = 3;
  std::int64_t H = 48, F = 40, max_tokens = 24;
  RoutingMode routing = RoutingMode::external;
  bool batch_invariant = false;
  int n_group = 1, topk_group = 1;
};

Config config_of(const Shape& s) {
  Config c;
  c.num_experts = s.E;
  c.top_k = s.k;
  c.hidden_size = s.H;
  c.ffn_size = s.F;
  c.max_tokens = s.max_tokens;
  c.routing = s.routing;
  c.batch_invariant = s.batch_invariant;
  c.n_group = s.n_group;
  c.topk_group = s.topk_group;
  c.routed_scaling = s.routing == RoutingMode::sigmoid_group_topk ? 2.5f : 1.0f;
  return c;
}

// One rank's problem: its tokens, the full weights (for the single-device
// layer) and its share, the expert-parallel layer and the single-device one.
template <class Space, class Scalar>
struct Problem {
  using ep_type = ExpertParallelLayer<Space, Scalar>;
  using layer_type = Layer<Space, Scalar>;
  using mem = typename Space::memory_space;
  Config config;
  Weights<Scalar, mem> full;
  typename layer_type::tokens_view x, out, expected;
  typename layer_type::ids_view ids;
  typename layer_type::weights_view weights;

  Problem(const Shape& s, std::uint64_t seed) : config(config_of(s)) {
    full = random_weights<Scalar, mem>(config, seed);
    const auto T = s.max_tokens;
    x = typename layer_type::tokens_view("x", T, s.H);
    out = typename layer_type::tokens_view("out", T, s.H);
    expected = typename layer_type::tokens_view("expected", T, s.H);
    ids = typename layer_type::ids_view("ids", T, s.k);
    weights = typename layer_type::weights_view("weights", T, s.k);
    fill_uniform(x, -1.0, 1.0, seed + 100 + std::uint64_t(g_rank));
    fill_uniform(out, -1.0, 1.0, seed + 200);  // stale values must be overwritten
  }

  ep_type make(const ExpertPlacement& placement, ExpertParallelOptions options = {}) const {
    // NCCL on the Cuda space; the other spaces of the build over MPI.
    if (is_cuda<Space>()) options.transport = g_transport;
    return ep_type(config, MPI_COMM_WORLD, local_expert_weights(full, placement, g_rank), placement,
                   options);
  }

  // The single-device layer on the same tokens (with ids and weights, or
  // with its own router).
  void single_device(std::int64_t n, bool routed) const {
    layer_type layer(config, full);
    if (routed) layer.forward(x, expected, n);
    else layer.forward(x, ids, weights, expected, n);
    Kokkos::fence();
  }

  double reference_error(std::int64_t n) const {
    if (n == 0) return 0;
    Kokkos::View<int*, mem> tokens("tokens", n);
    auto ht = Kokkos::create_mirror_view(tokens);
    std::vector<int> rows(static_cast<std::size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    for (std::int64_t i = 0; i < n; ++i) ht(i) = int(i);
    Kokkos::deep_copy(tokens, ht);
    auto ref = reference_experts<Space, Scalar>(Space(), full, x, ids, weights, tokens);
    return max_row_relative_error(out, ref, rows);
  }
};

// Tokens per rank: uneven, and none on rank 1 where there are several.
std::int64_t tokens_of(int rank, std::int64_t max_tokens) {
  if (g_size > 1 && rank == 1) return 0;
  return max_tokens - max_tokens / 4 * (rank % 4) - rank / 4;
}

template <class Scalar>
std::string name_of(const char* what, const Shape& s) {
  return std::string(what) + " " + ScalarTraits<Scalar>::name + " E=" + std::to_string(s.E) +
         " k=" + std::to_string(s.k) + (s.batch_invariant ? " batch-invariant" : "");
}

// Given routing: the layer against the single-device layer and float64.
template <class Space, class Scalar>
void check_given_routing(const Shape& s, const ExpertPlacement& placement,
                         const std::vector<int>& experts, const ExpertParallelOptions& options,
                         const char* what) {
  g_test = name_of<Scalar>(what, s);
  Problem<Space, Scalar> p(s, 17);
  const std::int64_t n = tokens_of(g_rank, s.max_tokens);
  random_routing(p.ids, p.weights, n, s.k, experts, 31 + std::uint64_t(g_rank));
  auto layer = p.make(placement, options);
  // Through host buffers when asked to, on host memory only then; never with NCCL.
  const bool asked = options.gpu_aware == ExpertParallelOptions::GpuAware::no;
  if (layer.transport() == ExpertParallelOptions::Transport::nccl)
    expect(!layer.staged(), "staged()");
  else if (asked ||
           Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible)
    expect(layer.staged() == asked, "staged()");
  layer.forward(p.x, p.ids, p.weights, p.out, n);
  Kokkos::fence();
  p.single_device(n, false);
  const Difference d = difference(p.out, p.expected, n);
  const bool bitwise = std::is_same<Scalar, float>::value && s.batch_invariant;
  if (bitwise)
    expect(d.bits == 0, std::to_string(d.bits) + " values differ from the single-device layer");
  expect(d.relative <= tolerance<Scalar>(),
         "against the single-device layer: " + std::to_string(d.relative));
  const double ref = p.reference_error(n);
  expect(ref <= tolerance<Scalar>(), "against float64: " + std::to_string(ref));
  // Rows sent and received balance over the ranks.
  std::int64_t rows[2] = {layer.last_times().rows_sent, layer.last_times().rows_received};
  MPI_Allreduce(MPI_IN_PLACE, rows, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  expect(rows[0] == rows[1], "rows sent and received differ over the ranks");
  expect(layer.last_times().rows_sent == n * s.k, "rows_sent is not n * k");
  // The same forward again: the same bits (run to run, any mode).
  Kokkos::deep_copy(p.expected, p.out);
  layer.forward(p.x, p.ids, p.weights, p.out, n);
  Kokkos::fence();
  expect(difference(p.out, p.expected, n).bits == 0, "a second forward gave other bits");
}

// The replicated router: the same routing and outputs as a single-device
// layer routing the same tokens.
template <class Space, class Scalar>
void check_routed(const Shape& s, const char* what) {
  g_test = name_of<Scalar>(what, s);
  Problem<Space, Scalar> p(s, 23);
  const std::int64_t n = tokens_of(g_rank, s.max_tokens);
  auto layer = p.make(ExpertPlacement::contiguous(s.E, g_size));
  layer.forward(p.x, p.out, n);
  Kokkos::fence();
  Layer<Space, Scalar> single(p.config, p.full);
  single.forward(p.x, p.expected, n);
  Kokkos::fence();
  auto ids_ep = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), layer.routing_ids());
  auto ids_1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), single.routing_ids());
  bool same_ids = true;
  for (std::int64_t t = 0; t < n; ++t)
    for (int j = 0; j < s.k; ++j) same_ids = same_ids && ids_ep(t, j) == ids_1(t, j);
  expect(same_ids, "the replicated router chose other experts than the single-device layer");
  const Difference d = difference(p.out, p.expected, n);
  if (std::is_same<Scalar, float>::value && s.batch_invariant)
    expect(d.bits == 0, std::to_string(d.bits) + " values differ from the single-device layer");
  expect(d.relative <= tolerance<Scalar>(),
         "against the single-device layer: " + std::to_string(d.relative));
  expect(layer.last_times().route >= 0 && layer.last_times().total > 0, "phase times");
}

template <class Space, class Scalar>
void outputs_for_type() {
  const ExpertPlacement blocks = ExpertPlacement::contiguous(10, g_size);
  for (bool invariant : {false, true}) {
    Shape s;
    s.batch_invariant = invariant;
    // E = 10 over P = 3, 4: uneven blocks; expert 2 gets no token.
    check_given_routing<Space, Scalar>(s, blocks, all_but(10, 2), {}, "given routing");
    for (RoutingMode mode : {RoutingMode::softmax_topk, RoutingMode::sigmoid_group_topk}) {
      Shape r = s;
      r.E = 8;
      r.k = 2;
      r.routing = mode;
      r.n_group = mode == RoutingMode::sigmoid_group_topk ? 4 : 1;
      r.topk_group = mode == RoutingMode::sigmoid_group_topk ? 2 : 1;
      check_routed<Space, Scalar>(r, mode == RoutingMode::softmax_topk
                                         ? "routed softmax_topk"
                                         : "routed sigmoid_group_topk");
    }
  }
}

template <class Space>
void outputs() {
  outputs_for_type<Space, float>();
  outputs_for_type<Space, float16>();
  outputs_for_type<Space, bfloat16>();
  outputs_for_type<Space, float8_e4m3>();  // the block scales follow their experts

  Shape s;
  s.batch_invariant = true;
  // Every token to the last rank's experts (k = its 2 experts with E = 10,
  // P = 4; 3 or more for fewer ranks): the other ranks receive nothing.
  const ExpertPlacement blocks = ExpertPlacement::contiguous(10, g_size);
  s.k = blocks.count(g_size - 1) < 3 ? blocks.count(g_size - 1) : 3;
  check_given_routing<Space, float>(s, blocks, blocks.experts_of(g_size - 1), {},
                                    "all tokens to the last rank");
  // Experts dealt round-robin, and the rows through host buffers.
  Shape r;
  r.batch_invariant = true;
  std::vector<int> owners(10);
  for (int e = 0; e < 10; ++e) owners[std::size_t(e)] = (3 * e + 1) % g_size;
  ExpertParallelOptions staged;
  staged.gpu_aware = ExpertParallelOptions::GpuAware::no;
  check_given_routing<Space, float>(r, ExpertPlacement(owners, g_size), all_but(10, 7), staged,
                                    "round-robin placement, staged");
  check_given_routing<Space, bfloat16>(r, ExpertPlacement(owners, g_size), all_but(10, 7), staged,
                                       "round-robin placement, staged");
  // Many tokens: several chunks of the exchange plan per rank.
  Shape many;
  many.E = 12, many.k = 4, many.H = 24, many.F = 16, many.max_tokens = 300;
  many.batch_invariant = true;
  check_given_routing<Space, float>(many, ExpertPlacement::contiguous(12, g_size), all_but(12, 5),
                                    {}, "many tokens");
  // Fewer experts than ranks: ranks 2 and 3 hold none (P = 3, 4).
  Shape few;
  few.E = 2, few.k = 2, few.batch_invariant = true;
  check_given_routing<Space, float>(few, ExpertPlacement::contiguous(2, g_size), all_but(2, -1), {},
                                    "ranks without experts");
  // A capacity that just holds this routing, and the other execution space.
  Shape tight;
  tight.batch_invariant = true;
  g_test = "capacity of the busiest rank";
  {
    Problem<Space, float> p(tight, 41);
    const std::int64_t n = tokens_of(g_rank, tight.max_tokens);
    random_routing(p.ids, p.weights, n, tight.k, all_but(10, -1), 43 + std::uint64_t(g_rank));
    std::int64_t most = 0;
    {
      auto probe = p.make(blocks);
      probe.forward(p.x, p.ids, p.weights, p.out, n);
      most = probe.last_times().rows_received;
      MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    }
    ExpertParallelOptions o;
    o.capacity = std::max<std::int64_t>(most, 1);
    auto layer = p.make(blocks, o);
    expect(layer.capacity() == (blocks.count(g_rank) ? o.capacity : 0), "capacity()");
    layer.forward(p.x, p.ids, p.weights, p.out, n);
    Kokkos::fence();
    p.single_device(n, false);
    expect(difference(p.out, p.expected, n).bits == 0, "bits differ with a tight capacity");
  }
}

// Runs f, which must throw E on every rank with a message containing
// `text`, the same message on every rank.
template <class E>
void expect_thrown_everywhere(const std::function<void()>& f, const std::string& text) {
  std::string message;
  bool right_type = false;
  try {
    f();
  } catch (const E& e) {
    message = e.what();
    right_type = true;
  } catch (const std::exception& e) {
    message = e.what();
  }
  expect(right_type, "expected the error type, got '" + message + "'");
  expect(message.find(text) != std::string::npos,
         "message '" + message + "' does not contain '" + text + "'");
  // The same text on every rank: compare its hash.
  const std::uint64_t h = std::hash<std::string>{}(message) >> 1;
  std::int64_t lo = std::int64_t(h), hi = std::int64_t(h);
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  expect(lo == hi, "the ranks report different messages; this rank: '" + message + "'");
}

template <class Space>
void errors() {
  using Scalar = float;
  Shape s;
  s.batch_invariant = true;
  const auto blocks = ExpertPlacement::contiguous(s.E, g_size);
  const int last = g_size - 1;
  Problem<Space, Scalar> p(s, 53);
  const std::int64_t n = 6;
  auto layer = p.make(blocks);
  auto valid_forward = [&](const char* after) {
    random_routing(p.ids, p.weights, n, s.k, all_but(s.E, -1), 59 + std::uint64_t(g_rank));
    layer.forward(p.x, p.ids, p.weights, p.out, n);
    Kokkos::fence();
    p.single_device(n, false);
    expect(difference(p.out, p.expected, n).bits == 0, std::string("forward after ") + after);
  };

  g_test = "an id out of range on the last rank";
  random_routing(p.ids, p.weights, n, s.k, all_but(s.E, -1), 61 + std::uint64_t(g_rank));
  if (g_rank == last) Kokkos::deep_copy(Kokkos::subview(p.ids, 2, 1), s.E);
  expect_thrown_everywhere<std::invalid_argument>(
      [&] { layer.forward(p.x, p.ids, p.weights, p.out, n); },
      "rank " + std::to_string(last) + ": routing of token 2 is invalid");
  valid_forward("an invalid id");

  g_test = "a repeated id and a NaN weight on rank 0";
  random_routing(p.ids, p.weights, n, s.k, all_but(s.E, -1), 67 + std::uint64_t(g_rank));
  if (g_rank == 0) {
    auto row = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.ids);
    Kokkos::deep_copy(Kokkos::subview(p.ids, 4, 1), row(4, 0));
    Kokkos::deep_copy(Kokkos::subview(p.weights, 5, 0), std::nanf(""));
  }
  expect_thrown_everywhere<std::invalid_argument>(
      [&] { layer.forward(p.x, p.ids, p.weights, p.out, n); },
      "rank 0: routing of token 4 is invalid");

  g_test = "too many tokens on the last rank";
  random_routing(p.ids, p.weights, n, s.k, all_but(s.E, -1), 71 + std::uint64_t(g_rank));
  expect_thrown_everywhere<std::invalid_argument>(
      [&] { layer.forward(p.x, p.ids, p.weights, p.out, g_rank == last ? s.max_tokens + 1 : n); },
      "rank " + std::to_string(last) + ": num_tokens = 25 is outside [0, max_tokens = 24]");
  valid_forward("too many tokens");

  g_test = "the NCCL transport where it cannot run";
  if (!nccl_available() || !is_cuda<Space>()) {
    ExpertParallelOptions o;
    o.transport = ExpertParallelOptions::Transport::nccl;
    expect_thrown_everywhere<std::invalid_argument>(
        [&] {
          ExpertParallelLayer<Space, Scalar>(p.config, MPI_COMM_WORLD,
                                             local_expert_weights(p.full, blocks, g_rank), blocks,
                                             o);
        },
        nccl_available() ? "the NCCL transport needs the Cuda execution space"
                         : "the NCCL transport is not in this build");
  }

  g_test = "capacity exceeded on rank 0";
  {
    // Every rank sends 8 tokens to rank 0's first expert.
    Shape one = s;
    one.k = 1;
    Problem<Space, Scalar> q(one, 73);
    ExpertParallelOptions o1;
    o1.capacity = 4;
    auto tight = q.make(blocks, o1);
    random_routing(q.ids, q.weights, 8, 1, {0}, 79);
    expect_thrown_everywhere<std::runtime_error>(
        [&] { tight.forward(q.x, q.ids, q.weights, q.out, 8); },
        "rank 0 would receive " + std::to_string(8 * g_size) +
            " rows (token assignments to its experts) in this forward, more than its capacity of "
            "4");
    // One token each fits (P <= 4) and the layer carries on.
    tight.forward(q.x, q.ids, q.weights, q.out, 1);
    Kokkos::fence();
    q.single_device(1, false);
    expect(difference(q.out, q.expected, 1).bits == 0, "forward after a capacity error");
  }

  g_test = "a routed forward of an external layer";
  expect_thrown_everywhere<std::invalid_argument>([&] { layer.forward(p.x, p.out, n); },
                                                  "needs a routed mode");

  if (g_size > 1) {
    g_test = "hidden_size differs on the last rank";
    expect_thrown_everywhere<std::invalid_argument>(
        [&] {
          Shape t = s;
          if (g_rank == last) t.H = 40;
          Problem<Space, Scalar> r(t, 83);
          r.make(blocks);
        },
        "hidden_size differs between ranks (40 on some, 48 on others)");

    g_test = "the storage type differs on rank 0";
    expect_thrown_everywhere<std::invalid_argument>(
        [&] {
          if (g_rank == 0) {
            Problem<Space, bfloat16> r(s, 89);
            r.make(blocks);
          } else {
            Problem<Space, float> r(s, 89);
            r.make(blocks);
          }
        },
        "the storage type (1 fp32, 2 fp16, 3 bf16, 4 fp8) differs between ranks (1 on some, 3 on "
        "others)");

    g_test = "the placement differs on the last rank";
    expect_thrown_everywhere<std::invalid_argument>(
        [&] {
          std::vector<int> owners = blocks.owners();
          if (g_rank == last) std::reverse(owners.begin(), owners.end());
          p.make(ExpertPlacement(owners, g_size));
        },
        "the expert placement differs between ranks");
  }

  g_test = "the last rank's weights hold other experts";
  expect_thrown_everywhere<std::invalid_argument>(
      [&] {
        auto w = local_expert_weights(p.full, blocks, g_rank);
        if (g_rank == last) w.gate = decltype(w.gate)("gate", blocks.count(last) + 1, s.F, s.H);
        ExpertParallelLayer<Space, Scalar> l(p.config, MPI_COMM_WORLD, w, blocks);
      },
      "rank " + std::to_string(last) + ": weights.gate (this rank's experts) has extent");

  g_test = "the placement is for other ranks";
  expect_thrown_everywhere<std::invalid_argument>(
      [&] { p.make(ExpertPlacement::contiguous(s.E, g_size + 1)); },
      "rank 0: the placement is for " + std::to_string(g_size + 1) + " ranks");

  g_test = "a local layer's shape error on rank 0";
  expect_thrown_everywhere<std::invalid_argument>(
      [&] {
        auto w = local_expert_weights(p.full, blocks, g_rank);
        if (g_rank == 0) w.down = decltype(w.down)("down", blocks.count(0), s.H, s.F + 1);
        ExpertParallelLayer<Space, Scalar> l(p.config, MPI_COMM_WORLD, w, blocks);
      },
      "rank 0: KokkosMoE::Layer: weights.down has extent");

  valid_forward("the construction errors");
}

void placement() {
  g_test = "placement";
  const auto a = ExpertPlacement::contiguous(10, 4);
  expect(a.count(0) == 3 && a.count(1) == 3 && a.count(2) == 2 && a.count(3) == 2,
         "contiguous(10, 4) counts");
  expect(a.owner(5) == 1 && a.owner(6) == 2 && a.local_index(6) == 0 && a.local_index(5) == 2,
         "contiguous(10, 4) owners");
  expect(a.experts_of(3) == std::vector<int>({8, 9}), "experts_of");
  const auto b = ExpertPlacement::contiguous(3, 5);
  expect(b.count(2) == 1 && b.count(3) == 0 && b.count(4) == 0, "contiguous(3, 5)");
  const ExpertPlacement c({1, 0, 1, 1}, 2);
  expect(c.local_index(2) == 1 && c.local_index(1) == 0 && c.count(1) == 3, "given owners");
  expect(c.fingerprint() != ExpertPlacement({1, 1, 0, 1}, 2).fingerprint(), "fingerprint");
  auto throws = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::invalid_argument&) {
      return true;
    }
    return false;
  };
  expect(throws([] { ExpertPlacement({0, 2}, 2); }), "an owner out of range is refused");
  expect(throws([] { ExpertPlacement({0, -1}, 2); }), "a negative owner is refused");
  expect(throws([] { ExpertPlacement({}, 2); }), "no experts is refused");
  expect(throws([] { ExpertPlacement::contiguous(4, 0); }), "no ranks is refused");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  Kokkos::initialize(argc, argv);
  const std::string which = argc > 1 ? argv[1] : "all";
  if (const char* t = std::getenv("KOKKOSMOE_EP_TEST_TRANSPORT")) {
    if (std::strcmp(t, "nccl") == 0) g_transport = ExpertParallelOptions::Transport::nccl;
    else if (std::strcmp(t, "mpi") != 0) {
      if (g_rank == 0) std::printf("KOKKOSMOE_EP_TEST_TRANSPORT is '%s', not mpi or nccl\n", t);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  try {
    if (which == "outputs" || which == "all") {
      placement();
      outputs<Kokkos::DefaultExecutionSpace>();
#ifdef KOKKOS_ENABLE_SERIAL
      // The other host space, where the default is another one.
      if (!std::is_same<Kokkos::DefaultExecutionSpace, Kokkos::Serial>::value) {
        Shape s;
        s.batch_invariant = true;
        const auto blocks = ExpertPlacement::contiguous(s.E, g_size);
        check_given_routing<Kokkos::Serial, float>(s, blocks, all_but(10, 2), {}, "Serial");
        check_given_routing<Kokkos::Serial, float16>(s, blocks, all_but(10, 2), {}, "Serial");
      }
#endif
    }
    if (which == "errors" || which == "all") errors<Kokkos::DefaultExecutionSpace>();
  } catch (const std::exception& e) {
    // Unexpected: the other ranks may be waiting in a collective.
    std::printf("rank %d: FAILED %s: unexpected exception: %s\n", g_rank, g_test.c_str(), e.what());
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int failures = g_failures;
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("expert parallel (%s) on %d ranks: %s\n", which.c_str(), g_size,
                failures ? "FAILED" : "PASSED");
  Kokkos::finalize();
  MPI_Finalize();
  return failures ? 1 : 0;
}
