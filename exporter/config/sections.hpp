// Internal to the config module: parsers of the `defaults:` and `targets:`
// sections (target.cpp), called by the top-level parser (parse.cpp).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/reader.hpp"

namespace lse::config::detail {

// The built-in Target values with `defaults:` applied on top; each target
// starts as a copy of it.
Target parse_defaults(const Reader& reader, const std::optional<Item>& defaults);

// Every target, with secrets read and prompt names checked against `prompts`.
std::vector<Target> parse_targets(const Reader& reader, const Item& targets, const Target& defaults,
                                  const std::map<std::string, Prompt>& prompts);

}  // namespace lse::config::detail
