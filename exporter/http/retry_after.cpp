// Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
#include <algorithm>
#include <ctime>
#include <string>

#include "http/client.hpp"

namespace lse::http {

std::optional<double> retry_after_seconds(std::string_view value, double now_unix) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    double seconds = 0;
    for (char c : value) seconds = seconds * 10 + (c - '0');
    return seconds;
  }
  // The three date forms RFC 9110 §5.6.7 says a recipient must accept.
  const std::string text(value);
  for (const char* format :
       {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"}) {
    std::tm tm{};
    const char* end = ::strptime(text.c_str(), format, &tm);
    if (end == nullptr || *end != '\0') continue;
    const double at = static_cast<double>(::timegm(&tm));
    return std::max(0.0, at - now_unix);
  }
  return std::nullopt;
}

}  // namespace lse::http
