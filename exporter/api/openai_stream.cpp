// The OpenAI streaming shape (see openai_stream.hpp): the request body and
// the reading of one chunk, step by step.
#include "api/openai_stream.hpp"

namespace lse::api::detail {
namespace {

Usage read_usage(dom::object u) {
  return detail::read_usage(u, {"prompt_tokens", "completion_tokens", "completion_tokens_details"});
}

// {"error": ...}: the message when there is one, else a generic label.
void read_error_member(dom::element error, EventMeaning& m) {
  m.upstream_error = true;
  std::string_view msg;
  if (error.get_string().get(msg) == simdjson::SUCCESS ||
      error["message"].get_string().get(msg) == simdjson::SUCCESS) {
    set_error_message(m, msg);
  } else {
    set_error_message(m, "upstream error");
  }
}

}  // namespace

std::string OpenAiStream::build_body(const RequestSpec& spec) const {
  json::Value body{json::Object{}};
  body.set("model", spec.model);
  add_prompt(body, spec);
  body.set("stream", true);
  // max_tokens <= 0 means "no cap": leave it to the server's default.
  if (spec.max_tokens > 0) body.set("max_tokens", spec.max_tokens);
  body.set("temperature", spec.temperature);
  if (spec.include_usage) {
    json::Value opts{json::Object{}};
    opts.set("include_usage", true);
    body.set("stream_options", std::move(opts));
  }
  // A null extra_body means "no config body"; merging null would replace
  // the whole request.
  if (!std::holds_alternative<std::nullptr_t>(spec.extra_body.v)) {
    json::merge(body, spec.extra_body);
  }
  return json::dump(body);
}

EventMeaning OpenAiStream::interpret(const sse::Event& event) {
  EventMeaning m;
  dom::object obj;
  if (!read_json(event, obj, m)) return m;
  read_error(obj, event.type == "error", m);
  m.model = model_member(obj, "model");
  // OpenRouter puts usage and choices next to an error; keep reading so the
  // probe still gets the token counts.
  TextSeen seen;
  if (!read_choices(obj, seen, m)) return m;
  dom::object usage;
  if (obj.at_key("usage").get_object().get(usage) == simdjson::SUCCESS) m.usage = read_usage(usage);
  count_text(seen, m);
  return m;
}

// The event's framing: an empty event, the [DONE] marker, or a JSON object
// (false when there is nothing more to read; `m` then says why).
bool OpenAiStream::read_json(const sse::Event& event, dom::object& obj, EventMeaning& m) {
  const bool error_event = event.type == "error";
  if (event.data.empty()) {
    if (error_event) {
      m.upstream_error = true;
      set_error_message(m, "error event");
    }
    return false;
  }
  if (event.data == "[DONE]") {
    m.done = true;
    return false;
  }
  dom::element root;
  if (parser_.parse(event.data, root) && root.get_object().get(obj) == simdjson::SUCCESS)
    return true;
  if (error_event) {
    // A plain-text error event is still the server's error, not a protocol violation.
    m.upstream_error = true;
    set_error_message(m, event.data);
  } else {
    m.protocol_error = true;
  }
  return false;
}

// An in-stream error: an "error" member, or an `event: error` with a message.
void OpenAiStream::read_error(dom::object obj, bool error_event, EventMeaning& m) {
  dom::element error;
  if (obj.at_key("error").get(error) == simdjson::SUCCESS && !error.is_null()) {
    read_error_member(error, m);
  } else if (error_event) {
    m.upstream_error = true;
    std::string_view msg;
    if (obj.at_key("message").get_string().get(msg) == simdjson::SUCCESS) {
      set_error_message(m, msg);
    } else {
      set_error_message(m, "error event");
    }
  }
}

// The text and the first finish_reason of `choices` (false: not an array).
bool OpenAiStream::read_choices(dom::object obj, TextSeen& seen, EventMeaning& m) const {
  dom::element choices_el;
  if (obj.at_key("choices").get(choices_el) != simdjson::SUCCESS || choices_el.is_null())
    return true;
  dom::array choices;
  if (choices_el.get_array().get(choices) != simdjson::SUCCESS) {
    m.protocol_error = true;
    return false;
  }
  for (dom::element choice_el : choices) {
    dom::object choice;
    if (choice_el.get_object().get(choice) != simdjson::SUCCESS) continue;
    scan_choice(choice, seen);
    std::string_view finish;
    if (m.finish_reason.empty() &&
        choice.at_key("finish_reason").get_string().get(finish) == simdjson::SUCCESS) {
      m.finish_reason.assign(finish);
    }
  }
  return true;
}

// Which of the text seen counts as content chunks (DESIGN §2 `count:`).
void OpenAiStream::count_text(const TextSeen& seen, EventMeaning& m) const {
  std::size_t counted = 0;
  if (count_.content) counted += seen.content;
  if (count_.reasoning) counted += seen.reasoning;
  if (count_.tool_calls) counted += seen.tool_args;
  m.text_bytes = counted;
  m.content = counted > 0;
  m.reasoning = seen.reasoning > 0;
}

}  // namespace lse::api::detail
