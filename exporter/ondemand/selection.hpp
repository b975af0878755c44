// What GET /probe?target=NAME[&prompt=P] names, looked up in the running
// config and nowhere else: the query names a configured target (never a
// URL, so /probe is no open proxy) and one of its prompts (its first when
// none is named). Pure.
#pragma once
#include <optional>
#include <string>

#include "config/config.hpp"

namespace lse::ondemand {

struct Selection {
  const config::Target* target = nullptr;  // into the config looked in
  const config::Prompt* prompt = nullptr;
  std::string error;  // why nothing was selected (answered 400); "" when selected
};

Selection select(const config::Config& config, const std::string& target,
                 const std::optional<std::string>& prompt);

}  // namespace lse::ondemand
