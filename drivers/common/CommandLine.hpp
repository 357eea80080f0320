// SPDX-License-Identifier: BSD-3-Clause
// Command-line parsing shared by the drivers: every mistake is a UsageError
// (one line, exit code 2).
#ifndef KOKKOSMOE_DRIVER_COMMANDLINE_HPP
#define KOKKOSMOE_DRIVER_COMMANDLINE_HPP

#include "DriverErrors.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Driver {

// An integer of at least `min`; `option` names it in the error.
std::int64_t parse_int(const std::string& text, const std::string& option, std::int64_t min);
// The same, at most 2^30.
int parse_small_int(const std::string& text, const std::string& option, int min);
std::uint64_t parse_seed(const std::string& text);
// A finite number.
double parse_double(const std::string& text, const std::string& option);

// Comma-separated values, each read by parse_one.
template <class Parse>
auto parse_comma_list(const std::string& text, const Parse& parse_one) {
  std::vector<decltype(parse_one(text))> values;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    values.push_back(parse_one(text.substr(begin, comma - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return values;
}

std::vector<double> parse_list(const std::string& text, const std::string& option);

// --reader isolated|in-process: whether read_trace forks (TraceReadOptions::
// isolate). The drivers read files they cannot trust and hold no MPI state
// or GPU context yet when they read, so they isolate by default: HDF5
// crashing or looping forever on a corrupt file then ends as a one-line
// error instead of a crash or a hang of the driver.
bool parse_reader(const std::string& text, const std::string& option);

// Kokkos' integer options (threads, NUMA, device id, devices, skipped
// device) as Kokkos 3.4 to 5.2 spell them, checked before
// Kokkos::initialize reads them: Kokkos 4 and 5 abort the process on a
// malformed value, and Kokkos 3.4 reads past an option given without
// "=INT". Throws a UsageError naming the option.
void check_kokkos_options(int argc, char** argv);

// Walks argv: "--name value" or "--name=value" options and positionals.
class Args {
 public:
  Args(int argc, char** argv, int first) : args_(argv + first, argv + argc) {}

  bool done() const { return pos_ >= args_.size(); }
  bool wants_help() const;
  // The next argument; for an option "--x=v", stores v for value().
  std::string next();
  std::string value(const std::string& option);
  void no_value(const std::string& option) const;

 private:
  std::vector<std::string> args_;
  std::size_t pos_ = 0;
  std::optional<std::string> inline_value_;
};

}  // namespace Driver
}  // namespace KokkosMoE

#endif
