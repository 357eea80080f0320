// SPDX-License-Identifier: BSD-3-Clause
// kokkosmoe_fuzz: a bounded, seeded fuzz run of the drivers. It writes trace
// files (valid, malformed in one known way, or with damaged bytes) and
// command lines (valid, with one known defect, or random mixtures) into a
// scratch directory, runs kokkos-moe-trace and kokkos-moe-replay on them as
// processes, a few at a time, each with a time limit, and checks how each
// run ended (FuzzRun.hpp, judge): a valid input succeeds; any other ends by
// itself, with an exit code in 1..127, no signal, no sanitizer report and
// one line "error: ..." on stderr. Prints each failure with a command that
// reproduces it, then the case count, failures and time.
//
// Exit code: 0 every case as expected, 1 a case failed, 2 bad command line.
#include "FuzzArgs.hpp"
#include "FuzzCommon.hpp"
#include "FuzzRun.hpp"
#include "FuzzTraceFiles.hpp"

#include <hdf5.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using namespace KokkosMoE::Fuzz;

const char* const kUsage =
    "usage: kokkosmoe_fuzz --trace-exe PATH --replay-exe PATH [options]\n"
    "  --seed N        seed of the whole run (default 1): case i is the same for a seed\n"
    "  --cases N       cases (default 1200)\n"
    "  --case I        run only case I (with --keep: to look at its files)\n"
    "  --only KIND     only cases of one kind: trace-file, trace-args, replay-args,\n"
    "                  mixed-args\n"
    "  --jobs N        cases run at a time (default: $JOBS, else 2)\n"
    "  --timeout S     seconds a case may run before it is killed and failed (default 60)\n"
    "  --dir DIR       where the scratch directory is made (default: $TMPDIR, else /tmp);\n"
    "                  it is removed at the end, unless --keep; when a case failed, it\n"
    "                  keeps the failed cases' files and the base traces\n"
    "  --keep          keep the scratch directory whole\n"
    "  --clean         remove the scratch directory even when a case failed\n"
    "  --show N        failures printed in full (default 40; all are counted)\n"
    "  --verbose       print every case: command, exit code, time\n"
    "  --ep-built      kokkos-moe-replay was built with MPI (--ep is an option there)\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string trace_exe, replay_exe, dir, only;
  std::uint64_t seed = 1;
  int cases = 1200, only_case = -1, jobs = 2, show = 40;
  double timeout = 60;
  bool keep = false, clean = false, ep_built = false, verbose = false;
};

long long to_int(const std::string& text, const std::string& name) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < 0)
    throw UsageError(name + ": '" + text + "' is not a non-negative integer");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  if (const char* jobs = std::getenv("JOBS"); jobs && *jobs)
    o.jobs = static_cast<int>(to_int(jobs, "JOBS"));
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--trace-exe") o.trace_exe = value();
    else if (a == "--replay-exe") o.replay_exe = value();
    else if (a == "--seed") o.seed = static_cast<std::uint64_t>(to_int(value(), a));
    else if (a == "--cases") o.cases = static_cast<int>(to_int(value(), a));
    else if (a == "--case") o.only_case = static_cast<int>(to_int(value(), a));
    else if (a == "--only") o.only = value();
    else if (a == "--jobs") o.jobs = static_cast<int>(to_int(value(), a));
    else if (a == "--timeout") o.timeout = static_cast<double>(to_int(value(), a));
    else if (a == "--dir") o.dir = value();
    else if (a == "--keep") o.keep = true;
    else if (a == "--clean") o.clean = true;
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--show") o.show = static_cast<int>(to_int(value(), a));
    else if (a == "--ep-built") o.ep_built = true;
    else throw UsageError("unknown option '" + a + "'");
  }
  if (o.trace_exe.empty() || o.replay_exe.empty())
    throw UsageError("--trace-exe and --replay-exe are required");
  if (!o.only.empty() && o.only != "trace-file" && o.only != "trace-args" &&
      o.only != "replay-args" && o.only != "mixed-args")
    throw UsageError("--only: unknown kind '" + o.only + "'");
  if (o.jobs < 1) o.jobs = 1;
  // The cases run in the scratch directory.
  o.trace_exe = std::filesystem::absolute(o.trace_exe).string();
  o.replay_exe = std::filesystem::absolute(o.replay_exe).string();
  return o;
}

// The drivers' environment: one OpenMP thread each (cases run side by
// side), reads that HDF5 makes loop forever cut off by the isolated reader
// after 5 s (a valid read of these files takes a fraction of a second), and the sanitizers'
// settings of scripts/test.sh with an allocation limit, so that absurd sizes fail at once instead
// of taking the machine's memory (ASan's warning about them is not counted as a line of the driver:
// without_allocation_warnings).
void set_environment(double timeout) {
  ::setenv("OMP_NUM_THREADS", "1", 1);
  ::setenv("OMP_PROC_BIND", "false", 1);
  const int read_limit = std::max(1, std::min(5, static_cast<int>(timeout / 4)));
  ::setenv("KOKKOSMOE_TRACE_TIMEOUT", std::to_string(read_limit).c_str(), 1);
  // Each setting appended unless already there (the last one counts).
  const auto append = [](const char* name, const std::vector<std::string>& settings) {
    const char* old = std::getenv(name);
    std::string value = old ? old : "";
    for (const std::string& s : settings)
      if ((":" + value + ":").find(":" + s + ":") == std::string::npos)
        value += (value.empty() ? "" : ":") + s;
    ::setenv(name, value.c_str(), 1);
  };
  append("ASAN_OPTIONS", {"detect_leaks=1", "abort_on_error=1", "allocator_may_return_null=1",
                          "max_allocation_size_mb=1024"});
  append("UBSAN_OPTIONS", {"print_stacktrace=1", "halt_on_error=1"});
}

std::string environment_prefix() {
  std::string s;
  for (const char* name : {"OMP_NUM_THREADS", "OMP_PROC_BIND", "KOKKOSMOE_TRACE_TIMEOUT",
                           "ASAN_OPTIONS", "UBSAN_OPTIONS"})
    if (const char* v = std::getenv(name)) s += std::string(name) + "=" + v + " ";
  return s;
}

// The setup: files that are not traces, and two valid traces made by
// kokkos-moe-trace synth (itself a case that must succeed).
Context setup(const Options& o, const std::string& dir) {
  Context ctx;
  ctx.trace_exe = o.trace_exe;
  ctx.replay_exe = o.replay_exe;
  ctx.dir = dir;
  ctx.mixtral = dir + "/base-mixtral.h5";
  ctx.custom = dir + "/base-custom.h5";
  ctx.text_file = dir + "/base-text.h5";
  ctx.empty_file = dir + "/base-empty.h5";
  ctx.directory = dir + "/base-directory.h5";
  ctx.missing = dir + "/no-such-file.h5";
  std::ofstream(ctx.text_file) << "not an HDF5 file\n";
  std::ofstream(ctx.empty_file).flush();
  std::filesystem::create_directories(ctx.directory);

  std::vector<Case> synth(2);
  synth[0].argv = {o.trace_exe, "synth",    "--preset", "mixtral-8x7b", "--tokens",
                   "64",        "--layers", "2",        "--dist",       "zipf",
                   "--seed",    "3",        "--out",    ctx.mixtral};
  synth[1].argv = {o.trace_exe, "synth", "--model",  "custom-moe", "--experts", "6",
                   "--top-k",   "3",     "--hidden", "32",         "--ffn",     "24",
                   "--tokens",  "40",    "--layers", "3",          "--out",     ctx.custom};
  for (Case& c : synth) {
    c.id = -1 - static_cast<int>(&c - synth.data());
    c.expect = Expect::success;
    c.success_stdout = "wrote ";
  }
  std::string failed;
  run_cases(synth, o.jobs, o.timeout, dir, [&](std::size_t i, Outcome&& out) {
    for (const std::string& p : judge(synth[i], out))
      failed += "\n  " + shell_command(synth[i].argv) + ": " + p + ": " + shown(out.err, 300);
  });
  if (!failed.empty()) throw std::runtime_error("setup: kokkos-moe-trace synth failed:" + failed);
  return ctx;
}

Case make_case(const Options& o, const Context& ctx, int id) {
  Rng rng(o.seed, static_cast<std::uint64_t>(id));
  std::string kind = o.only;
  if (kind.empty()) {
    const std::uint64_t r = rng.below(100);
    kind = r < 40 ? "trace-file" : r < 60 ? "trace-args" : r < 85 ? "replay-args" : "mixed-args";
  }
  Case c = kind == "trace-file"    ? trace_file_case(rng, id, ctx)
           : kind == "trace-args"  ? trace_args_case(rng, id, ctx)
           : kind == "replay-args" ? replay_args_case(rng, id, ctx, o.ep_built)
                                   : mixed_args_case(rng, id, ctx);
  c.id = id;
  c.category = kind;
  return c;
}

const char* expect_name(Expect e) {
  return e == Expect::success ? "valid" : e == Expect::failure ? "malformed" : "either";
}

int run(const Options& o) {
  const auto start = std::chrono::steady_clock::now();
  std::string parent = o.dir;
  if (parent.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    parent = tmp && *tmp ? tmp : "/tmp";
  }
  std::filesystem::create_directories(parent);
  std::string pattern = std::filesystem::absolute(parent).string() + "/kokkosmoe-fuzz-XXXXXX";
  if (!::mkdtemp(&pattern[0]))
    throw std::runtime_error("cannot make a scratch directory in " + parent);
  const std::string dir = pattern;
  set_environment(o.timeout);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);

  Context ctx;
  try {
    ctx = setup(o, dir);
  } catch (...) {
    std::error_code ec;
    if (!o.keep) std::filesystem::remove_all(dir, ec);
    throw;
  }
  std::vector<Case> cases;
  if (o.only_case >= 0) cases.push_back(make_case(o, ctx, o.only_case));
  else
    for (int id = 0; id < o.cases; ++id) cases.push_back(make_case(o, ctx, id));

  // Counts per kind and expectation; failures grouped by their first problem.
  std::map<std::string, int> counts, outcomes;
  std::map<std::string, int> groups;
  int failures = 0, shown_failures = 0;
  std::vector<int> failed_ids;
  double slowest = 0;
  int slowest_id = -1;
  run_cases(cases, o.jobs, o.timeout, dir, [&](std::size_t i, Outcome&& out) {
    const Case& c = cases[i];
    ++counts[c.category + " " + expect_name(c.expect)];
    ++outcomes[out.timed_out        ? "timed out"
               : out.signal         ? "signal"
               : out.exit_code == 0 ? "exit 0"
                                    : "exit " + std::to_string(out.exit_code)];
    if (out.seconds > slowest) slowest = out.seconds, slowest_id = c.id;
    const std::vector<std::string> problems = judge(c, out);
    if (o.verbose)
      std::cout << "case " << c.id << " (" << c.category << ", " << expect_name(c.expect)
                << "): " << shown(c.what, 200) << "\n  " << shell_command(c.argv) << "\n  -> "
                << (out.timed_out ? "timed out"
                    : out.signal  ? "signal " + std::to_string(out.signal)
                                  : "exit " + std::to_string(out.exit_code))
                << " in " << out.seconds << " s: " << shown(out.err, 300) << "\n";
    if (problems.empty()) return;
    ++failures;
    failed_ids.push_back(c.id);
    ++groups[c.category + ": " + problems.front()];
    if (shown_failures++ >= o.show) return;
    std::cout << "FAIL case " << c.id << " (" << c.category << ", " << expect_name(c.expect)
              << "): " << shown(c.what, 200) << "\n";
    for (const std::string& p : problems) std::cout << "  problem: " << p << "\n";
    std::cout << "  command: " << environment_prefix() << shell_command(c.argv) << "\n";
    std::cout << "  stderr:  " << shown(out.err, 600) << "\n";
    std::cout << "  again:   kokkosmoe_fuzz --trace-exe ... --replay-exe ... --seed " << o.seed
              << " --case " << c.id << " --keep\n";
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << "cases by kind:";
  for (const auto& [k, n] : counts) std::cout << " " << k << " " << n << ";";
  std::cout << "\noutcomes:";
  for (const auto& [k, n] : outcomes) std::cout << " " << k << ": " << n << ";";
  std::cout << "\nslowest case: " << slowest_id << ", " << slowest << " s\n";
  if (failures > 0) {
    std::cout << "failures by kind and first problem:\n";
    for (const auto& [k, n] : groups) std::cout << "  " << n << " x " << k << "\n";
  }
  char summary[256];
  // "fuzz: N cases in ..." for a whole run, "fuzz: N <kind> cases in ..." for part of one.
  std::snprintf(summary, sizeof summary,
                "fuzz: %zu %s%scases in %.1f s (seed %llu, %d jobs, %.0f s per case at most): %d "
                "failed",
                cases.size(), o.only.c_str(), o.only.empty() ? "" : " ", seconds,
                static_cast<unsigned long long>(o.seed), o.jobs, o.timeout, failures);
  std::cout << summary << "\n";
  if (o.keep) {
    std::cout << "scratch directory kept: " << dir << "\n";
  } else if (failures > 0 && !o.clean) {
    // The failed cases' files (case-<id>.*) and the base files.
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("case-", 0) != 0) continue;
      const int id = std::atoi(name.c_str() + 5);
      if (std::find(failed_ids.begin(), failed_ids.end(), id) == failed_ids.end())
        std::filesystem::remove_all(entry.path());
    }
    std::cout << "the failed cases' files are in " << dir << "\n";
  } else {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return failures > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
