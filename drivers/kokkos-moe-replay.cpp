// SPDX-License-Identifier: BSD-3-Clause
// kokkos-moe-replay: replays the routing of a recorded trace through the MoE
// layer (external routing) and reports speed, traffic and correctness.
//
// Exit codes: 0 success (and, with --check, error within tolerance),
// 1 check failed or run error, 2 bad command line, 3 invalid trace.
//
// --ep (builds with KokkosMoE_ENABLE_MPI): the same replay on the ranks of
// an MPI job, the experts and each batch's tokens split across them
// (ReplayExpertParallel.hpp).
#include <KokkosMoE/KokkosMoE_ErrorText.hpp>
#include <KokkosMoE/KokkosMoE_Layer.hpp>
#include <KokkosMoE/KokkosMoE_Trace.hpp>
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>
#include <KokkosMoE/KokkosMoE_WorkGraph.hpp>

#include "CommandLine.hpp"
#include "DeterminismCheck.hpp"
#include "ErrorModel.hpp"
#include "ReferenceCheck.hpp"
#include "ModelPresets.hpp"
#include "ReplayInputs.hpp"
#include "ReplayReport.hpp"
#ifdef KOKKOSMOE_REPLAY_EXPERT_PARALLEL
#include "MpiRuntime.hpp"
#include "ReplayExpertParallel.hpp"
#endif

#include <Kokkos_Core.hpp>
#include <Kokkos_Timer.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace KokkosMoE;
using namespace KokkosMoE::Driver;

const char* const kUsage =
    "usage: kokkos-moe-replay TRACE.h5 [options]\n"
    "  --layers all|L[,L...]  layers to replay, by the model's numbering (default all)\n"
    "  --tokens N             batch size: tokens per forward (default: all, at most 4096)\n"
    "  --max-tokens N         replay only the first N tokens of the trace\n"
    "  --model NAME           shape preset: " /* names appended at run time */;
const char* const kUsageTail =
    "\n"
    "  --hidden H, --ffn F    model width and expert width (override trace and preset)\n"
    "  --reduce R             divide H and F by R (default on host backends: just enough\n"
    "                         to keep a forward small; 1 on GPUs)\n"
    "  --dtype bf16|fp16|fp32|fp8  storage type of weights and activations (default\n"
    "                         bf16; fp8: e4m3 expert weights with 128x128 block scales,\n"
    "                         bf16 activations)\n"
    "  --repeat N             timed runs per batch (default 20 on GPUs, 3 on host)\n"
    "  --warmup N             untimed runs first (default 3 on GPUs, 1 on host)\n"
    "  --seed N               seed of the hidden states and weights (default 1)\n"
    "  --check                compare a sample of tokens with the float64 reference\n"
    "  --batch-invariant      a layer whose tokens' outputs do not depend on their batch\n"
    "                         (Config::batch_invariant)\n"
    "  --check-bits           run each batch again and up to 16 of its tokens alone: the\n"
    "                         same bits run to run, and alone where --batch-invariant\n"
    "  --json FILE            also write the report as JSON\n"
    "  --reader isolated|in-process\n"
    "                         read the trace in a child process, so that HDF5 crashing\n"
    "                         on a corrupt file is an error, not a crash (default), or in\n"
    "                         this process (the default with --ep)\n"
    "  --ep                   expert parallelism, under mpiexec -np P: the experts and each\n"
    "                         batch's tokens split over the ranks (builds with MPI only)\n"
    "  --ep-capacity N        rows a rank may receive per forward (default: the worst case)\n"
    "  --ep-gpu-aware detect|yes|no\n"
    "                         whether MPI takes device buffers (default detect)\n"
    "  --ep-transport mpi|nccl\n"
    "                         how rows travel between ranks: MPI all-to-all (default) or\n"
    "                         NCCL (CUDA builds with KokkosMoE_ENABLE_NCCL). GPU builds\n"
    "                         put each rank on the GPU of its node-local rank unless a\n"
    "                         --kokkos-device-id or --kokkos-map-device-id-by is given\n"
    "Kokkos options (--kokkos-threads=N with Kokkos 3, --kokkos-num-threads=N with\n"
    "Kokkos 4, ...) are passed to Kokkos.\n";

struct Options {
  std::string trace;
  std::vector<int> layers;  // empty: all
  std::int64_t batch = 0, max_tokens = 0, hidden = 0, ffn = 0, reduce = 0;
  std::string model, dtype = "bf16", json;
  int repeat = -1, warmup = -1;
  std::uint64_t seed = 1;
  bool check = false, check_bits = false, batch_invariant = false;
  bool isolate = true;  // --reader
  bool reader_given = false;
  bool ep = false;  // --ep
  std::int64_t ep_capacity = 0;
  std::string ep_gpu_aware = "detect";
  std::string ep_transport = "mpi";
};

Options parse(int argc, char** argv) {
  Options o;
  Args args(argc, argv, 1);
  while (!args.done()) {
    const std::string a = args.next();
    if (a == "--help" || a == "-h") throw HelpRequested();
    if (a == "--layers") {  // the last one given counts, as for every option
      const std::string v = args.value(a);
      o.layers.clear();
      if (v != "all")
        o.layers = parse_comma_list(v,
                                    [&](const std::string& l) { return parse_small_int(l, a, 0); });
    } else if (a == "--tokens") o.batch = parse_int(args.value(a), a, 1);
    else if (a == "--max-tokens") o.max_tokens = parse_int(args.value(a), a, 1);
    else if (a == "--model") o.model = args.value(a);
    else if (a == "--hidden") o.hidden = parse_int(args.value(a), a, 1);
    else if (a == "--ffn") o.ffn = parse_int(args.value(a), a, 1);
    else if (a == "--reduce") o.reduce = parse_int(args.value(a), a, 1);
    else if (a == "--dtype") o.dtype = args.value(a);
    else if (a == "--repeat") o.repeat = parse_small_int(args.value(a), a, 1);
    else if (a == "--warmup") o.warmup = parse_small_int(args.value(a), a, 0);
    else if (a == "--seed") o.seed = parse_seed(args.value(a));
    else if (a == "--check") args.no_value(a), o.check = true;
    else if (a == "--check-bits") args.no_value(a), o.check_bits = true;
    else if (a == "--batch-invariant") args.no_value(a), o.batch_invariant = true;
    else if (a == "--json") {
      o.json = args.value(a);
      if (o.json.empty()) throw UsageError("--json: needs a file name, got ''");
    } else if (a == "--reader") o.isolate = parse_reader(args.value(a), a), o.reader_given = true;
    else if (a == "--ep") args.no_value(a), o.ep = true;
    else if (a == "--ep-capacity") o.ep_capacity = parse_int(args.value(a), a, 1);
    else if (a == "--ep-gpu-aware") o.ep_gpu_aware = args.value(a);
    else if (a == "--ep-transport") o.ep_transport = args.value(a);
    else if (a.rfind("-", 0) == 0)
      throw UsageError("unknown option " + quoted(a) + " (see --help)");
    else if (o.trace.empty()) o.trace = a;
    else throw UsageError("expects one trace file, got " + quoted(o.trace) + " and " + quoted(a));
  }
  if (o.trace.empty()) throw UsageError("missing TRACE.h5 (see --help)");
  if (o.dtype != "bf16" && o.dtype != "fp16" && o.dtype != "fp32" && o.dtype != "fp8")
    throw UsageError("--dtype: " + quoted(o.dtype) + " is not one of bf16, fp16, fp32, fp8");
#ifndef KOKKOSMOE_REPLAY_EXPERT_PARALLEL
  if (o.ep)
    throw UsageError("--ep: this kokkos-moe-replay was built without MPI (KokkosMoE_ENABLE_MPI)");
#endif
  if (o.ep && o.check_bits) throw UsageError("--check-bits is not available with --ep");
  if (o.ep_gpu_aware != "detect" && o.ep_gpu_aware != "yes" && o.ep_gpu_aware != "no")
    throw UsageError("--ep-gpu-aware: " + quoted(o.ep_gpu_aware) +
                     " is not one of detect, yes, no");
  if (o.ep_transport != "mpi" && o.ep_transport != "nccl")
    throw UsageError("--ep-transport: " + quoted(o.ep_transport) + " is not one of mpi, nccl");
  // Forking an MPI process is unsafe with some transports.
  if (o.ep && !o.reader_given) o.isolate = false;
  if (!o.model.empty() && !find_preset(o.model))
    throw UsageError("--model: unknown preset " + quoted(o.model) + " (" + preset_names() + ")");
  // Found now, not after the replays: appending creates the file and
  // leaves an existing one as it is until the report replaces it.
  if (!o.json.empty() && !std::ofstream(o.json, std::ios::app))
    throw UsageError("--json: cannot write " + quoted(o.json));
  return o;
}

using Memory = Space::memory_space;
// Whether this process prints errors: not the ranks other than 0 of an --ep
// run (every rank has the same error; rank 0 says it once).
bool reports_errors = true;
constexpr bool on_host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Memory>::accessible;

// The model shape: trace attributes, then the preset, then the options.
Shape resolve_shape(const Options& o, const Trace& trace) {
  Shape s;
  s.experts = trace.num_experts;
  s.top_k = trace.top_k;
  s.hidden = trace.hidden_size;
  s.ffn = trace.ffn_size;
  const Preset* p = find_preset(o.model.empty() ? trace.model : o.model);
  if (p && !o.model.empty() && (p->experts != s.experts || p->top_k != s.top_k))
    throw UsageError("--model " + o.model + " has E=" + std::to_string(p->experts) +
                     ", k=" + std::to_string(p->top_k) + " but the trace has E=" +
                     std::to_string(s.experts) + ", k=" + std::to_string(s.top_k));
  if (p && (s.hidden == 0 || !o.model.empty())) s.hidden = p->hidden;
  if (p && (s.ffn == 0 || !o.model.empty())) s.ffn = p->ffn;
  if (o.hidden) s.hidden = o.hidden;
  if (o.ffn) s.ffn = o.ffn;
  if (s.hidden <= 0 || s.ffn <= 0)
    throw UsageError("the trace does not give the model shape and no preset matches '" +
                     printable_text(trace.model) +
                     "': pass --hidden H and --ffn F (or --model NAME)");
  // Host backends run a reduced model unless the shape was given: the full
  // models need tens of GB of weights and minutes per forward on a CPU.
  s.reduce = o.reduce ? o.reduce : 1;
  if (!o.reduce && on_host && !o.hidden && !o.ffn) {
    auto bytes = [&](std::int64_t r) { return 3.0 * s.experts * (s.hidden / r) * (s.ffn / r) * 2; };
    auto flops = [&](std::int64_t r) { return 6.0 * s.top_k * (s.hidden / r) * (s.ffn / r); };
    while (s.hidden / (2 * s.reduce) >= 16 && s.ffn / (2 * s.reduce) >= 16 &&
           (bytes(s.reduce) > 64.0 * (1 << 20) || flops(s.reduce) > 4e6))
      s.reduce *= 2;
  }
  if (s.reduce > s.hidden || s.reduce > s.ffn)
    throw UsageError("--reduce " + std::to_string(s.reduce) + " exceeds H = " +
                     std::to_string(s.hidden) + " or F = " + std::to_string(s.ffn));
  s.hidden /= s.reduce;
  s.ffn /= s.reduce;
  // Refused here with the option's name, not by the first allocation.
  Config c;
  c.num_experts = s.experts, c.top_k = s.top_k, c.hidden_size = s.hidden, c.ffn_size = s.ffn;
  c.max_tokens = 1;
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("the model shape (--hidden, --ffn or the trace): ") + e.what());
  }
  return s;
}

// Replays the first T tokens of one layer in batches of `batch` tokens.
template <class Scalar>
LayerReport replay_layer(const Options& o, const Shape& s, const Trace& trace, const TraceLayer& tl,
                         std::int64_t T, std::int64_t batch) {
  using layer_type = Layer<Space, Scalar>;
  const int k = s.top_k;

  const Config c = replay_config(s, batch, o.batch_invariant);
  const std::uint64_t seed = layer_seed(o.seed, tl.index);
  auto w = replay_weights<Scalar, Memory>(c, seed);
  typename layer_type::tokens_view x("x", batch, s.hidden), out("out", batch, s.hidden);
  typename layer_type::ids_view ids("ids", batch, k);
  typename layer_type::weights_view rw("routing_weights", batch, k);
  // On an instance whose work can be recorded as one graph (see "graph").
  const Space exec = WorkGraph<Space>::capture_instance();
  layer_type layer(c, w, exec);

  LayerReport r;
  r.index = tl.index;
  r.load = expert_load_stats(trace, tl, T);
  const ErrorModel model = replay_error_model<Scalar>(s);
  RowCheck worst{0, model.floor};
  const int repeat = o.repeat > 0 ? o.repeat : (on_host ? 3 : 20);
  const int warmup = o.warmup >= 0 ? o.warmup : (on_host ? 1 : 3);
  Kokkos::Timer timer;
  // Global fences: the layer runs on an instance of its own.
  auto seconds = [&](auto&& f) {
    Kokkos::fence();
    timer.reset();
    f();
    Kokkos::fence();
    return timer.seconds();
  };

  for (std::int64_t t0 = 0; t0 < T; t0 += batch) {
    const std::int64_t n = std::min(batch, T - t0);
    // The batch's routing, rows t0..t0+n of the trace, and fresh hidden states.
    const auto hid = copy_routing(tl, t0, n, ids, rw);
    layer.check_routing(ids, rw, n);
    fill_hidden_states(x, seed, t0);
    const Traffic traffic = count_traffic<Scalar>(s, hid, n);

    // The forward recorded once (after a first run sized its buffers) and
    // replayed: one launch instead of one per kernel. Its output is the one
    // --check compares.
    layer.forward(x, ids, rw, out, n);
    const WorkGraph<Space> graph(exec, [&, n] { layer.forward(x, ids, rw, out, n); });
    for (int i = 0; i < warmup + repeat; ++i) {
      StageTimes st;
      st.dispatch = seconds([&] { layer.dispatch(ids, n); });
      st.gate_up = seconds([&] { layer.gate_up(x, n); });
      st.down_combine = seconds([&] { layer.down_combine(rw, out, n); });
      st.total = seconds([&] { layer.forward(x, ids, rw, out, n); });
      st.graph = seconds([&] { graph.launch(); });
      if (i >= warmup) r.add(st, traffic);
    }
    if (layer.invalid_ids() != 0)
      throw std::runtime_error("routing ids outside [0, E) reached the layer");
    {
      // The last dispatch's tiles: the plan's count of tiles in use.
      const auto& plan = layer.plan();
      int used = 0;
      Kokkos::deep_copy(used, Kokkos::subview(plan.tile_offsets, c.num_experts));
      r.add_tiles(used, plan.tile_rows, n * k);
    }

    const std::vector<int> sample = check_sample(n);
    if (o.check) {
      const auto host_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
      worst = check_against_reference(w, x, ids, rw, host_out, sample,
                                      layer.quantizes_activations(), model, worst);
      r.checked_tokens += std::int64_t(sample.size());
    }
    // Last: it leaves the layer after a batch of one.
    if (o.check_bits) r.bits.add(check_determinism(layer, graph, x, ids, rw, out, n, sample));
  }
  r.max_rel_err = worst.error;
  r.tolerance = worst.tolerance;
  return r;
}

// Tokens replayed and the batch size, from the options and the trace.
std::int64_t replayed_tokens(const Options& o, const Trace& trace) {
  return o.max_tokens ? std::min(o.max_tokens, trace.num_tokens) : trace.num_tokens;
}
std::int64_t batch_size(const Options& o, std::int64_t tokens) {
  return std::max<std::int64_t>(1, o.batch ? std::min(o.batch, tokens)
                                           : std::min<std::int64_t>(tokens, 4096));
}

// The report's heading: what is replayed, how and where.
template <class Scalar>
Report report_heading(const Options& o, const Trace& trace, const Shape& s) {
  Report report;
  report.trace = o.trace;
  report.model = printable_text(o.model.empty() ? trace.model : o.model);
  report.dtype = ScalarTraits<Scalar>::name;
  report.device = Space::name();
  report.shape = s;
  report.check = o.check;
  report.check_bits = o.check_bits;
  report.batch_invariant = o.batch_invariant;
  report.tokens = replayed_tokens(o, trace);
  report.batch = batch_size(o, report.tokens);
  return report;
}

#ifdef KOKKOSMOE_REPLAY_EXPERT_PARALLEL
template <class Scalar>
int replay_ep(const Options& o, const Trace& trace, const Shape& s) {
  const Report report = report_heading<Scalar>(o, trace, s);
  ExpertParallelRun run;
  run.json = o.json;
  run.tokens = report.tokens;
  run.batch = report.batch;
  run.repeat = o.repeat > 0 ? o.repeat : (on_host ? 3 : 20);
  run.warmup = o.warmup >= 0 ? o.warmup : (on_host ? 1 : 3);
  run.seed = o.seed;
  run.check = o.check;
  run.batch_invariant = o.batch_invariant;
  run.capacity = o.ep_capacity;
  using GpuAware = ExpertParallelOptions::GpuAware;
  run.gpu_aware = o.ep_gpu_aware == "yes"  ? GpuAware::yes
                  : o.ep_gpu_aware == "no" ? GpuAware::no
                                           : GpuAware::detect;
  run.transport = o.ep_transport == "nccl" ? ExpertParallelOptions::Transport::nccl
                                           : ExpertParallelOptions::Transport::mpi;
  return replay_expert_parallel<Scalar>(run, trace, report);
}
#endif

template <class Scalar>
int replay(const Options& o, const Trace& trace, const Shape& s) {
#ifdef KOKKOSMOE_REPLAY_EXPERT_PARALLEL
  if (o.ep) return replay_ep<Scalar>(o, trace, s);
#endif
  Report report = report_heading<Scalar>(o, trace, s);
  for (const TraceLayer& tl : trace.layers) {
    try {
      report.layers.push_back(replay_layer<Scalar>(o, s, trace, tl, report.tokens, report.batch));
    } catch (const std::exception& e) {
      if (!is_allocation_failure(e)) throw;
      throw std::runtime_error(allocation_failure(s, report.batch, report.dtype,
                                                  weight_value_bytes<Scalar>(),
                                                  token_value_bytes<Scalar>(), tl.index, e));
    }
  }
  // A report that did not reach its file is a failed run (exit 1).
  write_report(report, o.json);
  const bool failed = (o.check && !report.check_passed()) ||
                      (o.check_bits && !report.bits_passed());
  return failed ? 1 : 0;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  TraceReadOptions ro;
  ro.layers = o.layers;
  ro.max_tokens = o.max_tokens;
  ro.isolate = o.isolate;
  Trace trace;
  try {
    trace = read_trace(o.trace, ro);
  } catch (const TraceError& e) {
    if (reports_errors) print_error(std::cerr, e.what());
    return exit_invalid_trace;
  }
  const Shape s = resolve_shape(o, trace);
  if (o.dtype == "bf16") return replay<bfloat16>(o, trace, s);
  if (o.dtype == "fp16") return replay<float16>(o, trace, s);
  if (o.dtype == "fp8") return replay<float8_e4m3>(o, trace, s);
  return replay<float>(o, trace, s);
}

}  // namespace

int main(int argc, char** argv) {
  // Kokkos' own options are checked first: Kokkos 4 and 5 abort on a
  // malformed one.
  try {
    check_kokkos_options(argc, argv);
  } catch (const UsageError& e) {
    print_error(std::cerr, e.what());
    return exit_usage;
  }
#ifdef KOKKOSMOE_REPLAY_EXPERT_PARALLEL
  // --ep: MPI before Kokkos, finalized after it.
  const MpiRuntime mpi(argc, argv);
  reports_errors = mpi.reports();
#endif
  // Kokkos takes its own --kokkos-* options out of argv first; it throws on
  // a malformed one.
  try {
    Kokkos::initialize(argc, argv);
  } catch (const std::exception& e) {
    if (reports_errors)
      print_error(std::cerr, std::string("a Kokkos option (--kokkos-*) is malformed: ") + e.what());
    return exit_usage;
  }
  int code = 1;
  try {
    code = run(argc, argv);
  } catch (const HelpRequested&) {
    if (reports_errors) std::cout << kUsage << preset_names() << kUsageTail;
    code = 0;
  } catch (...) {
#ifdef KOKKOSMOE_REPLAY_EXPERT_PARALLEL
    // An error of one rank alone (not the layer's, which every rank has).
    try {
      throw;
    } catch (const AgreedError&) {
    } catch (const UsageError&) {
    } catch (const std::exception& e) {
      if (mpi.active()) mpi.abort(one_line_message(e.what()));
    } catch (...) {
    }
#endif
    code = report_current_exception(std::cerr, reports_errors);
  }
  Kokkos::finalize();
  return code;
}
