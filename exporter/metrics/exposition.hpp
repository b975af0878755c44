// The exposition formats /metrics serves: the Prometheus text format 0.0.4
// (default), OpenMetrics 1.0.0 (exemplars, `# EOF`) or the Prometheus
// protobuf format (length-delimited MetricFamily messages: native histograms). Which one a scrape
// gets is chosen from its Accept header by server/negotiation.hpp.
#pragma once
#include <functional>
#include <string_view>

namespace lse::metrics {

enum class Exposition { text, openmetrics, protobuf };

// Takes an exposition a piece at a time (Metrics::render); false stops it.
using ExpositionSink = std::function<bool(std::string_view piece)>;

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr const char* kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

inline constexpr const char* kProtobufContentType =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
    "encoding=delimited";

constexpr const char* content_type(Exposition e) {
  switch (e) {
    case Exposition::openmetrics: return kOpenMetricsContentType;
    case Exposition::protobuf: return kProtobufContentType;
    case Exposition::text: break;
  }
  return kTextContentType;
}

}  // namespace lse::metrics
