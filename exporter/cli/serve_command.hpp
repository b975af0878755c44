// `llm_stream_exporter serve` (the default): runs the service (service/) until
// SIGINT or SIGTERM; SIGHUP reloads the config file.
#pragma once
#include <string>

namespace lse::cli {

// Exit codes: 0 stopped by a signal; 1 cannot listen; 2 invalid config or a
// part that cannot be set up with it (rows file, TLS material).
int serve_command(const std::string& config_path);

}  // namespace lse::cli
