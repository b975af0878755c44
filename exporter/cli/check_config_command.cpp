// `check-config` (see check_config_command.hpp).
#include "cli/check_config_command.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <iostream>

#include "api/adapter.hpp"
#include "config/config.hpp"
#include "net/url.hpp"

namespace lse::cli {

std::string describe_target(const config::Target& t) {
  const auto adapter = api::make_adapter(t.api, t.count);
  const auto url = net::parse_url(t.url);
  api::RequestSpec spec;
  spec.model = t.model;
  const std::string where =
      url && adapter ? url->redacted() + adapter->request_path(spec) : std::string("?");
  std::string key = "no key";
  switch (t.auth.kind) {
    case config::Auth::Kind::none: break;
    case config::Auth::Kind::bearer:
      key = fmt::format("key in {} ({})", api::key_header(t.api).name, t.auth.secret.source);
      break;
    case config::Auth::Kind::header:
      key = fmt::format("key in {} ({})", t.auth.header_name, t.auth.secret.source);
      break;
  }
  return fmt::format("{}: {} POST {}, model {}, {}", t.name, api::dialect_name(t.api), where,
                     t.model, key);
}

int check_config_command(const std::string& path) {
  try {
    const auto cfg = config::load_file(path);
    std::size_t probes = 0;
    for (const auto& t : cfg.targets) probes += t.prompts.size();
    std::cout << path << ": ok (" << cfg.targets.size() << " targets, " << cfg.prompts.size()
              << " prompts, " << probes << " target×prompt series)\n";
    for (const auto& t : cfg.targets) std::cout << "  " << describe_target(t) << "\n";
    return 0;
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}

}  // namespace lse::cli
