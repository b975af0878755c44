// Event JSON helpers shared by the dialects (see event_json.hpp).
#include "api/event_json.hpp"

#include <cstring>

namespace lse::api::detail {
namespace {

// Chunks are typically < 1 KiB; start with room for that so the first events
// do not each grow the buffers. Larger events grow them once per thread.
constexpr std::size_t kInitialCapacity = 2 * std::size_t{1024};
constexpr std::size_t kMaxErrorMessage = 200;

// The parser and padded buffer every EventParser of this thread shares.
struct ThreadParser {
  std::vector<char> buffer;
  dom::parser parser;

  ThreadParser() {
    buffer.resize(kInitialCapacity + simdjson::SIMDJSON_PADDING);
    // A failed pre-allocation is not fatal: parse() allocates on demand.
    [[maybe_unused]] const auto err = parser.allocate(kInitialCapacity);
  }
};

ThreadParser& thread_parser() {
  thread_local ThreadParser p;
  return p;
}

}  // namespace

bool EventParser::parse(std::string_view data, dom::element& root) {
  ThreadParser& p = thread_parser();
  const std::size_t need = data.size() + simdjson::SIMDJSON_PADDING;
  if (p.buffer.size() < need) p.buffer.resize(need);
  std::memcpy(p.buffer.data(), data.data(), data.size());
  std::memset(p.buffer.data() + data.size(), 0, simdjson::SIMDJSON_PADDING);
  return p.parser.parse(p.buffer.data(), data.size(), false).get(root) == simdjson::SUCCESS;
}

std::size_t string_bytes(dom::element e) {
  std::string_view s;
  return e.get_string().get(s) == simdjson::SUCCESS ? s.size() : 0;
}

std::string_view model_member(dom::object o, std::string_view key) {
  std::string_view s;
  if (o.at_key(key).get_string().get(s) != simdjson::SUCCESS) return {};
  if (s.size() <= kMaxModelName) return s;
  std::size_t cut = kMaxModelName;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut);
}

std::size_t member_string_bytes(dom::object o, std::string_view key) {
  dom::element e;
  return o.at_key(key).get(e) == simdjson::SUCCESS ? string_bytes(e) : 0;
}

std::int64_t int_or_missing(dom::object o, std::string_view key) {
  dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return -1;
  // A negative count is no count: the caller's -1 means "not reported", and
  // any other negative value would pass for a real one downstream.
  std::int64_t i;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return i >= 0 ? i : -1;
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS && d >= 0 && d < 9.2e18) {
    return static_cast<std::int64_t>(d);
  }
  return -1;
}

void set_error_message(EventMeaning& m, std::string_view msg) {
  if (msg.size() > kMaxErrorMessage) {
    // Cut on a UTF-8 character boundary so the log line stays valid text.
    std::size_t cut = kMaxErrorMessage;
    while (cut > 0 && (static_cast<unsigned char>(msg[cut]) & 0xC0) == 0x80) --cut;
    msg = msg.substr(0, cut);
  }
  m.error_message.assign(msg);
}

bool parse_object(EventParser& parser, std::string_view data, dom::object& obj, EventMeaning& m) {
  dom::element root;
  if (parser.parse(data, root) && root.get_object().get(obj) == simdjson::SUCCESS) return true;
  m.protocol_error = true;
  return false;
}

bool parse_named_event(EventParser& parser, const sse::Event& event, dom::object& obj,
                       std::string_view& type, EventMeaning& m) {
  const bool error_event = event.type == "error";
  dom::element root;
  if (!parser.parse(event.data, root) || root.get_object().get(obj) != simdjson::SUCCESS) {
    m.upstream_error = error_event;
    m.protocol_error = !error_event;
    if (error_event) set_error_message(m, event.data.empty() ? "error event" : event.data);
    return false;
  }
  if (obj.at_key("type").get_string().get(type) != simdjson::SUCCESS) type = event.type;
  return true;
}

bool read_error_member(dom::object obj, EventMeaning& m) {
  dom::element error;
  if (obj.at_key("error").get(error) != simdjson::SUCCESS || error.is_null()) return false;
  m.upstream_error = true;
  std::string_view msg;
  if (error.get_string().get(msg) != simdjson::SUCCESS &&
      error["message"].get_string().get(msg) != simdjson::SUCCESS) {
    msg = "upstream error";
  }
  set_error_message(m, msg);
  return true;
}

Usage read_usage(dom::object u, const UsageKeys& keys) {
  Usage usage;
  usage.prompt_tokens = int_or_missing(u, keys.prompt);
  usage.completion_tokens = int_or_missing(u, keys.completion);
  dom::object details;
  if (u.at_key(keys.completion_details).get_object().get(details) == simdjson::SUCCESS)
    usage.reasoning_tokens = int_or_missing(details, "reasoning_tokens");
  return usage;
}

}  // namespace lse::api::detail
