// SPDX-License-Identifier: BSD-3-Clause
// What kokkos-moe-replay measures and how it reports it: the bytes and flops
// each stage must move and do, per-stage medians, the checks, and with --ep
// each rank's phases and exchanges; as text and as JSON.
#ifndef KOKKOSMOE_DRIVER_REPLAYREPORT_HPP
#define KOKKOSMOE_DRIVER_REPLAYREPORT_HPP

#include "ModelPresets.hpp"

#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Driver {

double median(std::vector<double> v);

// "total" enqueues the forward's kernels one by one; "graph" replays the
// same forward recorded as one graph (a CUDA graph on CUDA: no per-kernel
// launch cost, as a serving engine would run it).
enum Stage {
  dispatch_stage,
  gate_up_stage,
  down_combine_stage,
  total_stage,
  graph_stage,
  num_stages
};

// Bytes each stage must move at least (the weights of the experts the batch
// touches, once; activations once) and the flops it must do, per forward.
struct Traffic {
  double bytes[num_stages] = {};
  double flops[num_stages] = {};
};

// Bytes per value of a storage type's weights (e4m3: a byte and its share
// of its block's float scale) and of its tokens (hidden states, h, out).
template <class Scalar>
constexpr double weight_value_bytes() {
  return is_block_scaled<Scalar>::value ? 1.0 + 4.0 / (double(weight_block) * weight_block)
                                        : double(sizeof(Scalar));
}
template <class Scalar>
constexpr double token_value_bytes() {
  return double(sizeof(token_type_t<Scalar>));
}

// eps_w of a storage type: e4m3 weights may be multiplied as bf16 (the
// CUDA fragments do; the host ones multiply them in float).
template <class Scalar>
constexpr double weight_rounding() {
  return is_block_scaled<Scalar>::value ? ScalarTraits<bfloat16>::epsilon : 0.0;
}

// The traffic of a forward of n tokens routed by ids (n x top_k, host
// memory; ids outside [0, E) count for nothing).
Traffic count_traffic(const Shape& s, const std::int32_t* ids, std::int64_t n, double weight_bytes,
                      double token_bytes);
template <class Scalar, class HostIds>
Traffic count_traffic(const Shape& s, const HostIds& ids, std::int64_t n) {
  return count_traffic(s, ids.data(), n, weight_value_bytes<Scalar>(), token_value_bytes<Scalar>());
}

struct StageTimes {
  double dispatch = 0, gate_up = 0, down_combine = 0, total = 0, graph = 0;
};

// --check-bits: whether a replayed batch's output bits come back the same
// (DeterminismCheck.hpp runs it).
struct DeterminismCounts {
  std::int64_t values = 0;           // output values compared per comparison
  std::int64_t run_to_run = 0;       // values that differ when the batch runs again
  std::int64_t tokens_alone = 0;     // sampled tokens run as batches of one
  std::int64_t alone_differing = 0;  // their values that differ from the batch's
  bool batch_invariant = false;
  bool checked = false;
  // Run to run must always hold; a token alone only where the layer promises it.
  bool passed() const { return run_to_run == 0 && (!batch_invariant || alone_differing == 0); }
  void add(const DeterminismCounts& b);
};

// One trace layer replayed on one device.
struct LayerReport {
  int index = 0;
  ExpertLoadStats load;
  std::vector<double> seconds[num_stages];
  double bytes[num_stages] = {}, flops[num_stages] = {};  // summed over runs
  // The row-relative error and the tolerance of the checked row that came
  // closest to (or went furthest past) its tolerance (ErrorModel.hpp).
  double max_rel_err = 0, tolerance = 0;
  std::int64_t checked_tokens = 0;
  DeterminismCounts bits;  // --check-bits
  // The expert kernels' row tiles, summed over the batches (each batch
  // picks its own tile shape): the rows the tiles hold (an expert's last
  // tile is partly filled) against the routed rows (tokens x k). The
  // kernels multiply every row of a tile, so their fill bounds what a
  // compute-bound batch can reach.
  std::int64_t tiles = 0, rows_in_tiles = 0, routed_rows = 0;

  void add_tiles(std::int64_t batch_tiles, std::int64_t rows_a_tile, std::int64_t routed);
  double tile_fill() const { return rows_in_tiles > 0 ? double(routed_rows) / rows_in_tiles : 0; }
  void add(const StageTimes& st, const Traffic& t);
  // Per forward: the median time, the mean traffic over the batches.
  double median_s(int i) const { return median(seconds[i]); }
  double mean_bytes(int i) const { return seconds[i].empty() ? 0 : bytes[i] / seconds[i].size(); }
  double mean_flops(int i) const { return seconds[i].empty() ? 0 : flops[i] / seconds[i].size(); }
  // A check of no token is not a pass.
  bool check_passed() const { return checked_tokens > 0 && max_rel_err <= tolerance; }
};

// --ep: the phases of the expert-parallel forward a replay reports (its
// routing is given).
enum EpPhase {
  ep_plan,
  ep_pack,
  ep_dispatch_exchange,
  ep_expert_compute,
  ep_combine_exchange,
  ep_combine,
  ep_total,
  ep_phases
};

// One rank's figures for one layer: medians of the phases, means per forward
// of the rest. Plain doubles, so that ranks gather them as they are.
struct EpRankStats {
  double seconds[ep_phases] = {};
  double tokens = 0, rows_sent = 0, rows_received = 0, capacity = 0;
  double dispatch_bytes_sent = 0, dispatch_bytes_received = 0;
  double combine_bytes_sent = 0, combine_bytes_received = 0;

  double bytes_sent() const { return dispatch_bytes_sent + combine_bytes_sent; }
  double bytes_received() const { return dispatch_bytes_received + combine_bytes_received; }
  double exchange_seconds() const {
    return seconds[ep_dispatch_exchange] + seconds[ep_combine_exchange];
  }
  // Bytes in and out of this rank over the time of its exchanges.
  double gb_per_s() const;
};

// --ep --check over all ranks: the expert-parallel output against the
// single-device layer (every value) and a sample against float64 (the row
// that decides).
struct EpCheck {
  double values = 0, differing = 0, max_difference = 0;  // against the single-device layer
  double tokens = 0, error = 0, tolerance = 0;           // against float64
};

// One trace layer replayed on the ranks.
struct EpLayerReport {
  int index = 0;
  ExpertLoadStats load;
  std::vector<EpRankStats> ranks;  // every rank's, by rank
  EpCheck check;                   // over all ranks
  bool bitwise_required = false;   // fp32 with batch_invariant

  double max_seconds(int phase) const;
  double mean_seconds(int phase) const;
  // The rows the busiest rank received over the mean (1: balanced).
  double busiest_over_mean() const;
  double max_rows_received() const;
  // Bytes between ranks per forward (each counted once, by its sender), and
  // over the slowest rank's exchanges.
  double bytes_between_ranks() const;
  double aggregate_gb_per_s() const;
  bool check_passed() const {
    return check.tokens > 0 && check.error <= check.tolerance &&
           (!bitwise_required || check.differing == 0);
  }
};

// The expert-parallel section of a report: experts in contiguous blocks.
struct ExpertParallelReport {
  int ranks = 1;
  std::string transport;  // how rows travelled
  std::vector<EpLayerReport> layers;
};

// A replay's report: on one device (layers) or on MPI ranks (expert_parallel).
struct Report {
  std::string trace, dtype, device;
  std::string model;  // as printable_text shows it: escaped, at most 120 characters
  Shape shape;
  std::int64_t tokens = 0, batch = 0;
  bool check = false, check_bits = false, batch_invariant = false;
  std::vector<LayerReport> layers;
  std::optional<ExpertParallelReport> expert_parallel;

  bool check_passed() const;
  bool bits_passed() const;
};

void print_report(std::ostream& os, const Report& r);
void write_json(std::ostream& os, const Report& r);
// The report on standard output and, where json_path is not empty, as JSON
// in that file; throws a one-line runtime_error when either was not written.
void write_report(const Report& r, const std::string& json_path);

}  // namespace Driver
}  // namespace KokkosMoE

#endif
