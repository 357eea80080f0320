// SPDX-License-Identifier: BSD-3-Clause
// Shapes of the MoE layers of real models, for the drivers.
#ifndef KOKKOSMOE_MODELPRESETS_HPP
#define KOKKOSMOE_MODELPRESETS_HPP

#include <cstdint>
#include <string>

namespace KokkosMoE {
namespace Driver {

struct Preset {
  const char* name;
  int experts, top_k;
  std::int64_t hidden, ffn;
};

// Shapes of the real models' MoE layers.
constexpr Preset kPresets[] = {
    {"mixtral-8x7b", 8, 2, 4096, 14336},
    {"qwen2-57b", 64, 8, 3584, 2560},  // Qwen2-57B-A14B: 8 routed of 64
    {"deepseek-v3", 256, 8, 7168, 2048},
    {"gpt-oss-20b", 32, 4, 2880, 2880},
};

inline std::string preset_names() {
  std::string names;
  for (const Preset& p : kPresets) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

// The preset called name, or nullptr.
inline const Preset* find_preset(const std::string& name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return &p;
  return nullptr;
}

}  // namespace Driver
}  // namespace KokkosMoE

#endif
