// SPDX-License-Identifier: BSD-3-Clause
// The expert MLP kernels: one team per (tile of rows of one expert, block of
// output columns), K swept through scratch tiles by the backend fragment
// (KokkosMoE_Fragment.hpp), which they never name. One concept a file:
//   KokkosMoE_ExpertMLP_Schedule.hpp    the tile schedule: work items, split-K, the launch
//   KokkosMoE_ExpertMLP_Operands.hpp    operand tiles loaded into scratch
//   KokkosMoE_ExpertMLP_TensorMaps.hpp  tensor maps for fragments with bulk copies
//   KokkosMoE_ExpertMLP_MainLoop.hpp    ExpertTileKernel: the K main loop over those
//   KokkosMoE_ExpertMLP_GateUp.hpp      gate/up with SwiGLU, activation
//   KokkosMoE_GatherRows.hpp            x's rows (or codes) gathered tile-major
//   KokkosMoE_ExpertMLP_DownCombine.hpp down and the weighted combine
//   KokkosMoE_ExpertMLP_E4m3.hpp        both with e4m3 operands (fragments that multiply codes)
//   KokkosMoE_ActivationGroups.hpp      activations quantised for those
#ifndef KOKKOSMOE_EXPERTMLP_IMPL_HPP
#define KOKKOSMOE_EXPERTMLP_IMPL_HPP

#include "KokkosMoE_ActivationGroups.hpp"
#include "KokkosMoE_ExpertMLP_DownCombine.hpp"
#include "KokkosMoE_ExpertMLP_E4m3.hpp"
#include "KokkosMoE_ExpertMLP_GateUp.hpp"
#include "KokkosMoE_ExpertMLP_TensorMaps.hpp"
#include "KokkosMoE_GatherRows.hpp"

#endif
