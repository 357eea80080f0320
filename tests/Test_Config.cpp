// SPDX-License-Identifier: BSD-3-Clause
#include <KokkosMoE/KokkosMoE_Config.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace {
using KokkosMoE::Config;
using KokkosMoE::RoutingMode;

Config valid() {
  Config c;
  c.num_experts = 8;
  c.top_k = 2;
  c.hidden_size = 16;
  c.ffn_size = 32;
  c.max_tokens = 4;
  return c;
}

// validate() refuses c with a message that names field.
void expect_error(const Config& c, const char* field) {
  try {
    c.validate();
    ADD_FAILURE() << "no error for " << field;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(Config, ValidConfigurationsPass) {
  EXPECT_NO_THROW(valid().validate());
  Config c = valid();
  c.routing = RoutingMode::sigmoid_group_topk;
  c.n_group = 4;
  c.topk_group = 2;
  EXPECT_NO_THROW(c.validate());
}

TEST(Config, EachInconsistencyIsNamed) {
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
}

// Sizes whose products would wrap around in 64 bits must not pass.
TEST(Config, SizesBeyondTheIndexTypesAreRefused) {
  Config c = valid();
  c.max_tokens = std::int64_t(1) << 62;  // * top_k (2) wraps to -2^63
  expect_error(c, "max_tokens");
  c = valid(), c.top_k = 4, c.max_tokens = std::int64_t(1) << 62;  // wraps to 0
  expect_error(c, "max_tokens");
  c = valid(), c.hidden_size = std::int64_t(1) << 31;
  expect_error(c, "hidden_size");
  c = valid(), c.ffn_size = std::int64_t(1) << 40;
  expect_error(c, "ffn_size");
  c = valid(), c.hidden_size = c.ffn_size = (std::int64_t(1) << 31) - 1;
  expect_error(c, "num_experts * ffn_size * hidden_size");
  c = valid(), c.num_experts = 1, c.top_k = 1, c.ffn_size = 1,
  c.hidden_size = (std::int64_t(1) << 31) - 1, c.max_tokens = (std::int64_t(1) << 31) - 1;
  expect_error(c, "max_tokens * top_k * max(hidden_size, ffn_size)");
  c = valid(), c.max_tokens = (std::int64_t(1) << 30) - 1;  // large but representable
  EXPECT_NO_THROW(c.validate());
}

TEST(Config, GroupRoutingInconsistenciesAreNamed) {
  Config c = valid();
  c.routing = RoutingMode::sigmoid_group_topk, c.n_group = 65;
  expect_error(c, "n_group");
  c = valid(), c.routing = RoutingMode::sigmoid_group_topk, c.n_group = 2, c.topk_group = 3;
  expect_error(c, "topk_group");
  c = valid(), c.routing = RoutingMode::sigmoid_group_topk, c.routed_scaling = NAN;
  expect_error(c, "routed_scaling");
  c.routed_scaling = 0;  // every output zero: a typo, not a model
  expect_error(c, "routed_scaling");
  c.routed_scaling = -2.5f;
  expect_error(c, "routed_scaling");
}
}  // namespace
