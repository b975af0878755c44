// Accept-header negotiation of the exposition format (see exposition.hpp).
#include "metrics/exposition.hpp"

#include <cstdlib>
#include <string>

#include "util/text.hpp"

namespace lse::metrics {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One media range "type/subtype;param=v;q=0.5": whether it asks for
// OpenMetrics 1.x with a non-zero weight.
bool asks_for_openmetrics(std::string_view range) {
  const auto semi = range.find(';');
  if (!text::iequals(trim(range.substr(0, semi)), "application/openmetrics-text")) return false;
  std::string_view params = semi == std::string_view::npos ? "" : range.substr(semi + 1);
  while (!params.empty()) {
    const auto next = params.find(';');
    const std::string_view param = trim(params.substr(0, next));
    params = next == std::string_view::npos ? "" : params.substr(next + 1);
    const auto eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = trim(param.substr(0, eq));
    const std::string value(trim(param.substr(eq + 1)));
    if (text::iequals(key, "q") && std::strtod(value.c_str(), nullptr) <= 0) return false;
    if (text::iequals(key, "version") && value.rfind("1.", 0) != 0) return false;
  }
  return true;
}

}  // namespace

Exposition negotiate(std::string_view accept) {
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    if (asks_for_openmetrics(accept.substr(0, comma))) return Exposition::openmetrics;
    accept = comma == std::string_view::npos ? "" : accept.substr(comma + 1);
  }
  return Exposition::text;
}

}  // namespace lse::metrics
