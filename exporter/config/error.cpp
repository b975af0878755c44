// Diagnostic and ConfigError: every config problem carries its place so an
// operator can jump straight to it ("file:line:col: message", like a
// compiler), and a file with several problems reports all of them at once.
#include <fmt/format.h>

#include "config/config.hpp"

namespace lse::config {
namespace {

std::string every_line(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "\n") + e.where_and_what();
  return out;
}

}  // namespace

std::string Diagnostic::where_and_what() const {
  // Line 0 means the problem is the file itself (unreadable), not a place in it.
  if (line <= 0) return fmt::format("{}: {}", file, message);
  return fmt::format("{}:{}:{}: {}", file, line, column, message);
}

ConfigError::ConfigError(std::string file, int line, int col, std::string message)
    : ConfigError(
          std::vector<Diagnostic>{Diagnostic{std::move(file), line, col, std::move(message)}}) {}

ConfigError::ConfigError(std::vector<Diagnostic> errors)
    : std::runtime_error(every_line(errors)), errors_(std::move(errors)) {
  if (errors_.empty()) errors_.push_back(Diagnostic{"", 0, 0, "invalid config"});
}

}  // namespace lse::config
