// SPDX-License-Identifier: BSD-3-Clause
// Running the fuzz cases as processes, a few at a time, each with a time
// limit, and judging how each ended.
#ifndef KOKKOSMOE_FUZZRUN_HPP
#define KOKKOSMOE_FUZZRUN_HPP

#include "FuzzCommon.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Fuzz {

struct Outcome {
  std::string start_error;  // the program could not be started
  bool timed_out = false;   // killed (with its process group) at the time limit
  int exit_code = -1;       // when it exited
  int signal = 0;           // when a signal ended it
  double seconds = 0;
  std::string out, err;  // stdout and stderr (the first MiB of each)
};

// Runs every case, at most `jobs` at a time, each in its own process group
// (a driver's isolated-reader child goes with it) and in `dir`, stdin from
// /dev/null; calls done(i, outcome) as case i ends.
void run_cases(const std::vector<Case>& cases, int jobs, double timeout_s, const std::string& dir,
               const std::function<void(std::size_t, Outcome&&)>& done);

// What is wrong with how the case ended (empty: as expected). A run must end
// by itself, by exit (no signal), with no sanitizer report; a failure with
// an exit code in 1..127 (those the case allows) and exactly one line on
// stderr, "error: ...", without control characters. A valid input must
// succeed, a malformed one fail.
std::vector<std::string> judge(const Case& c, const Outcome& o);

// The warning AddressSanitizer prints for an allocation beyond
// max_allocation_size_mb (the harness's limit, which the drivers' own
// out-of-memory errors then report), taken out of stderr before judging.
std::string without_allocation_warnings(const std::string& err);

// The command as a line for a POSIX shell ($'...' where needed).
std::string shell_command(const std::vector<std::string>& argv);

// Text shown in the report: escaped and cut at `max` bytes.
std::string shown(const std::string& text, std::size_t max);

}  // namespace Fuzz
}  // namespace KokkosMoE

#endif
