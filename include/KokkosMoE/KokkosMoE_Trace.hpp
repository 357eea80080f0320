// Routing traces: which experts each token chose, per MoE layer, as recorded
// from a model (HDF5 file format version 1, see docs/trace-format.md).
//
// This component is plain C++ with HDF5 behind it (KokkosMoE::trace); the
// layer itself (KokkosMoE::moe) never depends on it.
#ifndef KOKKOSMOE_TRACE_HPP
#define KOKKOSMOE_TRACE_HPP

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace KokkosMoE {

// Every problem with a trace file is reported as one line naming the file,
// the layer (when one is concerned) and the problem.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a valid trace stays within (validate_trace, read_trace and
// synth_trace): beyond, a number is a corrupt attribute or a typo, which
// would otherwise surface as a failed allocation far from its cause.
struct TraceLimits {
  static constexpr int max_experts = 1 << 20;  // also keeps validation's per-row marks small
  static constexpr std::int64_t max_width = 1 << 20;  // hidden_size, ffn_size
  static constexpr std::int64_t max_layer_values = std::int64_t(1) << 30;  // tokens * top_k
  static constexpr std::int64_t max_layers = 1 << 16;
};

// One MoE layer of a trace: row-major [num_tokens, top_k] arrays.
struct TraceLayer {
  int index = 0;  // the model's layer number (the group name under /layers)
  std::vector<std::int32_t> expert_ids;
  std::vector<float> weights;
};

struct Trace {
  std::string model;
  std::string source;
  std::string note;
  int num_experts = 0;
  int top_k = 0;
  std::int64_t hidden_size = 0;  // 0 when unknown
  std::int64_t ffn_size = 0;     // 0 when unknown
  std::int64_t num_tokens = 0;
  std::vector<TraceLayer> layers;          // sorted by index
  std::vector<std::int32_t> sequence_id;   // empty when the file has none
};

struct TraceReadOptions {
  // Layer indices to read (the model's numbering); empty reads all.
  std::vector<int> layers;
  // Read only the first max_tokens tokens of every layer; <= 0 reads all.
  std::int64_t max_tokens = 0;
  // Read in a child process (POSIX only), so that HDF5 crashing or hanging
  // on a corrupt file becomes a TraceError; false reads in this process.
  bool isolate = true;
};

// Reads and validates a trace; throws TraceError on any violation of the
// format (missing or mistyped datasets/attributes, wrong shapes, ids out of
// range or repeated within a row, non-finite weights, unequal token counts,
// unreadable or truncated files, requested layers that do not exist).
Trace read_trace(const std::string& path, const TraceReadOptions& options = {});

// Writes a trace (validated first); gzip+shuffle chunked datasets.
void write_trace(const std::string& path, const Trace& trace);

// Checks the in-memory invariants of a trace; `where` names the file in the
// messages. Throws TraceError.
void validate_trace(const Trace& trace, const std::string& where);

}  // namespace KokkosMoE

#endif
