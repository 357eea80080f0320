// SPDX-License-Identifier: BSD-3-Clause
// How the drivers fail: one line "error: <message>" on stderr and an exit
// code, never a crash or a multi-line dump.
#ifndef KOKKOSMOE_DRIVER_DRIVERERRORS_HPP
#define KOKKOSMOE_DRIVER_DRIVERERRORS_HPP

#include "ModelPresets.hpp"

#include <cstdint>
#include <exception>
#include <ostream>
#include <stdexcept>
#include <string>

namespace KokkosMoE {
namespace Driver {

// The drivers' exit codes (kokkos-moe-trace reports an invalid trace as a
// failed run).
enum ExitCode : int { exit_ok = 0, exit_failed = 1, exit_usage = 2, exit_invalid_trace = 3 };

// A bad command line.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --help anywhere: print the usage and exit 0.
struct HelpRequested {};

// Inside a catch block: prints the exception being handled as one line on
// `err` (where `print`) and gives its exit code: exit_usage for a
// UsageError, exit_failed for anything else.
int report_current_exception(std::ostream& err, bool print = true);

// Prints "error: <message>" on `err`: the message's first paragraph on one
// line, with the control characters left in it escaped (escape_controls:
// \x1b, \u009b, \u202e), so that no text quoted in it acts on the
// terminal.
void print_error(std::ostream& err, const std::string& message);

// 'text' quoted for a message: escaped as file content is (printable_text).
std::string quoted(const std::string& text);

// "1.5 GiB": a size for a message.
std::string human_bytes(double bytes);

// A failed allocation of a replay in one line, with the sizes that asked
// for it (the model shape, the batch and the storage type decide them;
// Kokkos' own text names only the view).
std::string allocation_failure(const Shape& s, std::int64_t batch, const std::string& dtype,
                               double weight_bytes, double token_bytes, int layer,
                               const std::exception& e);

}  // namespace Driver
}  // namespace KokkosMoE

#endif
