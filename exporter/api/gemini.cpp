// Dialect gemini: POST /models/{model}:streamGenerateContent?alt=sse (the
// model is in the path, not the body); every SSE data event is a whole
// GenerateContentResponse: candidates[0].content.parts[] text, usageMetadata,
// and finishReason on the last chunk, which is the stream's end (Gemini sends
// no [DONE]).
#include <cctype>
#include <limits>

#include "api/dialects.hpp"
#include "api/event_json.hpp"

namespace lse::api {
namespace {

using namespace detail;

// Gemini's finish reasons in the OpenAI words the rest of the exporter uses;
// others lower-cased (RECITATION → recitation) so labels keep one style.
std::string map_finish_reason(std::string_view r) {
  if (r == "STOP") return "stop";
  if (r == "MAX_TOKENS") return "length";
  if (r == "SAFETY") return "content_filter";
  std::string out(r);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// candidatesTokenCount leaves the thoughts out; completion_tokens means all
// generated tokens (as OpenAI counts them), so thoughts are added back.
Usage read_usage(dom::object u) {
  Usage usage;
  usage.prompt_tokens = int_or_missing(u, "promptTokenCount");
  usage.completion_tokens = int_or_missing(u, "candidatesTokenCount");
  usage.reasoning_tokens = int_or_missing(u, "thoughtsTokenCount");
  // Saturating: two huge counts must not overflow (undefined behaviour).
  if (usage.completion_tokens >= 0 && usage.reasoning_tokens > 0) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    usage.completion_tokens = usage.completion_tokens > kMax - usage.reasoning_tokens
                                  ? kMax
                                  : usage.completion_tokens + usage.reasoning_tokens;
  }
  return usage;
}

class Gemini final : public Adapter {
 public:
  explicit Gemini(CountSet count) : count_(count) {}
  Dialect dialect() const override { return Dialect::gemini; }
  // The fixed prefix; request_path() adds the model and method.
  std::string_view path() const override { return "/models"; }
  std::string request_path(const RequestSpec& spec) const override {
    return "/models/" + spec.model + ":streamGenerateContent?alt=sse";
  }
  std::string build_body(const RequestSpec& spec) const override;
  EventMeaning interpret(const sse::Event& event) override;

 private:
  void read_candidate(dom::object candidate, EventMeaning& m) const;

  CountSet count_;
  EventParser parser_;
};

std::string Gemini::build_body(const RequestSpec& spec) const {
  json::Value part{json::Object{}};
  part.set("text", spec.prompt_text);
  json::Value content{json::Object{}};
  content.set("role", "user");
  content.set("parts", json::Array{std::move(part)});
  json::Value config{json::Object{}};
  // max_tokens <= 0 means "no cap": leave it to the server's default.
  if (spec.max_tokens > 0) config.set("maxOutputTokens", spec.max_tokens);
  config.set("temperature", spec.temperature);
  json::Value body{json::Object{}};
  body.set("contents", json::Array{std::move(content)});
  body.set("generationConfig", std::move(config));
  // A null extra_body means "no config body"; merging null would replace it all.
  if (!std::holds_alternative<std::nullptr_t>(spec.extra_body.v))
    json::merge(body, spec.extra_body);
  return json::dump(body);
}

EventMeaning Gemini::interpret(const sse::Event& event) {
  EventMeaning m;
  if (event.data.empty()) return m;
  dom::object obj;
  if (!parse_object(parser_, event.data, obj, m) || read_error_member(obj, m)) return m;
  m.model = model_member(obj, "modelVersion");
  // Only the first candidate: the probe asks for one (candidateCount unset).
  dom::object candidate;
  if (obj.at_pointer("/candidates/0").get_object().get(candidate) == simdjson::SUCCESS)
    read_candidate(candidate, m);
  dom::object usage;
  if (obj.at_key("usageMetadata").get_object().get(usage) == simdjson::SUCCESS)
    m.usage = read_usage(usage);
  return m;
}

void Gemini::read_candidate(dom::object candidate, EventMeaning& m) const {
  std::size_t content = 0;
  std::size_t reasoning = 0;
  dom::array parts;
  if (candidate.at_pointer("/content/parts").get_array().get(parts) == simdjson::SUCCESS) {
    for (dom::element part_el : parts) {
      dom::object part;
      if (part_el.get_object().get(part) != simdjson::SUCCESS) continue;
      bool thought = false;
      if (part.at_key("thought").get_bool().get(thought) != simdjson::SUCCESS) thought = false;
      (thought ? reasoning : content) += member_string_bytes(part, "text");
    }
  }
  m.reasoning = reasoning > 0;
  m.text_bytes = (count_.content ? content : 0) + (count_.reasoning ? reasoning : 0);
  m.content = m.text_bytes > 0;
  std::string_view finish;
  if (candidate.at_key("finishReason").get_string().get(finish) == simdjson::SUCCESS) {
    m.finish_reason = map_finish_reason(finish);
    m.done = true;
  }
}

}  // namespace

std::unique_ptr<Adapter> make_gemini(CountSet count) { return std::make_unique<Gemini>(count); }

}  // namespace lse::api
