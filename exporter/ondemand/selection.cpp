// Looking up an on-demand probe's target and prompt (selection.hpp).
#include "ondemand/selection.hpp"

#include <algorithm>

namespace lse::ondemand {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Selection select(const config::Config& config, const std::string& target,
                 const std::optional<std::string>& prompt) {
  Selection s;
  const auto t = std::find_if(config.targets.begin(), config.targets.end(),
                              [&](const config::Target& c) { return c.name == target; });
  if (t == config.targets.end()) {
    s.error = "target \"" + target +
              "\" is not in the configuration: /probe probes configured targets only, by name";
    return s;
  }
  if (t->prompts.empty()) {
    s.error = "target \"" + target + "\" has no prompt";
    return s;
  }
  const std::string& name = prompt.value_or(t->prompts.front());
  const bool its_own = std::find(t->prompts.begin(), t->prompts.end(), name) != t->prompts.end();
  const auto p = config.prompts.find(name);
  if (!its_own || p == config.prompts.end()) {
    s.error = "prompt \"" + name + "\" is not one of target \"" + target + "\"'s prompts (" +
              joined(t->prompts) + ")";
    return s;
  }
  s.target = &*t;
  s.prompt = &p->second;
  return s;
}

}  // namespace lse::ondemand
