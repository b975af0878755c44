// A receiver's answer to an accepted export (ExportMetricsServiceResponse):
// its partial_success says how many data points it rejected and why. The
// exporter counts those as dropped and logs the reason once (the OTLP
// specification: such a request must not be retried). Pure.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lse::otlp {

struct PartialSuccess {
  std::int64_t rejected_data_points = 0;
  std::string error_message;
};

// From a protobuf (application/x-protobuf) or OTLP/JSON (application/json)
// body; nullopt when there is none, it rejected nothing and said nothing, or
// the body does not decode.
std::optional<PartialSuccess> partial_success(std::string_view body, std::string_view content_type);

}  // namespace lse::otlp
