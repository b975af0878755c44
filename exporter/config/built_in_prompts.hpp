// The default prompt set compiled into the binary: config/prompts/{short,medium,long}.txt,
// embedded at build time (exporter/config/built_in_prompts.cmake generates the definition from
// those files, so they stay the only copy of the text). A config without `prompts:` uses them
// wherever it lives; a file <config dir>/prompts/<name>.txt overrides one (parse.cpp).
#pragma once
#include <span>
#include <string_view>

namespace lse::config {

struct BuiltInPrompt {
  std::string_view name;  // "short", "medium", "long"
  std::string_view text;  // the file's bytes, trailing newline included
};

// Prompt::source of a prompt taken from this set ("inline" or a file path otherwise).
inline constexpr std::string_view kBuiltInPromptSource = "built in";

// In the order of the set (short, medium, long); the views point at static storage.
std::span<const BuiltInPrompt> built_in_prompts();

}  // namespace lse::config
