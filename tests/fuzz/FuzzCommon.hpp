// SPDX-License-Identifier: BSD-3-Clause
// The fuzz harness of the drivers (kokkosmoe_fuzz.cpp): a case is one run of
// kokkos-moe-trace or kokkos-moe-replay with its expected outcome; the
// generators (FuzzTraceFiles, FuzzArgs) make cases, FuzzRun runs and judges
// them.
#ifndef KOKKOSMOE_FUZZCOMMON_HPP
#define KOKKOSMOE_FUZZCOMMON_HPP

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Fuzz {

// A seeded generator per case: case i of seed s is the same on every machine
// and whatever the other cases are (std::mt19937_64's output is fixed by the
// standard; no std:: distribution is used, their output is not).
class Rng {
 public:
  Rng(std::uint64_t seed, std::uint64_t stream) : g_(mix(mix(seed) ^ (stream + 1))) {}
  std::uint64_t next() { return g_(); }
  // Uniform in [0, n) (n >= 1; the modulo bias is irrelevant here).
  std::uint64_t below(std::uint64_t n) { return g_() % n; }
  // Uniform in [lo, hi].
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  bool chance(double p) { return static_cast<double>(g_() >> 11) * 0x1.0p-53 < p; }
  double uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  static std::uint64_t mix(std::uint64_t x) {  // SplitMix64's finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  std::mt19937_64 g_;
};

// What a run must end in.
enum class Expect {
  success,  // exit 0 (a valid input)
  failure,  // exit 1..127 with one line on stderr (a malformed input)
  either,   // exit 0, or a failure as above (an input that may still be valid)
};

struct Case {
  int id = 0;
  std::string category;  // trace-file, trace-args, replay-args, mixed-args
  std::string what;      // what was done to the input, one line
  std::vector<std::string> argv;
  Expect expect = Expect::either;
  std::vector<int> failure_codes;  // the exit codes a failure may have (empty: 1..127)
  std::string success_stdout;      // what stdout holds on success ("" : anything)
};

// The programs under test and the scratch directory; the base files the
// setup made there (valid traces from kokkos-moe-trace synth and files that
// are not traces).
struct Context {
  std::string trace_exe, replay_exe, dir;
  std::string mixtral, custom;  // valid traces: mixtral-8x7b preset; E=6, k=3, H=32, F=24
  std::string text_file, empty_file, directory, missing;
};

}  // namespace Fuzz
}  // namespace KokkosMoE

#endif
