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
