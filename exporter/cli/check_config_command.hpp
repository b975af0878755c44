// `llm_stream_exporter check-config FILE`: validates a config file and says
// how many series it implies.
#pragma once
#include <string>

namespace lse::cli {

// Exit codes: 0 valid; 2 invalid (the error, with file:line:col, on stderr).
int check_config_command(const std::string& path);

}  // namespace lse::cli
