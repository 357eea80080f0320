// SPDX-License-Identifier: BSD-3-Clause
// printable_text: text read from a file, made safe to show on one line
// (see KokkosMoE_Trace.hpp).
#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace KokkosMoE {
namespace {

// The code point of the UTF-8 sequence at text[i] and its length in bytes;
// length 0 when the bytes there are not well-formed UTF-8 (a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate or
// a value beyond U+10FFFF).
struct Decoded {
  std::uint32_t code = 0;
  std::size_t length = 0;
};

Decoded decode_utf8(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t j) { return static_cast<unsigned char>(text[j]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {lead, 1};
  std::size_t length = 0;
  std::uint32_t code = 0, min = 0;
  if ((lead & 0xe0) == 0xc0) length = 2, code = lead & 0x1f, min = 0x80;
  else if ((lead & 0xf0) == 0xe0) length = 3, code = lead & 0x0f, min = 0x800;
  else if ((lead & 0xf8) == 0xf0) length = 4, code = lead & 0x07, min = 0x10000;
  else return {};
  if (i + length > text.size()) return {};
  for (std::size_t j = 1; j < length; ++j) {
    if ((byte(i + j) & 0xc0) != 0x80) return {};
    code = (code << 6) | (byte(i + j) & 0x3f);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return {};
  return {code, length};
}

// Code points beyond ASCII that a terminal or an editor acts on instead of
// showing: C1 controls (U+009B is a CSI, like ESC [), line and paragraph
// separators, and the marks and overrides of bidirectional text (which can
// make a message read differently from what it says).
bool invisible_control(std::uint32_t c) {
  return (c >= 0x80 && c <= 0x9f) || c == 0x200e || c == 0x200f || c == 0x2028 || c == 0x2029 ||
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

// printable_text, or with `backslash` false escape_controls (which leaves
// backslashes, so that text made printable before stays as it is).
std::string escaped(std::string_view text, std::size_t max_chars, bool backslash) {
  std::string out;
  std::size_t chars = 0;  // characters (code points) in out
  char buffer[16];
  for (std::size_t i = 0; i < text.size();) {
    const Decoded d = decode_utf8(text, i);
    std::string_view piece;
    std::size_t piece_chars = 0;
    if (d.length == 0) {  // not UTF-8: the byte's value
      std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned char>(text[i]));
      piece = buffer, piece_chars = piece.size();
    } else if (d.code == '\n') {
      piece = "\\n", piece_chars = 2;
    } else if (d.code == '\t') {
      piece = "\\t", piece_chars = 2;
    } else if (d.code == '\r') {
      piece = "\\r", piece_chars = 2;
    } else if (d.code == '\\' && backslash) {
      piece = "\\\\", piece_chars = 2;
    } else if (d.code < 0x20 || d.code == 0x7f) {
      std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(d.code));
      piece = buffer, piece_chars = piece.size();
    } else if (invisible_control(d.code)) {
      std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(d.code));
      piece = buffer, piece_chars = piece.size();
    } else {
      piece = text.substr(i, d.length), piece_chars = 1;
    }
    if (chars + piece_chars > max_chars) {
      // Cut between characters (never inside an escape or a UTF-8 sequence).
      return out + "\xe2\x80\xa6(" + std::to_string(text.size()) + " bytes)";
    }
    out += piece;
    chars += piece_chars;
    i += d.length == 0 ? 1 : d.length;
  }
  return out;
}

}  // namespace

std::string printable_text(std::string_view text, std::size_t max_chars) {
  return escaped(text, max_chars, true);
}

std::string escape_controls(std::string_view text) {
  return escaped(text, std::string::npos, false);
}

}  // namespace KokkosMoE
