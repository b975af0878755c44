// API dialect adapters: build the streaming request for one prompt and
// interpret each decoded SSE event. Pure: no sockets, no clocks.
#pragma once
#include <utility>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sse/decoder.hpp"
#include "util/json.hpp"

namespace lse::api {

// The value of a target's `api:` (DESIGN §4); the mapping of each dialect's
// events to the clock is in docs/DESIGN.md ("Dialects").
enum class Dialect {
  openai_chat,
  openai_completions,
  anthropic_messages,
  openai_responses,
  ollama_chat,
  ollama_generate,
  gemini,
};
inline constexpr Dialect kAllDialects[] = {
    Dialect::openai_chat,      Dialect::openai_completions, Dialect::anthropic_messages,
    Dialect::openai_responses, Dialect::ollama_chat,        Dialect::ollama_generate,
    Dialect::gemini,
};
std::optional<Dialect> parse_dialect(std::string_view name);  // "openai-chat", ...
std::string_view dialect_name(Dialect d);
// Every name of kAllDialects, comma-separated (for errors and --help).
std::string dialect_list();

// The header that carries an API key given as auth.bearer_token_* (or
// MC_API_KEY): the dialect's own convention. "Authorization: Bearer <key>"
// for the OpenAI-shaped dialects and Ollama, "x-api-key: <key>" for
// Anthropic, "x-goog-api-key: <key>" for Gemini.
struct KeyHeader {
  std::string_view name;
  std::string_view value_prefix;  // "Bearer " or empty
  // Where the provider's own SDKs read the key from (OPENAI_API_KEY, ...);
  // `run` without a config falls back to it when MC_API_KEY is unset. Empty:
  // no convention (Ollama needs no key).
  std::string_view env;
};
KeyHeader key_header(Dialect d);

// Which deltas count as user-visible content chunks (DESIGN §2 `count:`).
struct CountSet {
  bool content = true;
  bool reasoning = false;   // reasoning_content / reasoning
  bool tool_calls = false;  // tool_calls[].function.arguments

  bool operator==(const CountSet&) const = default;
};

struct RequestSpec {
  std::string model;
  std::string prompt_text;
  int max_tokens = 256;
  double temperature = 0;
  bool include_usage = true;  // stream_options.include_usage (dropped after a 400)
  json::Value extra_body;     // config `body:` object, deep-merged last (may be null)
};

struct Usage {
  std::int64_t prompt_tokens = -1;  // -1 = not reported
  std::int64_t completion_tokens = -1;
  std::int64_t reasoning_tokens = -1;
};

// The server's own account of where its time went (Ollama's done line),
// in seconds; -1 = not reported. Lets the diagnosis tell model load from
// prefill from decode without guessing from the client's clock.
struct ServerTimings {
  double load_seconds = -1;
  double prompt_eval_seconds = -1;
  double eval_seconds = -1;
};

// How the response body is cut into events before interpret() sees them.
// NDJSON: each line arrives as an sse::Event whose `data` is the line and
// whose `type` is empty.
enum class Framing { sse, ndjson };

// What one framed event means for the probe.
struct EventMeaning {
  bool content = false;        // carries non-empty text counted by CountSet
  bool reasoning = false;      // carries non-empty reasoning text (counted or not)
  std::size_t text_bytes = 0;  // bytes of counted text in this event
  // The stream's end marker: [DONE] (OpenAI), message_stop (Anthropic),
  // response.completed/incomplete/failed (Responses), the done:true line
  // (Ollama), the chunk carrying finishReason (Gemini).
  bool done = false;
  std::optional<Usage> usage;                   // usage object present (non-null)
  std::string finish_reason;                    // non-empty when a choice finished in this event
  bool upstream_error = false;                  // {"error": ...} object in the stream
  std::string error_message;                    // short, for logs (never contains secrets we send)
  bool protocol_error = false;                  // not JSON / not the expected shape
  std::optional<ServerTimings> server_timings;  // server-side timings present
  // The model the event names as the one answering (OpenAI `model`,
  // Anthropic message_start's message.model, Responses' response.model,
  // Gemini `modelVersion`, Ollama `model`); empty when it names none. Points
  // into the adapter's parse buffer: valid only until the next interpret().
  std::string_view model;
};

class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual Dialect dialect() const = 0;
  // Path appended to the target's base URL, e.g. "/chat/completions".
  virtual std::string_view path() const = 0;
  // The path actually requested; differs from path() when it carries the
  // model (Gemini: /models/{model}:streamGenerateContent?alt=sse).
  virtual std::string request_path(const RequestSpec& spec) const {
    static_cast<void>(spec);
    return std::string(path());
  }
  // Dialect-fixed headers beside auth and content type (Anthropic's
  // anthropic-version).
  virtual std::vector<std::pair<std::string, std::string>> extra_headers() const { return {}; }
  virtual Framing framing() const { return Framing::sse; }
  virtual std::string build_body(const RequestSpec& spec) const = 0;
  // Interprets one event. Must not keep references into `event`; the
  // meaning's `model` views the adapter's own buffer (copy it before the next call).
  virtual EventMeaning interpret(const sse::Event& event) = 0;
};

std::unique_ptr<Adapter> make_adapter(Dialect dialect, CountSet count);

}  // namespace lse::api
