// The dialect registry (api/adapter.hpp): names and factories of the dialects
// this build speaks. The dialects themselves live one per file
// (openai_chat.cpp, openai_completions.cpp, anthropic_messages.cpp,
// openai_responses.cpp, ollama.cpp, gemini.cpp; shared OpenAI chunk reading in
// openai_stream.cpp, shared JSON helpers in event_json.cpp).
#include "api/adapter.hpp"

#include "api/dialects.hpp"

namespace lse::api {
namespace {

struct Entry {
  Dialect dialect;
  std::string_view name;  // the config's `api:` word
  KeyHeader key;          // where bearer_token_* goes
  std::unique_ptr<Adapter> (*make)(CountSet);
};

constexpr KeyHeader kOpenAiKey{"Authorization", "Bearer ", "OPENAI_API_KEY"};
constexpr KeyHeader kOllamaKey{"Authorization", "Bearer ", ""};

constexpr Entry kRegistry[] = {
    {Dialect::openai_chat, "openai-chat", kOpenAiKey, make_openai_chat},
    {Dialect::openai_completions, "openai-completions", kOpenAiKey, make_openai_completions},
    {Dialect::anthropic_messages,
     "anthropic-messages",
     {"x-api-key", "", "ANTHROPIC_API_KEY"},
     make_anthropic_messages},
    {Dialect::openai_responses, "openai-responses", kOpenAiKey, make_openai_responses},
    {Dialect::ollama_chat, "ollama-chat", kOllamaKey, make_ollama_chat},
    {Dialect::ollama_generate, "ollama-generate", kOllamaKey, make_ollama_generate},
    {Dialect::gemini, "gemini", {"x-goog-api-key", "", "GEMINI_API_KEY"}, make_gemini},
};

const Entry* find(Dialect d) {
  for (const Entry& e : kRegistry)
    if (e.dialect == d) return &e;
  return nullptr;
}

}  // namespace

std::optional<Dialect> parse_dialect(std::string_view name) {
  for (const Entry& e : kRegistry)
    if (e.name == name) return e.dialect;
  return std::nullopt;
}

std::string_view dialect_name(Dialect d) {
  const Entry* e = find(d);
  return e ? e->name : "unknown";
}

std::string dialect_list() {
  std::string out;
  for (Dialect d : kAllDialects) out += (out.empty() ? "" : ", ") + std::string(dialect_name(d));
  return out;
}

KeyHeader key_header(Dialect d) {
  const Entry* e = find(d);
  return e ? e->key : kOpenAiKey;
}

std::unique_ptr<Adapter> make_adapter(Dialect dialect, CountSet count) {
  const Entry* e = find(dialect);
  return e ? e->make(count) : nullptr;
}

}  // namespace lse::api
