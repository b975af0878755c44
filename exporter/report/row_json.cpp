// Raw row writer (fmt straight into one string: rows are written per probe
// and in bulk by `run`, so no intermediate JSON tree) and reader (simdjson
// DOM, which validates the whole line before any field is trusted).
#include "report/row_json.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <iterator>

namespace lse::report {
namespace {

// RFC 8259 string with invalid UTF-8 replaced by U+FFFD: a row must always be
// readable by a strict parser (simdjson rejects invalid UTF-8), whatever bytes
// a server put in a model name or finish reason.
void append_string(std::string& out, std::string_view s) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20)
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // Length and minimum code point of a well-formed sequence (no overlongs,
    // no surrogates, nothing above U+10FFFF).
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok && len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (ok && len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ok = false;
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  out += '"';
}

void append_ms(std::string& out, double seconds) {
  double ms = seconds * 1000.0;
  if (!std::isfinite(ms)) {
    out += "null";
    return;
  }
  fmt::format_to(std::back_inserter(out), "{:.3f}", ms);
}

void append_ms(std::string& out, const std::optional<double>& seconds) {
  if (seconds)
    append_ms(out, *seconds);
  else
    out += "null";
}

void append_key(std::string& out, const char* key) {
  out += ",\"";
  out += key;
  out += "\":";
}

}  // namespace

std::string to_row_json(const probe::ProbeResult& r) {
  std::string out;
  out.reserve(384 + r.gaps.size() * 9 + r.target.size() + r.model.size() + r.prompt.size());

  out += "{\"ts\":";
  if (std::isfinite(r.ts))
    fmt::format_to(std::back_inserter(out), "{:.3f}", r.ts);
  else
    out += "null";
  append_key(out, "target");
  append_string(out, r.target);
  append_key(out, "model");
  append_string(out, r.model);
  append_key(out, "prompt");
  append_string(out, r.prompt);
  append_key(out, "ok");
  out += r.ok ? "true" : "false";
  append_key(out, "reason");
  append_string(out, r.ok ? std::string_view() : probe::to_string(r.reason));
  append_key(out, "http_status");
  if (r.http_status > 0)
    fmt::format_to(std::back_inserter(out), "{}", r.http_status);
  else
    out += "null";
  append_key(out, "ttft_ms");
  append_ms(out, r.ttft);
  append_key(out, "duration_ms");
  append_ms(out, r.duration);
  append_key(out, "tail_ms");
  append_ms(out, r.tail);
  append_key(out, "chunks");
  fmt::format_to(std::back_inserter(out), "{}", r.chunks);
  append_key(out, "stalls");
  fmt::format_to(std::back_inserter(out), "{}", r.stalls);
  append_key(out, "gap_p50_ms");
  append_ms(out, r.gap_p50);
  append_key(out, "gap_p95_ms");
  append_ms(out, r.gap_p95);
  append_key(out, "gap_max_ms");
  append_ms(out, r.gap_max);

  append_key(out, "phases_ms");
  out += '{';
  bool first = true;
  for (std::size_t i = 0; i < probe::kAllPhases.size(); ++i) {
    if (!r.phases[i]) continue;
    if (!first) out += ',';
    first = false;
    out += '"';
    out += probe::to_string(probe::kAllPhases[i]);
    out += "\":";
    append_ms(out, *r.phases[i]);
  }
  out += '}';

  append_key(out, "usage");
  if (r.prompt_tokens < 0 && r.completion_tokens < 0) {
    out += "null";
  } else {
    out += "{\"prompt_tokens\":";
    if (r.prompt_tokens >= 0)
      fmt::format_to(std::back_inserter(out), "{}", r.prompt_tokens);
    else
      out += "null";
    out += ",\"completion_tokens\":";
    if (r.completion_tokens >= 0)
      fmt::format_to(std::back_inserter(out), "{}", r.completion_tokens);
    else
      out += "null";
    out += '}';
  }

  append_key(out, "finish_reason");
  if (r.finish_reason.empty())
    out += "null";
  else
    append_string(out, r.finish_reason);

  append_key(out, "gaps_ms");
  out += '[';
  for (std::size_t i = 0; i < r.gaps.size(); ++i) {
    if (i) out += ',';
    append_ms(out, r.gaps[i]);
  }
  out += ']';

  append_key(out, "host");
  if (r.host.empty())
    out += "null";
  else
    append_string(out, r.host);
  out += '}';
  return out;
}

namespace {

using simdjson::dom::element;

struct RowError {
  std::string message;
};

[[noreturn]] void fail(std::string_view key, std::string_view expected) {
  throw RowError{fmt::format("field \"{}\": expected {}", key, expected)};
}

double number(element v, std::string_view key) {
  double d;
  if (v.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d)) fail(key, "a number");
  return d;
}

std::optional<double> ms_or_null(element v, std::string_view key) {
  if (v.is_null()) return std::nullopt;
  double d;
  if (v.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d))
    fail(key, "milliseconds (a number) or null");
  return d / 1000.0;
}

std::int64_t integer(element v, std::string_view key, std::int64_t min) {
  std::int64_t i;
  if (v.get_int64().get(i) != simdjson::SUCCESS || i < min)
    fail(key, min == 0 ? "a non-negative integer" : "an integer");
  return i;
}

std::string string_or_null(element v, std::string_view key) {
  if (v.is_null()) return {};
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) fail(key, "a string or null");
  return std::string(s);
}

}  // namespace

std::optional<probe::ProbeResult> parse_row_json(std::string_view line, std::string* error) {
  auto report = [&](std::string message) -> std::optional<probe::ProbeResult> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  // Tolerate the line terminator of a JSONL file read with getline on CRLF.
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (line.empty()) return report("empty line");

  // One parser per thread: `compare` reads thousands of rows and the parser's
  // buffers are reused across them.
  thread_local simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(line.data(), line.size(), true).get(root); err != simdjson::SUCCESS)
    return report(fmt::format("malformed JSON: {}", simdjson::error_message(err)));
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) return report("a row must be a JSON object");

  probe::ProbeResult r;
  bool have_ts = false, have_target = false, have_ok = false;
  try {
    for (auto field : obj) {
      const std::string_view key = field.key;
      const element v = field.value;
      if (key == "ts") {
        r.ts = number(v, key);
        have_ts = true;
      } else if (key == "target") {
        std::string_view s;
        if (v.get_string().get(s) != simdjson::SUCCESS) fail(key, "a string");
        r.target = std::string(s);
        have_target = true;
      } else if (key == "model") {
        r.model = string_or_null(v, key);
      } else if (key == "prompt") {
        r.prompt = string_or_null(v, key);
      } else if (key == "host") {
        r.host = string_or_null(v, key);
      } else if (key == "ok") {
        if (v.get_bool().get(r.ok) != simdjson::SUCCESS) fail(key, "true or false");
        have_ok = true;
      } else if (key == "reason") {
        auto name = string_or_null(v, key);
        auto reason = probe::parse_failure_reason(name);
        if (!reason)
          throw RowError{fmt::format("field \"reason\": unknown failure reason \"{}\"", name)};
        r.reason = *reason;
      } else if (key == "http_status") {
        r.http_status = v.is_null() ? 0 : static_cast<int>(integer(v, key, 0));
      } else if (key == "ttft_ms") {
        r.ttft = ms_or_null(v, key);
      } else if (key == "duration_ms") {
        r.duration = v.is_null() ? 0 : number(v, key) / 1000.0;
      } else if (key == "tail_ms") {
        r.tail = ms_or_null(v, key);
      } else if (key == "chunks") {
        r.chunks = static_cast<std::size_t>(integer(v, key, 0));
      } else if (key == "stalls") {
        r.stalls = static_cast<std::size_t>(integer(v, key, 0));
      } else if (key == "gap_p50_ms") {
        r.gap_p50 = ms_or_null(v, key);
      } else if (key == "gap_p95_ms") {
        r.gap_p95 = ms_or_null(v, key);
      } else if (key == "gap_max_ms") {
        r.gap_max = ms_or_null(v, key);
      } else if (key == "finish_reason") {
        r.finish_reason = string_or_null(v, key);
      } else if (key == "phases_ms") {
        if (v.is_null()) continue;
        simdjson::dom::object phases;
        if (v.get_object().get(phases) != simdjson::SUCCESS) fail(key, "an object or null");
        for (auto phase : phases) {
          std::size_t i = 0;
          while (i < probe::kAllPhases.size() &&
                 probe::to_string(probe::kAllPhases[i]) != phase.key)
            ++i;
          if (i == probe::kAllPhases.size())
            throw RowError{fmt::format("field \"phases_ms\": unknown phase \"{}\"", phase.key)};
          r.phases[i] = ms_or_null(phase.value, "phases_ms");
        }
      } else if (key == "usage") {
        if (v.is_null()) continue;
        simdjson::dom::object usage;
        if (v.get_object().get(usage) != simdjson::SUCCESS) fail(key, "an object or null");
        for (auto u : usage) {
          if (u.key == "prompt_tokens")
            r.prompt_tokens = u.value.is_null() ? -1 : integer(u.value, "usage.prompt_tokens", 0);
          else if (u.key == "completion_tokens")
            r.completion_tokens =
                u.value.is_null() ? -1 : integer(u.value, "usage.completion_tokens", 0);
        }
      } else if (key == "gaps_ms") {
        if (v.is_null()) continue;
        simdjson::dom::array gaps;
        if (v.get_array().get(gaps) != simdjson::SUCCESS) fail(key, "an array of numbers");
        r.gaps.reserve(gaps.size());
        for (element g : gaps) {
          double d;
          if (g.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d))
            fail(key, "an array of numbers");
          r.gaps.push_back(d / 1000.0);
        }
      }
      // Other keys: written by a newer exporter; ignored on purpose.
    }
  } catch (const RowError& e) {
    return report(e.message);
  }
  if (!have_ts) return report("missing field \"ts\"");
  if (!have_target) return report("missing field \"target\"");
  if (!have_ok) return report("missing field \"ok\"");
  if (r.ok) r.reason = probe::FailureReason::none;
  return r;
}

}  // namespace lse::report
