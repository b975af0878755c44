// Dialect anthropic-messages: POST /messages with `messages` and the
// required `max_tokens`; SSE events named by `event:` and by the JSON `type`
// (message_start, content_block_delta, message_delta, message_stop, ping,
// error). The stream ends at message_stop.
#include "api/dialects.hpp"
#include "api/event_json.hpp"

namespace lse::api {
namespace {

using namespace detail;

// Anthropic refuses a request without max_tokens, so "no cap" (<= 0) still
// has to send a number; this is a generous ceiling, not a target.
constexpr int kUncappedMaxTokens = 4096;

// Anthropic's stop reasons in the OpenAI words the rest of the exporter
// (and its dashboards) already use; unknown ones pass through verbatim.
std::string map_stop_reason(std::string_view r) {
  if (r == "end_turn") return "stop";
  if (r == "max_tokens") return "length";
  if (r == "tool_use") return "tool_calls";
  return std::string(r);
}

class AnthropicMessages final : public Adapter {
 public:
  explicit AnthropicMessages(CountSet count) : count_(count) {}
  Dialect dialect() const override { return Dialect::anthropic_messages; }
  std::string_view path() const override { return "/messages"; }
  std::vector<std::pair<std::string, std::string>> extra_headers() const override {
    return {{"anthropic-version", "2023-06-01"}};
  }
  std::string build_body(const RequestSpec& spec) const override;
  EventMeaning interpret(const sse::Event& event) override;

 private:
  void read_message_start(dom::object obj, EventMeaning& m);
  void read_block_delta(dom::object obj, EventMeaning& m) const;
  void read_message_delta(dom::object obj, EventMeaning& m) const;
  static void read_error(dom::object obj, EventMeaning& m);

  CountSet count_;
  EventParser parser_;
  // message_start's input_tokens, carried into message_delta's usage: older
  // API versions report only output_tokens there.
  std::int64_t input_tokens_ = -1;
};

std::string AnthropicMessages::build_body(const RequestSpec& spec) const {
  json::Value body{json::Object{}};
  body.set("model", spec.model);
  body.set("max_tokens", spec.max_tokens > 0 ? spec.max_tokens : kUncappedMaxTokens);
  body.set("temperature", spec.temperature);
  body.set("stream", true);
  json::Value message{json::Object{}};
  message.set("role", "user");
  message.set("content", spec.prompt_text);
  body.set("messages", json::Array{std::move(message)});
  // A null extra_body means "no config body"; merging null would replace it all.
  if (!std::holds_alternative<std::nullptr_t>(spec.extra_body.v))
    json::merge(body, spec.extra_body);
  return json::dump(body);
}

EventMeaning AnthropicMessages::interpret(const sse::Event& event) {
  EventMeaning m;
  const bool error_event = event.type == "error";
  if (event.type == "ping" || (event.data.empty() && !error_event)) return m;
  dom::object obj;
  std::string_view type;
  if (!parse_named_event(parser_, event, obj, type, m)) return m;
  if (type == "message_start") {
    read_message_start(obj, m);
  } else if (type == "content_block_delta") {
    read_block_delta(obj, m);
  } else if (type == "message_delta") {
    read_message_delta(obj, m);
  } else if (type == "message_stop") {
    m.done = true;
  } else if (type == "error" || error_event) {
    read_error(obj, m);
  }
  return m;
}

// Only input_tokens: message_start's output_tokens is a placeholder (1..6)
// that message_delta replaces with the real count.
void AnthropicMessages::read_message_start(dom::object obj, EventMeaning& m) {
  input_tokens_ = -1;
  dom::object message;
  if (obj.at_key("message").get_object().get(message) == simdjson::SUCCESS)
    m.model = model_member(message, "model");
  dom::object usage;
  if (obj.at_pointer("/message/usage").get_object().get(usage) != simdjson::SUCCESS) return;
  input_tokens_ = int_or_missing(usage, "input_tokens");
  m.usage = Usage{input_tokens_, -1, -1};
}

void AnthropicMessages::read_block_delta(dom::object obj, EventMeaning& m) const {
  dom::object delta;
  if (obj.at_key("delta").get_object().get(delta) != simdjson::SUCCESS) return;
  std::string_view kind;
  if (delta.at_key("type").get_string().get(kind) != simdjson::SUCCESS) return;
  std::size_t counted = 0;
  if (kind == "text_delta") {
    if (count_.content) counted = member_string_bytes(delta, "text");
  } else if (kind == "thinking_delta") {
    const std::size_t n = member_string_bytes(delta, "thinking");
    m.reasoning = n > 0;
    if (count_.reasoning) counted = n;
  } else if (kind == "input_json_delta") {
    if (count_.tool_calls) counted = member_string_bytes(delta, "partial_json");
  }
  // signature_delta and unknown kinds carry no user-visible text.
  m.text_bytes = counted;
  m.content = counted > 0;
}

void AnthropicMessages::read_message_delta(dom::object obj, EventMeaning& m) const {
  std::string_view stop;
  if (obj.at_pointer("/delta/stop_reason").get_string().get(stop) == simdjson::SUCCESS) {
    m.finish_reason = map_stop_reason(stop);
  }
  dom::object usage;
  if (obj.at_key("usage").get_object().get(usage) != simdjson::SUCCESS) return;
  const std::int64_t input = int_or_missing(usage, "input_tokens");
  m.usage = Usage{input >= 0 ? input : input_tokens_, int_or_missing(usage, "output_tokens"), -1};
}

// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}
void AnthropicMessages::read_error(dom::object obj, EventMeaning& m) {
  m.upstream_error = true;
  std::string_view msg;
  if (obj.at_pointer("/error/message").get_string().get(msg) == simdjson::SUCCESS ||
      obj.at_key("message").get_string().get(msg) == simdjson::SUCCESS) {
    set_error_message(m, msg);
  } else {
    set_error_message(m, "error event");
  }
}

}  // namespace

std::unique_ptr<Adapter> make_anthropic_messages(CountSet count) {
  return std::make_unique<AnthropicMessages>(count);
}

}  // namespace lse::api
