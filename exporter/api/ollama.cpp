// Dialects ollama-chat (POST /api/chat, `messages`) and ollama-generate
// (POST /api/generate, `prompt`): Ollama's native API, NDJSON framed, one
// JSON object per line. The line with "done": true ends the stream and
// carries the token counts, done_reason and the server's own load / prefill
// / decode durations (nanoseconds).
#include "api/dialects.hpp"
#include "api/event_json.hpp"

namespace lse::api {
namespace {

using namespace detail;

constexpr double kNanosPerSecond = 1e9;

double seconds_or_missing(dom::object o, std::string_view key) {
  const std::int64_t ns = int_or_missing(o, key);
  return ns < 0 ? -1 : static_cast<double>(ns) / kNanosPerSecond;
}

// Tool-call arguments come whole, as a JSON object, not as streamed text;
// their minified size stands in for the text bytes.
std::size_t tool_call_bytes(dom::object message) {
  dom::array calls;
  if (message.at_key("tool_calls").get_array().get(calls) != simdjson::SUCCESS) return 0;
  std::size_t n = 0;
  for (dom::element call : calls) n += simdjson::minify(call).size();
  return n;
}

class Ollama final : public Adapter {
 public:
  Ollama(CountSet count, bool chat) : count_(count), chat_(chat) {}
  Dialect dialect() const override {
    return chat_ ? Dialect::ollama_chat : Dialect::ollama_generate;
  }
  // The target url is the server root (http://host:11434), so the path has /api.
  std::string_view path() const override { return chat_ ? "/api/chat" : "/api/generate"; }
  Framing framing() const override { return Framing::ndjson; }
  std::string build_body(const RequestSpec& spec) const override;
  EventMeaning interpret(const sse::Event& event) override;

 private:
  void read_text(dom::object obj, EventMeaning& m) const;
  static void read_done(dom::object obj, EventMeaning& m);

  CountSet count_;
  bool chat_;
  EventParser parser_;
};

std::string Ollama::build_body(const RequestSpec& spec) const {
  json::Value body{json::Object{}};
  body.set("model", spec.model);
  if (chat_) {
    json::Value message{json::Object{}};
    message.set("role", "user");
    message.set("content", spec.prompt_text);
    body.set("messages", json::Array{std::move(message)});
  } else {
    body.set("prompt", spec.prompt_text);
  }
  body.set("stream", true);
  json::Value options{json::Object{}};
  // max_tokens <= 0 means "no cap": leave it to the server's default.
  if (spec.max_tokens > 0) options.set("num_predict", spec.max_tokens);
  options.set("temperature", spec.temperature);
  body.set("options", std::move(options));
  // A null extra_body means "no config body"; merging null would replace it all.
  if (!std::holds_alternative<std::nullptr_t>(spec.extra_body.v))
    json::merge(body, spec.extra_body);
  return json::dump(body);
}

EventMeaning Ollama::interpret(const sse::Event& event) {
  EventMeaning m;
  dom::object obj;
  if (!parse_object(parser_, event.data, obj, m) || read_error_member(obj, m)) return m;
  m.model = model_member(obj, "model");
  read_text(obj, m);
  bool done = false;
  if (obj.at_key("done").get_bool().get(done) == simdjson::SUCCESS && done) read_done(obj, m);
  return m;
}

// Chat puts the text in message.{content,thinking,tool_calls}; generate puts
// it in response / thinking at the top level.
void Ollama::read_text(dom::object obj, EventMeaning& m) const {
  std::size_t content = 0;
  std::size_t reasoning = 0;
  std::size_t tools = 0;
  dom::object message;
  if (chat_ && obj.at_key("message").get_object().get(message) == simdjson::SUCCESS) {
    content = member_string_bytes(message, "content");
    reasoning = member_string_bytes(message, "thinking");
    tools = tool_call_bytes(message);
  } else if (!chat_) {
    content = member_string_bytes(obj, "response");
    reasoning = member_string_bytes(obj, "thinking");
  }
  m.reasoning = reasoning > 0;
  m.text_bytes = (count_.content ? content : 0) + (count_.reasoning ? reasoning : 0) +
                 (count_.tool_calls ? tools : 0);
  m.content = m.text_bytes > 0;
}

void Ollama::read_done(dom::object obj, EventMeaning& m) {
  m.done = true;
  m.usage = Usage{int_or_missing(obj, "prompt_eval_count"), int_or_missing(obj, "eval_count"), -1};
  std::string_view reason;
  if (obj.at_key("done_reason").get_string().get(reason) == simdjson::SUCCESS)
    m.finish_reason.assign(reason);
  m.server_timings = ServerTimings{seconds_or_missing(obj, "load_duration"),
                                   seconds_or_missing(obj, "prompt_eval_duration"),
                                   seconds_or_missing(obj, "eval_duration")};
}

}  // namespace

std::unique_ptr<Adapter> make_ollama_chat(CountSet count) {
  return std::make_unique<Ollama>(count, true);
}

std::unique_ptr<Adapter> make_ollama_generate(CountSet count) {
  return std::make_unique<Ollama>(count, false);
}

}  // namespace lse::api
