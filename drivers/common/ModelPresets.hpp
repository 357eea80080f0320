// SPDX-License-Identifier: BSD-3-Clause
// Shapes of the MoE layers of real models, and the shape a driver runs.
#ifndef KOKKOSMOE_DRIVER_MODELPRESETS_HPP
#define KOKKOSMOE_DRIVER_MODELPRESETS_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Driver {

struct Preset {
  const char* name;
  int experts, top_k;
  std::int64_t hidden, ffn;
};

// The shape a driver runs: a preset's, a trace's or the options', with H and
// F divided by `reduce` where the full model is too large for the backend.
struct Shape {
  int experts = 0, top_k = 0;
  std::int64_t hidden = 0, ffn = 0;
  std::int64_t reduce = 1;  // H and F were divided by this
};

// Every preset.
const std::vector<Preset>& model_presets();

// "mixtral-8x7b, qwen2-57b, ...": the preset names, for messages.
std::string preset_names();

// The preset called name, or nullptr.
const Preset* find_preset(const std::string& name);

}  // namespace Driver
}  // namespace KokkosMoE

#endif
