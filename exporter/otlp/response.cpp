#include "otlp/response.hpp"

#include <simdjson.h>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "util/text.hpp"

namespace lse::otlp {
namespace {

std::optional<PartialSuccess> from_json(std::string_view body) {
  simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(body);
  auto doc = parser.iterate(padded);
  if (doc.error()) return std::nullopt;
  auto ps = doc.find_field("partialSuccess");
  if (ps.error()) return std::nullopt;
  PartialSuccess out;
  // int64 is a string in OTLP/JSON; a number is read too.
  if (auto rejected = ps.find_field("rejectedDataPoints"); !rejected.error()) {
    if (std::string_view s; !rejected.get_string().get(s)) {
      out.rejected_data_points = std::strtoll(std::string(s).c_str(), nullptr, 10);
    } else if (std::int64_t n = 0; !rejected.get_int64().get(n)) {
      out.rejected_data_points = n;
    }
  }
  if (std::string_view m; !ps.find_field("errorMessage").get_string().get(m))
    out.error_message = std::string(m);
  return out;
}

}  // namespace

std::optional<PartialSuccess> partial_success(std::string_view body,
                                              std::string_view content_type) {
  if (body.empty()) return std::nullopt;
  std::optional<PartialSuccess> out;
  if (text::istarts_with(content_type, "application/json")) {
    out = from_json(body);
  } else {
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse r;
    if (!r.ParseFromArray(body.data(), static_cast<int>(body.size())) || !r.has_partial_success())
      return std::nullopt;
    out = PartialSuccess{r.partial_success().rejected_data_points(),
                         r.partial_success().error_message()};
  }
  if (!out || (out->rejected_data_points <= 0 && out->error_message.empty())) return std::nullopt;
  return out;
}

}  // namespace lse::otlp
