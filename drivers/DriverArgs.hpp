// SPDX-License-Identifier: BSD-3-Clause
// Command-line parsing shared by the drivers: one-line errors, exit code 2.
#ifndef KOKKOSMOE_DRIVERARGS_HPP
#define KOKKOSMOE_DRIVERARGS_HPP

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace KokkosMoE {
namespace Driver {

// A bad command line: reported in one line, exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --help anywhere: print the usage and exit 0.
struct HelpRequested {};

inline std::int64_t parse_int(const std::string& text, const std::string& option,
                              std::int64_t min) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw UsageError(option + ": '" + text + "' is not an integer");
  if (value < min)
    throw UsageError(option + ": " + text + " is below the minimum " + std::to_string(min));
  return value;
}

inline int parse_small_int(const std::string& text, const std::string& option, int min) {
  const std::int64_t value = parse_int(text, option, min);
  if (value > (1 << 30)) throw UsageError(option + ": " + text + " is too large");
  return static_cast<int>(value);
}

inline std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw UsageError("--seed: '" + text + "' is not a non-negative integer");
  return value;
}

inline double parse_double(const std::string& text, const std::string& option) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value))
    throw UsageError(option + ": '" + text + "' is not a finite number");
  return value;
}

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

inline std::vector<double> parse_list(const std::string& text, const std::string& option) {
  return parse_comma_list(text, [&](const std::string& v) { return parse_double(v, option); });
}

// Walks argv: "--name value" or "--name=value" options and positionals.
class Args {
 public:
  Args(int argc, char** argv, int first) : args_(argv + first, argv + argc) {}

  bool done() const { return pos_ >= args_.size(); }
  bool wants_help() const {
    return std::any_of(args_.begin(), args_.end(),
                       [](const std::string& a) { return a == "--help" || a == "-h"; });
  }
  // The next argument; for an option "--x=v", stores v for value().
  std::string next() {
    std::string arg = args_[pos_++];
    inline_value_.reset();
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value_ = arg.substr(eq + 1);
      arg.resize(eq);
    }
    return arg;
  }
  std::string value(const std::string& option) {
    if (inline_value_) return *std::exchange(inline_value_, std::nullopt);
    if (done()) throw UsageError(option + " needs a value");
    return args_[pos_++];
  }
  void no_value(const std::string& option) const {
    if (inline_value_) throw UsageError(option + " takes no value");
  }

 private:
  std::vector<std::string> args_;
  std::size_t pos_ = 0;
  std::optional<std::string> inline_value_;
};

// --reader isolated|in-process: whether read_trace forks (TraceReadOptions::
// isolate). The drivers read files they cannot trust and hold no MPI state
// or GPU context yet when they read, so they isolate by default: HDF5
// crashing or looping forever on a corrupt file then ends as a one-line
// error instead of a crash or a hang of the driver.
inline bool parse_reader(const std::string& text, const std::string& option) {
  if (text == "isolated") return true;
  if (text == "in-process") return false;
  throw UsageError(option + ": '" + text + "' is not one of isolated, in-process");
}

// Writes `text` to `path` (replacing it) and makes sure every byte reached
// the file: a full disk or /dev/full fails at the flush or the close, not at
// the write into the buffer. Throws a one-line runtime_error otherwise.
inline void write_text_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size() &&
                       std::fflush(f) == 0;
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed)
    throw std::runtime_error("failed writing " + path + ": " +
                             std::strerror(!written ? write_errno : errno));
}

// The report on standard output was written (stdout may be a full disk or a
// closed pipe): flushes both C and C++ streams and throws a one-line
// runtime_error when either failed.
inline void finish_stdout() {
  errno = 0;
  std::cout.flush();
  const bool cpp_ok = static_cast<bool>(std::cout);
  const bool c_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (!cpp_ok || !c_ok)
    throw std::runtime_error(std::string("failed writing the report to standard output") +
                             (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace Driver
}  // namespace KokkosMoE

#endif
