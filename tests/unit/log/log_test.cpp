// Structured log events (log/): fields become real logfmt pairs and real JSON
// members with typed values; upstream text cannot forge a line or flood it.
#include "log/log.hpp"

#include <gtest/gtest.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>

namespace lse::log {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

// 2024-05-01T12:34:56Z plus `ms`.
system_clock::time_point at(int ms) {
  return system_clock::time_point(seconds(1714566896)) + milliseconds(ms);
}

TEST(LogTimestamp, UtcWithThreeDigitMilliseconds) {
  EXPECT_EQ(timestamp(at(0)), "2024-05-01T12:34:56.000Z");
  EXPECT_EQ(timestamp(at(7)), "2024-05-01T12:34:56.007Z");
  EXPECT_EQ(timestamp(at(999)), "2024-05-01T12:34:56.999Z");
  EXPECT_EQ(timestamp(at(1000)), "2024-05-01T12:34:57.000Z");
  // Sub-millisecond parts are truncated, not rounded into the next second.
  EXPECT_EQ(timestamp(at(999) + std::chrono::microseconds(999)), "2024-05-01T12:34:56.999Z");
  EXPECT_EQ(timestamp(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
}

TEST(LogEvent, JsonHasRealFieldsWithTypes) {
  const std::string event = render_event(Format::json, "probe failed",
                                         {{"target", "dead"},
                                          {"reason", "connect"},
                                          {"attempt", 3},
                                          {"ok", false},
                                          {"ttft_ms", 150.25},
                                          {"port", static_cast<unsigned short>(9687)}});
  EXPECT_EQ(event,
            R"("msg":"probe failed","target":"dead","reason":"connect","attempt":3,"ok":false,)"
            R"("ttft_ms":150.25,"port":9687)");
  EXPECT_EQ(render_line(Format::json, Level::warn, at(5), event),
            R"({"ts":"2024-05-01T12:34:56.005Z","level":"warn",)" + event + "}\n");
}

TEST(LogEvent, LogfmtQuotesOnlyWhatNeedsIt) {
  const std::string event =
      render_event(Format::logfmt, "probe failed",
                   {{"target", "dead"}, {"detail", "Connection refused"}, {"empty", ""}, {"n", 2}});
  EXPECT_EQ(event, R"(msg="probe failed" target=dead detail="Connection refused" empty="" n=2)");
  EXPECT_EQ(render_line(Format::logfmt, Level::error, at(42), "msg=x"),
            "ts=2024-05-01T12:34:56.042Z level=error msg=x\n");
}

TEST(LogEvent, LevelNamesAreTheFlagValues) {
  EXPECT_EQ(to_string(Level::debug), "debug");
  EXPECT_EQ(to_string(Level::info), "info");
  EXPECT_EQ(to_string(Level::warn), "warn");
  EXPECT_EQ(to_string(Level::error), "error");
}

// An upstream error message that tries to start a line of its own.
const std::string kForged =
    "boom\nts=2024-01-01T00:00:00.000Z level=error msg=\"FORGED\" \x1b[31mred\x1b[0m";

TEST(LogEvent, UpstreamTextCannotForgeALogfmtLine) {
  const std::string event = render_event(Format::logfmt, "probe failed", {{"detail", kForged}});
  EXPECT_EQ(event.find('\n'), std::string::npos);
  EXPECT_EQ(event.find('\x1b'), std::string::npos);
  EXPECT_EQ(event, R"(msg="probe failed" detail="boom\nts=2024-01-01T00:00:00.000Z level=error )"
                   R"(msg=\"FORGED\" \u001b[31mred\u001b[0m")");
}

TEST(LogEvent, UpstreamTextCannotBreakJson) {
  const std::string event = render_event(Format::json, "m\"sg", {{"detail", kForged}});
  EXPECT_EQ(event.find('\n'), std::string::npos);
  EXPECT_EQ(event.find('\x1b'), std::string::npos);
  EXPECT_EQ(event.rfind(R"("msg":"m\"sg","detail":"boom\nts=)", 0), 0u);
}

// What an SSE `event: error` of a hostile upstream carries as its message.
const std::string kSseErrorMessage =
    "overloaded\nts=2024-01-01T00:00:00.000Z level=error msg=\"FORGED\" \x1b[31mred\x1b[0m";

// The formatter cli/logging.cpp installs: ts and level before the event.
class LineFormatter final : public spdlog::formatter {
 public:
  explicit LineFormatter(Format format) : format_(format) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string line = render_line(format_, Level::warn, msg.time,
                                         std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(format_);
  }

 private:
  Format format_;
};

// The whole path of a failed probe's detail: log::warn -> spdlog -> stderr's bytes.
std::string logged(Format format, const std::string& detail) {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>(
      "log_test", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
  logger->set_formatter(std::make_unique<LineFormatter>(format));
  const auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  configure(format, Level::info);
  warn("probe failed", {{"target", "gw"}, {"reason", "upstream_error"}, {"detail", detail}});
  spdlog::set_default_logger(previous);
  configure(Format::logfmt, Level::info);
  return out.str();
}

TEST(LogWrite, AnUpstreamErrorMessageIsOneEscapedLogfmtLine) {
  const std::string out = logged(Format::logfmt, kSseErrorMessage);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  // After the line's own ts and level, the event with the message as one quoted value.
  const std::string event =
      R"(level=warn msg="probe failed" target=gw reason=upstream_error detail="overloaded\nts=)"
      R"(2024-01-01T00:00:00.000Z level=error msg=\"FORGED\" \u001b[31mred\u001b[0m")"
      "\n";
  ASSERT_EQ(out.rfind("ts=", 0), 0u) << out;
  EXPECT_EQ(out.substr(out.find(' ') + 1), event);
}

TEST(LogWrite, AnUpstreamErrorMessageIsOneEscapedJsonLine) {
  const std::string out = logged(Format::json, kSseErrorMessage);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  const std::string members =
      R"("level":"warn","msg":"probe failed","target":"gw","reason":"upstream_error",)"
      R"("detail":"overloaded\nts=2024-01-01T00:00:00.000Z level=error msg=\"FORGED\" )"
      R"(\u001b[31mred\u001b[0m"})"
      "\n";
  ASSERT_EQ(out.rfind(R"({"ts":")", 0), 0u) << out;
  EXPECT_EQ(out.substr(out.find(',') + 1), members);
}

TEST(LogEvent, LongValuesAreCutAndMarked) {
  const std::string long_text(5000, 'a');
  const std::string event = render_event(Format::logfmt, "m", {{"detail", long_text}});
  EXPECT_EQ(event, "msg=m detail=\"" + std::string(kMaxValueBytes, 'a') + "…[truncated]\"");
  // A cut never splits a UTF-8 sequence: 511 'a' then a 2-byte é at 511..512.
  const std::string accented = std::string(kMaxValueBytes - 1, 'a') + "\xC3\xA9" + "tail";
  const std::string json = render_event(Format::json, "m", {{"d", accented}});
  EXPECT_NE(json.find(std::string(kMaxValueBytes - 1, 'a') + "…[truncated]"), std::string::npos);
  EXPECT_EQ(json.find('\xC3'), std::string::npos);
}

TEST(LogEvent, InvalidUtf8AndNonFiniteNumbersStayValid) {
  EXPECT_EQ(render_event(Format::json, "m", {{"model", "\xFF"}}),
            "\"msg\":\"m\",\"model\":\"\xEF\xBF\xBD\"");
  EXPECT_EQ(render_event(Format::json, "m", {{"v", std::nan("")}}), R"("msg":"m","v":"nan")");
}

TEST(LogEvent, KeysAreNames) {
  EXPECT_EQ(render_event(Format::logfmt, "m", {{"a b=c", 1}}), "msg=m a_b_c=1");
}

TEST(LogLevel, ConfigureFilters) {
  configure(Format::json, Level::warn);
  EXPECT_FALSE(enabled(Level::info));
  EXPECT_TRUE(enabled(Level::warn));
  EXPECT_TRUE(enabled(Level::error));
  EXPECT_EQ(format(), Format::json);
  configure(Format::logfmt, Level::info);
  EXPECT_TRUE(enabled(Level::info));
  EXPECT_FALSE(enabled(Level::debug));
}

}  // namespace
}  // namespace lse::log
