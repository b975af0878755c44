// Structured log events: a message and typed fields, written as one logfmt
// line or one JSON object on stderr (--log.format). Callers never build
// "key=value" text themselves: `log::warn("probe failed", {{"target", t},
// {"reason", r}})` becomes
//   ts=... level=warn msg="probe failed" target=dead reason=connect
//   {"ts":"...","level":"warn","msg":"probe failed","target":"dead","reason":"connect"}
// Values are data, never syntax: quotes, backslashes and control characters
// are escaped in both formats, and a value is cut at kMaxValueBytes (marked
// "…[truncated]") so an upstream's text cannot forge lines or flood the log.
// Rendering is pure (render_event, render_line) and tested without spdlog.
#pragma once
#include <chrono>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace lse::log {

enum class Format { logfmt, json };
enum class Level { debug, info, warn, error };

inline constexpr std::size_t kMaxValueBytes = 512;

// One key and its value; numbers and booleans stay numbers and booleans in JSON.
class Field {
 public:
  Field(std::string_view key, std::string_view value) : key_(key), text_(value) {}
  Field(std::string_view key, const std::string& value) : key_(key), text_(value) {}
  Field(std::string_view key, const char* value) : key_(key), text_(value ? value : "") {}
  Field(std::string_view key, bool value)
      : key_(key), text_(value ? "true" : "false"), quoted_(false) {}
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) Field(std::string_view key, T value)
      : key_(key), text_(std::to_string(value)), quoted_(false) {}
  Field(std::string_view key, double value);

  std::string_view key() const { return key_; }
  std::string_view text() const { return text_; }
  // JSON: a string (true) or a number/boolean literal (false).
  bool quoted() const { return quoted_; }

 private:
  std::string_view key_;
  std::string text_;
  bool quoted_ = true;
};

using Fields = std::initializer_list<Field>;

// The flag's names: "debug", "info", "warn", "error".
std::string_view to_string(Level level);

// The event without ts and level: `msg="..." k=v ...` (logfmt) or
// `"msg":"...","k":"v"` (JSON: the members, without braces).
std::string render_event(Format format, std::string_view message, Fields fields);

// A whole line from a rendered event: ts (UTC, milliseconds) and level first.
std::string render_line(Format format, Level level, std::chrono::system_clock::time_point time,
                        std::string_view event);

// "2024-05-01T12:00:00.042Z".
std::string timestamp(std::chrono::system_clock::time_point time);

// Chooses the format and the lowest level written; events below it cost
// one comparison. Before it is called: logfmt, info.
void configure(Format format, Level level);
Format format();
bool enabled(Level level);

// Writes one event through spdlog's default logger (whose formatter adds
// ts and level: cli/logging.cpp).
void write(Level level, std::string_view message, Fields fields);

inline void debug(std::string_view message, Fields fields = {}) {
  if (enabled(Level::debug)) write(Level::debug, message, fields);
}
inline void info(std::string_view message, Fields fields = {}) {
  if (enabled(Level::info)) write(Level::info, message, fields);
}
inline void warn(std::string_view message, Fields fields = {}) {
  if (enabled(Level::warn)) write(Level::warn, message, fields);
}
inline void error(std::string_view message, Fields fields = {}) {
  if (enabled(Level::error)) write(Level::error, message, fields);
}

}  // namespace lse::log
