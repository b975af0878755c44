// What every JSON-speaking dialect needs to read one streamed event: a
// reusable simdjson parser over a padded buffer (so a warm adapter does not
// allocate per event), tolerant field readers, and the error-message cut.
// Internal to the api module.
#pragma once
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "api/adapter.hpp"

namespace lse::api::detail {

namespace dom = simdjson::dom;

// Parses event payloads into one DOM; the element stays valid until the next
// parse on the same thread. Every EventParser of a thread shares one simdjson
// parser and padded buffer (reused, so they only grow): a probe thread reads
// one event at a time, and with 1,000 targets one warm parser stays in the
// cache where a parser per target (~25 KiB each) was cold at every event.
class EventParser {
 public:
  // Copies the payload into the padded buffer and parses it.
  bool parse(std::string_view data, dom::element& root);
};

// Byte length of a string element (0 for anything else).
std::size_t string_bytes(dom::element e);
// Byte length of o[key] when it is a string (0 otherwise).
std::size_t member_string_bytes(dom::object o, std::string_view key);
// o[key] as the model name an event carries: a view into the parser's
// buffer, at most kMaxModelName bytes (cut on a UTF-8 boundary); empty when
// o[key] is missing or not a string.
inline constexpr std::size_t kMaxModelName = 256;
std::string_view model_member(dom::object o, std::string_view key);
// o[key] as a non-negative count, -1 when missing or not a number.
std::int64_t int_or_missing(dom::object o, std::string_view key);

// The usage members a dialect reports: token counts and the object that
// holds reasoning_tokens.
struct UsageKeys {
  std::string_view prompt, completion, completion_details;
};
Usage read_usage(dom::object usage, const UsageKeys& keys);

// Sets m.error_message to at most ~200 bytes, cut on a UTF-8 boundary.
void set_error_message(EventMeaning& m, std::string_view msg);

// Parses `data` as a JSON object into `obj`; otherwise sets m.protocol_error
// and returns false.
bool parse_object(EventParser& parser, std::string_view data, dom::object& obj, EventMeaning& m);

// For dialects that name their events (Anthropic, Responses): parses the
// event into `obj` and sets `type` from its JSON `type`, or from the SSE
// `event:` name when a proxy dropped it. A non-JSON `event: error` is still
// the server's error (upstream_error), anything else non-JSON a protocol
// error; both return false.
bool parse_named_event(EventParser& parser, const sse::Event& event, dom::object& obj,
                       std::string_view& type, EventMeaning& m);

// When obj.error is present and not null: m.upstream_error with its message
// (a string, or an object's `message`); returns whether it was there.
bool read_error_member(dom::object obj, EventMeaning& m);

}  // namespace lse::api::detail
