// SPDX-License-Identifier: BSD-3-Clause
#include <KokkosMoE/KokkosMoE_HostTuning.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {
using KokkosMoE::HostTuning;
using KokkosMoE::HostWeightPrefetch;
using KokkosMoE::Impl::choose_host_tuning;

void expect_tuning(const HostTuning& t, HostWeightPrefetch prefetch, int depth) {
  EXPECT_EQ(t.decode_prefetch, prefetch);
  EXPECT_EQ(t.decode_depth, depth);
}

TEST(HostTuning, UnsetChoosesByCpu) {
  const auto nta = HostWeightPrefetch::non_temporal, l2 = HostWeightPrefetch::l2;
  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    expect_tuning(choose_host_tuning(unset, unset, true, 0x1a), nta, 1024);  // Zen 5
    expect_tuning(choose_host_tuning(unset, unset, true, 0x1b), nta, 1024);
    expect_tuning(choose_host_tuning(unset, unset, true, 0x19), l2, 4096);  // Zen 3, 4
    expect_tuning(choose_host_tuning(unset, unset, true, 0x17), l2, 4096);  // Zen 1, 2
    expect_tuning(choose_host_tuning(unset, unset, false, 6), l2, 4096);    // Intel
    expect_tuning(choose_host_tuning(unset, unset, false, 0), l2, 4096);    // not x86
  }
}

TEST(HostTuning, SettingsOverrideTheCpu) {
  for (bool amd : {false, true})
    for (unsigned family : {0u, 6u, 0x19u, 0x1au}) {
      EXPECT_EQ(choose_host_tuning("l2", nullptr, amd, family).decode_prefetch,
                HostWeightPrefetch::l2);
      EXPECT_EQ(choose_host_tuning("nta", nullptr, amd, family).decode_prefetch,
                HostWeightPrefetch::non_temporal);
      for (int depth : {512, 1024, 2048, 4096})
        EXPECT_EQ(
            choose_host_tuning(nullptr, std::to_string(depth).c_str(), amd, family).decode_depth,
            depth);
    }
  // Each variable sets only its own field.
  expect_tuning(choose_host_tuning("l2", nullptr, true, 0x1a), HostWeightPrefetch::l2, 1024);
  expect_tuning(choose_host_tuning(nullptr, "2048", true, 0x1a), HostWeightPrefetch::non_temporal,
                2048);
}

// choose_host_tuning refuses a value with a message naming the variable and
// the value.
void expect_refused(const char* prefetch, const char* depth, const char* variable,
                    const char* value) {
  try {
    choose_host_tuning(prefetch, depth, true, 0x1a);
    ADD_FAILURE() << "no error for " << variable << "='" << value << "'";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(variable), std::string::npos) << what;
    EXPECT_NE(what.find(std::string("'") + value + "'"), std::string::npos) << what;
  }
}

TEST(HostTuning, OtherSettingsAreRefused) {
  for (const char* bad : {"L2", "NTA", "t1", "l2 ", "none", "0"})
    expect_refused(bad, nullptr, "KOKKOSMOE_HOST_DECODE_PREFETCH", bad);
  for (const char* bad : {"0", "256", "1000", "8192", "1024 ", "01024", "-1024", "x"})
    expect_refused(nullptr, bad, "KOKKOSMOE_HOST_DECODE_DEPTH", bad);
}

TEST(HostTuning, NamesAndProcessChoice) {
  EXPECT_EQ(std::string(to_string(HostWeightPrefetch::l2)), "l2");
  EXPECT_EQ(std::string(to_string(HostWeightPrefetch::non_temporal)), "nta");
  // Chosen once: the same tuning, the same object, on every call.
  EXPECT_EQ(&KokkosMoE::host_tuning(), &KokkosMoE::host_tuning());
  const int depth = KokkosMoE::host_tuning().decode_depth;
  EXPECT_TRUE(depth == 512 || depth == 1024 || depth == 2048 || depth == 4096) << depth;
}
}  // namespace
