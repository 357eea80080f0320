// SPDX-License-Identifier: BSD-3-Clause
// printable_text: what every message and report quotes from a file.
#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

using KokkosMoE::escape_controls;
using KokkosMoE::printable_text;

TEST(TraceText, PlainTextIsUnchanged) {
  EXPECT_EQ(printable_text(""), "");
  EXPECT_EQ(printable_text("mixtral-8x7b"), "mixtral-8x7b");
  // UTF-8 passes through: names and notes are UTF-8 by the format.
  EXPECT_EQ(printable_text("notes with UTF-8: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "notes with UTF-8: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST(TraceText, ControlCharactersAreEscaped) {
  EXPECT_EQ(printable_text("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(printable_text("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable_text(std::string("nul\0bel\x07"
                                       "del\x7f",
                                       12)),
            "nul\\x00bel\\x07del\\x7f");
  EXPECT_EQ(printable_text("back\\slash"), "back\\\\slash");
  // Unicode that terminals act on: C1 CSI, line separator, right-to-left override.
  EXPECT_EQ(printable_text("\xc2\x9b"
                           "2J"),
            "\\u009b2J");
  EXPECT_EQ(printable_text("a\xe2\x80\xa8"
                           "b"),
            "a\\u2028b");
  EXPECT_EQ(printable_text("\xe2\x80\xae"
                           "txt.exe"),
            "\\u202etxt.exe");
}

TEST(TraceText, InvalidUtf8IsEscapedByteByByte) {
  EXPECT_EQ(printable_text("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable_text("cut \xe2\x82"), "cut \\xe2\\x82");            // truncated sequence
  EXPECT_EQ(printable_text("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(printable_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(printable_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // beyond U+10FFFF
  EXPECT_EQ(printable_text("\x80"
                           "a"),
            "\\x80a");  // stray continuation
}

TEST(TraceText, LongTextIsCutWithItsSize) {
  const std::string long_text(1 << 20, 'x');
  const std::string shown = printable_text(long_text);
  EXPECT_EQ(shown, std::string(120, 'x') + "\xe2\x80\xa6(1048576 bytes)");
  EXPECT_EQ(printable_text("abcdef", 3), "abc\xe2\x80\xa6(6 bytes)");
  EXPECT_EQ(printable_text("abc", 3), "abc");
  // Never inside an escape or a UTF-8 sequence: characters count, not bytes.
  EXPECT_EQ(printable_text("ab\ncd", 3), "ab\xe2\x80\xa6(5 bytes)");
  EXPECT_EQ(printable_text("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xc3\xa9\xe2\x80\xa6(6 bytes)");
  // No limit.
  EXPECT_EQ(printable_text(long_text, std::string::npos), long_text);
}

// escape_controls: printable_text's escapes but backslashes, and no cut.
TEST(TraceText, EscapeControlsLeavesBackslashesAndLength) {
  EXPECT_EQ(escape_controls("already \\x1b and \\n escaped"), "already \\x1b and \\n escaped");
  EXPECT_EQ(escape_controls("\x1b[2J\n\xc2\x9b\xe2\x80\xae\xff"), "\\x1b[2J\\n\\u009b\\u202e\\xff");
  const std::string long_text(500, 'a');
  EXPECT_EQ(escape_controls(long_text), long_text);
}

}  // namespace
