// ConfigError: every config problem carries its place so an operator can jump
// straight to it ("file:line:col: message", like a compiler).
#include <fmt/format.h>

#include "config/config.hpp"

namespace lse::config {
namespace {

std::string where_and_what(const std::string& file, int line, int col, const std::string& message) {
  // Line 0 means the problem is the file itself (unreadable), not a place in it.
  if (line <= 0) return fmt::format("{}: {}", file, message);
  return fmt::format("{}:{}:{}: {}", file, line, col, message);
}

}  // namespace

ConfigError::ConfigError(std::string file, int line, int col, std::string message)
    : std::runtime_error(where_and_what(file, line, col, message)),
      file_(std::move(file)),
      line_(line),
      column_(col),
      message_(std::move(message)) {}

}  // namespace lse::config
