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

// A ratio to 3 decimals, like the milliseconds: 4 -> 4.000, 10/3 -> 3.333.
void append_ratio(std::string& out, const std::optional<double>& x) {
  if (x && std::isfinite(*x))
    fmt::format_to(std::back_inserter(out), "{:.3f}", *x);
  else
    out += "null";
}

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

void append_unix_seconds(std::string& out, double ts) {
  if (std::isfinite(ts))
    fmt::format_to(std::back_inserter(out), "{:.3f}", ts);
  else
    out += "null";
}

void append_phases(std::string& out, const probe::ProbeResult& r) {
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

void append_server_timings(std::string& out, const probe::ProbeResult& r) {
  if (!r.server) {
    out += "null";
    return;
  }
  out += "{\"load\":";
  append_ms(out, r.server->load);
  out += ",\"prompt_eval\":";
  append_ms(out, r.server->prompt_eval);
  out += ",\"eval\":";
  append_ms(out, r.server->eval);
  out += '}';
}

void append_stall_details(std::string& out, const probe::ProbeResult& r) {
  out += '[';
  for (std::size_t i = 0; i < r.stall_details.size(); ++i) {
    const probe::StallDetail& d = r.stall_details[i];
    if (i) out += ',';
    fmt::format_to(std::back_inserter(out), "{{\"at_chunk\":{},\"gap_ms\":", d.at_chunk);
    append_ms(out, d.gap);
    fmt::format_to(std::back_inserter(out), ",\"released_chunks\":{}}}", d.released_chunks);
  }
  out += ']';
}

void append_gaps(std::string& out, const probe::ProbeResult& r) {
  out += '[';
  for (std::size_t i = 0; i < r.gaps.size(); ++i) {
    if (i) out += ',';
    append_ms(out, r.gaps[i]);
  }
  out += ']';
}

}  // namespace

namespace {

using simdjson::dom::element;

struct RowError {
  std::string message;
};

// A value of the row quoted for an error message: JSON-escaped (a line
// break or an escape sequence in a rows file stays on one line of output;
// DEL, which JSON leaves as it is, written \u007f too) and cut to 60 bytes.
std::string quote_value(std::string_view value) {
  constexpr std::size_t kMax = 60;
  std::string escaped;
  json::append_quoted(escaped, value.substr(0, kMax));
  std::string out;
  for (const char c : escaped) {
    if (c == '\x7f')
      out += "\\u007f";
    else
      out += c;
  }
  if (value.size() > kMax) out.insert(out.size() - 1, "...");
  return out;
}

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
      throw RowError{fmt::format("field \"phases_ms\": unknown phase {}", quote_value(phase.key))};
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

void parse_stall_details(element v, std::string_view key, probe::ProbeResult& r) {
  if (v.is_null()) return;
  simdjson::dom::array details;
  if (v.get_array().get(details) != simdjson::SUCCESS) fail(key, "an array of objects");
  for (element e : details) {
    simdjson::dom::object o;
    if (e.get_object().get(o) != simdjson::SUCCESS) fail(key, "an array of objects");
    probe::StallDetail d;
    bool at_chunk = false, gap = false;
    for (auto f : o) {
      if (f.key == "at_chunk") {
        d.at_chunk = static_cast<std::size_t>(integer(f.value, "stalls_detail.at_chunk", 1));
        at_chunk = true;
      } else if (f.key == "gap_ms") {
        d.gap = number(f.value, "stalls_detail.gap_ms") / 1000.0;
        gap = true;
      } else if (f.key == "released_chunks") {
        d.released_chunks =
            static_cast<std::size_t>(integer(f.value, "stalls_detail.released_chunks", 0));
      }
    }
    // Every stall has a place and a length: a row without them would not
    // survive being written and read again.
    if (!at_chunk || !gap) fail(key, "objects with at_chunk and gap_ms");
    r.stall_details.push_back(d);
  }
}

void parse_reason(element v, std::string_view key, probe::ProbeResult& r) {
  auto name = string_or_null(v, key);
  auto reason = probe::parse_failure_reason(name);
  if (!reason)
    throw RowError{fmt::format("field \"reason\": unknown failure reason {}", quote_value(name))};
  r.reason = *reason;
}

void parse_server_timings(element v, std::string_view key, probe::ProbeResult& r) {
  if (v.is_null()) return;
  simdjson::dom::object timings;
  if (v.get_object().get(timings) != simdjson::SUCCESS) fail(key, "an object or null");
  probe::ServerTimings t;
  for (auto f : timings) {
    if (f.key == "load") t.load = ms_or_null(f.value, "server_ms.load");
    if (f.key == "prompt_eval") t.prompt_eval = ms_or_null(f.value, "server_ms.prompt_eval");
    if (f.key == "eval") t.eval = ms_or_null(f.value, "server_ms.eval");
  }
  r.server = t;
}

// The fields of a row in the order they are written, each with its writer
// and its reader: the one place that says what a row holds (DESIGN §6).
// `required` ones must be present when a row is read back.
using E = element;
using K = std::string_view;
using R = probe::ProbeResult;
using Out = std::string;

struct RowField {
  std::string_view key;
  bool required;
  void (*write)(Out& out, const R& r);
  void (*parse)(E v, K key, R& r);
};

constexpr RowField kRowFields[] = {
    {"ts", true, [](Out& o, const R& r) { append_unix_seconds(o, r.ts); },
     [](E v, K k, R& r) { r.ts = number(v, k); }},
    // The probe's id (its exemplars' probe_id); rows written before ids existed have none.
    {"id", false, [](Out& o, const R& r) { append_string_or_null(o, r.id); },
     [](E v, K k, R& r) { r.id = string_or_null(v, k); }},
    {"target", true, [](Out& o, const R& r) { append_string(o, r.target); },
     [](E v, K k, R& r) {
       std::string_view s;
       if (v.get_string().get(s) != simdjson::SUCCESS) fail(k, "a string");
       r.target = std::string(s);
     }},
    {"model", false, [](Out& o, const R& r) { append_string(o, r.model); },
     [](E v, K k, R& r) { r.model = string_or_null(v, k); }},
    {"prompt", false, [](Out& o, const R& r) { append_string(o, r.prompt); },
     [](E v, K k, R& r) { r.prompt = string_or_null(v, k); }},
    // The model the stream named; null when it named none (and absent from older rows).
    {"response_model", false,
     [](Out& o, const R& r) { append_string_or_null(o, r.response_model); },
     [](E v, K k, R& r) { r.response_model = string_or_null(v, k); }},
    {"ok", true, [](Out& o, const R& r) { o += r.ok ? "true" : "false"; },
     [](E v, K k, R& r) {
       if (v.get_bool().get(r.ok) != simdjson::SUCCESS) fail(k, "true or false");
     }},
    {"reason", false,
     [](Out& o, const R& r) {
       append_string(o, r.ok ? std::string_view() : probe::to_string(r.reason));
     },
     parse_reason},
    {"http_status", false,
     [](Out& o, const R& r) { append_int_or_null(o, r.http_status, r.http_status > 0); },
     [](E v, K k, R& r) { r.http_status = v.is_null() ? 0 : static_cast<int>(integer(v, k, 0)); }},
    {"ttft_ms", false, [](Out& o, const R& r) { append_ms(o, r.ttft); },
     [](E v, K k, R& r) { r.ttft = ms_or_null(v, k); }},
    {"duration_ms", false, [](Out& o, const R& r) { append_ms(o, r.duration); },
     [](E v, K k, R& r) { r.duration = v.is_null() ? 0 : number(v, k) / 1000.0; }},
    {"tail_ms", false, [](Out& o, const R& r) { append_ms(o, r.tail); },
     [](E v, K k, R& r) { r.tail = ms_or_null(v, k); }},
    {"chunks", false, [](Out& o, const R& r) { append_int_or_null(o, r.chunks, true); },
     [](E v, K k, R& r) { r.chunks = static_cast<std::size_t>(integer(v, k, 0)); }},
    {"stalls", false, [](Out& o, const R& r) { append_int_or_null(o, r.stalls, true); },
     [](E v, K k, R& r) { r.stalls = static_cast<std::size_t>(integer(v, k, 0)); }},
    {"gap_p50_ms", false, [](Out& o, const R& r) { append_ms(o, r.gap_p50); },
     [](E v, K k, R& r) { r.gap_p50 = ms_or_null(v, k); }},
    {"gap_p95_ms", false, [](Out& o, const R& r) { append_ms(o, r.gap_p95); },
     [](E v, K k, R& r) { r.gap_p95 = ms_or_null(v, k); }},
    {"gap_max_ms", false, [](Out& o, const R& r) { append_ms(o, r.gap_max); },
     [](E v, K k, R& r) { r.gap_max = ms_or_null(v, k); }},
    {"phases_ms", false, append_phases, parse_phases},
    {"usage", false, append_usage, parse_usage},
    {"server_ms", false, append_server_timings, parse_server_timings},
    {"finish_reason", false, [](Out& o, const R& r) { append_string_or_null(o, r.finish_reason); },
     [](E v, K k, R& r) { r.finish_reason = string_or_null(v, k); }},
    {"gaps_ms", false, append_gaps, parse_gaps},
    {"host", false, [](Out& o, const R& r) { append_string_or_null(o, r.host); },
     [](E v, K k, R& r) { r.host = string_or_null(v, k); }},
    {"error", false, [](Out& o, const R& r) { append_string_or_null(o, r.error_detail); },
     [](E v, K k, R& r) { r.error_detail = string_or_null(v, k); }},
    {"content_encoding", false,
     [](Out& o, const R& r) {
       // Known once headers came: "" then means identity, written as such.
       if (r.http_version.empty())
         o += "null";
       else
         append_string(o, r.content_encoding.empty() ? "identity" : r.content_encoding);
     },
     [](E v, K k, R& r) {
       r.content_encoding = string_or_null(v, k);
       if (r.content_encoding == "identity") r.content_encoding.clear();
     }},
    // As the server sent it; null before headers came, "" when it sent none.
    {"content_type", false,
     [](Out& o, const R& r) {
       if (r.http_version.empty())
         o += "null";
       else
         append_string(o, r.content_type);
     },
     [](E v, K k, R& r) { r.content_type = string_or_null(v, k); }},
    // The content type was not the dialect's stream type; the body was measured all the same.
    {"unexpected_content_type", false,
     [](Out& o, const R& r) { o += r.unexpected_content_type ? "true" : "false"; },
     [](E v, K k, R& r) {
       if (v.get_bool().get(r.unexpected_content_type) != simdjson::SUCCESS)
         fail(k, "true or false");
     }},
    {"http_version", false, [](Out& o, const R& r) { append_string_or_null(o, r.http_version); },
     [](E v, K k, R& r) { r.http_version = string_or_null(v, k); }},
    // The RFC 9113 name of the HTTP/2 error code that ended a failed probe
    // ("INTERNAL_ERROR"); null otherwise, and in rows written before the field.
    {"h2_error", false, [](Out& o, const R& r) { append_string_or_null(o, r.h2_error); },
     [](E v, K k, R& r) { r.h2_error = string_or_null(v, k); }},
    // 1xx answers before the final one; rows written before the field have none (0).
    {"interim_responses", false,
     [](Out& o, const R& r) {
       append_int_or_null(o, static_cast<long long>(r.interim_responses), true);
     },
     [](E v, K k, R& r) { r.interim_responses = static_cast<std::size_t>(integer(v, k, 0)); }},
    {"via_proxy", false, [](Out& o, const R& r) { o += r.via_proxy ? "true" : "false"; },
     [](E v, K k, R& r) {
       if (v.get_bool().get(r.via_proxy) != simdjson::SUCCESS) fail(k, "true or false");
     }},
    {"coalesced_chunks", false,
     [](Out& o, const R& r) {
       append_int_or_null(o, static_cast<long long>(r.coalesced_chunks), true);
     },
     [](E v, K k, R& r) { r.coalesced_chunks = static_cast<std::size_t>(integer(v, k, 0)); }},
    {"stalls_detail", false, append_stall_details, parse_stall_details},
    // Completion tokens per content chunk (probe::tokens_per_chunk); null
    // without usage. Rows written before the field have none (unknown).
    {"tokens_per_chunk", false, [](Out& o, const R& r) { append_ratio(o, r.tokens_per_chunk); },
     [](E v, K k, R& r) {
       r.tokens_per_chunk.reset();
       if (v.is_null()) return;
       const double x = number(v, k);
       if (x < 0) fail(k, "a non-negative number or null");
       r.tokens_per_chunk = x;
     }},
};

static_assert(std::size(kRowFields) <= 64, "parse_fields keeps one bit per field");

// Reads every known field of `obj` into `r`; returns the required keys seen
// (bit i for kRowFields[i]; 64 fields at most). Other keys: written by a newer exporter, ignored on
// purpose.
std::uint64_t parse_fields(simdjson::dom::object obj, probe::ProbeResult& r) {
  std::uint64_t seen = 0;
  for (auto field : obj) {
    for (std::size_t i = 0; i < std::size(kRowFields); ++i) {
      if (kRowFields[i].key != field.key) continue;
      kRowFields[i].parse(field.value, field.key, r);
      seen |= std::uint64_t{1} << i;
      break;
    }
  }
  return seen;
}

}  // namespace

std::string to_row_json(const probe::ProbeResult& r) {
  std::string out;
  out.reserve(384 + r.gaps.size() * 9 + r.target.size() + r.model.size() + r.prompt.size());
  char separator = '{';
  for (const RowField& f : kRowFields) {
    out += separator;
    separator = ',';
    out += '"';
    out += f.key;
    out += "\":";
    f.write(out, r);
  }
  out += '}';
  return out;
}

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
  std::uint64_t seen = 0;
  try {
    seen = parse_fields(obj, r);
  } catch (const RowError& e) {
    return report(e.message);
  }
  for (std::size_t i = 0; i < std::size(kRowFields); ++i)
    if (kRowFields[i].required && !(seen & (std::uint64_t{1} << i)))
      return report(fmt::format("missing field \"{}\"", kRowFields[i].key));
  if (r.ok) r.reason = probe::FailureReason::none;
  return r;
}

}  // namespace lse::report
