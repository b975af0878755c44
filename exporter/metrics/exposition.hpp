// Which exposition format a scrape gets: the Prometheus text format 0.0.4
// (default) or OpenMetrics 1.0.0 (exemplars, `# EOF`), chosen from the
// scraper's Accept header the way Prometheus client libraries do. Pure.
#pragma once
#include <functional>
#include <string_view>

namespace lse::metrics {

enum class Exposition { text, openmetrics };

// Takes an exposition a piece at a time (Metrics::render); false stops it.
using ExpositionSink = std::function<bool(std::string_view piece)>;

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr const char* kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

// OpenMetrics when the Accept header lists application/openmetrics-text
// (any version 1.x or none) with a q-value above 0; otherwise text.
Exposition negotiate(std::string_view accept);

constexpr const char* content_type(Exposition e) {
  return e == Exposition::openmetrics ? kOpenMetricsContentType : kTextContentType;
}

}  // namespace lse::metrics
