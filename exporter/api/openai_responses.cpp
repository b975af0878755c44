// Dialect openai-responses: POST /responses with `input`; SSE events named
// response.* (by `event:` and the JSON `type`). Text arrives in *.delta
// events; usage and status in the terminal response.completed /
// response.incomplete, which end the stream; response.failed and error are
// the server's errors.
#include "api/dialects.hpp"
#include "api/event_json.hpp"

namespace lse::api {
namespace {

using namespace detail;

Usage read_usage(dom::object u) {
  return detail::read_usage(u, {"input_tokens", "output_tokens", "output_tokens_details"});
}

// A completed response that ends in a function call finished to call a
// tool, as openai-chat's finish_reason "tool_calls" says.
bool has_function_call(dom::object response) {
  dom::array output;
  if (response.at_key("output").get_array().get(output) != simdjson::SUCCESS) return false;
  for (dom::element item : output) {
    std::string_view type;
    if (item["type"].get_string().get(type) == simdjson::SUCCESS && type == "function_call")
      return true;
  }
  return false;
}

void set_error(EventMeaning& m, dom::object obj, std::string_view pointer) {
  m.upstream_error = true;
  std::string_view msg;
  if (obj.at_pointer(pointer).get_string().get(msg) == simdjson::SUCCESS) {
    set_error_message(m, msg);
  } else {
    set_error_message(m, "error event");
  }
}

class OpenAiResponses final : public Adapter {
 public:
  explicit OpenAiResponses(CountSet count) : count_(count) {}
  Dialect dialect() const override { return Dialect::openai_responses; }
  std::string_view path() const override { return "/responses"; }
  std::string build_body(const RequestSpec& spec) const override;
  EventMeaning interpret(const sse::Event& event) override;

 private:
  void read_delta(dom::object obj, std::string_view type, EventMeaning& m) const;
  static void read_terminal(dom::object obj, std::string_view type, EventMeaning& m);

  CountSet count_;
  EventParser parser_;
};

std::string OpenAiResponses::build_body(const RequestSpec& spec) const {
  json::Value body{json::Object{}};
  body.set("model", spec.model);
  body.set("input", spec.prompt_text);
  // max_tokens <= 0 means "no cap": leave it to the server's default.
  if (spec.max_tokens > 0) body.set("max_output_tokens", spec.max_tokens);
  body.set("temperature", spec.temperature);
  body.set("stream", true);
  // A null extra_body means "no config body"; merging null would replace it all.
  if (!std::holds_alternative<std::nullptr_t>(spec.extra_body.v))
    json::merge(body, spec.extra_body);
  return json::dump(body);
}

EventMeaning OpenAiResponses::interpret(const sse::Event& event) {
  EventMeaning m;
  const bool error_event = event.type == "error";
  if (event.data.empty() && !error_event) return m;
  dom::object obj;
  std::string_view type;
  if (!parse_named_event(parser_, event, obj, type, m)) return m;
  // response.created / in_progress / completed carry the response object.
  dom::object response;
  if (obj.at_key("response").get_object().get(response) == simdjson::SUCCESS)
    m.model = model_member(response, "model");
  if (type.ends_with(".delta")) {
    read_delta(obj, type, m);
  } else if (type == "response.completed" || type == "response.incomplete") {
    read_terminal(obj, type, m);
  } else if (type == "response.failed") {
    set_error(m, obj, "/response/error/message");
  } else if (type == "error" || error_event) {
    set_error(m, obj, "/message");
  }
  return m;
}

void OpenAiResponses::read_delta(dom::object obj, std::string_view type, EventMeaning& m) const {
  const std::size_t n = member_string_bytes(obj, "delta");
  bool counted = false;
  if (type == "response.output_text.delta") {
    counted = count_.content;
  } else if (type == "response.reasoning_summary_text.delta" ||
             type == "response.reasoning_text.delta") {
    m.reasoning = n > 0;
    counted = count_.reasoning;
  } else if (type == "response.function_call_arguments.delta") {
    counted = count_.tool_calls;
  }
  // Other deltas (audio, refusal, ...) carry no text we time.
  m.text_bytes = counted ? n : 0;
  m.content = m.text_bytes > 0;
}

// Both terminal events end the stream and carry the final usage; an
// incomplete one says why (max_output_tokens is OpenAI-chat's "length").
void OpenAiResponses::read_terminal(dom::object obj, std::string_view type, EventMeaning& m) {
  m.done = true;
  dom::object response;
  if (obj.at_key("response").get_object().get(response) != simdjson::SUCCESS) return;
  dom::object usage;
  if (response.at_key("usage").get_object().get(usage) == simdjson::SUCCESS)
    m.usage = read_usage(usage);
  if (type == "response.completed") {
    m.finish_reason = has_function_call(response) ? "tool_calls" : "stop";
    return;
  }
  std::string_view reason;
  if (response.at_pointer("/incomplete_details/reason").get_string().get(reason) !=
      simdjson::SUCCESS) {
    reason = "incomplete";
  }
  m.finish_reason = reason == "max_output_tokens" ? "length" : std::string(reason);
}

}  // namespace

std::unique_ptr<Adapter> make_openai_responses(CountSet count) {
  return std::make_unique<OpenAiResponses>(count);
}

}  // namespace lse::api
