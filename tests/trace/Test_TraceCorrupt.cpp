// SPDX-License-Identifier: BSD-3-Clause
// The two readers. In-process is the default (a library must not fork an
// application that holds MPI state or a CUDA context); the isolated reader
// reads in a child process: a corrupt file gives a TraceError naming it,
// never a crash or a hang of the caller (HDF5 1.10 itself crashes or loops
// on some damaged files), and an isolated read returns exactly what an
// in-process read does.
#include <KokkosMoE/KokkosMoE_Trace.hpp>
#include <KokkosMoE/KokkosMoE_TraceSynth.hpp>

#include "Test_TraceHelpers.hpp"
// The private entry point, to make the child crash, exit or hang on purpose.
#include "../../src/trace/KokkosMoE_TraceIsolation.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace KokkosMoE;
using namespace KokkosMoE::Test;

// A valid trace with every field set: 3 layers, E = 8, k = 2, sequence ids.
Trace small_trace(std::int64_t tokens) {
  SynthOptions o;
  o.model = "isolation";
  o.num_experts = 8;
  o.top_k = 2;
  o.hidden_size = 32;
  o.ffn_size = 64;
  o.num_tokens = tokens;
  o.num_layers = 3;
  o.seed = 5;
  Trace t = synth_trace(o);
  t.source = "unit test";
  t.note = "isolated read";
  for (std::int64_t i = 0; i < tokens; ++i)
    t.sequence_id.push_back(static_cast<std::int32_t>(i / 16));
  return t;
}


TraceReadOptions in_process(TraceReadOptions o = {}) {
  o.isolate = false;
  return o;
}

TraceReadOptions isolated(TraceReadOptions o = {}) {
  o.isolate = true;
  return o;
}

// Forks of this process so far (a pthread_atfork handler counts them).
std::atomic<int> forks{0};
int fork_count() {
  static const bool registered = [] {
    return ::pthread_atfork([] { ++forks; }, nullptr, nullptr) == 0;
  }();
  EXPECT_TRUE(registered);
  return forks.load();
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The message of the TraceError `f` throws ("" and a failure when none).
std::string trace_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no TraceError thrown";
  return "";
}

// Every child has been reaped: none left running, no zombie.
void expect_no_children() {
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// ------------------------------------------------------------ which reader

TEST(TraceReaders, DefaultReadsInProcess) {
  // A library embedded in MPI and CUDA applications must not fork unless
  // asked to.
  EXPECT_FALSE(TraceReadOptions{}.isolate);
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  write_trace(path, small_trace(8));
  const int before = fork_count();
  EXPECT_EQ(read_trace(path).num_tokens, 8);
  TraceReadOptions some;
  some.layers = {1};
  EXPECT_EQ(read_trace(path, some).layers.size(), 1u);
  EXPECT_EQ(fork_count(), before) << "the default reader forked";
  // A default read's errors come from this process too.
  expect_trace_error([&] { read_trace(dir.path("missing.h5")); }, {"no such file"});
  EXPECT_EQ(fork_count(), before);

  EXPECT_EQ(read_trace(path, isolated()).num_tokens, 8);
  EXPECT_EQ(fork_count(), before + 1) << "the isolated reader did not fork";
  expect_no_children();
}

TEST(TraceReaders, NoForkVariableKeepsIsolatedReadInProcess) {
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  write_trace(path, small_trace(8));
  const ScopedEnv no_fork("KOKKOSMOE_TRACE_NO_FORK", "1");
  const int before = fork_count();
  EXPECT_EQ(read_trace(path, isolated()).num_tokens, 8);
  EXPECT_EQ(fork_count(), before);
}

// ------------------------------------------------------------ same results

TEST(TraceIsolation, SameTraceAsInProcess) {
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  const Trace in = small_trace(20000);  // more than a pipe buffer of data
  write_trace(path, in);
  const Trace isolated_read = read_trace(path, isolated());
  expect_same_trace(isolated_read, in);
  expect_same_trace(isolated_read, read_trace(path, in_process()));

  TraceReadOptions part;
  part.layers = {2, 0};
  part.max_tokens = 10;
  expect_same_trace(read_trace(path, isolated(part)), read_trace(path, in_process(part)));
  expect_no_children();
}

TEST(TraceIsolation, SameErrorAsInProcess) {
  ScratchDir dir;
  const std::string missing = dir.path("missing.h5");
  const std::string nan = dir.path("nan.h5");
  RawTrace r = valid_raw_trace();
  r.layers[0].weights[3] = std::numeric_limits<float>::quiet_NaN();
  write_raw_trace(nan, r);
  TraceReadOptions absent_layer;
  absent_layer.layers = {5};
  const std::pair<std::string, TraceReadOptions> cases[] = {{missing, {}},
                                                            {nan, {}},
                                                            {nan, absent_layer}};
  for (const auto& c : cases) {
    const std::string& path = c.first;  // not a structured binding: lambdas capture it
    const TraceReadOptions& options = c.second;
    const std::string message = trace_error_of([&] { read_trace(path, isolated(options)); });
    EXPECT_NE(message.find(path + ": "), std::string::npos) << message;
    EXPECT_EQ(message, trace_error_of([&] { read_trace(path, in_process(options)); }));
  }
}

TEST(TraceIsolation, LargeTraceCrossesThePipe) {
  // 2 layers of 2^20 x 8 ids and weights: 64 MiB, far beyond a pipe buffer,
  // so the parent must read while the child writes.
  Trace big;
  big.model = "big";
  big.num_experts = 64;
  big.top_k = 8;
  big.num_tokens = 1 << 20;
  for (int l = 0; l < 2; ++l) {
    TraceLayer layer;
    layer.index = 10 * l;
    for (std::int64_t i = 0; i < big.num_tokens * big.top_k; ++i) {
      layer.expert_ids.push_back(static_cast<std::int32_t>((i + l) % 64));
      layer.weights.push_back(static_cast<float>(i % 1000) * 1e-3f);
    }
    big.layers.push_back(std::move(layer));
  }
  expect_same_trace(Impl::read_isolated(
                        "big.h5", [&] { return big; }, 60),
                    big);
  expect_no_children();
}

TEST(TraceIsolation, EnvironmentVariables) {
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  write_trace(path, small_trace(8));
  const ScopedEnv timeout("KOKKOSMOE_TRACE_TIMEOUT", "soon");
  expect_trace_error([&] { read_trace(path, isolated()); },
                     {path + ": ", "KOKKOSMOE_TRACE_TIMEOUT is 'soon', not a number of seconds"});
  // In-process reads have no time limit, so the bad value goes unread.
  EXPECT_EQ(read_trace(path).num_tokens, 8);
  const ScopedEnv no_fork("KOKKOSMOE_TRACE_NO_FORK", "1");
  EXPECT_EQ(read_trace(path, isolated()).num_tokens, 8);
}

// ------------------------------------------------- the child failing on purpose

TEST(TraceIsolation, ErrorsKeepTheirMessage) {
  const auto fail_with = [](auto error) {
    return trace_error_of([&] {
      Impl::read_isolated(
          "x.h5", [&]() -> Trace { throw error; }, 10);
    });
  };
  EXPECT_EQ(fail_with(TraceError("x.h5: layer 3: boom")), "x.h5: layer 3: boom");
  EXPECT_EQ(fail_with(std::runtime_error("bad thing")), "x.h5: bad thing");
  expect_no_children();
}

TEST(TraceIsolation, ChildCrashIsATraceError) {
  const int signals[] = {SIGSEGV, SIGBUS, SIGABRT};
  for (int sig : signals) {
    const std::string message = trace_error_of([&] {
      Impl::read_isolated(
          "x.h5",
          [&]() -> Trace {
            std::raise(sig);
            return {};
          },
          10);
    });
    EXPECT_EQ(message, "x.h5: HDF5 failed while reading the file (signal " + std::to_string(sig) +
                           "): the file is corrupt or truncated");
  }
  expect_no_children();
}

TEST(TraceIsolation, ChildPrintsNothing) {
  // glibc reports heap corruption on stderr before aborting; the caller
  // should see only the TraceError.
  ::testing::internal::CaptureStderr();
  const std::string message = trace_error_of([] {
    Impl::read_isolated(
        "x.h5",
        []() -> Trace {
          const char noise[] = "free(): invalid pointer\n";
          (void)!::write(STDERR_FILENO, noise, sizeof noise - 1);
          std::abort();
        },
        10);
  });
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_NE(message.find("(signal " + std::to_string(SIGABRT) + ")"), std::string::npos) << message;
  expect_no_children();
}

TEST(TraceIsolation, ChildExitIsATraceError) {
  const std::string message = trace_error_of([] {
    Impl::read_isolated(
        "x.h5", []() -> Trace { ::_exit(7); }, 10);
  });
  EXPECT_NE(message.find("x.h5: HDF5 failed while reading the file (exit status 7)"),
            std::string::npos)
      << message;
  expect_no_children();
}

TEST(TraceIsolation, ChildHangIsATraceError) {
  const std::string message = trace_error_of([] {
    Impl::read_isolated(
        "x.h5",
        []() -> Trace {
          for (;;) ::pause();
        },
        0.2);
  });
  EXPECT_NE(message.find("x.h5: HDF5 did not finish reading the file within 0.2 s"),
            std::string::npos)
      << message;
  expect_no_children();  // killed and reaped
}

// --------------------------------------------------------------- fuzzing

// 200 seeded variants of a small valid file with 1-8 random bytes changed
// (never in the 8-byte signature, so that most still look like HDF5): each
// read gives a valid trace or one line naming the file, and this process
// survives. With HDF5 1.10.8, one of them crashes HDF5 and one makes it loop
// forever: in-process, either would take the test down, so these files go
// through the isolated reader only.
TEST(TraceCorrupt, RandomByteChangesNeverCrash) {
  // A hang (HDF5 1.10.8 loops forever on one of these variants) is cut off
  // after 2 s instead of a minute; a valid read takes milliseconds.
  const ScopedEnv timeout("KOKKOSMOE_TRACE_TIMEOUT", "2");
  ScratchDir dir;
  const std::string clean = dir.path("clean.h5");
  write_trace(clean, small_trace(64));
  std::string original;
  {
    std::ifstream in(clean, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(original.size(), 64u);

  int valid = 0, errors = 0, crashes = 0, hangs = 0;
  for (std::uint32_t seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(seed);
    std::string bytes = original;
    const int changes = 1 + static_cast<int>(rng() % 8);
    for (int c = 0; c < changes; ++c) {
      const std::size_t at = 8 + rng() % (bytes.size() - 8);
      bytes[at] = static_cast<char>(bytes[at] ^ (1 + rng() % 255));  // always a different byte
    }
    const std::string path = dir.path("fuzz-" + std::to_string(seed) + ".h5");
    std::ofstream(path, std::ios::binary) << bytes;

    SCOPED_TRACE("seed " + std::to_string(seed));
    try {
      const Trace t = read_trace(path, isolated());
      EXPECT_NO_THROW(validate_trace(t, path));
      ++valid;
    } catch (const TraceError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      if (message.find("HDF5 failed while reading") != std::string::npos) ++crashes;
      else if (message.find("HDF5 did not finish") != std::string::npos) ++hangs;
      else ++errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a TraceError: " << e.what();
    }
    std::remove(path.c_str());
  }
  std::cout << "[          ] 200 variants: " << valid << " valid, " << errors << " errors, "
            << crashes << " HDF5 crashes and " << hangs << " hangs contained\n";
  expect_no_children();
}

}  // namespace
