// SPDX-License-Identifier: BSD-3-Clause
#include "DriverErrors.hpp"

#include <KokkosMoE/KokkosMoE_ErrorText.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace KokkosMoE {
namespace Driver {

int report_current_exception(std::ostream& err, bool print) {
  std::string message = "unknown failure";
  int code = exit_failed;
  try {
    throw;
  } catch (const UsageError& e) {
    message = one_line_message(e.what()), code = exit_usage;
  } catch (const std::exception& e) {
    message = one_line_message(e.what());
  } catch (...) {
  }
  if (print) err << "error: " << message << "\n";
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

std::string allocation_failure(int experts, int top_k, std::int64_t hidden, std::int64_t ffn,
                               std::int64_t batch, const std::string& dtype, double weight_bytes,
                               double token_bytes, int layer, const std::exception& e) {
  const double weights = 3.0 * experts * double(hidden) * double(ffn) * weight_bytes;
  const double tokens = double(batch) * double(top_k) * double(std::max(hidden, ffn)) * token_bytes;
  return "out of memory replaying layer " + std::to_string(layer) +
         " with E=" + std::to_string(experts) + " k=" + std::to_string(top_k) +
         " H=" + std::to_string(hidden) + " F=" + std::to_string(ffn) + ", " + dtype +
         ", batches of " + std::to_string(batch) +
         " tokens (expert weights 3 x E x F x H = " + human_bytes(weights) +
         ", activations batch x k x max(H, F) = " + human_bytes(tokens) +
         "; see --hidden, --ffn, --reduce, --tokens): " + one_line_message(e.what());
}

}  // namespace Driver
}  // namespace KokkosMoE
