// SPDX-License-Identifier: BSD-3-Clause
// Routing traces: which experts each token chose, per MoE layer, as recorded
// from a model (HDF5 file format version 1, see docs/trace-format.md).
//
// This component is plain C++ with HDF5 behind it (KokkosMoE::trace); the
// layer itself (KokkosMoE::moe) never depends on it.
#ifndef KOKKOSMOE_TRACE_HPP
#define KOKKOSMOE_TRACE_HPP

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
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
  static constexpr int max_experts = 1 << 20;         // also keeps validation's per-row marks small
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
  std::vector<TraceLayer> layers;         // sorted by index
  std::vector<std::int32_t> sequence_id;  // empty when the file has none
};

struct TraceReadOptions {
  // Layer indices to read (the model's numbering); empty reads all.
  std::vector<int> layers;
  // Read only the first max_tokens tokens of every layer; <= 0 reads all.
  std::int64_t max_tokens = 0;
  // Which reader runs HDF5.
  //
  // false (the default): the in-process reader. HDF5 runs in the calling
  // process and thread, like any other library call. This is what a library
  // embedded in an application must do by default: forking a process that
  // holds MPI state, a CUDA context or other threads is unsafe (the child
  // inherits locks held by threads that do not exist in it, and MPI and CUDA
  // do not support fork), and costs a copy-on-write copy of a large address
  // space. Every violation of the format that HDF5 reports as an error is a
  // TraceError here too; but HDF5 1.10 crashes (SIGSEGV, heap corruption) or
  // loops forever on some corrupt files, and in this reader that takes the
  // caller with it.
  //
  // true: the isolated reader (POSIX only; elsewhere the in-process one).
  // HDF5 runs in a forked child process that sends the trace back through a
  // pipe, so that HDF5 crashing on a corrupt file becomes a TraceError
  // ("HDF5 failed while reading the file (signal N)") and a read that does
  // not end within a time limit is stopped. For programs that read files
  // they do not trust and have no threads, MPI or GPU context yet when they
  // read, e.g. command-line tools (the drivers use it unless given
  // --reader in-process). KOKKOSMOE_TRACE_NO_FORK=1 makes it read in
  // process anyway (e.g. under a debugger); KOKKOSMOE_TRACE_TIMEOUT=<s> sets
  // the time limit (default a minute plus a second per 8 MiB of file; 0:
  // none). See docs/trace-format.md, "Readers".
  bool isolate = false;
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

// Text taken from a file (a trace's string attributes, group names, HDF5's
// reasons), made fit to be quoted in a one-line message or printed in a
// report: control characters are escaped (\n, \t, \r, \x1b, ...), and so
// are a backslash (\\), bytes that are not UTF-8 (\xff) and the Unicode
// characters a terminal acts on instead of showing them (C1 controls,
// line and paragraph separators, bidirectional overrides: \u009b, \u202e);
// text longer than max_chars characters (after escaping) is cut there and
// "…(N bytes)" appended, N its size in bytes. Every TraceError quotes
// file content through it, and the drivers print `model`, `source` and
// `note` through it.
std::string printable_text(std::string_view text, std::size_t max_chars = 120);

// The same escapes for control characters and bytes that are not UTF-8, but
// backslashes left as they are and no cut: for a whole message that may
// quote text already made printable (the drivers' error lines).
std::string escape_controls(std::string_view text);

}  // namespace KokkosMoE

#endif
