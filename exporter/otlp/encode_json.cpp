// Batch -> ExportMetricsServiceRequest in OTLP/JSON (the protobuf JSON
// mapping with OTLP's rules: lowerCamelCase keys, (u)int64 and fixed64 as
// strings, enums as integers).
#include <fmt/format.h>

#include <cmath>

#include "otlp/encode.hpp"
#include "util/json.hpp"

namespace lse::otlp {
namespace {

void put_string(std::string& out, std::string_view s) { json::append_quoted(out, s); }

void put_u64(std::string& out, std::uint64_t n) {
  fmt::format_to(std::back_inserter(out), "\"{}\"", n);
}

// Non-finite doubles are strings in the protobuf JSON mapping.
void put_double(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "\"NaN\"";
  } else if (std::isinf(d)) {
    out += d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", d);
  }
}

void put_attributes(std::string& out, const Attributes& attributes) {
  out += '[';
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    const Attribute& a = attributes[i];
    out += i ? ",{\"key\":" : "{\"key\":";
    put_string(out, a.key);
    if (const auto* s = std::get_if<std::string>(&a.value)) {
      out += ",\"value\":{\"stringValue\":";
      put_string(out, *s);
      out += "}}";
    } else {
      fmt::format_to(std::back_inserter(out), ",\"value\":{{\"intValue\":\"{}\"}}}}",
                     std::get<std::int64_t>(a.value));
    }
  }
  out += ']';
}

void put_point_head(std::string& out, const Attributes& a, std::uint64_t start,
                    std::uint64_t time) {
  out += "{\"attributes\":";
  put_attributes(out, a);
  out += ",\"startTimeUnixNano\":";
  put_u64(out, start);
  out += ",\"timeUnixNano\":";
  put_u64(out, time);
}

void put_histogram_point(std::string& out, const HistogramPoint& p) {
  put_point_head(out, p.attributes, p.start_ns, p.time_ns);
  out += ",\"count\":";
  put_u64(out, p.count);
  out += ",\"sum\":";
  put_double(out, p.sum);
  if (p.count > 0) {
    out += ",\"min\":";
    put_double(out, p.min);
    out += ",\"max\":";
    put_double(out, p.max);
  }
  fmt::format_to(std::back_inserter(out), ",\"scale\":{},\"zeroCount\":", p.scale);
  put_u64(out, p.zero_count);
  out += ",\"zeroThreshold\":";
  put_double(out, p.zero_threshold);
  fmt::format_to(std::back_inserter(out), ",\"positive\":{{\"offset\":{},\"bucketCounts\":[",
                 p.offset);
  for (std::size_t i = 0; i < p.buckets.size(); ++i) {
    if (i) out += ',';
    put_u64(out, p.buckets[i]);
  }
  out += "]}}";
}

void put_metric(std::string& out, const Metric& m, int temporality) {
  out += "{\"name\":";
  put_string(out, m.name);
  out += ",\"description\":";
  put_string(out, m.description);
  out += ",\"unit\":";
  put_string(out, m.unit);
  out += m.histogram ? ",\"exponentialHistogram\":{\"dataPoints\":[" : ",\"sum\":{\"dataPoints\":[";
  bool first = true;
  for (const HistogramPoint& p : m.histogram_points) {
    if (!std::exchange(first, false)) out += ',';
    put_histogram_point(out, p);
  }
  for (const SumPoint& p : m.sum_points) {
    if (!std::exchange(first, false)) out += ',';
    put_point_head(out, p.attributes, p.start_ns, p.time_ns);
    out += ",\"asDouble\":";
    put_double(out, p.value);
    out += '}';
  }
  fmt::format_to(std::back_inserter(out), "],\"aggregationTemporality\":{}", temporality);
  if (!m.histogram) out += ",\"isMonotonic\":true";
  out += "}}";
}

}  // namespace

std::string encode_json(const Batch& batch) {
  // AggregationTemporality: DELTA = 1, CUMULATIVE = 2.
  const int temporality = batch.temporality == Temporality::delta ? 1 : 2;
  std::string out = "{\"resourceMetrics\":[{\"resource\":{\"attributes\":";
  put_attributes(out, batch.resource);
  out += "},\"scopeMetrics\":[{\"scope\":{\"name\":";
  put_string(out, batch.scope_name);
  out += ",\"version\":";
  put_string(out, batch.scope_version);
  out += "},\"metrics\":[";
  for (std::size_t i = 0; i < batch.metrics.size(); ++i) {
    if (i) out += ',';
    put_metric(out, batch.metrics[i], temporality);
  }
  out += "]}]}]}";
  return out;
}

}  // namespace lse::otlp
