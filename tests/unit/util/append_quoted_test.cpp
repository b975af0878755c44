// Tests for json::append_quoted, the one JSON string escaper: valid UTF-8 is
// copied, each byte that does not start a well-formed sequence becomes U+FFFD,
// controls become \u00XX (or their short escapes).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "util/json.hpp"

namespace lse::json {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string quoted(std::string_view s) {
  std::string out;
  append_quoted(out, s);
  return out;
}

TEST(AppendQuoted, ValidMultiByteIsKept) {
  for (const char* s : {"caf\xC3\xA9",               // 2 bytes: é
                        "\xE2\x82\xAC 5",            // 3 bytes: €
                        "\xF0\x9F\x98\x80",          // 4 bytes: U+1F600
                        "\xF4\x8F\xBF\xBF",          // U+10FFFF, the last code point
                        "\xED\x9F\xBF",              // U+D7FF, just below the surrogates
                        "\xEE\x80\x80",              // U+E000, just above them
                        "\xC2\x80 \xE0\xA0\x80"}) {  // smallest 2- and 3-byte forms
    EXPECT_EQ(quoted(s), "\"" + std::string(s) + "\"") << s;
  }
}

TEST(AppendQuoted, OverlongFormsBecomeReplacementCharacters) {
  EXPECT_EQ(quoted("\xC0\xAF"), "\"" + kFffd + kFffd + "\"");  // '/' in 2 bytes
  EXPECT_EQ(quoted("\xC1\xBF"), "\"" + kFffd + kFffd + "\"");
  EXPECT_EQ(quoted("\xE0\x80\xAF"), "\"" + kFffd + kFffd + kFffd + "\"");
  EXPECT_EQ(quoted("\xF0\x82\x82\xAC"), "\"" + kFffd + kFffd + kFffd + kFffd + "\"");
}

TEST(AppendQuoted, SurrogatesAndBeyondUnicodeBecomeReplacementCharacters) {
  EXPECT_EQ(quoted("\xED\xA0\x80"), "\"" + kFffd + kFffd + kFffd + "\"");  // U+D800
  EXPECT_EQ(quoted("\xED\xBF\xBF"), "\"" + kFffd + kFffd + kFffd + "\"");  // U+DFFF
  EXPECT_EQ(quoted("\xF4\x90\x80\x80"), "\"" + kFffd + kFffd + kFffd + kFffd + "\"");
  EXPECT_EQ(quoted("\xF5\x80"), "\"" + kFffd + kFffd + "\"");
  EXPECT_EQ(quoted("\xFF"), "\"" + kFffd + "\"");
}

TEST(AppendQuoted, TruncatedAndStrayBytesBecomeReplacementCharacters) {
  EXPECT_EQ(quoted("a\xE2\x82"), "\"a" + kFffd + kFffd + "\"");  // cut at the end
  EXPECT_EQ(quoted("\xE2\x82z"), "\"" + kFffd + kFffd + "z\"");  // cut by ASCII
  EXPECT_EQ(quoted("\xF0\x9F\x98"), "\"" + kFffd + kFffd + kFffd + "\"");
  EXPECT_EQ(quoted("\x80x\xBF"), "\"" + kFffd + "x" + kFffd + "\"");  // lone continuations
  // A bad sequence does not swallow the valid text around it.
  EXPECT_EQ(quoted("\xC3\xA9\xC3\xC3\xA9"), "\"\xC3\xA9" + kFffd + "\xC3\xA9\"");
}

TEST(AppendQuoted, ControlsAreEscaped) {
  EXPECT_EQ(quoted(std::string_view("\x00\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(quoted("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(quoted("say \"hi\" \\ bye"), R"("say \"hi\" \\ bye")");
}

TEST(AppendQuoted, AppendsToWhatIsThere) {
  std::string out = "x=";
  append_quoted(out, "\xC3\xA9\xFF");
  EXPECT_EQ(out, "x=\"\xC3\xA9" + kFffd + "\"");
}

}  // namespace
}  // namespace lse::json
