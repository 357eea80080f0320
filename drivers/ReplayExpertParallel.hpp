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
#ifndef KOKKOSMOE_REPLAYEXPERTPARALLEL_HPP
#define KOKKOSMOE_REPLAYEXPERTPARALLEL_HPP

#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>
#include <KokkosMoE/KokkosMoE_Reference.hpp>
#include <KokkosMoE/KokkosMoE_Trace.hpp>
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include "DriverArgs.hpp"
#include "ReplayCheck.hpp"
#include "ReplayInputs.hpp"
#include "ReplayReport.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Driver {

// MPI for --ep only, initialized before Kokkos and finalized after it (the
// runtime outlives Kokkos in main), so that a replay on one device needs no
// MPI launcher.
class MpiRuntime {
 public:
  MpiRuntime(int& argc, char**& argv) {
    for (int i = 1; i < argc; ++i) active_ = active_ || std::strcmp(argv[i], "--ep") == 0;
    if (!active_) return;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    choose_device(argc, argv);
  }
  ~MpiRuntime() {
    if (active_) MPI_Finalize();
  }
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  bool active() const { return active_; }
  // Whether this process reports (errors included): rank 0, or the only one.
  bool reports() const { return rank_ == 0; }
  // An error of this rank alone: the others may wait in a collective, so
  // the whole run ends here.
  [[noreturn]] void abort(const std::string& message) const {
    std::cerr << "error: rank " << rank_ << ": " << message << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

 private:
  // GPU builds: each rank on its node's GPUs by node-local rank
  // (node_local_device), given to Kokkos as --kokkos-device-id, unless the
  // command line chooses Kokkos' device itself.
  void choose_device(int& argc, char**& argv) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
    for (int i = 1; i < argc; ++i)
      for (const char* chooser :
           {"--kokkos-device-id", "--kokkos-map-device-id-by", "--kokkos-num-devices"})
        if (std::strncmp(argv[i], chooser, std::strlen(chooser)) == 0) return;
    device_arg_ = "--kokkos-device-id=" + std::to_string(node_local_device(MPI_COMM_WORLD));
    args_.assign(argv, argv + argc);
    args_.push_back(&device_arg_[0]);
    args_.push_back(nullptr);
    argc += 1;
    argv = args_.data();
#else
    (void)argc, (void)argv;
#endif
  }

  bool active_ = false;
  int rank_ = 0, size_ = 1;
  std::string device_arg_;
  std::vector<char*> args_;  // argv with device_arg_
};

// An error every rank has alike: the layer's (it agrees on its errors
// across ranks before throwing) or the replay's own on the same inputs.
// Rank 0 reports it and every rank exits 1, without MPI_Abort.
struct AgreedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class F>
decltype(auto) agreed(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    throw AgreedError(e.what());
  }
}

// What the replay needs of the command line.
struct ExpertParallelRun {
  std::string trace, model, json;
  std::int64_t tokens = 0, batch = 0;
  int repeat = 1, warmup = 0;
  std::uint64_t seed = 1;
  bool check = false, batch_invariant = false;
  std::int64_t capacity = 0;
  ExpertParallelOptions::GpuAware gpu_aware = ExpertParallelOptions::GpuAware::detect;
  ExpertParallelOptions::Transport transport = ExpertParallelOptions::Transport::mpi;
};

// The phases of ExpertParallelTimes a replay reports (its routing is given).
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
constexpr const char* kEpPhaseNames[ep_phases] = {
    "plan", "pack", "dispatch_exchange", "expert_compute", "combine_exchange", "combine", "total"};

inline std::array<double, ep_phases> phase_seconds(const ExpertParallelTimes& t) {
  return {t.plan,    t.pack, t.dispatch_exchange, t.expert_compute, t.combine_exchange,
          t.combine, t.total};
}

// One rank's figures for one layer: medians of the phases, means per forward
// of the rest. Plain doubles, gathered as they are.
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
  double gb_per_s() const {
    const double t = exchange_seconds();
    return t > 0 ? (bytes_sent() + bytes_received()) / t / 1e9 : 0;
  }
};

// --check on one rank, then over all: EP against the single-device layer
// (every value) and a sample against float64 (the row that decides).
struct EpCheck {
  double values = 0, differing = 0, max_difference = 0;  // against the single-device layer
  double tokens = 0, error = 0, tolerance = 0;           // against float64
};

struct EpLayerReport {
  int index = 0;
  std::string transport;  // how rows travelled (transport_name)
  ExpertLoadStats load;
  std::vector<EpRankStats> ranks;  // every rank's, by rank
  EpCheck check;                   // over all ranks
  bool bitwise_required = false;   // fp32 with batch_invariant

  double max_seconds(int phase) const {
    double m = 0;
    for (const EpRankStats& r : ranks) m = std::max(m, r.seconds[phase]);
    return m;
  }
  double mean_seconds(int phase) const {
    double s = 0;
    for (const EpRankStats& r : ranks) s += r.seconds[phase];
    return ranks.empty() ? 0 : s / double(ranks.size());
  }
  // The rows the busiest rank received over the mean (1: balanced).
  double busiest_over_mean() const {
    double most = 0, sum = 0;
    for (const EpRankStats& r : ranks)
      most = std::max(most, r.rows_received), sum += r.rows_received;
    return sum > 0 ? most * double(ranks.size()) / sum : 0;
  }
  double max_rows_received() const {
    double most = 0;
    for (const EpRankStats& r : ranks) most = std::max(most, r.rows_received);
    return most;
  }
  // Bytes between ranks per forward (each counted once, by its sender), and
  // over the slowest rank's exchanges.
  double bytes_between_ranks() const {
    double s = 0;
    for (const EpRankStats& r : ranks) s += r.bytes_sent();
    return s;
  }
  double aggregate_gb_per_s() const {
    double t = 0;
    for (const EpRankStats& r : ranks) t = std::max(t, r.exchange_seconds());
    return t > 0 ? bytes_between_ranks() / t / 1e9 : 0;
  }
  bool check_passed() const {
    return check.tokens > 0 && check.error <= check.tolerance &&
           (!bitwise_required || check.differing == 0);
  }
};

struct EpReport {
  ExpertParallelRun run;
  std::string dtype, device;
  Shape shape;
  int ranks = 1;
  std::vector<EpLayerReport> layers;

  bool check_passed() const {
    for (const EpLayerReport& l : layers)
      if (!l.check_passed()) return false;
    return true;
  }
};

// Every rank's `values` (the same count on each), by rank.
inline std::vector<double> gather_all(const std::vector<double>& values) {
  int P = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  std::vector<double> all(values.size() * std::size_t(P));
  MPI_Allgather(values.data(), int(values.size()), MPI_DOUBLE, all.data(), int(values.size()),
                MPI_DOUBLE, MPI_COMM_WORLD);
  return all;
}

// How the layer's rows travel, as the report says it.
template <class EpLayer>
std::string transport_name(const EpLayer& layer) {
  if (layer.transport() == ExpertParallelOptions::Transport::nccl) return "nccl";
  return layer.staged() ? "mpi, staged through host buffers" : "mpi";
}

// Replays the first T tokens of one layer in batches, each split across the ranks.
template <class Scalar>
EpLayerReport replay_layer_expert_parallel(const ExpertParallelRun& run, const Shape& s,
                                           const TraceLayer& tl, const Trace& trace) {
  using Memory = Space::memory_space;
  using ep_type = ExpertParallelLayer<Space, Scalar>;
  using layer_type = Layer<Space, Scalar>;
  int P = 1, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int k = s.top_k;
  const std::int64_t per_rank = (run.batch + P - 1) / P;

  const Config c = replay_config(s, per_rank, run.batch_invariant);
  // The one-device replay's weights (its seeds), whole on every rank.
  const std::uint64_t seed = layer_seed(run.seed, tl.index);
  auto full = replay_weights<Scalar, Memory>(c, seed);
  const auto placement = ExpertPlacement::contiguous(s.experts, P);
  ExpertParallelOptions options;
  options.capacity = run.capacity;
  options.gpu_aware = run.gpu_aware;
  options.transport = run.transport;
  const auto mine = local_expert_weights(full, placement, me);
  ep_type layer = agreed([&] { return ep_type(c, MPI_COMM_WORLD, mine, placement, options); });
  // The single-device layer of --check holds every expert; without it the
  // other ranks' experts are freed.
  std::optional<layer_type> single;
  if (run.check) single.emplace(c, full);
  else full = {};

  typename layer_type::tokens_view x_batch("x", run.batch, s.hidden);
  typename layer_type::tokens_view out("out", per_rank, s.hidden),
      expected("expected", per_rank, s.hidden);
  typename layer_type::ids_view ids("ids", per_rank, k);
  typename layer_type::weights_view rw("routing_weights", per_rank, k);
  ErrorModel model;
  // Each expert's result is rounded to the storage type before the combine
  // (exact for fp32): the model counts the storage type's rounding twice.
  const double roundings = std::is_same<token_type_t<Scalar>, float>::value ? 1 : 2;
  model.storage_epsilon = roundings * ScalarTraits<Scalar>::epsilon;
  model.weight_epsilon = weight_rounding<Scalar>();
  model.floor = reference_tolerance<Scalar>();
  model.hidden = s.hidden, model.ffn = s.ffn, model.top_k = k;
  RowCheck worst{0, model.floor};
  EpCheck mine_check;
  std::vector<ExpertParallelTimes> times;

  for (std::int64_t t0 = 0; t0 < run.tokens; t0 += run.batch) {
    const std::int64_t nb = std::min(run.batch, run.tokens - t0);
    const std::int64_t lo = nb * me / P, hi = nb * (me + 1) / P, n = hi - lo;
    auto hid = Kokkos::create_mirror_view(ids);
    auto hw = Kokkos::create_mirror_view(rw);
    for (std::int64_t i = 0; i < n * k; ++i) {
      hid.data()[i] = tl.expert_ids[std::size_t((t0 + lo) * k + i)];
      hw.data()[i] = tl.weights[std::size_t((t0 + lo) * k + i)];
    }
    Kokkos::deep_copy(ids, hid);
    Kokkos::deep_copy(rw, hw);
    fill_hidden_states(x_batch, seed, t0);
    const typename layer_type::const_tokens_view x =
        Kokkos::subview(x_batch, Kokkos::make_pair(lo, hi), Kokkos::ALL());
    for (int i = 0; i < run.warmup + run.repeat; ++i) {
      agreed([&] { layer.forward(x, ids, rw, out, n); });
      if (i >= run.warmup) times.push_back(layer.last_times());
    }
    if (!run.check || n == 0) continue;
    single->forward(x, ids, rw, expected, n);
    auto h_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    auto h_exp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), expected);
    for (std::int64_t t = 0; t < n; ++t) {
      double diff = 0, scale = 0;
      for (std::int64_t col = 0; col < s.hidden; ++col) {
        const double a = double(Impl::to_float(h_out(t, col))),
                     b = double(Impl::to_float(h_exp(t, col)));
        if (std::memcmp(&h_out(t, col), &h_exp(t, col), sizeof(h_out(t, col))) != 0)
          ++mine_check.differing;
        diff = std::isnan(a) ? INFINITY : std::max(diff, std::abs(a - b));
        scale = std::max(scale, std::abs(b));
      }
      mine_check.max_difference = std::max(mine_check.max_difference,
                                           scale > 0 ? diff / scale : diff);
    }
    mine_check.values += double(n * s.hidden);
    // Up to 16 tokens of the slice against float64, as a one-device --check.
    const std::int64_t S = std::min<std::int64_t>(16, n);
    std::vector<int> sample;
    for (std::int64_t i = 0; i < S; ++i) sample.push_back(int(i * n / S));
    Kokkos::View<int*, Memory> tokens("tokens", sample.size());
    Kokkos::deep_copy(tokens, Kokkos::View<int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                  sample.data(), sample.size()));
    Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> rss;
    // (The ranks' layers quantise their activations as the single-device
    // one does: the same backend, storage type and shapes.)
    auto ref = reference_experts<Space, Scalar>(Space(), full, x, ids, rw, tokens, &rss,
                                                single->quantizes_activations());
    std::vector<double> row(std::size_t(s.hidden));
    for (std::size_t i = 0; i < sample.size(); ++i) {
      for (std::int64_t col = 0; col < s.hidden; ++col)
        row[std::size_t(col)] = double(Impl::to_float(h_out(sample[i], col)));
      worst = worse(worst, check_row(row.data(), &ref(i, 0), &rss(i, 0), row.size(), model));
    }
    mine_check.tokens += double(sample.size());
  }

  // This rank's figures, then every rank's.
  EpRankStats stats;
  for (int p = 0; p < ep_phases; ++p) {
    std::vector<double> v;
    for (const ExpertParallelTimes& t : times) v.push_back(phase_seconds(t)[std::size_t(p)]);
    stats.seconds[p] = median(v);
  }
  const double runs = times.empty() ? 1 : double(times.size());
  for (const ExpertParallelTimes& t : times) {
    stats.rows_sent += double(t.rows_sent) / runs;
    stats.rows_received += double(t.rows_received) / runs;
    stats.dispatch_bytes_sent += double(t.dispatch_bytes_sent) / runs;
    stats.dispatch_bytes_received += double(t.dispatch_bytes_received) / runs;
    stats.combine_bytes_sent += double(t.combine_bytes_sent) / runs;
    stats.combine_bytes_received += double(t.combine_bytes_received) / runs;
  }
  stats.tokens = stats.rows_sent / k;
  stats.capacity = double(layer.capacity());
  static_assert(sizeof(EpRankStats) % sizeof(double) == 0, "EpRankStats is doubles only");
  constexpr std::size_t fields = sizeof(EpRankStats) / sizeof(double);
  std::vector<double> packed(fields);
  std::memcpy(packed.data(), &stats, sizeof stats);
  const std::vector<double> all = gather_all(packed);

  EpLayerReport r;
  r.index = tl.index;
  r.transport = transport_name(layer);
  r.load = expert_load_stats(trace, tl, run.tokens);
  r.bitwise_required = std::is_same<Scalar, float>::value && run.batch_invariant;
  r.ranks.resize(std::size_t(P));
  for (int q = 0; q < P; ++q) std::memcpy(&r.ranks[std::size_t(q)], &all[q * fields], sizeof stats);
  const std::vector<double> checks =
      gather_all({mine_check.values, mine_check.differing, mine_check.max_difference,
                  mine_check.tokens, worst.error, worst.tolerance});
  RowCheck all_worst{0, model.floor};
  for (int q = 0; q < P; ++q) {
    const double* v = &checks[std::size_t(q) * 6];
    r.check.values += v[0];
    r.check.differing += v[1];
    r.check.max_difference = std::max(r.check.max_difference, v[2]);
    r.check.tokens += v[3];
    all_worst = worse(all_worst, RowCheck{v[4], v[5]});
  }
  r.check.error = all_worst.error;
  r.check.tolerance = all_worst.tolerance;
  return r;
}

inline void print_expert_parallel_report(std::ostream& os, const EpReport& r) {
  char line[320];
  std::snprintf(line, sizeof line, " --ep: %d ranks, experts in contiguous blocks, rows over ",
                r.ranks);
  os << "kokkos-moe-replay " << r.run.trace << line
     << (r.layers.empty() ? "" : r.layers.front().transport) << "\n";
  print_model(os, r.run.model, r.shape, r.dtype, r.device);
  std::snprintf(line, sizeof line,
                "tokens %lld in batches of %lld split over the ranks; times are medians per "
                "forward\n",
                (long long)r.run.tokens, (long long)r.run.batch);
  os << line;
  for (const EpLayerReport& l : r.layers) {
    print_layer_load(os, l.index, l.load, r.shape.experts);
    os << "  phase                max ms    mean ms  (over ranks)\n";
    for (int p = 0; p < ep_phases; ++p) {
      std::snprintf(line, sizeof line, "  %-18s %9.4f  %9.4f\n", kEpPhaseNames[p],
                    l.max_seconds(p) * 1e3, l.mean_seconds(p) * 1e3);
      os << line;
    }
    os << "  rank   tokens  rows in  capacity  compute ms  total ms   sent MB   recv MB    GB/s\n";
    for (std::size_t q = 0; q < l.ranks.size(); ++q) {
      const EpRankStats& s = l.ranks[q];
      std::snprintf(line, sizeof line, "  %4zu %8.1f %8.1f %9.0f %11.4f %9.4f %9.3f %9.3f %7.2f\n",
                    q, s.tokens, s.rows_received, s.capacity, s.seconds[ep_expert_compute] * 1e3,
                    s.seconds[ep_total] * 1e3, s.bytes_sent() / 1e6, s.bytes_received() / 1e6,
                    s.gb_per_s());
      os << line;
    }
    std::snprintf(line, sizeof line,
                  "  ranks: busiest receives %.2fx the mean rows (max %.1f); %.3f MB between "
                  "ranks per forward, %.2f GB/s\n",
                  l.busiest_over_mean(), l.max_rows_received(), l.bytes_between_ranks() / 1e6,
                  l.aggregate_gb_per_s());
    os << line;
    if (r.run.check) {
      std::snprintf(line, sizeof line,
                    "  check: %.0f of %.0f values differ from the single-device layer (%s), "
                    "max difference %.3e; max relative error %.3e over %.0f tokens (tolerance "
                    "%.1e): %s\n",
                    l.check.differing, l.check.values,
                    l.bitwise_required ? "bitwise equal required"
                                       : "allowed: not fp32 batch-invariant",
                    l.check.max_difference, l.check.error, l.check.tokens, l.check.tolerance,
                    l.check_passed() ? "PASS" : "FAIL");
      os << line;
    }
  }
  if (r.run.check) os << (r.check_passed() ? "check PASSED\n" : "check FAILED\n");
}

inline void write_expert_parallel_json(std::ostream& os, const EpReport& r) {
  char num[64];
  auto n = [&](double v) {
    std::snprintf(num, sizeof num, "%.9g", v);
    return std::string(num);
  };
  os << "{\n  \"trace\": " << json_string(r.run.trace) << ",\n  \"mode\": \"expert_parallel\""
     << ",\n  \"ranks\": " << r.ranks << ",\n  \"placement\": \"contiguous\""
     << ",\n  \"transport\": " << json_string(r.layers.empty() ? "" : r.layers.front().transport)
     << ",\n  \"model\": " << json_string(r.run.model) << ",\n  \"dtype\": " << json_string(r.dtype)
     << ",\n  \"device\": " << json_string(r.device)
     << ",\n  \"shape\": {\"experts\": " << r.shape.experts << ", \"top_k\": " << r.shape.top_k
     << ", \"hidden\": " << r.shape.hidden << ", \"ffn\": " << r.shape.ffn
     << ", \"reduce\": " << r.shape.reduce << "},\n  \"tokens\": " << r.run.tokens
     << ",\n  \"batch\": " << r.run.batch
     << ",\n  \"batch_invariant\": " << (r.run.batch_invariant ? "true" : "false")
     << ",\n  \"layers\": [";
  for (std::size_t li = 0; li < r.layers.size(); ++li) {
    const EpLayerReport& l = r.layers[li];
    os << (li ? ",\n" : "\n") << "    {\"layer\": " << l.index
       << ", \"load\": {\"busiest_over_mean\": " << n(l.load.busiest_over_mean)
       << ", \"max_load\": " << l.load.max_load << ", \"mean_load\": " << n(l.load.mean_load)
       << ", \"empty_experts\": " << l.load.empty_experts << "},\n     \"rank_load\": "
       << "{\"busiest_over_mean\": " << n(l.busiest_over_mean())
       << ", \"max_rows_received\": " << n(l.max_rows_received()) << "},\n     \"phases\": {";
    for (int p = 0; p < ep_phases; ++p)
      os << (p ? ", " : "") << json_string(kEpPhaseNames[p])
         << ": {\"max_ms\": " << n(l.max_seconds(p) * 1e3)
         << ", \"mean_ms\": " << n(l.mean_seconds(p) * 1e3) << "}";
    os << "},\n     \"bytes_between_ranks\": " << n(l.bytes_between_ranks())
       << ", \"aggregate_gb_per_s\": " << n(l.aggregate_gb_per_s()) << ",\n     \"per_rank\": [";
    for (std::size_t q = 0; q < l.ranks.size(); ++q) {
      const EpRankStats& s = l.ranks[q];
      os << (q ? ",\n" : "\n") << "       {\"rank\": " << q << ", \"tokens\": " << n(s.tokens)
         << ", \"rows_sent\": " << n(s.rows_sent) << ", \"rows_received\": " << n(s.rows_received)
         << ", \"capacity\": " << n(s.capacity) << ", \"phases_ms\": {";
      for (int p = 0; p < ep_phases; ++p)
        os << (p ? ", " : "") << json_string(kEpPhaseNames[p]) << ": " << n(s.seconds[p] * 1e3);
      os << "},\n        \"dispatch_bytes_sent\": " << n(s.dispatch_bytes_sent)
         << ", \"dispatch_bytes_received\": " << n(s.dispatch_bytes_received)
         << ", \"combine_bytes_sent\": " << n(s.combine_bytes_sent)
         << ", \"combine_bytes_received\": " << n(s.combine_bytes_received)
         << ", \"exchange_gb_per_s\": " << n(s.gb_per_s()) << "}";
    }
    os << "\n     ]";
    if (r.run.check)
      os << ",\n     \"check\": {\"values\": " << n(l.check.values)
         << ", \"differing_from_single_device\": " << n(l.check.differing)
         << ", \"bitwise_required\": " << (l.bitwise_required ? "true" : "false")
         << ", \"max_difference\": " << n(l.check.max_difference)
         << ", \"max_rel_err\": " << n(l.check.error) << ", \"tolerance\": " << n(l.check.tolerance)
         << ", \"tokens\": " << n(l.check.tokens)
         << ", \"passed\": " << (l.check_passed() ? "true" : "false") << "}";
    os << "}";
  }
  os << "\n  ]";
  if (r.run.check) os << ",\n  \"check_passed\": " << (r.check_passed() ? "true" : "false");
  os << "\n}\n";
}

// The replay on every rank; rank 0 reports. Exit code 1 when --check fails
// (on every rank alike).
template <class Scalar>
int replay_expert_parallel(const ExpertParallelRun& run, const Trace& trace, const Shape& s) {
  EpReport report;
  report.run = run;
  report.dtype = ScalarTraits<Scalar>::name;
  report.device = Space::name();
  report.shape = s;
  MPI_Comm_size(MPI_COMM_WORLD, &report.ranks);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  for (const TraceLayer& tl : trace.layers)
    report.layers.push_back(replay_layer_expert_parallel<Scalar>(run, s, tl, trace));
  // Rank 0 writes the report; when it cannot (stdout closed, --json to a
  // full disk), every rank fails with its message.
  std::string error;
  if (me == 0) {
    try {
      print_expert_parallel_report(std::cout, report);
      finish_stdout();
      if (!run.json.empty()) {
        std::ostringstream json;
        write_expert_parallel_json(json, report);
        write_text_file(run.json, json.str());
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  int length = int(error.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (length > 0) {
    error.resize(std::size_t(length));
    MPI_Bcast(&error[0], length, MPI_CHAR, 0, MPI_COMM_WORLD);
    throw AgreedError(error);
  }
  return run.check && !report.check_passed() ? 1 : 0;
}

}  // namespace Driver
}  // namespace KokkosMoE

#endif
