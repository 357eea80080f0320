// SPDX-License-Identifier: BSD-3-Clause
// What a forward guarantees about its bits (Config::batch_invariant): the
// same inputs give the same bits run after run in either mode, and in a
// batch-invariant layer a token's output does not depend on its batch.
#include "TestUtils.hpp"

#include <KokkosMoE/KokkosMoE_WorkGraph.hpp>

#include <cstring>

#define KMOE_CAT_(a, b) a##b
#define KMOE_CAT(a, b) KMOE_CAT_(a, b)
#define DETERMINISM_SUITE KMOE_CAT(Determinism_, TEST_CATEGORY)

namespace {
using namespace KokkosMoE;
using namespace KokkosMoE::Test;
using Space = TEST_EXECSPACE;

template <class Scalar>
class DETERMINISM_SUITE : public ::testing::Test {};
TYPED_TEST_SUITE(DETERMINISM_SUITE, LayerTypes);

struct Shape {
  const char* name;
  int E, k;
  std::int64_t H, F, T;
  int experts_used;
};

// One shape per tile shape and K split the default mode chooses: few rows
// per expert (small tiles, K split over H or F), some (medium), many (large,
// from 512 rows per expert on the host), with sizes off the tile grid.
const Shape shapes[] = {
    {"decode_split_f", 4, 2, 40, 1700, 3, 4},   {"decode_split_h", 4, 2, 1700, 40, 3, 4},
    {"medium", 8, 2, 72, 200, 300, 6},          {"large", 2, 1, 40, 72, 1100, 2},
    {"all_on_one_expert", 8, 1, 33, 50, 90, 1},
};

// The bytes of the first rows of a [T, H] view, on the host.
template <class View>
std::vector<unsigned char> row_bytes(const View& v, std::int64_t first, std::int64_t rows) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  const std::size_t width = host.extent(1) * sizeof(typename View::value_type);
  std::vector<unsigned char> bytes(rows * width);
  if (rows > 0) std::memcpy(bytes.data(), &host(first, 0), bytes.size());
  return bytes;
}

// Values (not bits) that differ between two byte images of Scalar rows.
template <class Scalar>
std::int64_t differing_values(const std::vector<unsigned char>& a,
                              const std::vector<unsigned char>& b) {
  std::int64_t n = 0;
  for (std::size_t i = 0; i + sizeof(Scalar) <= a.size(); i += sizeof(Scalar))
    n += std::memcmp(&a[i], &b[i], sizeof(Scalar)) != 0;
  return n;
}

template <class Scalar>
Problem<Space, Scalar> problem_for(const Shape& s, RoutingMode mode, bool batch_invariant) {
  Problem<Space, Scalar> p(s.E, s.k, s.H, s.F, s.T, mode);
  p.config.batch_invariant = batch_invariant;
  if (mode == RoutingMode::external)
    p.set_routing(random_routing(s.T, s.k, first_experts(s.experts_used), 5));
  return p;
}

template <class Scalar>
void forward(Layer<Space, Scalar>& layer, Problem<Space, Scalar>& p, std::int64_t T) {
  if (p.config.routing == RoutingMode::external)
    layer.forward(p.x, p.ids, p.routing_weights, p.out, T);
  else layer.forward(p.x, p.out, T);
}

// The largest row-relative error against the float64 reference, for the
// routing the forward used.
template <class Scalar>
double error(const Layer<Space, Scalar>& layer, const Problem<Space, Scalar>& p, std::int64_t T) {
  if (p.config.routing == RoutingMode::external) return p.error(T);
  return p.error(layer.routing_ids(), layer.routing_weights(), T);
}

// Run to run: the same layer twice, and a second layer on the same weights,
// give the same bits, in both modes, with given routing and with the router.
TYPED_TEST(DETERMINISM_SUITE, RunToRunIsBitwise) {
  using Scalar = TypeParam;
  for (bool invariant : {false, true}) {
    for (RoutingMode mode : {RoutingMode::external, RoutingMode::softmax_topk}) {
      for (const Shape& s : shapes) {
        SCOPED_TRACE(std::string(s.name) + (invariant ? ", batch-invariant" : ", default") + ", " +
                     to_string(mode));
        auto p = problem_for<Scalar>(s, mode, invariant);
        Layer<Space, Scalar> layer(p.config, p.weights);
        p.ran_on(layer);
        forward(layer, p, s.T);
        const auto first = row_bytes(p.out, 0, s.T);
        EXPECT_LT(error(layer, p, s.T), p.tolerance());
        for (int run = 0; run < 3; ++run) {
          Kokkos::deep_copy(p.out, token_type_t<Scalar>(0.5f));
          forward(layer, p, s.T);
          EXPECT_EQ(differing_values<token_type_t<Scalar>>(first, row_bytes(p.out, 0, s.T)), 0)
              << "run " << run;
        }
        Layer<Space, Scalar> other(p.config, p.weights);
        Kokkos::deep_copy(p.out, token_type_t<Scalar>(0.5f));
        forward(other, p, s.T);
        EXPECT_EQ(differing_values<token_type_t<Scalar>>(first, row_bytes(p.out, 0, s.T)), 0)
            << "other layer";
      }
    }
  }
}

// Recorded and replayed (a CUDA graph on CUDA), a forward gives the direct
// forward's bits, replay after replay, at every shape above and at two whose
// rows tensor copies of e4m3 codes can read (decode split over F; large
// tiles): a recording keeps every kernel's order and inputs.
TYPED_TEST(DETERMINISM_SUITE, RecordedForwardIsBitwise) {
  using Scalar = TypeParam;
  std::vector<Shape> recorded_shapes(std::begin(shapes), std::end(shapes));
  recorded_shapes.push_back({"decode_aligned", 8, 2, 512, 1536, 8, 8});
  recorded_shapes.push_back({"large_aligned", 4, 2, 256, 640, 600, 4});
  for (const Shape& s : recorded_shapes) {
    SCOPED_TRACE(s.name);
    auto p = problem_for<Scalar>(s, RoutingMode::external, false);
    const Space exec = WorkGraph<Space>::capture_instance();
    Layer<Space, Scalar> layer(p.config, p.weights, exec);
    p.ran_on(layer);
    forward(layer, p, s.T);
    Kokkos::fence();
    const auto direct = row_bytes(p.out, 0, s.T);
    EXPECT_LT(p.error(s.T), p.tolerance());
    const WorkGraph<Space> graph(exec, [&] { forward(layer, p, s.T); });
    for (int replay = 0; replay < 3; ++replay) {
      Kokkos::deep_copy(p.out, token_type_t<Scalar>(0.5f));
      Kokkos::fence();
      graph.launch();
      Kokkos::fence();
      EXPECT_EQ(differing_values<token_type_t<Scalar>>(direct, row_bytes(p.out, 0, s.T)), 0)
          << "replay " << replay;
    }
  }
}

// A batch made of some of a problem's tokens, in the given order: its
// hidden states and (external mode) routing rows.
template <class Scalar>
struct SubBatch {
  Problem<Space, Scalar> p;
  SubBatch(const Problem<Space, Scalar>& whole, const std::vector<std::int64_t>& tokens)
      : p(whole.config.num_experts, whole.config.top_k, whole.config.hidden_size,
          whole.config.ffn_size, std::int64_t(tokens.size()), whole.config.routing) {
    p.config = whole.config;
    p.weights = whole.weights;
    p.config.max_tokens = std::int64_t(tokens.size());
    auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.x);
    auto ids = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.ids);
    auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.routing_weights);
    auto sx = Kokkos::create_mirror_view(p.x);
    auto sid = Kokkos::create_mirror_view(p.ids);
    auto sw = Kokkos::create_mirror_view(p.routing_weights);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      for (std::size_t h = 0; h < x.extent(1); ++h) sx(i, h) = x(tokens[i], h);
      for (std::size_t j = 0; j < ids.extent(1); ++j) {
        sid(i, j) = ids(tokens[i], j);
        sw(i, j) = w(tokens[i], j);
      }
    }
    Kokkos::deep_copy(p.x, sx);
    Kokkos::deep_copy(p.ids, sid);
    Kokkos::deep_copy(p.routing_weights, sw);
  }
};

// Values of the sub-batch's rows that differ from the same tokens' rows in
// the whole batch's output.
template <class Scalar>
std::int64_t differing_from_whole(const Problem<Space, Scalar>& whole,
                                  const std::vector<unsigned char>& whole_out,
                                  const std::vector<std::int64_t>& tokens) {
  SubBatch<Scalar> sub(whole, tokens);
  Layer<Space, Scalar> layer(sub.p.config, sub.p.weights);
  sub.p.ran_on(layer);
  forward(layer, sub.p, std::int64_t(tokens.size()));
  const auto got = row_bytes(sub.p.out, 0, std::int64_t(tokens.size()));
  const std::size_t width = std::size_t(whole.config.hidden_size) * sizeof(token_type_t<Scalar>);
  std::int64_t n = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    n += differing_values<token_type_t<Scalar>>(
        std::vector<unsigned char>(whole_out.begin() + tokens[i] * width,
                                   whole_out.begin() + (tokens[i] + 1) * width),
        std::vector<unsigned char>(got.begin() + i * width, got.begin() + (i + 1) * width));
  return n;
}

// The sub-batches a token may find itself in: alone, with a few others,
// among many in another order, in a batch of another size.
std::vector<std::vector<std::int64_t>> sub_batches(std::int64_t T) {
  std::vector<std::vector<std::int64_t>> out = {{0}, {T - 1}, {T / 2}};
  if (T >= 3) out.push_back({2, 0, 1});
  std::vector<std::int64_t> reversed(T);
  for (std::int64_t t = 0; t < T; ++t) reversed[t] = T - 1 - t;
  out.push_back(reversed);
  std::vector<std::int64_t> every_third;
  for (std::int64_t t = 1; t < T; t += 3) every_third.push_back(t);
  out.push_back(every_third);
  return out;
}

// A batch-invariant layer gives each token the bits it has in any other
// batch, with given routing and with the router (each sub-batch routes its
// own tokens).
TYPED_TEST(DETERMINISM_SUITE, BatchInvariantTokensDoNotDependOnTheirBatch) {
  using Scalar = TypeParam;
  for (RoutingMode mode : {RoutingMode::external, RoutingMode::softmax_topk}) {
    for (const Shape& s : shapes) {
      SCOPED_TRACE(std::string(s.name) + ", " + to_string(mode));
      auto whole = problem_for<Scalar>(s, mode, true);
      Layer<Space, Scalar> layer(whole.config, whole.weights);
      whole.ran_on(layer);
      forward(layer, whole, s.T);
      EXPECT_LT(error(layer, whole, s.T), whole.tolerance());
      const auto whole_out = row_bytes(whole.out, 0, s.T);
      for (const auto& tokens : sub_batches(s.T))
        EXPECT_EQ(differing_from_whole<Scalar>(whole, whole_out, tokens), 0)
            << tokens.size() << " tokens from " << tokens.front();
    }
  }
}

// The routing a batch-invariant layer computes is the same for a token alone
// as in its batch (ids and weights, bitwise).
TEST(DETERMINISM_SUITE, BatchInvariantRoutingDoesNotDependOnTheBatch) {
  for (RoutingMode mode : {RoutingMode::softmax_topk, RoutingMode::sigmoid_group_topk}) {
    SCOPED_TRACE(to_string(mode));
    Problem<Space, float> whole(16, 4, 300, 24, 70, mode);
    whole.config.n_group = 4;
    whole.config.topk_group = 2;
    whole.config.batch_invariant = true;
    Layer<Space, float> layer(whole.config, whole.weights);
    layer.route(whole.x, 70);
    const auto ids = row_bytes(layer.routing_ids(), 0, 70);
    const auto w = row_bytes(layer.routing_weights(), 0, 70);
    for (std::int64_t t : {0, 33, 69}) {
      SubBatch<float> alone(whole, {t});
      Layer<Space, float> single(alone.p.config, alone.p.weights);
      single.route(alone.p.x, 1);
      const std::size_t id_row = 4 * sizeof(std::int32_t), w_row = 4 * sizeof(float);
      EXPECT_EQ(row_bytes(single.routing_ids(), 0, 1),
                std::vector<unsigned char>(ids.begin() + t * id_row,
                                           ids.begin() + (t + 1) * id_row))
          << "token " << t;
      EXPECT_EQ(row_bytes(single.routing_weights(), 0, 1),
                std::vector<unsigned char>(w.begin() + t * w_row, w.begin() + (t + 1) * w_row))
          << "token " << t;
    }
  }
}

}  // namespace
