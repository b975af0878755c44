// Tests for util/text: the one ASCII case-insensitive compare of the tree.
#include "util/text.hpp"

#include <gtest/gtest.h>

namespace lse::text {
namespace {

TEST(Text, IequalsIgnoresAsciiCaseOnly) {
  EXPECT_TRUE(iequals("Content-Type", "content-type"));
  EXPECT_TRUE(iequals("", ""));
  EXPECT_FALSE(iequals("gzip", "gzip "));
  EXPECT_FALSE(iequals("a", "b"));
  EXPECT_FALSE(iequals("[", "{"));                // 0x5B vs 0x7B: not letters, not equal
  EXPECT_FALSE(iequals("\xC3\xA9", "\xC3\x89"));  // é / É: bytes, not Unicode
}

TEST(Text, IstartsWith) {
  EXPECT_TRUE(istarts_with("Text/Event-Stream; charset=utf-8", "text/event-stream"));
  EXPECT_TRUE(istarts_with("abc", ""));
  EXPECT_FALSE(istarts_with("te", "text"));
  EXPECT_FALSE(istarts_with("text/html", "text/event"));
}

TEST(Text, ToLower) {
  EXPECT_EQ(to_lower("HTTPS://Api.Example.COM"), "https://api.example.com");
  EXPECT_EQ(to_lower("@[`{"), "@[`{");  // the neighbours of A-Z and a-z stay
}

}  // namespace
}  // namespace lse::text

// Upstream text on one line: a forged log line stays on the line it is in,
// escape sequences (C0 and C1) are shown, not obeyed; UTF-8 text is kept.
TEST(OneLine, ControlCharactersAreWrittenVisibly) {
  EXPECT_EQ(lse::text::one_line("bad key\nts=1 level=error msg=\"FORGED\""),
            "bad key\\nts=1 level=error msg=\"FORGED\"");
  EXPECT_EQ(lse::text::one_line("\x1b[31mred\x1b[0m\r\t\x7f"), "\\x1b[31mred\\x1b[0m\\r\\t\\x7f");
  EXPECT_EQ(lse::text::one_line("csi \xC2\x9B"
                                "2J end"),
            "csi \\u009b2J end");
  EXPECT_EQ(lse::text::one_line("température 温度 \xC2\xA0"), "température 温度 \xC2\xA0");
  EXPECT_EQ(lse::text::one_line(""), "");
}

TEST(OneLine, LongTextIsCutAtACharacterBoundaryAndMarked) {
  EXPECT_EQ(lse::text::one_line(std::string(600, 'a')), std::string(512, 'a') + " [truncated]");
  EXPECT_EQ(lse::text::one_line(std::string(512, 'a')), std::string(512, 'a'));
  // "é" is two bytes: a cut at byte 5 of "aaaaé" would split it.
  EXPECT_EQ(lse::text::one_line("aaaa\xC3\xA9zz", 5), "aaaa [truncated]");
}
