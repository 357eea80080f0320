// SPDX-License-Identifier: BSD-3-Clause
// Private: the text of an exception from the layer or from Kokkos as a
// one-line message. Shared by the C interface (kmoe_last_error) and the
// drivers (their one-line errors), so that both trim Kokkos' messages the
// same way. Header-only: the drivers include it from src/capi.
#ifndef KOKKOSMOE_ERRORTEXT_HPP
#define KOKKOSMOE_ERRORTEXT_HPP

#include <exception>
#include <new>
#include <string>

namespace KokkosMoE {
namespace Impl {

// Kokkos 3 appends a blank line and a note on tracebacks to its messages
// ("...failed, likely due to insufficient memory.  (The allocation mechanism
// was standard malloc().)\n\nTraceback functionality not available\n"): the
// first paragraph is the message. Line breaks left in it become spaces, and
// runs of spaces one space.
inline std::string one_line_message(const char* what) {
  const std::string text(what != nullptr ? what : "");
  const std::string first = text.substr(0, text.find("\n\n"));
  std::string line;
  for (char c : first) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == ' ' && (line.empty() || line.back() == ' ')) continue;
    line += c;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// A failed allocation: std::bad_alloc, or the runtime_error Kokkos throws
// ("Kokkos failed to allocate memory for label ..." with Kokkos 3, "Kokkos
// ERROR: Host memory space failed to allocate ..." with Kokkos 4 and 5).
inline bool is_allocation_failure(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  return std::string(e.what()).find("failed to allocate") != std::string::npos;
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
