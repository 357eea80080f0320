// SPDX-License-Identifier: BSD-3-Clause
// The text of an exception from the layer or from Kokkos as one line, for
// codes that report errors line by line (the C interface's kmoe_last_error
// and the drivers do).
#ifndef KOKKOSMOE_ERRORTEXT_HPP
#define KOKKOSMOE_ERRORTEXT_HPP

#include <exception>
#include <string>

namespace KokkosMoE {

// The first paragraph of `what`, its line breaks and runs of blanks as one
// space: Kokkos 3 appends a blank line and a note on tracebacks to its
// messages. An empty string for nullptr.
std::string one_line_message(const char* what);

// Whether `e` is a failed allocation: std::bad_alloc, or the runtime_error
// Kokkos throws ("... failed to allocate ..." in Kokkos 3 to 5).
bool is_allocation_failure(const std::exception& e);

}  // namespace KokkosMoE

#endif
