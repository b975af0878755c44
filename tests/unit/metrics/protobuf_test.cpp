// The protobuf exposition (Metrics::render(Exposition::protobuf)): decoded
// with the generated classes, as Prometheus reads it. Native histograms'
// exact spans and deltas, classic buckets beside them or not, exemplars,
// created timestamps, and the native settings of the config.
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "metrics/metrics.hpp"
#include "metrics_fixtures.hpp"
#include "openmetrics.hpp"
#include "prometheus/metrics.pb.h"
#include "protobuf_decode.hpp"

namespace lse::metrics {
namespace {

namespace pb = io::prometheus::client;
namespace om = lse::testing::om;
using testing::fixed_process_stats;
using testing::make_config;
using testing::make_target;

std::vector<pb::MetricFamily> decode(const std::string& bytes) {
  return testing::decode_protobuf(bytes);
}

const pb::MetricFamily* family(const std::vector<pb::MetricFamily>& all, const std::string& name) {
  for (const auto& f : all)
    if (f.name() == name) return &f;
  return nullptr;
}

std::string label(const pb::Metric& m, const std::string& name) {
  for (const auto& l : m.label())
    if (l.name() == name) return l.value();
  return "";
}

// The one series of `name` whose labels include `key`=`value` (or the first).
const pb::Metric* metric(const std::vector<pb::MetricFamily>& all, const std::string& name,
                         const std::string& key = "", const std::string& value = "") {
  const pb::MetricFamily* f = family(all, name);
  if (!f) return nullptr;
  for (const auto& m : f->metric())
    if (key.empty() || label(m, key) == value) return &m;
  return nullptr;
}

class ProtobufTest : public ::testing::Test {
 protected:
  void apply(const std::function<void(config::Config&)>& tune = {}) {
    config::Config c = make_config({make_target("t", "m", {"p"})});
    if (tune) tune(c);
    metrics.apply_config(c);
  }
  std::vector<pb::MetricFamily> scrape() const {
    return decode(metrics.render(Exposition::protobuf));
  }
  static probe::ProbeResult planted_gaps(std::vector<double> gaps) {
    probe::ProbeResult r = testing::success("t", "m", "p");
    r.id = "probe-1";
    r.gaps = std::move(gaps);
    r.gap_max = *std::max_element(r.gaps.begin(), r.gaps.end());
    return r;
  }

  Metrics metrics{BuildInfo{"1.2.3", "abcdef"}, fixed_process_stats};
};

TEST_F(ProtobufTest, GapsOf3msAnd250msLandInBucketsMinus67AndMinus16AtSchema3) {
  apply();
  metrics.record(planted_gaps({0.003, 0.003, 0.25}));
  const auto all = scrape();
  const pb::Metric* m = metric(all, "llm_stream_inter_chunk_gap_seconds");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(family(all, "llm_stream_inter_chunk_gap_seconds")->type(), pb::HISTOGRAM);
  EXPECT_EQ(label(*m, "target"), "t");
  EXPECT_EQ(label(*m, "prompt"), "p");
  const pb::Histogram& h = m->histogram();
  EXPECT_EQ(h.schema(), 3);
  EXPECT_EQ(h.zero_threshold(), 1e-5);
  EXPECT_EQ(h.zero_count(), 0u);
  EXPECT_EQ(h.sample_count(), 3u);
  EXPECT_NEAR(h.sample_sum(), 0.256, 1e-12);
  // Buckets -67 (two) and -16 (one): two spans, the second 50 indices on.
  ASSERT_EQ(h.positive_span_size(), 2);
  EXPECT_EQ(h.positive_span(0).offset(), -67);
  EXPECT_EQ(h.positive_span(0).length(), 1u);
  EXPECT_EQ(h.positive_span(1).offset(), 50);
  EXPECT_EQ(h.positive_span(1).length(), 1u);
  ASSERT_EQ(h.positive_delta_size(), 2);
  EXPECT_EQ(h.positive_delta(0), 2);
  EXPECT_EQ(h.positive_delta(1), -1);
  EXPECT_EQ(h.negative_span_size(), 0);
  // The classic buckets in the same message: 0.005 holds the two 3 ms gaps.
  ASSERT_GT(h.bucket_size(), 1);
  EXPECT_EQ(h.bucket(0).upper_bound(), 0.005);
  EXPECT_EQ(h.bucket(0).cumulative_count(), 2u);
  // The largest gap of the probe is the native histogram's exemplar.
  ASSERT_EQ(h.exemplars_size(), 1);
  EXPECT_EQ(h.exemplars(0).value(), 0.25);
  ASSERT_EQ(h.exemplars(0).label_size(), 1);
  EXPECT_EQ(h.exemplars(0).label(0).name(), "probe_id");
  EXPECT_EQ(h.exemplars(0).label(0).value(), "probe-1");
  EXPECT_TRUE(h.has_created_timestamp());
  EXPECT_GT(h.created_timestamp().seconds(), 1600000000);
}

TEST_F(ProtobufTest, ClassicBucketsCarryTheirExemplars) {
  apply();
  metrics.record(planted_gaps({0.003, 0.25}));
  const auto all = scrape();
  const pb::Histogram& h = metric(all, "llm_stream_inter_chunk_gap_seconds")->histogram();
  int with_exemplar = 0;
  for (const auto& b : h.bucket()) {
    if (!b.has_exemplar()) continue;
    ++with_exemplar;
    EXPECT_EQ(b.upper_bound(), 0.25);  // the largest gap, in the bucket le=0.25
    EXPECT_EQ(b.exemplar().label(0).value(), "probe-1");
    EXPECT_EQ(b.exemplar().timestamp().seconds(), 1700000001);  // ts + duration 1.6 s
  }
  EXPECT_EQ(with_exemplar, 1);
}

TEST_F(ProtobufTest, AnEmptyHistogramIsStillNative) {
  apply();
  const auto all = scrape();
  const pb::Histogram& h = metric(all, "llm_stream_time_to_first_token_seconds")->histogram();
  EXPECT_EQ(h.sample_count(), 0u);
  EXPECT_EQ(h.schema(), 3);
  EXPECT_GT(h.zero_threshold(), 0);      // what Prometheus 2.42 tells a native histogram by
  ASSERT_EQ(h.positive_span_size(), 1);  // what later versions tell it by: a no-op span
  EXPECT_EQ(h.positive_span(0).offset(), 0);
  EXPECT_EQ(h.positive_span(0).length(), 0u);
  EXPECT_EQ(h.positive_delta_size(), 0);
}

TEST_F(ProtobufTest, EveryPhaseHasItsOwnNativeHistogram) {
  apply();
  metrics.record(planted_gaps({0.01}));  // connect 4 ms, headers 200 ms
  const auto all = scrape();
  const pb::Metric* connect = metric(all, "llm_stream_phase_seconds", "phase", "connect");
  const pb::Metric* headers = metric(all, "llm_stream_phase_seconds", "phase", "headers");
  ASSERT_NE(connect, nullptr);
  ASSERT_NE(headers, nullptr);
  EXPECT_EQ(connect->histogram().sample_count(), 1u);
  EXPECT_EQ(connect->histogram().positive_span(0).offset(), -63);  // 2^-7.97: (2^-8, 2^-7.875]
  EXPECT_EQ(headers->histogram().positive_span(0).offset(), -18);  // 0.2 in (2^-2.375, 2^-2.25]
  EXPECT_NEAR(headers->histogram().sample_sum(), 0.2, 1e-12);
}

TEST_F(ProtobufTest, TokensPerChunkIsRecordedWhereUsageIsKnown) {
  apply();
  probe::ProbeResult r = planted_gaps({0.01});
  r.tokens_per_chunk = 5;
  metrics.record(r);
  metrics.record(planted_gaps({0.01}));  // usage unknown: nothing to record
  const auto all = scrape();
  const pb::Histogram& h = metric(all, "llm_stream_tokens_per_chunk")->histogram();
  EXPECT_EQ(h.sample_count(), 1u);
  EXPECT_EQ(h.sample_sum(), 5);
  for (const auto& b : h.bucket()) EXPECT_EQ(b.cumulative_count(), b.upper_bound() >= 5 ? 1u : 0u);
  // 5 = 2^2.32 lies in (2^2.25, 2^2.375]: bucket 19 at schema 3.
  EXPECT_EQ(h.positive_span(0).offset(), 19);
}

TEST_F(ProtobufTest, NativeOnlyHasNoClassicBucketsInAnyFormat) {
  apply([](config::Config& c) { c.metrics.classic = false; });
  metrics.record(planted_gaps({0.003, 0.25}));
  const auto all = scrape();
  const pb::Histogram& h = metric(all, "llm_stream_inter_chunk_gap_seconds")->histogram();
  EXPECT_EQ(h.bucket_size(), 0);
  EXPECT_EQ(h.sample_count(), 2u);
  EXPECT_EQ(h.positive_span_size(), 2);
  // Text: _count and _sum only.
  const std::string text = metrics.render(Exposition::text);
  EXPECT_EQ(text.find("_bucket"), std::string::npos);
  EXPECT_NE(text.find("llm_stream_inter_chunk_gap_seconds_count{model=\"m\",prompt=\"p\",target="
                      "\"t\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("llm_stream_inter_chunk_gap_seconds_sum{"), std::string::npos);
  // OpenMetrics: the +Inf bucket every histogram must have, and nothing finer.
  const om::Document d = om::read(metrics.render(Exposition::openmetrics));
  EXPECT_TRUE(d.errors.empty()) << d.errors.front();
  std::vector<const om::Sample*> buckets;
  for (const auto& sample : d.samples)
    if (sample.name == "llm_stream_inter_chunk_gap_seconds_bucket") buckets.push_back(&sample);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0]->labels.at("le"), "+Inf");
  EXPECT_EQ(buckets[0]->value, 2);
}

TEST_F(ProtobufTest, NativeOffLeavesClassicHistograms) {
  apply([](config::Config& c) { c.metrics.native = std::nullopt; });
  metrics.record(planted_gaps({0.003, 0.25}));
  const auto all = scrape();
  const pb::Histogram& h = metric(all, "llm_stream_inter_chunk_gap_seconds")->histogram();
  EXPECT_FALSE(h.has_schema());
  EXPECT_FALSE(h.has_zero_threshold());
  EXPECT_EQ(h.positive_span_size(), 0);
  EXPECT_EQ(h.sample_count(), 2u);
  EXPECT_EQ(h.bucket(0).cumulative_count(), 1u);
}

TEST_F(ProtobufTest, NewNativeSettingsRebuildTheHistograms) {
  apply();
  metrics.record(planted_gaps({0.003}));
  apply([](config::Config& c) {
    c.metrics.native = histogram::ExponentialSettings{0, 0.001, 160};
  });
  const auto rebuilt = scrape();
  const pb::Histogram& before = metric(rebuilt, "llm_stream_inter_chunk_gap_seconds")->histogram();
  EXPECT_EQ(before.sample_count(), 0u);
  EXPECT_EQ(before.schema(), 0);
  metrics.record(planted_gaps({0.0005, 0.003}));  // 0.5 ms is at or below the zero threshold
  const auto all = scrape();
  const pb::Histogram& h = metric(all, "llm_stream_inter_chunk_gap_seconds")->histogram();
  EXPECT_EQ(h.zero_threshold(), 0.001);
  EXPECT_EQ(h.zero_count(), 1u);
  EXPECT_EQ(h.positive_span(0).offset(), -8);  // 0.003 in (2^-9, 2^-8] at schema 0
}

// A reload that keeps the settings keeps the counts; one that removes a
// prompt removes its histograms, native ones included.
TEST_F(ProtobufTest, ReloadKeepsOrRemovesNativeHistogramsWithTheirSeries) {
  metrics.apply_config(make_config({make_target("t", "m", {"p", "q"})}));
  probe::ProbeResult q = planted_gaps({0.003});
  q.prompt = "q";
  metrics.record(planted_gaps({0.003, 0.003}));
  metrics.record(q);
  apply();  // only prompt p is left
  const auto all = scrape();
  const pb::Metric* p = metric(all, "llm_stream_inter_chunk_gap_seconds", "prompt", "p");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->histogram().sample_count(), 2u);
  EXPECT_EQ(p->histogram().positive_delta(0), 2);
  EXPECT_EQ(metric(all, "llm_stream_inter_chunk_gap_seconds", "prompt", "q"), nullptr);
  EXPECT_EQ(family(all, "llm_stream_phase_seconds")->metric_size(), 6);
}

TEST_F(ProtobufTest, CountersCarryTheirCreatedTimestampAndEveryFamilyDecodes) {
  apply();
  metrics.record(planted_gaps({0.01}));
  const auto all = scrape();
  const pb::Metric* chunks = metric(all, "llm_stream_chunks_total");
  ASSERT_NE(chunks, nullptr);
  EXPECT_EQ(chunks->counter().value(), 6);
  EXPECT_GT(chunks->counter().created_timestamp().seconds(), 1600000000);
  EXPECT_EQ(family(all, "llm_stream_last_probe_success")->type(), pb::GAUGE);
  EXPECT_EQ(metric(all, "llm_stream_last_probe_success")->gauge().value(), 1);
  ASSERT_NE(family(all, "process_open_fds"), nullptr);
  EXPECT_EQ(metric(all, "process_open_fds")->gauge().value(), 12);
  // The same families as the text format, one message each.
  const std::string text = metrics.render(Exposition::text);
  std::size_t types = 0;
  for (auto at = text.find("# TYPE "); at != std::string::npos; at = text.find("# TYPE ", at + 1))
    ++types;
  EXPECT_EQ(all.size(), types);
}

// What check-config counts for native only is what a protobuf scrape holds:
// one series per native histogram, counter and gauge; a failure reason once seen.
TEST_F(ProtobufTest, NativeOnlySeriesAreWhatCheckConfigCounts) {
  config::Config c = make_config({make_target("t", "m", {"p"}), make_target("u", "m", {"p", "q"})});
  c.metrics.classic = false;
  metrics.apply_config(c);
  auto series = [&] {
    std::uint64_t n = 0;
    for (const auto& f : scrape()) n += static_cast<std::uint64_t>(f.metric_size());
    return n;
  };
  EXPECT_EQ(series(), config::series_count(c).at_start);
  EXPECT_EQ(metric(scrape(), "llm_stream_probe_failures_total"), nullptr);
  probe::ProbeResult failed = planted_gaps({0.01});
  failed.ok = false;
  failed.reason = probe::FailureReason::timeout_idle;
  metrics.record(failed);
  metrics.record(failed);
  EXPECT_EQ(series(), config::series_count(c).at_start + 1 + 1);  // + the reason, + "stop"
  const auto after = scrape();
  const pb::Metric* idle = metric(after, "llm_stream_probe_failures_total");
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(label(*idle, "reason"), "timeout_idle");
  EXPECT_EQ(idle->counter().value(), 2);
}

// Probe threads record into different series sets while scrapes run; each
// native histogram has its own lock, and every observation is counted.
TEST_F(ProtobufTest, ConcurrentRecordsAreAllCounted) {
  config::Config c = make_config({make_target("a", "m", {"p"}), make_target("b", "m", {"p"})});
  metrics.apply_config(c);
  constexpr int kProbes = 300;
  auto prober = [&](const std::string& target) {
    for (int i = 0; i < kProbes; ++i) {
      probe::ProbeResult r = testing::success(target, "m", "p");
      r.gaps = {0.002, 0.004, 0.008};
      metrics.record(r);
    }
  };
  std::thread a(prober, "a"), b(prober, "b");
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(scrape().empty());
  a.join();
  b.join();
  const auto all = scrape();
  for (const std::string target : {"a", "b"}) {
    const pb::Histogram& h =
        metric(all, "llm_stream_inter_chunk_gap_seconds", "target", target)->histogram();
    EXPECT_EQ(h.sample_count(), 3u * kProbes) << target;
    std::int64_t bucket = 0, total = 0;
    for (std::int64_t d : h.positive_delta()) total += (bucket += d);
    EXPECT_EQ(total, 3 * kProbes) << target;
  }
}

}  // namespace
}  // namespace lse::metrics
