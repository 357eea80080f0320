// SPDX-License-Identifier: BSD-3-Clause
// kokkos-moe-replay --ep: the replay loop on the ranks (ReplayExpertParallel.hpp).
#include "ReplayExpertParallel.hpp"

#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include "ErrorModel.hpp"
#include "MpiRuntime.hpp"
#include "ReferenceCheck.hpp"
#include "ReplayInputs.hpp"

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <type_traits>
#include <vector>

namespace KokkosMoE {
namespace Driver {

namespace {

std::array<double, ep_phases> phase_seconds(const ExpertParallelTimes& t) {
  return {t.plan,    t.pack, t.dispatch_exchange, t.expert_compute, t.combine_exchange,
          t.combine, t.total};
}

// How the layer's rows travel, as the report says it.
template <class EpLayer>
std::string transport_name(const EpLayer& layer) {
  if (layer.transport() == ExpertParallelOptions::Transport::nccl) return "nccl";
  return layer.staged() ? "mpi, staged through host buffers" : "mpi";
}

// Replays the first T tokens of one layer in batches, each split across the
// ranks; gives the layer's report and the transport's name.
template <class Scalar>
EpLayerReport replay_layer_expert_parallel(const ExpertParallelRun& run, const Shape& s,
                                           const TraceLayer& tl, const Trace& trace,
                                           std::string& transport) {
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
  // Each expert's result is rounded to the storage type before the combine
  // (exact for fp32): the model counts the storage type's rounding twice.
  const ErrorModel model =
      replay_error_model<Scalar>(s, std::is_same<token_type_t<Scalar>, float>::value ? 1 : 2);
  RowCheck worst{0, model.floor};
  EpCheck mine_check;
  std::vector<ExpertParallelTimes> times;

  for (std::int64_t t0 = 0; t0 < run.tokens; t0 += run.batch) {
    const std::int64_t nb = std::min(run.batch, run.tokens - t0);
    const std::int64_t lo = nb * me / P, hi = nb * (me + 1) / P, n = hi - lo;
    copy_routing(tl, t0 + lo, n, ids, rw);
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
    // A sample of the slice against float64, as a one-device --check. (The
    // ranks' layers quantise their activations as the single-device one
    // does: the same backend, storage type and shapes.)
    const std::vector<int> sample = check_sample(n);
    worst = check_against_reference(full, x, ids, rw, h_out, sample,
                                    single->quantizes_activations(), model, worst);
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
  transport = transport_name(layer);
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

}  // namespace

template <class Scalar>
int replay_expert_parallel(const ExpertParallelRun& run, const Trace& trace, Report report) {
  const Shape& s = report.shape;
  ExpertParallelReport& ep = report.expert_parallel.emplace();
  MPI_Comm_size(MPI_COMM_WORLD, &ep.ranks);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  for (const TraceLayer& tl : trace.layers)
    ep.layers.push_back(replay_layer_expert_parallel<Scalar>(run, s, tl, trace, ep.transport));
  // Rank 0 writes the report; when it cannot (stdout closed, --json to a
  // full disk), every rank fails with its message.
  std::string error;
  if (me == 0) {
    try {
      write_report(report, run.json);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = broadcast_error(error);
  if (!error.empty()) throw AgreedError(error);
  return run.check && !report.check_passed() ? 1 : 0;
}

template int replay_expert_parallel<float>(const ExpertParallelRun&, const Trace&, Report);
template int replay_expert_parallel<float16>(const ExpertParallelRun&, const Trace&, Report);
template int replay_expert_parallel<bfloat16>(const ExpertParallelRun&, const Trace&, Report);
template int replay_expert_parallel<float8_e4m3>(const ExpertParallelRun&, const Trace&, Report);

}  // namespace Driver
}  // namespace KokkosMoE
