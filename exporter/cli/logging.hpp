// Structured logs for every command: logfmt (default) or JSON lines on stderr.
// Messages are written as key=value text by callers; the formatter adds ts
// and level and, for JSON, quotes the rest safely.
#pragma once
#include <string>

namespace lse::cli {

void setup_logging(const std::string& level, const std::string& format);

}  // namespace lse::cli
