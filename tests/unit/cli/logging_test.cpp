// Tests for the log line formatter (cli/logging): logfmt keeps the message as
// written, JSON escapes it with the tree's one escaper; both stamp UTC
// milliseconds.
#include "cli/logging.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace lse::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

// 2024-05-01T12:34:56Z plus `ms`.
system_clock::time_point at(int ms) {
  return system_clock::time_point(seconds(1714566896)) + milliseconds(ms);
}

TEST(LogTimestamp, UtcWithThreeDigitMilliseconds) {
  EXPECT_EQ(log_timestamp(at(0)), "2024-05-01T12:34:56.000Z");
  EXPECT_EQ(log_timestamp(at(7)), "2024-05-01T12:34:56.007Z");
  EXPECT_EQ(log_timestamp(at(42)), "2024-05-01T12:34:56.042Z");
  EXPECT_EQ(log_timestamp(at(999)), "2024-05-01T12:34:56.999Z");
  EXPECT_EQ(log_timestamp(at(1000)), "2024-05-01T12:34:57.000Z");
  // Sub-millisecond parts are truncated, not rounded into the next second.
  EXPECT_EQ(log_timestamp(at(999) + std::chrono::microseconds(999)), "2024-05-01T12:34:56.999Z");
  EXPECT_EQ(log_timestamp(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
}

const std::string kMessage =
    "msg=\"probe failed\" target=a\\b path=C:\\x\nnext\tline\x01 reason=tls";

TEST(LogLine, LogfmtKeepsTheMessageAsWritten) {
  EXPECT_EQ(format_logfmt_line("info", at(5), "msg=started listen=:9687"),
            "ts=2024-05-01T12:34:56.005Z level=info msg=started listen=:9687\n");
  EXPECT_EQ(format_logfmt_line("warning", at(5), kMessage),
            "ts=2024-05-01T12:34:56.005Z level=warning " + kMessage + "\n");
}

TEST(LogLine, JsonEscapesQuotesBackslashesNewlinesAndControls) {
  EXPECT_EQ(format_json_line("info", at(5), "msg=started listen=:9687"),
            R"({"ts":"2024-05-01T12:34:56.005Z","level":"info","msg":"msg=started listen=:9687"})"
            "\n");
  EXPECT_EQ(format_json_line("error", at(120), kMessage),
            R"({"ts":"2024-05-01T12:34:56.120Z","level":"error",)"
            R"("msg":"msg=\"probe failed\" target=a\\b path=C:\\x\nnext\tline\u0001 reason=tls"})"
            "\n");
}

TEST(LogLine, JsonReplacesInvalidUtf8) {
  EXPECT_EQ(
      format_json_line("info", at(0), "model=\xFF"),
      "{\"ts\":\"2024-05-01T12:34:56.000Z\",\"level\":\"info\",\"msg\":\"model=\xEF\xBF\xBD\"}\n");
}

}  // namespace
}  // namespace lse::cli
