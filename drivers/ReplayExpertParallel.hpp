// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// kokkos-moe-replay --ep: the replay on the ranks of MPI_COMM_WORLD through
// the expert-parallel layer (KokkosMoE::ep, experts in contiguous blocks).
// Each batch is split across the ranks, a contiguous slice of its tokens
// each. Every rank draws the full weights from the seed, as a one-device
// replay does (the same values), and keeps its experts' share; the hidden
// states of a batch are drawn whole and sliced, so a token has the same
// input whatever the number of ranks. Rank 0 reports per-rank and
// aggregate phase times, bytes and bandwidth, the rows each rank received,
// and with --check each rank's tokens against a single-device Layer (all
// experts) and a sample against the float64 reference.
//
// Built only with KokkosMoE_ENABLE_MPI (KOKKOSMOE_REPLAY_EXPERT_PARALLEL).
#ifndef KOKKOSMOE_DRIVER_REPLAYEXPERTPARALLEL_HPP
#define KOKKOSMOE_DRIVER_REPLAYEXPERTPARALLEL_HPP

#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>
#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include "ReplayReport.hpp"

#include <cstdint>
#include <string>

namespace KokkosMoE {
namespace Driver {

// What the replay needs of the command line.
struct ExpertParallelRun {
  std::string json;
  std::int64_t tokens = 0, batch = 0;
  int repeat = 1, warmup = 0;
  std::uint64_t seed = 1;
  bool check = false, batch_invariant = false;
  std::int64_t capacity = 0;
  ExpertParallelOptions::GpuAware gpu_aware = ExpertParallelOptions::GpuAware::detect;
  ExpertParallelOptions::Transport transport = ExpertParallelOptions::Transport::mpi;
};

// The replay on every rank; rank 0 reports (`report`: its heading, the
// replayed shape among it). Exit code 1 when --check fails (on every rank
// alike). Scalar: float, float16, bfloat16, float8_e4m3.
template <class Scalar>
int replay_expert_parallel(const ExpertParallelRun& run, const Trace& trace, Report report);

}  // namespace Driver
}  // namespace KokkosMoE

#endif
