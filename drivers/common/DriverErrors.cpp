// SPDX-License-Identifier: BSD-3-Clause
#include "DriverErrors.hpp"

#include <KokkosMoE/KokkosMoE_ErrorText.hpp>
#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace KokkosMoE {
namespace Driver {

void print_error(std::ostream& err, const std::string& message) {
  err << "error: " << escape_controls(one_line_message(message.c_str())) << "\n";
}

std::string quoted(const std::string& text) { return "'" + printable_text(text) + "'"; }

int report_current_exception(std::ostream& err, bool print) {
  std::string message = "unknown failure";
  int code = exit_failed;
  try {
    throw;
  } catch (const UsageError& e) {
    message = e.what(), code = exit_usage;
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
  }
  if (print) print_error(err, message);
  return code;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

std::string allocation_failure(const Shape& s, std::int64_t batch, const std::string& dtype,
                               double weight_bytes, double token_bytes, int layer,
                               const std::exception& e) {
  const double weights = 3.0 * s.experts * double(s.hidden) * double(s.ffn) * weight_bytes;
  const double tokens = double(batch) * double(s.top_k) * double(std::max(s.hidden, s.ffn)) *
                        token_bytes;
  return "out of memory replaying layer " + std::to_string(layer) +
         " with E=" + std::to_string(s.experts) + " k=" + std::to_string(s.top_k) +
         " H=" + std::to_string(s.hidden) + " F=" + std::to_string(s.ffn) + ", " + dtype +
         ", batches of " + std::to_string(batch) +
         " tokens (expert weights 3 x E x F x H = " + human_bytes(weights) +
         ", activations batch x k x max(H, F) = " + human_bytes(tokens) +
         "; see --hidden, --ffn, --reduce, --tokens): " + one_line_message(e.what());
}

}  // namespace Driver
}  // namespace KokkosMoE
