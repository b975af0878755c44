// OpenAI-compatible dialect adapters (api/adapter.hpp): the request body for
// /chat/completions and /completions, and the meaning of each streamed chunk
// (content / reasoning / tool-call text, usage, finish reason, in-stream
// errors). Chunks are parsed with simdjson DOM into a parser and a padded
// buffer owned by the adapter, so a warm adapter does not allocate per event.
#include "api/adapter.hpp"

#include <simdjson.h>

#include <cstring>
#include <vector>

namespace lse::api {

namespace {

namespace dom = simdjson::dom;

constexpr std::size_t kMaxErrorMessage = 200;

// Byte counts of the text kinds found in one chunk.
struct TextSeen {
  std::size_t content = 0;
  std::size_t reasoning = 0;
  std::size_t tool_args = 0;
};

std::size_t string_bytes(dom::element e) {
  std::string_view s;
  return e.get_string().get(s) == simdjson::SUCCESS ? s.size() : 0;
}

std::size_t member_string_bytes(dom::object o, std::string_view key) {
  dom::element e;
  return o.at_key(key).get(e) == simdjson::SUCCESS ? string_bytes(e) : 0;
}

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

void scan_chat_delta(dom::object delta, TextSeen& seen) {
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

std::int64_t int_or_missing(dom::object o, std::string_view key) {
  dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return -1;
  std::int64_t i;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return i;
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS && d >= 0 && d < 9.2e18) {
    return static_cast<std::int64_t>(d);
  }
  return -1;
}

Usage read_usage(dom::object u) {
  Usage usage;
  usage.prompt_tokens = int_or_missing(u, "prompt_tokens");
  usage.completion_tokens = int_or_missing(u, "completion_tokens");
  dom::object details;
  if (u.at_key("completion_tokens_details").get_object().get(details) == simdjson::SUCCESS) {
    usage.reasoning_tokens = int_or_missing(details, "reasoning_tokens");
  }
  return usage;
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

// {"error": ...}: the message when there is one, else a generic label.
void read_error(dom::element error, EventMeaning& m) {
  m.upstream_error = true;
  std::string_view msg;
  if (error.get_string().get(msg) == simdjson::SUCCESS ||
      error["message"].get_string().get(msg) == simdjson::SUCCESS) {
    set_error_message(m, msg);
  } else {
    set_error_message(m, "upstream error");
  }
}

class OpenAiAdapter final : public Adapter {
 public:
  OpenAiAdapter(Dialect dialect, CountSet count) : dialect_(dialect), count_(count) {
    // Chunks are typically < 1 KiB; start with room for that so the first
    // events of a probe do not each grow the buffers. Larger events grow them
    // once. (16 KiB cost ~25 KiB resident per target: 25 MiB at 1,000 targets.)
    buffer_.resize(kInitialCapacity + simdjson::SIMDJSON_PADDING);
    // A failed pre-allocation is not fatal: parse() allocates on demand.
    [[maybe_unused]] const auto err = parser_.allocate(kInitialCapacity);
  }

  Dialect dialect() const override { return dialect_; }

  std::string_view path() const override {
    return dialect_ == Dialect::openai_chat ? "/chat/completions" : "/completions";
  }

  std::string build_body(const RequestSpec& spec) const override {
    json::Value body{json::Object{}};
    body.set("model", spec.model);
    if (dialect_ == Dialect::openai_chat) {
      json::Value message{json::Object{}};
      message.set("role", "user");
      message.set("content", spec.prompt_text);
      body.set("messages", json::Array{std::move(message)});
    } else {
      body.set("prompt", spec.prompt_text);
    }
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

  EventMeaning interpret(const sse::Event& event) override {
    EventMeaning m;
    const bool error_event = event.type == "error";
    if (event.data.empty()) {
      if (error_event) {
        m.upstream_error = true;
        set_error_message(m, "error event");
      }
      return m;
    }
    if (event.data == "[DONE]") {
      m.done = true;
      return m;
    }

    dom::element root;
    dom::object obj;
    if (!parse(event.data, root) || root.get_object().get(obj) != simdjson::SUCCESS) {
      if (error_event) {
        // A plain-text error event is still the server's error, not a
        // protocol violation.
        m.upstream_error = true;
        set_error_message(m, event.data);
      } else {
        m.protocol_error = true;
      }
      return m;
    }

    dom::element error;
    if (obj.at_key("error").get(error) == simdjson::SUCCESS && !error.is_null()) {
      read_error(error, m);
    } else if (error_event) {
      m.upstream_error = true;
      std::string_view msg;
      if (obj.at_key("message").get_string().get(msg) == simdjson::SUCCESS) {
        set_error_message(m, msg);
      } else {
        set_error_message(m, "error event");
      }
    }

    // OpenRouter puts usage and choices next to an error; keep reading so the
    // probe still gets the token counts.
    TextSeen seen;
    dom::element choices_el;
    if (obj.at_key("choices").get(choices_el) == simdjson::SUCCESS && !choices_el.is_null()) {
      dom::array choices;
      if (choices_el.get_array().get(choices) != simdjson::SUCCESS) {
        m.protocol_error = true;
        return m;
      }
      for (dom::element choice_el : choices) {
        dom::object choice;
        if (choice_el.get_object().get(choice) != simdjson::SUCCESS) continue;
        if (dialect_ == Dialect::openai_chat) {
          dom::object delta;
          if (choice.at_key("delta").get_object().get(delta) == simdjson::SUCCESS) {
            scan_chat_delta(delta, seen);
          }
        } else {
          seen.content += member_string_bytes(choice, "text");
        }
        std::string_view finish;
        if (m.finish_reason.empty() &&
            choice.at_key("finish_reason").get_string().get(finish) == simdjson::SUCCESS) {
          m.finish_reason.assign(finish);
        }
      }
    }

    dom::object usage;
    if (obj.at_key("usage").get_object().get(usage) == simdjson::SUCCESS) {
      m.usage = read_usage(usage);
    }

    std::size_t counted = 0;
    if (count_.content) counted += seen.content;
    if (count_.reasoning) counted += seen.reasoning;
    if (count_.tool_calls) counted += seen.tool_args;
    m.text_bytes = counted;
    m.content = counted > 0;
    m.reasoning = seen.reasoning > 0;
    return m;
  }

 private:
  static constexpr std::size_t kInitialCapacity = 2 * 1024;

  // Copies the payload into a buffer with simdjson's padding (reused, so it
  // only grows) and parses it with the reused parser.
  bool parse(std::string_view data, dom::element& root) {
    const std::size_t need = data.size() + simdjson::SIMDJSON_PADDING;
    if (buffer_.size() < need) buffer_.resize(need);
    std::memcpy(buffer_.data(), data.data(), data.size());
    std::memset(buffer_.data() + data.size(), 0, simdjson::SIMDJSON_PADDING);
    return parser_.parse(buffer_.data(), data.size(), false).get(root) == simdjson::SUCCESS;
  }

  Dialect dialect_;
  CountSet count_;
  std::vector<char> buffer_;
  dom::parser parser_;
};

}  // namespace

std::optional<Dialect> parse_dialect(std::string_view name) {
  if (name == "openai-chat") return Dialect::openai_chat;
  if (name == "openai-completions") return Dialect::openai_completions;
  return std::nullopt;
}

std::string_view dialect_name(Dialect d) {
  switch (d) {
    case Dialect::openai_chat: return "openai-chat";
    case Dialect::openai_completions: return "openai-completions";
  }
  return "unknown";
}

std::unique_ptr<Adapter> make_adapter(Dialect dialect, CountSet count) {
  return std::make_unique<OpenAiAdapter>(dialect, count);
}

}  // namespace lse::api
