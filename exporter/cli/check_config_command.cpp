// `check-config` (see check_config_command.hpp).
#include "cli/check_config_command.hpp"

#include <cstddef>
#include <iostream>

#include "config/config.hpp"

namespace lse::cli {

int check_config_command(const std::string& path) {
  try {
    const auto cfg = config::load_file(path);
    std::size_t probes = 0;
    for (const auto& t : cfg.targets) probes += t.prompts.size();
    std::cout << path << ": ok (" << cfg.targets.size() << " targets, " << cfg.prompts.size()
              << " prompts, " << probes << " target×prompt series)\n";
    return 0;
  } catch (const config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}

}  // namespace lse::cli
