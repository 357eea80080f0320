// SPDX-License-Identifier: BSD-3-Clause
// Reports that reach their file or fail: a full disk or a closed pipe is a
// failed run, not a silently truncated report.
#ifndef KOKKOSMOE_DRIVER_TEXTOUTPUT_HPP
#define KOKKOSMOE_DRIVER_TEXTOUTPUT_HPP

#include <string>

namespace KokkosMoE {
namespace Driver {

// Writes `text` to `path` (replacing it) and makes sure every byte reached
// the file: a full disk or /dev/full fails at the flush or the close, not at
// the write into the buffer. Throws a one-line runtime_error otherwise.
void write_text_file(const std::string& path, const std::string& text);

// The report on standard output was written: flushes both C and C++ streams
// and throws a one-line runtime_error when either failed.
void finish_stdout();

// `s` as a JSON string literal, quotes included.
std::string json_string(const std::string& s);

}  // namespace Driver
}  // namespace KokkosMoE

#endif
