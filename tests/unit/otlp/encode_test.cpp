// Both encodings of a batch: protobuf read back with the generated classes,
// JSON checked for OTLP/JSON's rules.
#include "otlp/encode.hpp"

#include <gtest/gtest.h>

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "otlp/response.hpp"

namespace lse::otlp {
namespace {

Batch sample_batch(Temporality t) {
  Batch b;
  b.temporality = t;
  b.resource = {{"service.name", std::string("lse")}};
  b.scope_name = "llm-stream-exporter";
  b.scope_version = "1.2.3";
  Metric h{"gen_ai.client.operation.time_per_output_chunk", "gaps", "s", true, {}, {}};
  HistogramPoint p;
  p.attributes = {{"server.port", std::int64_t{8443}}, {"x", std::string("q\"uote")}};
  p.start_ns = 1'700'000'000'000'000'001ull;
  p.time_ns = 1'700'000'000'000'000'002ull;
  p.count = 4;
  p.sum = 0.012;
  p.min = 0.002;
  p.max = 0.005;
  p.scale = 3;
  p.zero_count = 1;
  p.zero_threshold = 1e-5;
  p.offset = -68;
  p.buckets = {2, 0, 1};
  h.histogram_points.push_back(p);
  Metric s{"llm_stream.stalls", "stalls", "{stall}", false, {}, {}};
  s.sum_points.push_back({{}, 5, 6, 3});
  b.metrics = {h, s};
  return b;
}

TEST(Encode, ProtobufReadsBackAsTheBatch) {
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest req;
  ASSERT_TRUE(req.ParseFromString(encode_protobuf(sample_batch(Temporality::delta))));
  const auto& rm = req.resource_metrics(0);
  EXPECT_EQ(rm.resource().attributes(0).value().string_value(), "lse");
  const auto& sm = rm.scope_metrics(0);
  EXPECT_EQ(sm.scope().version(), "1.2.3");
  const auto& h = sm.metrics(0);
  EXPECT_EQ(h.unit(), "s");
  ASSERT_TRUE(h.has_exponential_histogram());
  EXPECT_EQ(h.exponential_histogram().aggregation_temporality(),
            opentelemetry::proto::metrics::v1::AGGREGATION_TEMPORALITY_DELTA);
  const auto& p = h.exponential_histogram().data_points(0);
  EXPECT_EQ(p.start_time_unix_nano(), 1'700'000'000'000'000'001ull);
  EXPECT_EQ(p.count(), 4u);
  EXPECT_EQ(p.scale(), 3);
  EXPECT_EQ(p.zero_count(), 1u);
  EXPECT_EQ(p.positive().offset(), -68);
  ASSERT_EQ(p.positive().bucket_counts_size(), 3);
  EXPECT_EQ(p.positive().bucket_counts(2), 1u);
  EXPECT_DOUBLE_EQ(p.min(), 0.002);
  EXPECT_EQ(p.attributes(0).value().int_value(), 8443);
  const auto& s = sm.metrics(1);
  ASSERT_TRUE(s.has_sum());
  EXPECT_TRUE(s.sum().is_monotonic());
  EXPECT_DOUBLE_EQ(s.sum().data_points(0).as_double(), 3);
}

TEST(Encode, JsonFollowsTheOtlpJsonRules) {
  const std::string j = encode_json(sample_batch(Temporality::cumulative));
  // 64-bit integers as strings, enums as integers, lowerCamelCase keys.
  EXPECT_NE(j.find("\"startTimeUnixNano\":\"1700000000000000001\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"count\":\"4\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"intValue\":\"8443\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"aggregationTemporality\":2"), std::string::npos) << j;
  EXPECT_NE(j.find("\"positive\":{\"offset\":-68,\"bucketCounts\":[\"2\",\"0\",\"1\"]}"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"stringValue\":\"q\\\"uote\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"isMonotonic\":true"), std::string::npos) << j;
  // Balanced: every object and array closed.
  EXPECT_EQ(std::count(j.begin(), j.end(), '{'), std::count(j.begin(), j.end(), '}'));
  EXPECT_EQ(std::count(j.begin(), j.end(), '['), std::count(j.begin(), j.end(), ']'));
}

TEST(Response, PartialSuccessInProtobufAndJson) {
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceResponse r;
  r.mutable_partial_success()->set_rejected_data_points(7);
  r.mutable_partial_success()->set_error_message("too old");
  const auto pb = partial_success(r.SerializeAsString(), "application/x-protobuf");
  ASSERT_TRUE(pb);
  EXPECT_EQ(pb->rejected_data_points, 7);
  EXPECT_EQ(pb->error_message, "too old");
  const auto js = partial_success(
      R"({"partialSuccess":{"rejectedDataPoints":"3","errorMessage":"x"}})", "application/json");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->rejected_data_points, 3);
  // Nothing rejected, nothing said, an empty or undecodable body: no partial success.
  EXPECT_FALSE(partial_success("", "application/x-protobuf"));
  EXPECT_FALSE(partial_success("{}", "application/json"));
  EXPECT_FALSE(partial_success(R"({"partialSuccess":{}})", "application/json"));
  EXPECT_FALSE(partial_success("not json", "application/json"));
}

}  // namespace
}  // namespace lse::otlp
