// SPDX-License-Identifier: BSD-3-Clause
#include "CommandLine.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace KokkosMoE {
namespace Driver {

std::int64_t parse_int(const std::string& text, const std::string& option, std::int64_t min) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw UsageError(option + ": " + quoted(text) + " is not an integer");
  if (value < min)
    throw UsageError(option + ": " + text + " is below the minimum " + std::to_string(min));
  return value;
}

int parse_small_int(const std::string& text, const std::string& option, int min) {
  const std::int64_t value = parse_int(text, option, min);
  if (value > (1 << 30)) throw UsageError(option + ": " + text + " is too large");
  return static_cast<int>(value);
}

std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw UsageError("--seed: " + quoted(text) + " is not a non-negative integer");
  return value;
}

double parse_double(const std::string& text, const std::string& option) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value))
    throw UsageError(option + ": " + quoted(text) + " is not a finite number");
  return value;
}

std::vector<double> parse_list(const std::string& text, const std::string& option) {
  return parse_comma_list(text, [&](const std::string& v) { return parse_double(v, option); });
}

bool parse_reader(const std::string& text, const std::string& option) {
  if (text == "isolated") return true;
  if (text == "in-process") return false;
  throw UsageError(option + ": " + quoted(text) + " is not one of isolated, in-process");
}

void check_kokkos_options(int argc, char** argv) {
  struct Option {
    const char* name;
    std::int64_t min;
    bool pair;  // "N[,S]": devices and the first one's stride
  };
  static const Option options[] = {
      {"--kokkos-threads", 1, false}, {"--kokkos-num-threads", 1, false},
      {"--threads", 1, false},        {"--kokkos-numa", 1, false},
      {"--numa", 1, false},           {"--kokkos-device-id", 0, false},
      {"--kokkos-device", 0, false},  {"--device-id", 0, false},
      {"--device", 0, false},         {"--kokkos-num-devices", 1, true},
      {"--kokkos-ndevices", 1, true}, {"--num-devices", 1, true},
      {"--ndevices", 1, true},        {"--kokkos-skip-device", 0, false},
      {"--skip-device", 0, false},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    for (const Option& o : options) {
      if (name != o.name) continue;
      const std::string what = " (a Kokkos option: " + name + "=INT" + (o.pair ? "[,INT]" : "") +
                               ", INT >= " + std::to_string(o.min) + ")";
      if (eq == std::string::npos) throw UsageError(name + " needs a value" + what);
      const std::string value = arg.substr(eq + 1);
      const std::size_t comma = o.pair ? value.find(',') : std::string::npos;
      const auto check = [&](const std::string& text, std::int64_t min) {
        std::int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || text[0] == '-' || text[0] == '+' || ec != std::errc() || ptr != end ||
            v < min || v > 0x7fffffff)
          throw UsageError(name + ": " + quoted(value) + " is not valid" + what);
      };
      check(value.substr(0, comma), o.min);
      if (comma != std::string::npos) check(value.substr(comma + 1), 0);
    }
  }
}

bool Args::wants_help() const {
  return std::any_of(args_.begin(), args_.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

std::string Args::next() {
  std::string arg = args_[pos_++];
  inline_value_.reset();
  const std::size_t eq = arg.find('=');
  if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
    inline_value_ = arg.substr(eq + 1);
    arg.resize(eq);
  }
  return arg;
}

std::string Args::value(const std::string& option) {
  if (inline_value_) return *std::exchange(inline_value_, std::nullopt);
  if (done()) throw UsageError(option + " needs a value");
  return args_[pos_++];
}

void Args::no_value(const std::string& option) const {
  if (inline_value_) throw UsageError(option + " takes no value");
}

}  // namespace Driver
}  // namespace KokkosMoE
