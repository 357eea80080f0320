// SPDX-License-Identifier: BSD-3-Clause
#include "ReplayReport.hpp"

#include "TextOutput.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace KokkosMoE {
namespace Driver {

namespace {

constexpr const char* kStageNames[num_stages] = {"dispatch", "gate_up", "down_combine", "total",
                                                 "graph"};
constexpr const char* kEpPhaseNames[ep_phases] = {
    "plan", "pack", "dispatch_exchange", "expert_compute", "combine_exchange", "combine", "total"};

// A number in JSON: 9 significant digits.
std::string num(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

// A replayed layer's heading: its expert-load statistics.
void print_layer_load(std::ostream& os, int index, const ExpertLoadStats& load, int experts) {
  char line[160];
  std::snprintf(line, sizeof line,
                "layer %d: busiest expert %.2fx the mean load (max %lld), %d of %d experts idle\n",
                index, load.busiest_over_mean, (long long)load.max_load, load.empty_experts,
                experts);
  os << line;
}

void print_layer(std::ostream& os, const Report& r, const LayerReport& l) {
  char line[256];
  print_layer_load(os, l.index, l.load, r.shape.experts);
  if (l.tiles > 0) {
    std::snprintf(line, sizeof line,
                  "  tiles: %lld holding %lld rows for %lld routed rows (fill %.2f)\n",
                  (long long)l.tiles, (long long)l.rows_in_tiles, (long long)l.routed_rows,
                  l.tile_fill());
    os << line;
  }
  os << "  stage            time ms      MB moved       GFLOP       GB/s    TFLOP/s\n";
  for (int i = 0; i < num_stages; ++i) {
    const double t = l.median_s(i);
    std::snprintf(line, sizeof line, "  %-14s %9.4f %13.3f %11.3f %10.2f %10.4f\n", kStageNames[i],
                  t * 1e3, l.mean_bytes(i) / 1e6, l.mean_flops(i) / 1e9,
                  t > 0 ? l.mean_bytes(i) / t / 1e9 : 0.0,
                  t > 0 ? l.mean_flops(i) / t / 1e12 : 0.0);
    os << line;
  }
  if (r.check) {
    std::snprintf(line, sizeof line,
                  "  check: max relative error %.3e over %lld tokens (tolerance %.1e): %s\n",
                  l.max_rel_err, (long long)l.checked_tokens, l.tolerance,
                  l.check_passed() ? "PASS" : "FAIL");
    os << line;
  }
  if (r.check_bits) {
    const DeterminismCounts& b = l.bits;
    std::snprintf(line, sizeof line,
                  "  bits: run to run %lld of %lld values differ; %lld tokens alone: %lld values "
                  "differ from the batch's%s: %s\n",
                  (long long)b.run_to_run, (long long)b.values, (long long)b.tokens_alone,
                  (long long)b.alone_differing,
                  b.batch_invariant ? "" : " (allowed: not batch-invariant)",
                  b.passed() ? "PASS" : "FAIL");
    os << line;
  }
}

void print_ep_layer(std::ostream& os, const Report& r, const EpLayerReport& l) {
  char line[320];
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
    std::snprintf(line, sizeof line, "  %4zu %8.1f %8.1f %9.0f %11.4f %9.4f %9.3f %9.3f %7.2f\n", q,
                  s.tokens, s.rows_received, s.capacity, s.seconds[ep_expert_compute] * 1e3,
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
  if (r.check) {
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

void write_layer_json(std::ostream& os, const Report& r, const LayerReport& l) {
  os << "\n     \"tiles\": {\"tiles\": " << l.tiles << ", \"rows\": " << l.rows_in_tiles
     << ", \"routed_rows\": " << l.routed_rows << ", \"fill\": " << num(l.tile_fill())
     << "},\n     \"stages\": {";
  for (int i = 0; i < num_stages; ++i) {
    const double t = l.median_s(i);
    os << (i ? ", " : "") << json_string(kStageNames[i]) << ": {\"median_ms\": " << num(t * 1e3)
       << ", \"bytes\": " << num(l.mean_bytes(i)) << ", \"flops\": " << num(l.mean_flops(i))
       << ", \"gb_per_s\": " << num(t > 0 ? l.mean_bytes(i) / t / 1e9 : 0)
       << ", \"tflop_per_s\": " << num(t > 0 ? l.mean_flops(i) / t / 1e12 : 0) << "}";
  }
  os << "}";
  if (r.check)
    os << ",\n     \"check\": {\"max_rel_err\": " << num(l.max_rel_err)
       << ", \"tolerance\": " << num(l.tolerance) << ", \"tokens\": " << l.checked_tokens
       << ", \"passed\": " << (l.check_passed() ? "true" : "false") << "}";
  if (r.check_bits)
    os << ",\n     \"bits\": {\"values\": " << l.bits.values
       << ", \"run_to_run_differing\": " << l.bits.run_to_run
       << ", \"tokens_alone\": " << l.bits.tokens_alone
       << ", \"alone_differing\": " << l.bits.alone_differing
       << ", \"passed\": " << (l.bits.passed() ? "true" : "false") << "}";
}

void write_ep_layer_json(std::ostream& os, const Report& r, const EpLayerReport& l) {
  os << "\n     \"rank_load\": {\"busiest_over_mean\": " << num(l.busiest_over_mean())
     << ", \"max_rows_received\": " << num(l.max_rows_received()) << "},\n     \"phases\": {";
  for (int p = 0; p < ep_phases; ++p)
    os << (p ? ", " : "") << json_string(kEpPhaseNames[p])
       << ": {\"max_ms\": " << num(l.max_seconds(p) * 1e3)
       << ", \"mean_ms\": " << num(l.mean_seconds(p) * 1e3) << "}";
  os << "},\n     \"bytes_between_ranks\": " << num(l.bytes_between_ranks())
     << ", \"aggregate_gb_per_s\": " << num(l.aggregate_gb_per_s()) << ",\n     \"per_rank\": [";
  for (std::size_t q = 0; q < l.ranks.size(); ++q) {
    const EpRankStats& s = l.ranks[q];
    os << (q ? ",\n" : "\n") << "       {\"rank\": " << q << ", \"tokens\": " << num(s.tokens)
       << ", \"rows_sent\": " << num(s.rows_sent) << ", \"rows_received\": " << num(s.rows_received)
       << ", \"capacity\": " << num(s.capacity) << ", \"phases_ms\": {";
    for (int p = 0; p < ep_phases; ++p)
      os << (p ? ", " : "") << json_string(kEpPhaseNames[p]) << ": " << num(s.seconds[p] * 1e3);
    os << "},\n        \"dispatch_bytes_sent\": " << num(s.dispatch_bytes_sent)
       << ", \"dispatch_bytes_received\": " << num(s.dispatch_bytes_received)
       << ", \"combine_bytes_sent\": " << num(s.combine_bytes_sent)
       << ", \"combine_bytes_received\": " << num(s.combine_bytes_received)
       << ", \"exchange_gb_per_s\": " << num(s.gb_per_s()) << "}";
  }
  os << "\n     ]";
  if (r.check)
    os << ",\n     \"check\": {\"values\": " << num(l.check.values)
       << ", \"differing_from_single_device\": " << num(l.check.differing)
       << ", \"bitwise_required\": " << (l.bitwise_required ? "true" : "false")
       << ", \"max_difference\": " << num(l.check.max_difference)
       << ", \"max_rel_err\": " << num(l.check.error)
       << ", \"tolerance\": " << num(l.check.tolerance) << ", \"tokens\": " << num(l.check.tokens)
       << ", \"passed\": " << (l.check_passed() ? "true" : "false") << "}";
}

// A layer's opening in JSON: its index and expert load.
void write_load_json(std::ostream& os, int index, const ExpertLoadStats& load) {
  os << "    {\"layer\": " << index
     << ", \"load\": {\"busiest_over_mean\": " << num(load.busiest_over_mean)
     << ", \"max_load\": " << load.max_load << ", \"mean_load\": " << num(load.mean_load)
     << ", \"empty_experts\": " << load.empty_experts << "},";
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Traffic count_traffic(const Shape& s, const std::int32_t* ids, std::int64_t n, double weight_bytes,
                      double token_bytes) {
  std::vector<char> touched(std::size_t(s.experts), 0);
  std::int64_t assignments = 0;
  for (std::int64_t i = 0; i < n * s.top_k; ++i) {
    const int e = ids[i];
    if (e >= 0 && e < s.experts) touched[std::size_t(e)] = 1, ++assignments;
  }
  double experts = 0;
  for (char t : touched) experts += t;
  const double HF = double(s.hidden) * double(s.ffn), wb = weight_bytes, sb = token_bytes;
  const double A = double(assignments), tokens_bytes = double(n) * s.hidden * sb;
  const double routing_bytes = double(n) * s.top_k * 8;  // ids + weights
  Traffic t;
  // dispatch reads the ids and writes slot and order (4-byte integers).
  t.bytes[dispatch_stage] = double(n) * s.top_k * 12;
  t.bytes[gate_up_stage] = experts * 2 * HF * wb + tokens_bytes + A * s.ffn * sb;
  t.flops[gate_up_stage] = 4 * A * HF;
  t.bytes[down_combine_stage] = experts * HF * wb + A * s.ffn * sb + tokens_bytes + routing_bytes;
  t.flops[down_combine_stage] = 2 * A * HF;
  // The layer as a whole: weights once, hidden states in and out, routing.
  t.bytes[total_stage] = experts * 3 * HF * wb + 2 * tokens_bytes + routing_bytes;
  t.flops[total_stage] = 6 * A * HF;
  t.bytes[graph_stage] = t.bytes[total_stage];
  t.flops[graph_stage] = t.flops[total_stage];
  return t;
}

void DeterminismCounts::add(const DeterminismCounts& b) {
  values += b.values, run_to_run += b.run_to_run, tokens_alone += b.tokens_alone;
  alone_differing += b.alone_differing;
  batch_invariant = b.batch_invariant, checked = checked || b.checked;
}

void LayerReport::add_tiles(std::int64_t batch_tiles, std::int64_t rows_a_tile,
                            std::int64_t routed) {
  tiles += batch_tiles;
  rows_in_tiles += batch_tiles * rows_a_tile;
  routed_rows += routed;
}

void LayerReport::add(const StageTimes& st, const Traffic& t) {
  const double s[num_stages] = {st.dispatch, st.gate_up, st.down_combine, st.total, st.graph};
  for (int i = 0; i < num_stages; ++i) {
    seconds[i].push_back(s[i]);
    bytes[i] += t.bytes[i];
    flops[i] += t.flops[i];
  }
}

double EpRankStats::gb_per_s() const {
  const double t = exchange_seconds();
  return t > 0 ? (bytes_sent() + bytes_received()) / t / 1e9 : 0;
}

double EpLayerReport::max_seconds(int phase) const {
  double m = 0;
  for (const EpRankStats& r : ranks) m = std::max(m, r.seconds[phase]);
  return m;
}

double EpLayerReport::mean_seconds(int phase) const {
  double s = 0;
  for (const EpRankStats& r : ranks) s += r.seconds[phase];
  return ranks.empty() ? 0 : s / double(ranks.size());
}

double EpLayerReport::busiest_over_mean() const {
  double most = 0, sum = 0;
  for (const EpRankStats& r : ranks) most = std::max(most, r.rows_received), sum += r.rows_received;
  return sum > 0 ? most * double(ranks.size()) / sum : 0;
}

double EpLayerReport::max_rows_received() const {
  double most = 0;
  for (const EpRankStats& r : ranks) most = std::max(most, r.rows_received);
  return most;
}

double EpLayerReport::bytes_between_ranks() const {
  double s = 0;
  for (const EpRankStats& r : ranks) s += r.bytes_sent();
  return s;
}

double EpLayerReport::aggregate_gb_per_s() const {
  double t = 0;
  for (const EpRankStats& r : ranks) t = std::max(t, r.exchange_seconds());
  return t > 0 ? bytes_between_ranks() / t / 1e9 : 0;
}

bool Report::check_passed() const {
  if (expert_parallel) {
    for (const EpLayerReport& l : expert_parallel->layers)
      if (!l.check_passed()) return false;
    return true;
  }
  for (const LayerReport& l : layers)
    if (!l.check_passed()) return false;
  return true;
}

bool Report::bits_passed() const {
  for (const LayerReport& l : layers)
    if (!l.bits.passed()) return false;
  return true;
}

void print_report(std::ostream& os, const Report& r) {
  char line[320];
  const ExpertParallelReport* ep = r.expert_parallel ? &*r.expert_parallel : nullptr;
  os << "kokkos-moe-replay " << r.trace;
  if (ep) {
    std::snprintf(line, sizeof line, " --ep: %d ranks, experts in contiguous blocks, rows over ",
                  ep->ranks);
    os << line << ep->transport;
  }
  os << "\n";
  // The model's name (printable_text: up to 120 characters of up to 4
  // bytes) is written apart, so that the fixed buffer never cuts the line.
  std::snprintf(line, sizeof line, ": E=%d k=%d H=%lld F=%lld%s, dtype %s, device %s\n",
                r.shape.experts, r.shape.top_k, (long long)r.shape.hidden, (long long)r.shape.ffn,
                r.shape.reduce > 1
                    ? (" (reduced by " + std::to_string(r.shape.reduce) + ")").c_str()
                    : "",
                r.dtype.c_str(), r.device.c_str());
  os << "model " << r.model << line;
  std::snprintf(line, sizeof line,
                "tokens %lld in batches of %lld%s; times are medians per forward\n",
                (long long)r.tokens, (long long)r.batch, ep ? " split over the ranks" : "");
  os << line;
  if (ep)
    for (const EpLayerReport& l : ep->layers) print_ep_layer(os, r, l);
  else
    for (const LayerReport& l : r.layers) print_layer(os, r, l);
  if (r.check) os << (r.check_passed() ? "check PASSED\n" : "check FAILED\n");
  if (r.check_bits) os << (r.bits_passed() ? "bits PASSED\n" : "bits FAILED\n");
}

void write_json(std::ostream& os, const Report& r) {
  const ExpertParallelReport* ep = r.expert_parallel ? &*r.expert_parallel : nullptr;
  os << "{\n  \"trace\": " << json_string(r.trace);
  if (ep)
    os << ",\n  \"mode\": \"expert_parallel\",\n  \"ranks\": " << ep->ranks
       << ",\n  \"placement\": \"contiguous\",\n  \"transport\": " << json_string(ep->transport);
  os << ",\n  \"model\": " << json_string(r.model) << ",\n  \"dtype\": " << json_string(r.dtype)
     << ",\n  \"device\": " << json_string(r.device)
     << ",\n  \"shape\": {\"experts\": " << r.shape.experts << ", \"top_k\": " << r.shape.top_k
     << ", \"hidden\": " << r.shape.hidden << ", \"ffn\": " << r.shape.ffn
     << ", \"reduce\": " << r.shape.reduce << "},\n  \"tokens\": " << r.tokens
     << ",\n  \"batch\": " << r.batch
     << ",\n  \"batch_invariant\": " << (r.batch_invariant ? "true" : "false")
     << ",\n  \"layers\": [";
  const std::size_t layers = ep ? ep->layers.size() : r.layers.size();
  for (std::size_t li = 0; li < layers; ++li) {
    os << (li ? ",\n" : "\n");
    if (ep) {
      write_load_json(os, ep->layers[li].index, ep->layers[li].load);
      write_ep_layer_json(os, r, ep->layers[li]);
    } else {
      write_load_json(os, r.layers[li].index, r.layers[li].load);
      write_layer_json(os, r, r.layers[li]);
    }
    os << "}";
  }
  os << "\n  ]";
  if (r.check) os << ",\n  \"check_passed\": " << (r.check_passed() ? "true" : "false");
  if (r.check_bits) os << ",\n  \"bits_passed\": " << (r.bits_passed() ? "true" : "false");
  os << "\n}\n";
}

void write_report(const Report& r, const std::string& json_path) {
  print_report(std::cout, r);
  finish_stdout();
  if (json_path.empty()) return;
  std::ostringstream json;
  write_json(json, r);
  write_text_file(json_path, json.str());
}

}  // namespace Driver
}  // namespace KokkosMoE
