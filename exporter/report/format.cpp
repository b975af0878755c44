#include "report/format.hpp"

#include <fmt/format.h>
#include <cmath>

namespace lse::report {

std::string format_seconds(double s) {
  if (std::fabs(s) < 1.0) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string format_signed_seconds(double s) {
  std::string out = format_seconds(std::fabs(s));
  if (s > 0) return "+" + out;
  if (s < 0) return "-" + out;
  return out;
}

std::string format_ratio(double r) { return fmt::format("{:.1f}", r); }

std::string format_percent(double share) { return fmt::format("{:.0f}%", share * 100.0); }

std::string format_number(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

}  // namespace lse::report
