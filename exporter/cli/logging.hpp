// Structured logs for every command: logfmt (default) or JSON lines on stderr.
// Messages are written as key=value text by callers; the formatter adds ts
// and level and, for JSON, quotes the rest safely (json::append_quoted).
#pragma once
#include <chrono>
#include <string>
#include <string_view>

namespace lse::cli {

void setup_logging(const std::string& level, const std::string& format);

// The pieces of one log line, pure so they can be tested without spdlog's sinks.
// "2024-05-01T12:00:00.042Z": UTC, milliseconds, always 24 characters.
std::string log_timestamp(std::chrono::system_clock::time_point time);
// ts=... level=... <message as written>\n
std::string format_logfmt_line(std::string_view level, std::chrono::system_clock::time_point time,
                               std::string_view message);
// {"ts":"...","level":"...","msg":"<message, JSON-escaped>"}\n
std::string format_json_line(std::string_view level, std::chrono::system_clock::time_point time,
                             std::string_view message);

}  // namespace lse::cli
