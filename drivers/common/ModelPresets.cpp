// SPDX-License-Identifier: BSD-3-Clause
#include "ModelPresets.hpp"

namespace KokkosMoE {
namespace Driver {

const std::vector<Preset>& model_presets() {
  static const std::vector<Preset> presets = {
      {"mixtral-8x7b", 8, 2, 4096, 14336},
      {"qwen2-57b", 64, 8, 3584, 2560},  // Qwen2-57B-A14B: 8 routed of 64
      {"deepseek-v3", 256, 8, 7168, 2048},
      {"gpt-oss-20b", 32, 4, 2880, 2880},
  };
  return presets;
}

std::string preset_names() {
  std::string names;
  for (const Preset& p : model_presets())
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

const Preset* find_preset(const std::string& name) {
  for (const Preset& p : model_presets())
    if (name == p.name) return &p;
  return nullptr;
}

}  // namespace Driver
}  // namespace KokkosMoE
