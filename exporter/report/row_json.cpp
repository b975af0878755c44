// Raw row writer (fmt straight into one string: rows are written per probe
// and in bulk by `run`, so no intermediate JSON tree; strings through
// json::append_quoted, the one escaper, which turns invalid UTF-8 into
// U+FFFD so a strict parser can always read a row back) and reader (simdjson
// DOM, which validates the whole line before any field is trusted).
#include "report/row_json.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <iterator>

#include "util/json.hpp"

namespace lse::report {
namespace {

void append_string(std::string& out, std::string_view s) { json::append_quoted(out, s); }

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

namespace {

void append_int_or_null(std::string& out, long long value, bool known) {
  if (known)
    fmt::format_to(std::back_inserter(out), "{}", value);
  else
    out += "null";
}

void append_string_or_null(std::string& out, std::string_view s) {
  if (s.empty())
    out += "null";
  else
    append_string(out, s);
}

// ts, target, model, prompt, ok, reason, http_status.
void append_identity(std::string& out, const probe::ProbeResult& r) {
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
  append_int_or_null(out, r.http_status, r.http_status > 0);
}

// The per-probe summary of DESIGN §2: ttft .. gap_max.
void append_clock(std::string& out, const probe::ProbeResult& r) {
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
}

void append_phases(std::string& out, const probe::ProbeResult& r) {
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
}

void append_usage(std::string& out, const probe::ProbeResult& r) {
  append_key(out, "usage");
  if (r.prompt_tokens < 0 && r.completion_tokens < 0) {
    out += "null";
    return;
  }
  out += "{\"prompt_tokens\":";
  append_int_or_null(out, r.prompt_tokens, r.prompt_tokens >= 0);
  out += ",\"completion_tokens\":";
  append_int_or_null(out, r.completion_tokens, r.completion_tokens >= 0);
  out += '}';
}

void append_gaps(std::string& out, const probe::ProbeResult& r) {
  append_key(out, "gaps_ms");
  out += '[';
  for (std::size_t i = 0; i < r.gaps.size(); ++i) {
    if (i) out += ',';
    append_ms(out, r.gaps[i]);
  }
  out += ']';
}

}  // namespace

std::string to_row_json(const probe::ProbeResult& r) {
  std::string out;
  out.reserve(384 + r.gaps.size() * 9 + r.target.size() + r.model.size() + r.prompt.size());
  append_identity(out, r);
  append_clock(out, r);
  append_phases(out, r);
  append_usage(out, r);
  append_key(out, "finish_reason");
  append_string_or_null(out, r.finish_reason);
  append_gaps(out, r);
  append_key(out, "host");
  append_string_or_null(out, r.host);
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

void parse_phases(element v, std::string_view key, probe::ProbeResult& r) {
  if (v.is_null()) return;
  simdjson::dom::object phases;
  if (v.get_object().get(phases) != simdjson::SUCCESS) fail(key, "an object or null");
  for (auto phase : phases) {
    std::size_t i = 0;
    while (i < probe::kAllPhases.size() && probe::to_string(probe::kAllPhases[i]) != phase.key) ++i;
    if (i == probe::kAllPhases.size())
      throw RowError{fmt::format("field \"phases_ms\": unknown phase \"{}\"", phase.key)};
    r.phases[i] = ms_or_null(phase.value, "phases_ms");
  }
}

void parse_usage(element v, std::string_view key, probe::ProbeResult& r) {
  if (v.is_null()) return;
  simdjson::dom::object usage;
  if (v.get_object().get(usage) != simdjson::SUCCESS) fail(key, "an object or null");
  for (auto u : usage) {
    if (u.key == "prompt_tokens")
      r.prompt_tokens = u.value.is_null() ? -1 : integer(u.value, "usage.prompt_tokens", 0);
    else if (u.key == "completion_tokens")
      r.completion_tokens = u.value.is_null() ? -1 : integer(u.value, "usage.completion_tokens", 0);
  }
}

void parse_gaps(element v, std::string_view key, probe::ProbeResult& r) {
  if (v.is_null()) return;
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

void parse_reason(element v, std::string_view key, probe::ProbeResult& r) {
  auto name = string_or_null(v, key);
  auto reason = probe::parse_failure_reason(name);
  if (!reason) throw RowError{fmt::format("field \"reason\": unknown failure reason \"{}\"", name)};
  r.reason = *reason;
}

// The fields a row has, each with its reader. `required` ones must be present.
struct RowField {
  std::string_view key;
  bool required;
  void (*parse)(element v, std::string_view key, probe::ProbeResult& r);
};

using E = element;
using K = std::string_view;
using R = probe::ProbeResult;

constexpr RowField kRowFields[] = {
    {"ts", true, [](E v, K k, R& r) { r.ts = number(v, k); }},
    {"target", true,
     [](E v, K k, R& r) {
       std::string_view s;
       if (v.get_string().get(s) != simdjson::SUCCESS) fail(k, "a string");
       r.target = std::string(s);
     }},
    {"model", false, [](E v, K k, R& r) { r.model = string_or_null(v, k); }},
    {"prompt", false, [](E v, K k, R& r) { r.prompt = string_or_null(v, k); }},
    {"host", false, [](E v, K k, R& r) { r.host = string_or_null(v, k); }},
    {"ok", true,
     [](E v, K k, R& r) {
       if (v.get_bool().get(r.ok) != simdjson::SUCCESS) fail(k, "true or false");
     }},
    {"reason", false, parse_reason},
    {"http_status", false,
     [](E v, K k, R& r) { r.http_status = v.is_null() ? 0 : static_cast<int>(integer(v, k, 0)); }},
    {"ttft_ms", false, [](E v, K k, R& r) { r.ttft = ms_or_null(v, k); }},
    {"duration_ms", false,
     [](E v, K k, R& r) { r.duration = v.is_null() ? 0 : number(v, k) / 1000.0; }},
    {"tail_ms", false, [](E v, K k, R& r) { r.tail = ms_or_null(v, k); }},
    {"chunks", false,
     [](E v, K k, R& r) { r.chunks = static_cast<std::size_t>(integer(v, k, 0)); }},
    {"stalls", false,
     [](E v, K k, R& r) { r.stalls = static_cast<std::size_t>(integer(v, k, 0)); }},
    {"gap_p50_ms", false, [](E v, K k, R& r) { r.gap_p50 = ms_or_null(v, k); }},
    {"gap_p95_ms", false, [](E v, K k, R& r) { r.gap_p95 = ms_or_null(v, k); }},
    {"gap_max_ms", false, [](E v, K k, R& r) { r.gap_max = ms_or_null(v, k); }},
    {"finish_reason", false, [](E v, K k, R& r) { r.finish_reason = string_or_null(v, k); }},
    {"phases_ms", false, parse_phases},
    {"usage", false, parse_usage},
    {"gaps_ms", false, parse_gaps},
};

// Reads every known field of `obj` into `r`; returns the required keys seen
// (bit i for kRowFields[i]). Other keys: written by a newer exporter, ignored on purpose.
std::uint32_t parse_fields(simdjson::dom::object obj, probe::ProbeResult& r) {
  std::uint32_t seen = 0;
  for (auto field : obj) {
    for (std::size_t i = 0; i < std::size(kRowFields); ++i) {
      if (kRowFields[i].key != field.key) continue;
      kRowFields[i].parse(field.value, field.key, r);
      seen |= 1u << i;
      break;
    }
  }
  return seen;
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
  std::uint32_t seen = 0;
  try {
    seen = parse_fields(obj, r);
  } catch (const RowError& e) {
    return report(e.message);
  }
  for (std::size_t i = 0; i < std::size(kRowFields); ++i)
    if (kRowFields[i].required && !(seen & (1u << i)))
      return report(fmt::format("missing field \"{}\"", kRowFields[i].key));
  if (r.ok) r.reason = probe::FailureReason::none;
  return r;
}

}  // namespace lse::report
