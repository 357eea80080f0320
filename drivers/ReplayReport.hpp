// SPDX-License-Identifier: BSD-3-Clause
// What kokkos-moe-replay measures and how it reports it: the bytes and flops
// each stage must move and do, per-stage medians, text and JSON output.
#ifndef KOKKOSMOE_REPLAYREPORT_HPP
#define KOKKOSMOE_REPLAYREPORT_HPP

#include "ReplayBits.hpp"

#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include "DriverArgs.hpp"

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Driver {

struct Shape {
  int experts = 0, top_k = 0;
  std::int64_t hidden = 0, ffn = 0;
  std::int64_t reduce = 1;  // H and F were divided by this
};

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
constexpr const char* kStageNames[num_stages] = {"dispatch", "gate_up", "down_combine", "total",
                                                 "graph"};

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

template <class Scalar, class HostIds>
Traffic count_traffic(const Shape& s, const HostIds& ids, std::int64_t n) {
  std::vector<char> touched(s.experts, 0);
  std::int64_t assignments = 0;
  for (std::int64_t i = 0; i < n * s.top_k; ++i) {
    const int e = ids.data()[i];
    if (e >= 0 && e < s.experts) touched[e] = 1, ++assignments;
  }
  double experts = 0;
  for (char t : touched) experts += t;
  const double HF = double(s.hidden) * double(s.ffn), wb = weight_value_bytes<Scalar>(),
               sb = token_value_bytes<Scalar>();
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

struct StageTimes {
  double dispatch = 0, gate_up = 0, down_combine = 0, total = 0, graph = 0;
};

struct LayerReport {
  int index = 0;
  ExpertLoadStats load;
  std::vector<double> seconds[num_stages];
  double bytes[num_stages] = {}, flops[num_stages] = {};  // summed over runs
  // The row-relative error and the tolerance of the checked row that came
  // closest to (or went furthest past) its tolerance (ReplayCheck.hpp).
  double max_rel_err = 0, tolerance = 0;
  std::int64_t checked_tokens = 0;
  BitsCheck bits;  // --check-bits
  // The expert kernels' row tiles, summed over the batches (each batch
  // picks its own tile shape): the rows the tiles hold (an expert's last
  // tile is partly filled) against the routed rows (tokens x k). The
  // kernels multiply every row of a tile, so their fill bounds what a
  // compute-bound batch can reach.
  std::int64_t tiles = 0, rows_in_tiles = 0, routed_rows = 0;

  void add_tiles(std::int64_t batch_tiles, std::int64_t rows_a_tile, std::int64_t routed) {
    tiles += batch_tiles;
    rows_in_tiles += batch_tiles * rows_a_tile;
    routed_rows += routed;
  }
  double tile_fill() const { return rows_in_tiles > 0 ? double(routed_rows) / rows_in_tiles : 0; }

  void add(const StageTimes& st, const Traffic& t) {
    const double s[num_stages] = {st.dispatch, st.gate_up, st.down_combine, st.total, st.graph};
    for (int i = 0; i < num_stages; ++i) {
      seconds[i].push_back(s[i]);
      bytes[i] += t.bytes[i];
      flops[i] += t.flops[i];
    }
  }
  // Per forward: the median time, the mean traffic over the batches.
  double median_s(int i) const { return median(seconds[i]); }
  double mean_bytes(int i) const { return seconds[i].empty() ? 0 : bytes[i] / seconds[i].size(); }
  double mean_flops(int i) const { return seconds[i].empty() ? 0 : flops[i] / seconds[i].size(); }
  // A check of no token is not a pass.
  bool check_passed() const { return checked_tokens > 0 && max_rel_err <= tolerance; }
};

struct Report {
  std::string trace, dtype, device;
  std::string model;  // as printable_text shows it: escaped, at most 120 characters
  Shape shape;
  std::int64_t tokens = 0, batch = 0;
  bool check = false, check_bits = false, batch_invariant = false;
  std::vector<LayerReport> layers;

  bool check_passed() const {
    for (const LayerReport& l : layers)
      if (!l.check_passed()) return false;
    return true;
  }
  bool bits_passed() const {
    for (const LayerReport& l : layers)
      if (!l.bits.passed()) return false;
    return true;
  }
};

// A replayed layer's heading: its expert-load statistics.
inline void print_layer_load(std::ostream& os, int index, const ExpertLoadStats& load,
                             int experts) {
  char line[160];
  std::snprintf(line, sizeof line,
                "layer %d: busiest expert %.2fx the mean load (max %lld), %d of %d experts idle\n",
                index, load.busiest_over_mean, (long long)load.max_load, load.empty_experts,
                experts);
  os << line;
}

// The replayed model: its name, shape, storage type and device. The name
// (printable_text: up to 120 characters of up to 4 bytes) is written apart,
// so that the fixed buffer never cuts the line.
inline void print_model(std::ostream& os, const std::string& model, const Shape& shape,
                        const std::string& dtype, const std::string& device) {
  char line[256];
  std::snprintf(line, sizeof line, ": E=%d k=%d H=%lld F=%lld%s, dtype %s, device %s\n",
                shape.experts, shape.top_k, (long long)shape.hidden, (long long)shape.ffn,
                shape.reduce > 1 ? (" (reduced by " + std::to_string(shape.reduce) + ")").c_str()
                                 : "",
                dtype.c_str(), device.c_str());
  os << "model " << model << line;
}

inline void print_report(std::ostream& os, const Report& r) {
  char line[256];
  os << "kokkos-moe-replay " << r.trace << "\n";
  print_model(os, r.model, r.shape, r.dtype, r.device);
  std::snprintf(line, sizeof line,
                "tokens %lld in batches of %lld; times are medians per forward\n",
                (long long)r.tokens, (long long)r.batch);
  os << line;
  for (const LayerReport& l : r.layers) {
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
      std::snprintf(line, sizeof line, "  %-14s %9.4f %13.3f %11.3f %10.2f %10.4f\n",
                    kStageNames[i], t * 1e3, l.mean_bytes(i) / 1e6, l.mean_flops(i) / 1e9,
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
      const BitsCheck& b = l.bits;
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
  if (r.check) os << (r.check_passed() ? "check PASSED\n" : "check FAILED\n");
  if (r.check_bits) os << (r.bits_passed() ? "bits PASSED\n" : "bits FAILED\n");
}

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

inline void write_json(std::ostream& os, const Report& r) {
  char num[64];
  auto n = [&](double v) {
    std::snprintf(num, sizeof num, "%.9g", v);
    return std::string(num);
  };
  os << "{\n  \"trace\": " << json_string(r.trace) << ",\n  \"model\": " << json_string(r.model)
     << ",\n  \"dtype\": " << json_string(r.dtype) << ",\n  \"device\": " << json_string(r.device)
     << ",\n  \"shape\": {\"experts\": " << r.shape.experts << ", \"top_k\": " << r.shape.top_k
     << ", \"hidden\": " << r.shape.hidden << ", \"ffn\": " << r.shape.ffn
     << ", \"reduce\": " << r.shape.reduce << "},\n  \"tokens\": " << r.tokens
     << ",\n  \"batch\": " << r.batch
     << ",\n  \"batch_invariant\": " << (r.batch_invariant ? "true" : "false")
     << ",\n  \"layers\": [";
  for (std::size_t li = 0; li < r.layers.size(); ++li) {
    const LayerReport& l = r.layers[li];
    os << (li ? ",\n" : "\n") << "    {\"layer\": " << l.index
       << ", \"load\": {\"busiest_over_mean\": " << n(l.load.busiest_over_mean)
       << ", \"max_load\": " << l.load.max_load << ", \"mean_load\": " << n(l.load.mean_load)
       << ", \"empty_experts\": " << l.load.empty_experts
       << "},\n     \"tiles\": {\"tiles\": " << l.tiles << ", \"rows\": " << l.rows_in_tiles
       << ", \"routed_rows\": " << l.routed_rows << ", \"fill\": " << n(l.tile_fill())
       << "},\n     \"stages\": {";
    for (int i = 0; i < num_stages; ++i) {
      const double t = l.median_s(i);
      os << (i ? ", " : "") << json_string(kStageNames[i]) << ": {\"median_ms\": " << n(t * 1e3)
         << ", \"bytes\": " << n(l.mean_bytes(i)) << ", \"flops\": " << n(l.mean_flops(i))
         << ", \"gb_per_s\": " << n(t > 0 ? l.mean_bytes(i) / t / 1e9 : 0)
         << ", \"tflop_per_s\": " << n(t > 0 ? l.mean_flops(i) / t / 1e12 : 0) << "}";
    }
    os << "}";
    if (r.check)
      os << ",\n     \"check\": {\"max_rel_err\": " << n(l.max_rel_err)
         << ", \"tolerance\": " << n(l.tolerance) << ", \"tokens\": " << l.checked_tokens
         << ", \"passed\": " << (l.check_passed() ? "true" : "false") << "}";
    if (r.check_bits)
      os << ",\n     \"bits\": {\"values\": " << l.bits.values
         << ", \"run_to_run_differing\": " << l.bits.run_to_run
         << ", \"tokens_alone\": " << l.bits.tokens_alone
         << ", \"alone_differing\": " << l.bits.alone_differing
         << ", \"passed\": " << (l.bits.passed() ? "true" : "false") << "}";
    os << "}";
  }
  os << "\n  ]";
  if (r.check) os << ",\n  \"check_passed\": " << (r.check_passed() ? "true" : "false");
  if (r.check_bits) os << ",\n  \"bits_passed\": " << (r.bits_passed() ? "true" : "false");
  os << "\n}\n";
}

}  // namespace Driver
}  // namespace KokkosMoE

#endif
