// Rendering and writing of structured log events (see log.hpp).
#include "log/log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>

#include "util/json.hpp"
#include "util/wall_clock.hpp"

namespace lse::log {
namespace {

std::atomic<Format> g_format{Format::logfmt};
std::atomic<Level> g_level{Level::info};

constexpr std::string_view kTruncated = "…[truncated]";

// At most kMaxValueBytes, cut before a UTF-8 continuation byte.
std::string_view bounded(std::string_view value, bool& truncated) {
  truncated = value.size() > kMaxValueBytes;
  if (!truncated) return value;
  std::size_t end = kMaxValueBytes;
  while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80) --end;
  return value.substr(0, end);
}

// logfmt quotes a value that is empty or holds a space, '=', a quote, a
// backslash, a control or non-ASCII byte (JSON escapes inside the quotes).
bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '=' || c == '"' || c == '\\') return true;
  }
  return false;
}

void append_logfmt_value(std::string& out, std::string_view value) {
  bool truncated = false;
  std::string_view v = bounded(value, truncated);
  if (!truncated && !needs_quotes(v)) {
    out += v;
    return;
  }
  std::string text(v);
  if (truncated) text += kTruncated;
  json::append_quoted(out, text);
}

void append_json_value(std::string& out, const Field& f) {
  if (!f.quoted()) {
    out += f.text();
    return;
  }
  bool truncated = false;
  std::string text(bounded(f.text(), truncated));
  if (truncated) text += kTruncated;
  json::append_quoted(out, text);
}

// A key is written as given when it is a plain name; anything else becomes
// one (callers pass literals, so this only guards against mistakes).
std::string plain_key(std::string_view key) {
  std::string k;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    k += ok ? c : '_';
  }
  return k.empty() ? std::string("_") : k;
}

}  // namespace

Field::Field(std::string_view key, double value) : key_(key), quoted_(!std::isfinite(value)) {
  text_ = std::isfinite(value) ? fmt::format("{:.6g}", value) : fmt::format("{}", value);
}

std::string_view to_string(Level level) {
  switch (level) {
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warn";
    case Level::error: return "error";
  }
  return "info";
}

std::string render_event(Format format, std::string_view message, Fields fields) {
  std::string out;
  if (format == Format::json) {
    out += "\"msg\":";
    json::append_quoted(out, message);
    for (const auto& f : fields) {
      out += ',';
      json::append_quoted(out, plain_key(f.key()));
      out += ':';
      append_json_value(out, f);
    }
    return out;
  }
  out += "msg=";
  append_logfmt_value(out, message);
  for (const auto& f : fields) {
    out += ' ';
    out += plain_key(f.key());
    out += '=';
    append_logfmt_value(out, f.text());
  }
  return out;
}

std::string timestamp(std::chrono::system_clock::time_point time) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(time);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time - secs).count();
  const auto unix_seconds = static_cast<double>(secs.time_since_epoch().count());
  return fmt::format("{}.{:03}Z", wall_clock::format_utc(unix_seconds, "%Y-%m-%dT%H:%M:%S"), ms);
}

std::string render_line(Format format, Level level, std::chrono::system_clock::time_point time,
                        std::string_view event) {
  if (format == Format::json)
    return fmt::format("{{\"ts\":\"{}\",\"level\":\"{}\",{}}}\n", timestamp(time), to_string(level),
                       event);
  return fmt::format("ts={} level={} {}\n", timestamp(time), to_string(level), event);
}

void configure(Format format, Level level) {
  g_format.store(format);
  g_level.store(level);
}

Format format() { return g_format.load(std::memory_order_relaxed); }

bool enabled(Level level) {
  return static_cast<int>(level) >= static_cast<int>(g_level.load(std::memory_order_relaxed));
}

void write(Level level, std::string_view message, Fields fields) {
  const std::string event = render_event(format(), message, fields);
  const auto spd = level == Level::debug  ? spdlog::level::debug
                   : level == Level::info ? spdlog::level::info
                   : level == Level::warn ? spdlog::level::warn
                                          : spdlog::level::err;
  spdlog::log(spd, "{}", event);
}

}  // namespace lse::log
