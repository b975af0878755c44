// Dialect openai-chat: POST /chat/completions with `messages`; the text of a
// chunk is in choices[].delta (content, reasoning, tool-call arguments).
#include "api/dialects.hpp"
#include "api/openai_stream.hpp"

namespace lse::api {
namespace {

using namespace detail;

// Mistral's thinking part: {"type":"thinking","thinking":[{"type":"text","text":..}]}
// (a plain string is accepted too).
std::size_t thinking_bytes(dom::element thinking) {
  if (thinking.is_string()) return string_bytes(thinking);
  dom::array parts;
  if (thinking.get_array().get(parts) != simdjson::SUCCESS) return 0;
  std::size_t n = 0;
  for (dom::element part : parts) {
    dom::object po;
    if (part.get_object().get(po) == simdjson::SUCCESS) {
      n += member_string_bytes(po, "text");
    } else {
      n += string_bytes(part);
    }
  }
  return n;
}

// delta.content is usually a string; Mistral sends an array of typed parts.
void scan_content(dom::element content, TextSeen& seen) {
  if (content.is_string()) {
    seen.content += string_bytes(content);
    return;
  }
  dom::array parts;
  if (content.get_array().get(parts) != simdjson::SUCCESS) return;
  for (dom::element part : parts) {
    dom::object po;
    if (part.get_object().get(po) != simdjson::SUCCESS) continue;
    std::string_view type;
    if (po.at_key("type").get_string().get(type) != simdjson::SUCCESS) continue;
    if (type == "text") {
      seen.content += member_string_bytes(po, "text");
    } else if (type == "thinking") {
      dom::element thinking;
      if (po.at_key("thinking").get(thinking) == simdjson::SUCCESS) {
        seen.reasoning += thinking_bytes(thinking);
      }
    }
  }
}

void scan_delta(dom::object delta, TextSeen& seen) {
  dom::element content;
  if (delta.at_key("content").get(content) == simdjson::SUCCESS) scan_content(content, seen);
  // DeepSeek/vLLM/llama.cpp say reasoning_content, OpenRouter/Groq reasoning.
  seen.reasoning += member_string_bytes(delta, "reasoning_content");
  seen.reasoning += member_string_bytes(delta, "reasoning");
  dom::array calls;
  if (delta.at_key("tool_calls").get_array().get(calls) == simdjson::SUCCESS) {
    for (dom::element call : calls) {
      dom::object fn;
      if (call["function"].get_object().get(fn) == simdjson::SUCCESS) {
        seen.tool_args += member_string_bytes(fn, "arguments");
      }
    }
  }
}

class OpenAiChat final : public OpenAiStream {
 public:
  using OpenAiStream::OpenAiStream;
  Dialect dialect() const override { return Dialect::openai_chat; }
  std::string_view path() const override { return "/chat/completions"; }

 protected:
  void add_prompt(json::Value& body, const RequestSpec& spec) const override {
    json::Value message{json::Object{}};
    message.set("role", "user");
    message.set("content", spec.prompt_text);
    body.set("messages", json::Array{std::move(message)});
  }
  void scan_choice(dom::object choice, TextSeen& seen) const override {
    dom::object delta;
    if (choice.at_key("delta").get_object().get(delta) == simdjson::SUCCESS)
      scan_delta(delta, seen);
  }
};

}  // namespace

std::unique_ptr<Adapter> make_openai_chat(CountSet count) {
  return std::make_unique<OpenAiChat>(count);
}

}  // namespace lse::api
