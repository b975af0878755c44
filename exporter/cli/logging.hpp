// Wires --log.level and --log.format into the log module (log/log.hpp) and
// spdlog's default logger on stderr: one line per event, ts and level first.
#pragma once
#include <string>

namespace lse::cli {

// `level`: debug|info|warn|error; `format`: logfmt|json (CLI11 checks both).
void setup_logging(const std::string& level, const std::string& format);

}  // namespace lse::cli
