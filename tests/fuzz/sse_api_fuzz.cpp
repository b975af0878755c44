// libFuzzer target for the pure stream path of every dialect: the first input
// byte picks the dialect (kAllDialects), the event/line limit and max_tokens;
// the rest is the response body. The body goes through the dialect's own
// framing (sse::Decoder, or ndjson::Decoder with each line handed on as an
// sse::Event whose data is the line, then finish()) whole, split in two at a
// point taken from the input, byte by byte, and through a reused decoder after
// reset(); all must agree, and the NDJSON lines must match a reference model
// of the framing rules in ndjson/decoder.hpp. Every framed event goes through
// the dialect's adapter under five CountSets, with the EventMeaning
// invariants of api/adapter.hpp checked (see tests/fuzz/README.md). Then
// build_body with the body as prompt must be valid JSON that round-trips it.
// Built and run by tests/fuzz/build_and_run.sh.
#include <simdjson.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/adapter.hpp"
#include "ndjson/decoder.hpp"
#include "sse/decoder.hpp"

namespace {

using lse::api::Adapter;
using lse::api::CountSet;
using lse::api::Dialect;
using lse::api::EventMeaning;
using lse::api::Framing;
using lse::sse::Event;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "invariant violated: %s\n", what);
  std::abort();
}

#define FUZZ_CHECK(cond)      \
  do {                        \
    if (!(cond)) fail(#cond); \
  } while (0)

// ---------------------------------------------------------------------------
// Controls: what the first byte of the input chooses.

constexpr std::size_t kDialects = std::size(lse::api::kAllDialects);
// 1 MiB is the config default; the small ones make the limit paths reachable.
// None is below 3, so a partial BOM never breaks a limit (see ndjson_model).
constexpr std::size_t kLimits[] = {1 << 20, 16, 200, 4096};

struct Controls {
  std::size_t dialect_index = 0;
  std::size_t limit_index = 0;
  int max_tokens = 16;
  std::string_view body;  // the response body (and the prompt)
  std::size_t split = 0;  // where the two-piece decode cuts the body
};

Controls read_controls(const std::uint8_t* data, std::size_t size) {
  Controls c;
  if (size == 0) return c;
  const unsigned first = data[0];
  c.dialect_index = first % kDialects;
  c.limit_index = (first / kDialects) % std::size(kLimits);
  c.max_tokens = (first / (kDialects * std::size(kLimits))) % 2 == 0 ? 16 : 0;
  c.body = std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1);
  const unsigned last = data[size - 1];
  c.split = (last * 257u + first) % (c.body.size() + 1);
  return c;
}

// The body as two pieces cut at `split`, and as one piece per byte (bounded,
// so the per-input time stays small).
constexpr std::size_t kMaxBytewise = 8192;

std::vector<std::string_view> two_pieces(std::string_view in, std::size_t split) {
  return {in.substr(0, split), in.substr(split)};
}

std::vector<std::string_view> byte_pieces(std::string_view in) {
  std::vector<std::string_view> bytes;
  bytes.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) bytes.push_back(in.substr(i, 1));
  return bytes;
}

// ---------------------------------------------------------------------------
// SSE framing.

struct SseDecoded {
  std::vector<Event> events;
  lse::sse::Status status = lse::sse::Status::ok;
  std::uint64_t comments = 0;
  bool partial = false;

  bool operator==(const SseDecoded& o) const {
    if (events.size() != o.events.size() || status != o.status || comments != o.comments ||
        partial != o.partial) {
      return false;
    }
    for (std::size_t i = 0; i < events.size(); ++i) {
      const Event& a = events[i];
      const Event& b = o.events[i];
      if (a.type != b.type || a.data != b.data || a.id != b.id || a.retry != b.retry) return false;
    }
    return true;
  }
};

// What sse/decoder.hpp promises of each event: within the limit, and, since
// lines end at CR, LF or CRLF, no field value holds a CR, and only data
// (lines joined with '\n') holds an LF; an id never holds a NUL (WHATWG).
void check_sse_event(const Event& e, std::size_t limit) {
  FUZZ_CHECK(e.data.size() <= limit);
  FUZZ_CHECK(e.data.find('\r') == std::string::npos);
  FUZZ_CHECK(e.type.find_first_of("\r\n") == std::string::npos);
  FUZZ_CHECK(e.id.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos);
}

SseDecoded decode_sse(lse::sse::Decoder& dec, const std::vector<std::string_view>& pieces,
                      std::size_t limit) {
  SseDecoded out;
  for (std::string_view p : pieces) {
    const auto s = dec.feed(p, [&](const Event& e) {
      check_sse_event(e, limit);
      out.events.push_back(e);
    });
    FUZZ_CHECK(s == dec.status());
  }
  out.status = dec.status();
  out.comments = dec.comments();
  out.partial = dec.has_partial_event();
  // The decoder stops inside the oversized event: the stream ended in it.
  if (out.status != lse::sse::Status::ok) FUZZ_CHECK(out.partial);
  return out;
}

// Decodes whole, split, byte-wise and with a reused decoder after reset();
// returns the events (all four agree).
std::vector<Event> frame_sse(const Controls& c) {
  const std::size_t limit = kLimits[c.limit_index];
  lse::sse::Decoder fresh(limit);
  const SseDecoded whole = decode_sse(fresh, {c.body}, limit);
  lse::sse::Decoder split_dec(limit);
  if (!(decode_sse(split_dec, two_pieces(c.body, c.split), limit) == whole))
    fail("SSE: two-piece decode differs from one-piece decode");
  if (c.body.size() <= kMaxBytewise) {
    lse::sse::Decoder byte_dec(limit);
    if (!(decode_sse(byte_dec, byte_pieces(c.body), limit) == whole))
      fail("SSE: byte-wise decode differs");
  }
  // One decoder per limit, kept across inputs: reset() must forget the
  // previous stream (partial line, CR state, id, BOM state, status).
  static std::array<std::unique_ptr<lse::sse::Decoder>, std::size(kLimits)> reused;
  auto& dec = reused[c.limit_index];
  if (!dec) dec = std::make_unique<lse::sse::Decoder>(limit);
  dec->reset();
  if (!(decode_sse(*dec, two_pieces(c.body, c.split), limit) == whole))
    fail("SSE: decode after reset() differs from a fresh decoder");
  return whole.events;
}

// ---------------------------------------------------------------------------
// NDJSON framing.

struct NdjsonDecoded {
  std::vector<std::string> lines;   // delivered by feed
  std::optional<std::string> last;  // delivered by finish
  lse::ndjson::Status status = lse::ndjson::Status::ok;
  bool partial_before_finish = false;
  bool partial_after_finish = false;

  bool operator==(const NdjsonDecoded&) const = default;
};

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// What ndjson/decoder.hpp promises of each line it delivers.
void check_ndjson_line(std::string_view line, std::size_t limit) {
  FUZZ_CHECK(!line.empty());
  FUZZ_CHECK(!is_blank(line));
  FUZZ_CHECK(line.find('\n') == std::string_view::npos);
  FUZZ_CHECK(line.size() <= limit);
}

NdjsonDecoded decode_ndjson(lse::ndjson::Decoder& dec, const std::vector<std::string_view>& pieces,
                            std::size_t limit) {
  NdjsonDecoded out;
  for (std::string_view p : pieces) {
    const auto s = dec.feed(p, [&](std::string_view line) {
      check_ndjson_line(line, limit);
      out.lines.emplace_back(line);
    });
    FUZZ_CHECK(s == dec.status());
  }
  out.status = dec.status();
  out.partial_before_finish = dec.has_partial_line();
  int delivered = 0;
  dec.finish([&](std::string_view line) {
    check_ndjson_line(line, limit);
    out.last.emplace(line);
    ++delivered;
  });
  FUZZ_CHECK(delivered <= 1);
  FUZZ_CHECK(dec.status() == out.status);  // finish never changes it (limits >= 3)
  // has_partial_line() is "what finish() would deliver" (or the sticky error).
  if (out.status == lse::ndjson::Status::ok)
    FUZZ_CHECK(out.partial_before_finish == out.last.has_value());
  if (out.status != lse::ndjson::Status::ok)
    FUZZ_CHECK(delivered == 0 && out.partial_before_finish);
  out.partial_after_finish = dec.has_partial_line();
  return out;
}

// Strips the CR of a CRLF (or, for the last line, the CR finish() strips).
std::string_view strip_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// The framing rules of ndjson/decoder.hpp applied to the whole body at once:
// a BOM at the very start is skipped; lines end at LF, one CR before it is
// stripped, blank lines are skipped; a line over the limit stops the stream
// (sticky); finish() delivers the unterminated non-blank rest.
NdjsonDecoded ndjson_model(std::string_view in, std::size_t limit) {
  NdjsonDecoded out;
  if (in.starts_with(lse::LeadingBom::kBytes)) in.remove_prefix(lse::LeadingBom::kBytes.size());
  const auto too_large = [&out]() {
    out.status = lse::ndjson::Status::line_too_large;
    out.partial_before_finish = out.partial_after_finish = true;
    return out;
  };
  for (auto lf = in.find('\n'); lf != std::string_view::npos; lf = in.find('\n')) {
    const std::string_view line = strip_cr(in.substr(0, lf));
    in.remove_prefix(lf + 1);
    if (line.size() > limit) return too_large();
    if (!is_blank(line)) out.lines.emplace_back(line);
  }
  if (strip_cr(in).size() > limit) return too_large();
  out.partial_before_finish = !is_blank(in);
  if (!is_blank(in)) out.last.emplace(strip_cr(in));
  return out;
}

// Decodes whole, split, byte-wise, with a reused decoder after reset() and by
// the model; returns the lines (feed's, then finish's), all five agreeing.
std::vector<std::string> frame_ndjson(const Controls& c) {
  const std::size_t limit = kLimits[c.limit_index];
  lse::ndjson::Decoder fresh(limit);
  const NdjsonDecoded whole = decode_ndjson(fresh, {c.body}, limit);
  if (!(ndjson_model(c.body, limit) == whole)) fail("NDJSON: decoder differs from the model");
  lse::ndjson::Decoder split_dec(limit);
  if (!(decode_ndjson(split_dec, two_pieces(c.body, c.split), limit) == whole))
    fail("NDJSON: two-piece decode differs from one-piece decode");
  if (c.body.size() <= kMaxBytewise) {
    lse::ndjson::Decoder byte_dec(limit);
    if (!(decode_ndjson(byte_dec, byte_pieces(c.body), limit) == whole))
      fail("NDJSON: byte-wise decode differs");
  }
  static std::array<std::unique_ptr<lse::ndjson::Decoder>, std::size(kLimits)> reused;
  auto& dec = reused[c.limit_index];
  if (!dec) dec = std::make_unique<lse::ndjson::Decoder>(limit);
  dec->reset();
  if (!(decode_ndjson(*dec, two_pieces(c.body, c.split), limit) == whole))
    fail("NDJSON: decode after reset() differs from a fresh decoder");
  std::vector<std::string> lines = whole.lines;
  if (whole.last) lines.push_back(*whole.last);
  return lines;
}

// ---------------------------------------------------------------------------
// Adapters: one per dialect and CountSet, kept across inputs as the prober
// keeps its adapter across probes, so state carried between events (padded
// buffer, parser, Anthropic's input_tokens) is exercised too. Every adapter of
// a dialect sees the same events in the same order.

enum CountIndex : std::size_t { kContent, kReasoning, kTools, kAll, kNone, kCountSets };
constexpr CountSet kCountSet[kCountSets] = {
    {true, false, false}, {false, true, false},  {false, false, true},
    {true, true, true},   {false, false, false},
};

using DialectAdapters = std::array<std::unique_ptr<Adapter>, kCountSets>;

DialectAdapters& adapters_for(std::size_t dialect_index) {
  static std::array<DialectAdapters, kDialects> all;
  DialectAdapters& set = all[dialect_index];
  if (!set[0]) {
    for (std::size_t i = 0; i < kCountSets; ++i)
      set[i] = lse::api::make_adapter(lse::api::kAllDialects[dialect_index], kCountSet[i]);
  }
  return set;
}

bool is_openai(Dialect d) { return d == Dialect::openai_chat || d == Dialect::openai_completions; }
bool is_ollama(Dialect d) { return d == Dialect::ollama_chat || d == Dialect::ollama_generate; }

bool valid_utf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

bool usage_valid(const std::optional<lse::api::Usage>& u) {
  return !u || (u->prompt_tokens >= -1 && u->completion_tokens >= -1 && u->reasoning_tokens >= -1);
}

bool timings_valid(const std::optional<lse::api::ServerTimings>& t) {
  return !t || (t->load_seconds >= -1 && t->prompt_eval_seconds >= -1 && t->eval_seconds >= -1);
}

bool meaningless(const EventMeaning& m) {
  return !m.content && !m.reasoning && m.text_bytes == 0 && !m.done && !m.usage &&
         m.finish_reason.empty() && !m.upstream_error && m.error_message.empty() &&
         !m.protocol_error && !m.server_timings;
}

// Invariants of EventMeaning (api/adapter.hpp) that hold for every dialect.
void check_meaning(const EventMeaning& m, const Event& e, CountSet count) {
  FUZZ_CHECK(m.content == (m.text_bytes > 0));
  if (count == CountSet{false, false, false}) FUZZ_CHECK(!m.content);
  FUZZ_CHECK(m.error_message.size() <= 200);
  FUZZ_CHECK(m.error_message.empty() || m.upstream_error);
  if (valid_utf8(e.data)) FUZZ_CHECK(valid_utf8(m.error_message));
  // The end marker is never also an error.
  FUZZ_CHECK(!(m.done && (m.upstream_error || m.protocol_error)));
  // A malformed event carries no meaning (beside, for OpenAI, an error member).
  if (m.protocol_error) {
    FUZZ_CHECK(!m.content && !m.reasoning && !m.done && !m.usage && m.finish_reason.empty() &&
               !m.server_timings);
  }
  FUZZ_CHECK(usage_valid(m.usage));
  FUZZ_CHECK(timings_valid(m.server_timings));
  FUZZ_CHECK(!m.server_timings || m.done);  // only Ollama's done line has them
}

// Invariants that depend on the dialect (where its `done` comes from, ...).
void check_dialect_meaning(const EventMeaning& m, const Event& e, Dialect d, CountSet count) {
  // Counted text is decoded JSON string bytes, never more than the event
  // (Ollama's tool calls count their re-minified JSON, which can be longer).
  if (!(d == Dialect::ollama_chat && count.tool_calls)) FUZZ_CHECK(m.text_bytes <= e.data.size());
  if (is_openai(d)) {
    FUZZ_CHECK(m.done == (e.data == "[DONE]"));
    if (m.done) FUZZ_CHECK(m.text_bytes == 0 && !m.usage && m.finish_reason.empty());
  } else {
    FUZZ_CHECK(!(m.upstream_error && (m.content || m.reasoning || m.done)));
  }
  if (d == Dialect::anthropic_messages && m.done)
    FUZZ_CHECK(!m.content && !m.reasoning && !m.usage && m.finish_reason.empty());
  if (d == Dialect::openai_responses && m.done) FUZZ_CHECK(!m.content && !m.reasoning);
  if (is_ollama(d)) {
    FUZZ_CHECK(m.done == m.server_timings.has_value());
    FUZZ_CHECK(!m.done || m.usage.has_value());
  } else {
    FUZZ_CHECK(!m.server_timings);
  }
  if (d == Dialect::gemini) FUZZ_CHECK(m.finish_reason.empty() || m.done);
  // An SSE event without data means nothing (only `event: error` does).
  if (e.data.empty() && e.type != "error") FUZZ_CHECK(meaningless(m));
}

bool same_usage(const std::optional<lse::api::Usage>& a, const std::optional<lse::api::Usage>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a ||
         (a->prompt_tokens == b->prompt_tokens && a->completion_tokens == b->completion_tokens &&
          a->reasoning_tokens == b->reasoning_tokens);
}

bool same_timings(const std::optional<lse::api::ServerTimings>& a,
                  const std::optional<lse::api::ServerTimings>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a ||
         (a->load_seconds == b->load_seconds && a->prompt_eval_seconds == b->prompt_eval_seconds &&
          a->eval_seconds == b->eval_seconds);
}

// The CountSet chooses which text kinds count, and nothing else: every other
// field is the same under every CountSet, and the counted bytes add up.
void check_across_counts(const std::array<EventMeaning, kCountSets>& m) {
  const EventMeaning& all = m[kAll];
  for (const EventMeaning& x : m) {
    FUZZ_CHECK(x.reasoning == all.reasoning && x.done == all.done);
    FUZZ_CHECK(same_usage(x.usage, all.usage) && x.finish_reason == all.finish_reason);
    FUZZ_CHECK(x.upstream_error == all.upstream_error && x.error_message == all.error_message);
    FUZZ_CHECK(x.protocol_error == all.protocol_error);
    FUZZ_CHECK(same_timings(x.server_timings, all.server_timings));
  }
  FUZZ_CHECK(all.text_bytes ==
             m[kContent].text_bytes + m[kReasoning].text_bytes + m[kTools].text_bytes);
  // Counting reasoning alone: a content chunk exactly when there is reasoning text.
  FUZZ_CHECK(m[kReasoning].content == m[kReasoning].reasoning);
}

void interpret_all(DialectAdapters& adapters, const Event& e, Dialect d) {
  std::array<EventMeaning, kCountSets> m;
  for (std::size_t i = 0; i < kCountSets; ++i) {
    // A copy that dies right after: an adapter that kept a reference into
    // the event (adapter.hpp forbids it) reads freed memory under ASan.
    const auto copy = std::make_unique<Event>(e);
    m[i] = adapters[i]->interpret(*copy);
  }
  for (std::size_t i = 0; i < kCountSets; ++i) {
    check_meaning(m[i], e, kCountSet[i]);
    check_dialect_meaning(m[i], e, d, kCountSet[i]);
  }
  check_across_counts(m);
}

// ---------------------------------------------------------------------------
// Request bodies.

// Where each dialect puts the prompt in its request (the dialect's file).
const char* prompt_pointer(Dialect d) {
  switch (d) {
    case Dialect::openai_chat:
    case Dialect::anthropic_messages:
    case Dialect::ollama_chat: return "/messages/0/content";
    case Dialect::openai_completions:
    case Dialect::ollama_generate: return "/prompt";
    case Dialect::openai_responses: return "/input";
    case Dialect::gemini: return "/contents/0/parts/0/text";
  }
  return "";
}

// The body is valid JSON for any prompt (invalid UTF-8 becomes U+FFFD,
// util/json.hpp) and carries a valid UTF-8 prompt unchanged.
void check_body(const Adapter& adapter, std::string_view prompt, int max_tokens) {
  lse::api::RequestSpec spec;
  spec.model = "fuzz-model";
  spec.prompt_text = std::string(prompt);
  spec.max_tokens = max_tokens;
  spec.temperature = 0.25;
  const std::string body = adapter.build_body(spec);
  static simdjson::dom::parser parser;
  simdjson::dom::element root;
  FUZZ_CHECK(parser.parse(body).get(root) == simdjson::SUCCESS);
  FUZZ_CHECK(root.is_object());
  std::string_view got;
  FUZZ_CHECK(root.at_pointer(prompt_pointer(adapter.dialect())).get_string().get(got) ==
             simdjson::SUCCESS);
  if (valid_utf8(prompt)) FUZZ_CHECK(got == prompt);
  if (adapter.dialect() != Dialect::gemini) {  // Gemini has the model in its path
    std::string_view model;
    FUZZ_CHECK(root["model"].get_string().get(model) == simdjson::SUCCESS);
    FUZZ_CHECK(model == spec.model);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Controls c = read_controls(data, size);
  const Dialect dialect = lse::api::kAllDialects[c.dialect_index];
  DialectAdapters& adapters = adapters_for(c.dialect_index);
  FUZZ_CHECK(adapters[kAll] && adapters[kAll]->dialect() == dialect);
  FUZZ_CHECK(adapters[kAll]->framing() == (is_ollama(dialect) ? Framing::ndjson : Framing::sse));

  if (adapters[kAll]->framing() == Framing::ndjson) {
    Event line_event;  // as the prober hands a line on: type empty, data the line
    for (const std::string& line : frame_ndjson(c)) {
      line_event.data = line;
      interpret_all(adapters, line_event, dialect);
    }
  } else {
    for (const Event& e : frame_sse(c)) interpret_all(adapters, e, dialect);
  }

  check_body(*adapters[kAll], c.body, c.max_tokens);
  return 0;
}
