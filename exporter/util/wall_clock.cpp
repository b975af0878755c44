// Wall-clock time and UTC formatting (see wall_clock.hpp).
#include "util/wall_clock.hpp"

#include <ctime>

#include <chrono>
#include <cmath>

namespace lse::wall_clock {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string format_utc(double unix_seconds, const char* format) {
  const auto t = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[128];
  const std::size_t n = std::strftime(buf, sizeof buf, format, &tm);
  return std::string(buf, n);
}

}  // namespace lse::wall_clock
