// SPDX-License-Identifier: BSD-3-Clause
#include "TextOutput.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace KokkosMoE {
namespace Driver {

void write_text_file(const std::string& path, const std::string& text) {
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

void finish_stdout() {
  errno = 0;
  std::cout.flush();
  const bool cpp_ok = static_cast<bool>(std::cout);
  const bool c_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (!cpp_ok || !c_ok)
    throw std::runtime_error(std::string("failed writing the report to standard output") +
                             (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

}  // namespace Driver
}  // namespace KokkosMoE
