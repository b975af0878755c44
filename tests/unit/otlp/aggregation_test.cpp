// The aggregation of probe results into OTLP metrics: which figure goes
// where, with which attributes, and how the two temporalities behave.
#include "otlp/aggregation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace lse::otlp {
namespace {

constexpr std::uint64_t kT0 = 1'700'000'000'000'000'000ull;
constexpr std::uint64_t kSecond = 1'000'000'000ull;

TargetAttributes attrs() { return {"chat", "vllm", "m", "llm.internal", 8000}; }

probe::ProbeResult ok_probe() {
  probe::ProbeResult r;
  r.target = "t";
  r.prompt = "short";
  r.model = "m";
  r.ok = true;
  r.ttft = 0.150;
  r.duration = 1.0;
  r.tail = 0.01;
  r.gaps = {0.003, 0.004, 0.002};
  r.gap_max = 0.004;
  r.gap_p95 = 0.004;
  r.chunks = 4;
  r.stalls = 0;
  r.prompt_tokens = 12;
  r.completion_tokens = 4;
  r.phases[static_cast<std::size_t>(probe::Phase::connect)] = 0.001;
  return r;
}

const Metric* find(const Batch& b, M m) {
  for (const auto& metric : b.metrics)
    if (metric.name == spec_of(m).name) return &metric;
  return nullptr;
}

std::string attribute(const Attributes& a, const std::string& key) {
  for (const auto& x : a)
    if (x.key == key)
      return std::holds_alternative<std::string>(x.value)
                 ? std::get<std::string>(x.value)
                 : std::to_string(std::get<std::int64_t>(x.value));
  return "<absent>";
}

class AggregationTest : public ::testing::Test {
 protected:
  Aggregator cumulative{Temporality::cumulative};
  Aggregator delta{Temporality::delta};
  void SetUp() override {
    cumulative.set_targets({{"t", attrs()}});
    delta.set_targets({{"t", attrs()}});
  }
};

TEST_F(AggregationTest, EveryGapIsOneSampleOfTimePerOutputChunk) {
  cumulative.record(ok_probe(), kT0);
  const Batch b = cumulative.collect(kT0 + kSecond);
  const Metric* m = find(b, M::time_per_chunk);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->unit, "s");
  ASSERT_EQ(m->histogram_points.size(), 1u);
  const HistogramPoint& p = m->histogram_points[0];
  EXPECT_EQ(p.count, 3u);
  EXPECT_NEAR(p.sum, 0.009, 1e-12);
  EXPECT_DOUBLE_EQ(p.min, 0.002);
  EXPECT_DOUBLE_EQ(p.max, 0.004);
  EXPECT_EQ(p.scale, 3);
  EXPECT_EQ(p.start_ns, kT0);
  EXPECT_EQ(p.time_ns, kT0 + kSecond);
  // OTLP bucket offset+k holds (base^(offset+k), base^(offset+k+1)].
  const double base = std::pow(2.0, std::pow(2.0, -p.scale));
  std::uint64_t total = 0;
  for (std::uint64_t n : p.buckets) total += n;
  EXPECT_EQ(total, 3u);
  for (double g : {0.003, 0.004, 0.002}) {
    const auto k = static_cast<std::size_t>(histogram::bucket_index(g, 3) - 1 - p.offset);
    ASSERT_LT(k, p.buckets.size());
    EXPECT_GT(p.buckets[k], 0u) << g;
    EXPECT_GT(g, std::pow(base, p.offset + static_cast<double>(k)));
    EXPECT_LE(g, std::pow(base, p.offset + static_cast<double>(k) + 1) * (1 + 1e-12));
  }
}

TEST_F(AggregationTest, AttributesFollowTheConventions) {
  cumulative.record(ok_probe(), kT0);
  const Batch b = cumulative.collect(kT0);
  const HistogramPoint& p = find(b, M::duration)->histogram_points.at(0);
  EXPECT_EQ(attribute(p.attributes, "gen_ai.operation.name"), "chat");
  EXPECT_EQ(attribute(p.attributes, "gen_ai.provider.name"), "vllm");
  EXPECT_EQ(attribute(p.attributes, "gen_ai.request.model"), "m");
  EXPECT_EQ(attribute(p.attributes, "server.address"), "llm.internal");
  EXPECT_EQ(attribute(p.attributes, "server.port"), "8000");
  EXPECT_EQ(attribute(p.attributes, "llm_stream.target"), "t");
  EXPECT_EQ(attribute(p.attributes, "llm_stream.prompt"), "short");
  EXPECT_EQ(attribute(p.attributes, "error.type"), "<absent>");
  EXPECT_TRUE(std::is_sorted(p.attributes.begin(), p.attributes.end()));
  const Metric* tokens = find(b, M::token_usage);
  ASSERT_EQ(tokens->histogram_points.size(), 2u);
  for (const auto& t : tokens->histogram_points) {
    const std::string type = attribute(t.attributes, "gen_ai.token.type");
    EXPECT_DOUBLE_EQ(t.sum, type == "input" ? 12 : 4) << type;
  }
  EXPECT_EQ(find(b, M::phase)->histogram_points.size(), 1u);
  EXPECT_EQ(attribute(find(b, M::phase)->histogram_points[0].attributes, "llm_stream.phase"),
            "connect");
}

TEST_F(AggregationTest, ResponseModelIsSentOnlyWhenTheStreamNamedIt) {
  probe::ProbeResult unnamed = ok_probe();
  probe::ProbeResult named = ok_probe();
  named.response_model = "m-2025-01-31";
  probe::ProbeResult other = ok_probe();
  other.response_model = "m-2025-04-01";
  cumulative.record(unnamed, kT0);
  cumulative.record(named, kT0);
  cumulative.record(named, kT0);
  cumulative.record(other, kT0);
  const Batch b = cumulative.collect(kT0);
  // One point per response model (and one without): 1 + 2 + 1 probes.
  std::map<std::string, std::uint64_t> counts;
  for (const auto& p : find(b, M::duration)->histogram_points) {
    EXPECT_EQ(attribute(p.attributes, "gen_ai.request.model"), "m");
    EXPECT_TRUE(std::is_sorted(p.attributes.begin(), p.attributes.end()));
    counts[attribute(p.attributes, "gen_ai.response.model")] += p.count;
  }
  const std::map<std::string, std::uint64_t> want = {
      {"<absent>", 1}, {"m-2025-01-31", 2}, {"m-2025-04-01", 1}};
  EXPECT_EQ(counts, want);
}

TEST_F(AggregationTest, AFailureCarriesErrorTypeAndNoStreamSummaries) {
  probe::ProbeResult r = ok_probe();
  r.ok = false;
  r.reason = probe::FailureReason::timeout_idle;
  cumulative.record(r, kT0);
  const Batch b = cumulative.collect(kT0);
  EXPECT_EQ(attribute(find(b, M::duration)->histogram_points.at(0).attributes, "error.type"),
            "timeout_idle");
  // TTFT has no error.type (the conventions give it none); the gaps still count.
  EXPECT_EQ(attribute(find(b, M::ttft)->histogram_points.at(0).attributes, "error.type"),
            "<absent>");
  EXPECT_EQ(find(b, M::time_per_chunk)->histogram_points.at(0).count, 3u);
  EXPECT_EQ(find(b, M::tail), nullptr);
  EXPECT_EQ(find(b, M::max_gap), nullptr);
}

TEST_F(AggregationTest, WarmupCanceledAndUnknownTargetsAreNotMeasurements) {
  probe::ProbeResult warm = ok_probe();
  warm.warmup = true;
  probe::ProbeResult canceled = ok_probe();
  canceled.ok = false;
  canceled.reason = probe::FailureReason::canceled;
  probe::ProbeResult other = ok_probe();
  other.target = "not-configured";
  for (const auto& r : {warm, canceled, other}) cumulative.record(r, kT0);
  EXPECT_TRUE(cumulative.collect(kT0).metrics.empty());
}

TEST_F(AggregationTest, CumulativeKeepsItsStartAndTotals) {
  cumulative.record(ok_probe(), kT0);
  cumulative.collect(kT0 + kSecond);
  cumulative.record(ok_probe(), kT0 + 2 * kSecond);
  const Batch b = cumulative.collect(kT0 + 3 * kSecond);
  const HistogramPoint& p = find(b, M::time_per_chunk)->histogram_points.at(0);
  EXPECT_EQ(p.count, 6u);
  EXPECT_EQ(p.start_ns, kT0);
  EXPECT_EQ(find(b, M::chunks)->sum_points.at(0).value, 8.0);
  // Nothing new: every series again, unchanged.
  EXPECT_EQ(cumulative.collect(kT0 + 4 * kSecond).data_points(), b.data_points());
}

TEST_F(AggregationTest, DeltaStartsWhereTheLastCollectionEnded) {
  delta.record(ok_probe(), kT0);
  const Batch first = delta.collect(kT0 + kSecond);
  EXPECT_EQ(find(first, M::time_per_chunk)->histogram_points.at(0).count, 3u);
  EXPECT_TRUE(delta.collect(kT0 + 2 * kSecond).metrics.empty());  // nothing since
  delta.record(ok_probe(), kT0 + 3 * kSecond);
  const Batch third = delta.collect(kT0 + 4 * kSecond);
  const HistogramPoint& p = find(third, M::time_per_chunk)->histogram_points.at(0);
  EXPECT_EQ(p.count, 3u);
  // The series' points tile time: this one starts where its last one ended
  // (the empty collection between sent nothing for it).
  EXPECT_EQ(p.start_ns, kT0 + kSecond);
  EXPECT_EQ(p.time_ns, kT0 + 4 * kSecond);
  EXPECT_EQ(find(third, M::chunks)->sum_points.at(0).value, 4.0);
}

TEST_F(AggregationTest, AGoneTargetsSeriesGoWithIt) {
  cumulative.record(ok_probe(), kT0);
  cumulative.set_targets({{"other", attrs()}});
  EXPECT_TRUE(cumulative.collect(kT0).metrics.empty());
}

TEST(OtlpBuckets, DenseFromTheLowestIndexMinusOne) {
  std::int32_t offset = 99;
  std::vector<std::uint64_t> counts;
  to_otlp_buckets({{3, 2}, {5, 1}}, offset, counts);
  EXPECT_EQ(offset, 2);
  EXPECT_EQ(counts, (std::vector<std::uint64_t>{2, 0, 1}));
  to_otlp_buckets({}, offset, counts);
  EXPECT_TRUE(counts.empty());
}

}  // namespace
}  // namespace lse::otlp
