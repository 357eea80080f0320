// SPDX-License-Identifier: BSD-3-Clause
// The real traces in ../shared/traces (when that directory exists) must read
// and validate, and look like what FORMAT.md says they are.
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace {

using namespace KokkosMoE;

void check_shared_trace(const std::string& name, int E, int k, std::int64_t T, std::size_t L) {
#ifndef KOKKOSMOE_SHARED_TRACES_DIR
  GTEST_SKIP() << "KOKKOSMOE_SHARED_TRACES_DIR not defined";
#else
  const std::filesystem::path path = std::filesystem::path(KOKKOSMOE_SHARED_TRACES_DIR) / name;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent";
  const Trace t = read_trace(path.string());
  EXPECT_EQ(t.num_experts, E);
  EXPECT_EQ(t.top_k, k);
  EXPECT_EQ(t.num_tokens, T);
  EXPECT_EQ(t.layers.size(), L);
  for (const TraceLayer& l : t.layers) EXPECT_GE(expert_load_stats(t, l).busiest_over_mean, 1.0);

  TraceReadOptions opt;  // a partial read of the same file
  opt.layers = {t.layers.back().index};
  opt.max_tokens = 100;
  const Trace part = read_trace(path.string(), opt);
  ASSERT_EQ(part.layers.size(), 1u);
  EXPECT_EQ(part.num_tokens, 100);
  EXPECT_TRUE(std::equal(part.layers[0].expert_ids.begin(), part.layers[0].expert_ids.end(),
                         t.layers.back().expert_ids.begin()));
#endif
}

TEST(TraceShared, GptOss20bDecode) {
  check_shared_trace("gpt-oss-20b-decode.h5", 32, 4, 22140, 24);
}

TEST(TraceShared, DeepseekV3Decode) {
  check_shared_trace("deepseek-v3-decode-sampled.h5", 256, 8, 512, 58);
}

TEST(TraceShared, DeepseekV3Prefill) {
  check_shared_trace("deepseek-v3-prefill4096-sampled.h5", 256, 8, 4096, 58);
}

}  // namespace
