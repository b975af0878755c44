#include "cli/run_progress.hpp"

#include <algorithm>
#include <cmath>

namespace lse::cli {

std::string clock_text(double seconds) {
  const auto s = static_cast<long>(std::lround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace lse::cli
