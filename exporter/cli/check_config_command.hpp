// `llm_stream_exporter check-config FILE`: validates a config file, says how
// many series it implies, and for each target which dialect it speaks, where
// it posts and which header carries its key (never the key itself).
#pragma once
#include <string>

#include "config/config.hpp"

namespace lse::cli {

// Exit codes: 0 valid; 2 invalid (the error, with file:line:col, on stderr).
int check_config_command(const std::string& path);

// "name: anthropic-messages POST https://h/v1/messages, model m, key in
// x-api-key (env ANTHROPIC_API_KEY)". The URL's userinfo and query are left out.
std::string describe_target(const config::Target& target);

}  // namespace lse::cli
