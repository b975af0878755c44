// Batch -> opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest
// (proto/opentelemetry/proto/..., compiled at build time).
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "otlp/encode.hpp"

namespace lse::otlp {
namespace {

namespace pb_common = opentelemetry::proto::common::v1;
namespace pb_metrics = opentelemetry::proto::metrics::v1;

void set_attributes(const Attributes& attributes,
                    google::protobuf::RepeatedPtrField<pb_common::KeyValue>* out) {
  for (const Attribute& a : attributes) {
    pb_common::KeyValue* kv = out->Add();
    kv->set_key(a.key);
    if (const auto* s = std::get_if<std::string>(&a.value)) {
      kv->mutable_value()->set_string_value(*s);
    } else {
      kv->mutable_value()->set_int_value(std::get<std::int64_t>(a.value));
    }
  }
}

pb_metrics::AggregationTemporality temporality_of(Temporality t) {
  return t == Temporality::delta ? pb_metrics::AGGREGATION_TEMPORALITY_DELTA
                                 : pb_metrics::AGGREGATION_TEMPORALITY_CUMULATIVE;
}

void set_histogram(const Metric& m, Temporality t, pb_metrics::Metric& out) {
  auto* h = out.mutable_exponential_histogram();
  h->set_aggregation_temporality(temporality_of(t));
  for (const HistogramPoint& p : m.histogram_points) {
    auto* dp = h->add_data_points();
    set_attributes(p.attributes, dp->mutable_attributes());
    dp->set_start_time_unix_nano(p.start_ns);
    dp->set_time_unix_nano(p.time_ns);
    dp->set_count(p.count);
    dp->set_sum(p.sum);
    if (p.count > 0) {
      dp->set_min(p.min);
      dp->set_max(p.max);
    }
    dp->set_scale(p.scale);
    dp->set_zero_count(p.zero_count);
    dp->set_zero_threshold(p.zero_threshold);
    dp->mutable_positive()->set_offset(p.offset);
    for (std::uint64_t n : p.buckets) dp->mutable_positive()->add_bucket_counts(n);
  }
}

void set_sum(const Metric& m, Temporality t, pb_metrics::Metric& out) {
  auto* s = out.mutable_sum();
  s->set_aggregation_temporality(temporality_of(t));
  s->set_is_monotonic(true);
  for (const SumPoint& p : m.sum_points) {
    auto* dp = s->add_data_points();
    set_attributes(p.attributes, dp->mutable_attributes());
    dp->set_start_time_unix_nano(p.start_ns);
    dp->set_time_unix_nano(p.time_ns);
    dp->set_as_double(p.value);
  }
}

}  // namespace

std::string encode_protobuf(const Batch& batch) {
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
  auto* rm = request.add_resource_metrics();
  set_attributes(batch.resource, rm->mutable_resource()->mutable_attributes());
  auto* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name(batch.scope_name);
  sm->mutable_scope()->set_version(batch.scope_version);
  for (const Metric& m : batch.metrics) {
    auto* out = sm->add_metrics();
    out->set_name(m.name);
    out->set_description(m.description);
    out->set_unit(m.unit);
    if (m.histogram) {
      set_histogram(m, batch.temporality, *out);
    } else {
      set_sum(m, batch.temporality, *out);
    }
  }
  return request.SerializeAsString();
}

}  // namespace lse::otlp
