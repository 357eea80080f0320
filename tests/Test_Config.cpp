#include <KokkosMoE/KokkosMoE_Config.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace {
using KokkosMoE::Config;
using KokkosMoE::RoutingMode;

Config valid() {
  Config c;
  c.num_experts = 8;
  c.top_k       = 2;
  c.hidden_size = 16;
  c.ffn_size    = 32;
  c.max_tokens  = 4;
  return c;
}

TEST(Config, ValidConfigurationsPass) {
  EXPECT_NO_THROW(valid().validate());
  Config c     = valid();
  c.routing    = RoutingMode::sigmoid_group_topk;
  c.n_group    = 4;
  c.topk_group = 2;
  EXPECT_NO_THROW(c.validate());
}

TEST(Config, EachInconsistencyIsNamed) {
  auto expect_error = [](Config c, const char* field) {
    try {
      c.validate();
      ADD_FAILURE() << "no error for " << field;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  Config c = valid();
  c.num_experts = 0;
  expect_error(c, "num_experts");
  c = valid(), c.top_k = 0;
  expect_error(c, "top_k");
  c = valid(), c.top_k = 9;
  expect_error(c, "top_k");
  c = valid(), c.hidden_size = 0;
  expect_error(c, "hidden_size");
  c = valid(), c.ffn_size = -3;
  expect_error(c, "ffn_size");
  c = valid(), c.max_tokens = -1;
  expect_error(c, "max_tokens");
  c = valid(), c.routing = RoutingMode::sigmoid_group_topk, c.n_group = 65;
  expect_error(c, "n_group");
  c = valid(), c.routing = RoutingMode::sigmoid_group_topk, c.n_group = 2, c.topk_group = 3;
  expect_error(c, "topk_group");
  c = valid(), c.routing = RoutingMode::sigmoid_group_topk, c.routed_scaling = NAN;
  expect_error(c, "routed_scaling");
}
}  // namespace
