// SPDX-License-Identifier: BSD-3-Clause
// kokkos-moe-trace: inspect, validate and synthesise routing traces
// (docs/trace-format.md).
//
// Exit codes: 0 success, 1 invalid trace or I/O failure, 2 bad command line.
#include <KokkosMoE/KokkosMoE_Trace.hpp>
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include "CommandLine.hpp"
#include "ModelPresets.hpp"
#include "ReplayReport.hpp"
#include "TextOutput.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace KokkosMoE;
using namespace KokkosMoE::Driver;

const char* const kMainUsage =
    "usage: kokkos-moe-trace <command> [options]\n"
    "\n"
    "commands:\n"
    "  info TRACE.h5       attributes and per-layer expert load of a trace\n"
    "  validate TRACE.h5   check a trace against the format (exit 0 valid, 1 invalid)\n"
    "  synth --out FILE    write a synthetic trace\n"
    "\n"
    "'kokkos-moe-trace <command> --help' describes each command.\n";

#define KOKKOSMOE_READER_USAGE \
  "\n" \
  "  --reader isolated    read in a child process (default): HDF5 crashing or hanging\n" \
  "                       on a corrupt file is reported as an error\n" \
  "  --reader in-process  read in this process\n"

const char* const kInfoUsage =
    "usage: kokkos-moe-trace info [--reader isolated|in-process] TRACE.h5\n"
    "\n"
    "Prints the root attributes of a routing trace and, per layer, the number of\n"
    "tokens, the busiest expert's load over the mean load, the largest load and\n"
    "the number of experts that received no token; then the median over layers\n"
    "of busiest/mean. Text from the file is escaped and cut at 120 characters.\n"
    "Exit 1 when the trace is invalid.\n" KOKKOSMOE_READER_USAGE;

const char* const kValidateUsage =
    "usage: kokkos-moe-trace validate [--reader isolated|in-process] TRACE.h5\n"
    "\n"
    "Reads the whole trace and checks every rule of the format. Prints\n"
    "'OK: <file>: <layers> layers, <T> tokens, E=<E>, k=<k>' and exits 0 when\n"
    "valid; otherwise prints one line 'error: <message>' on stderr, exits "
    "1.\n" KOKKOSMOE_READER_USAGE;

const char* const kSynthUsage =
    "usage: kokkos-moe-trace synth --out FILE [options]\n"
    "\n"
    "Writes a synthetic routing trace: each token draws top-k distinct experts\n"
    "from the chosen popularity distribution; deterministic for a given seed.\n"
    "\n"
    "options:\n"
    "  --out FILE         output trace (required)\n"
    "  --preset NAME      fills model, E, k, H, F: mixtral-8x7b (8, 2, 4096, 14336),\n"
    "                     qwen2-57b (64, 8, 3584, 2560), deepseek-v3 (256, 8, 7168, 2048),\n"
    "                     gpt-oss-20b (32, 4, 2880, 2880); explicit options override it\n"
    "  --model NAME       model name stored in the trace (default: synthetic)\n"
    "  --experts E        experts per layer (default 8)\n"
    "  --top-k K          experts per token (default 2)\n"
    "  --hidden H         model width, 0 when unknown (default 0)\n"
    "  --ffn F            expert intermediate width, 0 when unknown (default 0)\n"
    "  --tokens T         tokens (default 1024)\n"
    "  --layers L         layers, numbered 0..L-1 (default 1)\n"
    "  --dist D           uniform | zipf | loads (default uniform; loads when --loads is given)\n"
    "  --zipf-s S         zipf exponent, expert of rank r weighs 1/r^S (default 1)\n"
    "  --loads a,b,...    relative load of every expert, E entries (for --dist loads)\n"
    "  --seed N           random seed (default 1)\n";

[[noreturn]] void unknown_option(const std::string& command, const std::string& arg) {
  throw UsageError("unknown option " + quoted(arg) + " (see 'kokkos-moe-trace " + command +
                   " --help')");
}

// The arguments of info and validate: one TRACE.h5 and --reader.
struct ReadArgs {
  std::string path;
  TraceReadOptions options;
};

ReadArgs read_args(Args& args, const std::string& command) {
  std::optional<std::string> path;
  ReadArgs r;
  r.options.isolate = true;  // untrusted files: see parse_reader
  while (!args.done()) {
    const std::string arg = args.next();
    if (arg == "--reader") {
      r.options.isolate = parse_reader(args.value(arg), arg);
      continue;
    }
    if (arg.rfind("-", 0) == 0 && arg.size() > 1) unknown_option(command, arg);
    if (path)
      throw UsageError(command + ": expects one trace file, got " + quoted(*path) + " and " +
                       quoted(arg));
    path = arg;
  }
  if (!path)
    throw UsageError(command + ": missing trace file (see 'kokkos-moe-trace " + command +
                     " --help')");
  r.path = *path;
  return r;
}

// ---------------------------------------------------------------- commands

int run_info(Args& args) {
  if (args.wants_help()) return std::cout << kInfoUsage, 0;
  const ReadArgs a = read_args(args, "info");
  const std::string& path = a.path;
  const Trace trace = read_trace(path, a.options);

  std::set<std::int32_t> sequences(trace.sequence_id.begin(), trace.sequence_id.end());
  // Text from the file may hold newlines or terminal escapes, and be long.
  const auto shown = [](const std::string& text) { return printable_text(text); };
  std::printf("file:         %s\n", printable_text(path, std::string::npos).c_str());
  std::printf("format:       kokkos-moe-trace, version 1\n");
  std::printf("model:        %s\n", shown(trace.model).c_str());
  std::printf("source:       %s\n", shown(trace.source).c_str());
  std::printf("note:         %s\n", shown(trace.note).c_str());
  std::printf("num_experts:  %d\n", trace.num_experts);
  std::printf("top_k:        %d\n", trace.top_k);
  std::printf("hidden_size:  %lld\n", static_cast<long long>(trace.hidden_size));
  std::printf("ffn_size:     %lld\n", static_cast<long long>(trace.ffn_size));
  std::printf("num_layers:   %zu\n", trace.layers.size());
  std::printf("num_tokens:   %lld\n", static_cast<long long>(trace.num_tokens));
  if (trace.sequence_id.empty()) std::printf("sequence_id:  absent\n");
  else std::printf("sequence_id:  present, %zu distinct sequences\n", sequences.size());

  std::printf("\n%6s %9s %13s %9s %14s\n", "layer", "tokens", "busiest/mean", "max_load",
              "empty_experts");
  std::vector<double> skew;
  for (const TraceLayer& layer : trace.layers) {
    const ExpertLoadStats s = expert_load_stats(trace, layer);
    skew.push_back(s.busiest_over_mean);
    std::printf("%6d %9lld %13.3f %9lld %14d\n", layer.index,
                static_cast<long long>(trace.num_tokens), s.busiest_over_mean,
                static_cast<long long>(s.max_load), s.empty_experts);
  }
  std::printf("\nmedian busiest/mean over %zu layers: %.3f\n", skew.size(), median(skew));
  finish_stdout();
  return 0;
}

int run_validate(Args& args) {
  if (args.wants_help()) return std::cout << kValidateUsage, 0;
  const ReadArgs a = read_args(args, "validate");
  const Trace trace = read_trace(a.path, a.options);
  std::printf("OK: %s: %zu layers, %lld tokens, E=%d, k=%d\n",
              printable_text(a.path, std::string::npos).c_str(), trace.layers.size(),
              static_cast<long long>(trace.num_tokens), trace.num_experts, trace.top_k);
  finish_stdout();
  return 0;
}

int run_synth(Args& args) {
  if (args.wants_help()) return std::cout << kSynthUsage, 0;
  // Options are collected first so that explicit values override the preset
  // whatever their order on the command line.
  std::optional<std::string> out, preset, model, dist, loads;
  std::optional<int> experts, top_k, layers;
  std::optional<std::int64_t> hidden, ffn, tokens;
  std::optional<double> zipf_s;
  std::optional<std::uint64_t> seed;
  while (!args.done()) {
    const std::string opt = args.next();
    if (opt == "--out") out = args.value(opt);
    else if (opt == "--preset") preset = args.value(opt);
    else if (opt == "--model") model = args.value(opt);
    else if (opt == "--experts") experts = parse_small_int(args.value(opt), opt, 1);
    else if (opt == "--top-k") top_k = parse_small_int(args.value(opt), opt, 1);
    else if (opt == "--hidden") hidden = parse_int(args.value(opt), opt, 0);
    else if (opt == "--ffn") ffn = parse_int(args.value(opt), opt, 0);
    else if (opt == "--tokens") tokens = parse_int(args.value(opt), opt, 0);
    else if (opt == "--layers") layers = parse_small_int(args.value(opt), opt, 1);
    else if (opt == "--dist") dist = args.value(opt);
    else if (opt == "--zipf-s") zipf_s = parse_double(args.value(opt), opt);
    else if (opt == "--loads") loads = args.value(opt);
    else if (opt == "--seed") seed = parse_seed(args.value(opt));
    else unknown_option("synth", opt);
  }
  if (!out || out->empty()) throw UsageError("synth: --out FILE is required");

  SynthOptions o;
  if (preset) {
    const Preset* p = find_preset(*preset);
    if (!p)
      throw UsageError("--preset: unknown preset " + quoted(*preset) + " (" + preset_names() + ")");
    o.model = p->name;
    o.num_experts = p->experts;
    o.top_k = p->top_k;
    o.hidden_size = p->hidden;
    o.ffn_size = p->ffn;
  }
  if (model) o.model = *model;
  if (experts) o.num_experts = *experts;
  if (top_k) o.top_k = *top_k;
  if (hidden) o.hidden_size = *hidden;
  if (ffn) o.ffn_size = *ffn;
  if (tokens) o.num_tokens = *tokens;
  if (layers) o.num_layers = *layers;
  if (seed) o.seed = *seed;

  const std::string d = dist.value_or(loads ? "loads" : "uniform");
  if (d == "uniform") o.distribution = SynthDistribution::uniform;
  else if (d == "zipf") o.distribution = SynthDistribution::zipf;
  else if (d == "loads") o.distribution = SynthDistribution::loads;
  else throw UsageError("--dist: unknown distribution " + quoted(d) + " (uniform, zipf, loads)");
  if (zipf_s && o.distribution != SynthDistribution::zipf)
    throw UsageError("--zipf-s only applies to --dist zipf");
  if (zipf_s) {
    if (*zipf_s < 0) throw UsageError("--zipf-s: must be >= 0");
    o.zipf_exponent = *zipf_s;
  }
  if (o.distribution == SynthDistribution::loads) {
    if (!loads) throw UsageError("--dist loads needs --loads a,b,...");
    o.loads = parse_list(*loads, "--loads");
  } else if (loads) {
    throw UsageError("--loads only applies to --dist loads");
  }
  if (o.top_k > o.num_experts)
    throw UsageError("--top-k " + std::to_string(o.top_k) + " exceeds the number of experts " +
                     std::to_string(o.num_experts));

  Trace trace;
  try {
    trace = synth_trace(o);
  } catch (const std::invalid_argument& e) {  // option combinations synth_trace refuses
    throw UsageError(e.what());
  }
  write_trace(*out, trace);
  std::printf("wrote %s: %zu layers, %lld tokens, E=%d, k=%d\n", out->c_str(), trace.layers.size(),
              static_cast<long long>(trace.num_tokens), trace.num_experts, trace.top_k);
  finish_stdout();
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) throw UsageError("missing command (info, validate, synth; see --help)");
  const std::string command = argv[1];
  Args args(argc, argv, 2);
  if (command == "--help" || command == "-h" || command == "help")
    return std::cout << kMainUsage, 0;
  if (command == "info") return run_info(args);
  if (command == "validate") return run_validate(args);
  if (command == "synth") return run_synth(args);
  throw UsageError("unknown command " + quoted(command) + " (info, validate, synth; see --help)");
}

}  // namespace

int main(int argc, char** argv) {
  // Every failure ends as one line on stderr and an exit code, never a crash.
  try {
    return run(argc, argv);
  } catch (...) {
    return report_current_exception(std::cerr);
  }
}
