// The dialect registry's entries: one factory per dialect, each defined in
// the dialect's own file (openai_chat.cpp, ...). Adding a dialect: a value in
// api::Dialect and kAllDialects, a file defining its factory, its line here
// and its row in kRegistry (adapter.cpp). Internal to the api module.
#pragma once
#include <memory>

#include "api/adapter.hpp"

namespace lse::api {

std::unique_ptr<Adapter> make_openai_chat(CountSet count);
std::unique_ptr<Adapter> make_openai_completions(CountSet count);
std::unique_ptr<Adapter> make_anthropic_messages(CountSet count);
std::unique_ptr<Adapter> make_openai_responses(CountSet count);
std::unique_ptr<Adapter> make_gemini(CountSet count);
std::unique_ptr<Adapter> make_ollama_chat(CountSet count);
std::unique_ptr<Adapter> make_ollama_generate(CountSet count);

}  // namespace lse::api
