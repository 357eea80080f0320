// SPDX-License-Identifier: BSD-3-Clause
#include <KokkosMoE/KokkosMoE_ErrorText.hpp>

#include <new>

namespace KokkosMoE {

std::string one_line_message(const char* what) {
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

bool is_allocation_failure(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  return std::string(e.what()).find("failed to allocate") != std::string::npos;
}

}  // namespace KokkosMoE
