// The dialect registry (api/adapter.hpp): names and factories of the dialects
// this build speaks. The dialects themselves live one per file
// (openai_chat.cpp, openai_completions.cpp; shared OpenAI chunk reading in
// openai_stream.cpp, shared JSON helpers in event_json.cpp).
#include "api/adapter.hpp"

#include "api/dialects.hpp"

namespace lse::api {
namespace {

struct Entry {
  Dialect dialect;
  std::string_view name;  // the config's `api:` word
  std::unique_ptr<Adapter> (*make)(CountSet);
};

constexpr Entry kRegistry[] = {
    {Dialect::openai_chat, "openai-chat", make_openai_chat},
    {Dialect::openai_completions, "openai-completions", make_openai_completions},
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

std::unique_ptr<Adapter> make_adapter(Dialect dialect, CountSet count) {
  const Entry* e = find(dialect);
  return e ? e->make(count) : nullptr;
}

}  // namespace lse::api
