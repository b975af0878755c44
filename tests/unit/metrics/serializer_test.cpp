// The exposition writer: the text format is byte for byte what
// prometheus-cpp's TextSerializer writes (the format every existing scrape
// and test reads); OpenMetrics is checked line for line on a small known
// family set and by the strict reader on everything it writes.
#include "metrics/serializer.hpp"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "openmetrics.hpp"

namespace lse::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::string text_serializer(const std::vector<MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

// Values whose formatting is easy to get wrong: exponents, 16 vs 17 digits,
// negative zero, huge and tiny, NaN and the infinities.
const std::vector<double> kAwkward = {0,
                                      -0.0,
                                      0.3065,
                                      1e-7,
                                      1.7e9,
                                      1700000001.6,
                                      123456789012345678.0,
                                      0.1 + 0.2,
                                      1.0 / 3,
                                      1e300,
                                      -2.5e-300,
                                      4.9e-324,
                                      1e15,
                                      1e16,
                                      1e17,
                                      123456.789e10,
                                      -1,
                                      std::numeric_limits<double>::quiet_NaN(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity()};

TEST(TextFormat, IsByteForByteWhatTextSerializerWrites) {
  prometheus::Registry registry;
  auto& gauges =
      prometheus::BuildGauge().Name("g_seconds").Help("Awkward values.").Register(registry);
  for (std::size_t i = 0; i < kAwkward.size(); ++i)
    gauges.Add({{"i", std::to_string(i)}, {"esc", "a\"b\\c\nd"}}).Set(kAwkward[i]);
  auto& counters = prometheus::BuildCounter().Name("c_total").Help("C.").Register(registry);
  counters.Add({}).Increment(3);
  counters.Add({{"x", "y"}}).Increment(0.1 + 0.2);
  auto& hist = prometheus::BuildHistogram().Name("h_seconds").Help("H.").Register(registry);
  auto& h = hist.Add({{"target", "t"}},
                     prometheus::Histogram::BucketBoundaries{0.005, 0.1, 0.25, 1, 7.5, 1e9});
  for (double v : {0.001, 0.3, 0.3, 2.0, 1e10}) h.Observe(v);
  hist.Add({}, prometheus::Histogram::BucketBoundaries{1});
  auto& summary = prometheus::BuildSummary().Name("s").Help("S.").Register(registry);
  summary.Add({}, prometheus::Summary::Quantiles{{0.5, 0.05}, {0.99, 0.001}}).Observe(4);
  prometheus::BuildGauge().Name("no_help").Register(registry).Add({});

  auto families = registry.Collect();
  // What Collect() never sets, set by hand: timestamps and an untyped family.
  families[0].metric[0].timestamp_ms = 1700000000123;
  MetricFamily untyped{"u", "U.", MetricType::Untyped, {}};
  untyped.metric.emplace_back();
  untyped.metric.back().untyped.value = 7.25;
  families.push_back(untyped);

  std::string ours;
  write_text(ours, families);
  EXPECT_EQ(ours, text_serializer(families));
  EXPECT_EQ(serialize(families, Exposition::text), ours);
}

TEST(TextFormat, NumbersMatchTextSerializerOverManyMagnitudes) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> mantissa(-10, 10);
  std::uniform_int_distribution<int> exponent(-30, 30);
  MetricFamily f{"g", "G.", MetricType::Gauge, {}};
  for (int i = 0; i < 5000; ++i) {
    ClientMetric m;
    m.gauge.value = mantissa(rng) * std::pow(10.0, exponent(rng));
    f.metric.push_back(m);
  }
  std::string ours;
  write_text(ours, {f});
  EXPECT_EQ(ours, text_serializer({f}));
}

// A small family set with everything OpenMetrics treats specially.
std::vector<MetricFamily> openmetrics_families() {
  MetricFamily counter{
      "llm_requests_total", "Requests \"sent\"\\ by\nresult.", MetricType::Counter, {}};
  ClientMetric c;
  c.label = {{"result", "ok"}};
  c.counter.value = 3;
  counter.metric.push_back(c);

  MetricFamily bare{"bare", "", MetricType::Counter, {}};  // no _total, no help
  bare.metric.emplace_back();

  MetricFamily gauge{"up_seconds", "Uptime.", MetricType::Gauge, {}};
  ClientMetric g;
  g.label = {{"v", "a\"b\\c\nd"}};
  g.gauge.value = std::numeric_limits<double>::quiet_NaN();
  gauge.metric.push_back(g);

  MetricFamily hist{"ttft_seconds", "TTFT.", MetricType::Histogram, {}};
  ClientMetric h;
  h.label = {{"target", "t"}};
  h.histogram.sample_count = 3;
  h.histogram.sample_sum = 2.5;
  h.histogram.bucket = {{1, 0.5}, {2, 1}, {3, std::numeric_limits<double>::infinity()}};
  hist.metric.push_back(h);

  MetricFamily untyped{"misc", "Misc.", MetricType::Untyped, {}};
  untyped.metric.emplace_back();
  untyped.metric.back().untyped.value = 1;
  untyped.metric.back().timestamp_ms = 1500;
  return {counter, bare, gauge, hist, untyped};
}

void notes_for(const MetricFamily& family, const ClientMetric&, SeriesNotes& notes) {
  if (family.name == "llm_requests_total") notes.created = 1700000000.5;
  if (family.name == "ttft_seconds") {
    notes.created = 1700000001;
    notes.bucket_exemplars.resize(3);
    notes.bucket_exemplars[0] = {"00ff00ff00ff00ff", 0.42, 1700000002.25};
    notes.bucket_exemplars[2] = {"abc\"d", 12.5, 1700000003};
  }
}

TEST(OpenMetrics, KnownFamiliesLineForLine) {
  const std::string text = serialize(openmetrics_families(), Exposition::openmetrics, notes_for);
  EXPECT_EQ(text,
            "# HELP llm_requests Requests \\\"sent\\\"\\\\ by\\nresult.\n"
            "# TYPE llm_requests counter\n"
            "llm_requests_total{result=\"ok\"} 3\n"
            "llm_requests_created{result=\"ok\"} 1700000000.500\n"
            "# TYPE bare counter\n"
            "bare_total 0\n"
            "# HELP up_seconds Uptime.\n"
            "# TYPE up_seconds gauge\n"
            "# UNIT up_seconds seconds\n"
            "up_seconds{v=\"a\\\"b\\\\c\\nd\"} NaN\n"
            "# HELP ttft_seconds TTFT.\n"
            "# TYPE ttft_seconds histogram\n"
            "# UNIT ttft_seconds seconds\n"
            "ttft_seconds_bucket{target=\"t\",le=\"0.5\"} 1 # {probe_id=\"00ff00ff00ff00ff\"} "
            "0.42 1700000002.250\n"
            "ttft_seconds_bucket{target=\"t\",le=\"1\"} 2\n"
            "ttft_seconds_bucket{target=\"t\",le=\"+Inf\"} 3 # {probe_id=\"abc\\\"d\"} 12.5 "
            "1700000003.000\n"
            "ttft_seconds_count{target=\"t\"} 3\n"
            "ttft_seconds_sum{target=\"t\"} 2.5\n"
            "ttft_seconds_created{target=\"t\"} 1700000001.000\n"
            "# HELP misc Misc.\n"
            "# TYPE misc unknown\n"
            "misc 1 1.500\n"
            "# EOF\n");
  const auto doc = testing::om::read(text);
  EXPECT_TRUE(doc.errors.empty()) << doc.errors.front();
}

TEST(OpenMetrics, WithoutNotesThereIsNoCreatedAndNoExemplar) {
  const std::string text = serialize(openmetrics_families(), Exposition::openmetrics);
  EXPECT_EQ(text.find("_created"), std::string::npos) << text;
  EXPECT_EQ(text.find(" # {"), std::string::npos) << text;
  EXPECT_TRUE(testing::om::read(text).errors.empty());
}

TEST(OpenMetrics, AddsTheInfBucketWhenTheFamilyLacksOne) {
  MetricFamily hist{"h", "H.", MetricType::Histogram, {}};
  ClientMetric h;
  h.histogram.sample_count = 2;
  h.histogram.bucket = {{1, 1.0}};
  hist.metric.push_back(h);
  const std::string text = serialize({hist}, Exposition::openmetrics);
  EXPECT_NE(text.find("h_bucket{le=\"+Inf\"} 2\nh_count 2\n"), std::string::npos) << text;
  EXPECT_TRUE(testing::om::read(text).errors.empty());
}

TEST(OpenMetrics, TheStrictReaderCatchesWhatWouldBeWrong) {
  // The reader is what the other tests lean on: it must refuse broken text.
  for (const char* bad : {
           "# TYPE a counter\na 1\n# EOF\n",                    // counter sample without _total
           "# TYPE a_total counter\na_total_total 1\n# EOF\n",  // family named with _total
           "# TYPE a gauge\na 1\n",                             // no EOF
           "# TYPE a gauge\n# UNIT a seconds\na 1\n# EOF\n",    // unit not a suffix
           "# TYPE a gauge\na 1 # {x=\"y\"} 1\n# EOF\n",        // exemplar on a gauge
           "a 1\n# EOF\n",                                      // no TYPE
           "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 3\n# EOF\n",  // +Inf != count
           "# TYPE a gauge\na{x=\"\\t\"} 1\n# EOF\n",                          // unknown escape
       })
    EXPECT_FALSE(testing::om::read(bad).errors.empty()) << bad;
}

}  // namespace
}  // namespace lse::metrics
