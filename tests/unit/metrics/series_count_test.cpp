// config::series_count against what Metrics::render() really writes: the
// number the metrics.max_series guard and check-config rely on must be the
// number of samples on /metrics, for every shape of the `metrics:` section
// and for target labels. Also pins the per-target×prompt figures
// docs/configuration.md quotes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "exposition.hpp"
#include "metrics/families.hpp"
#include "metrics/metrics.hpp"
#include "metrics_fixtures.hpp"

namespace lse::metrics {
namespace {

using lse::testing::fixed_process_stats;
using lse::testing::make_config;
using lse::testing::make_target;
using lse::testing::parse_exposition;
using lse::testing::success;

// Samples on /metrics (process_* from a reading where every file was read).
std::size_t rendered_series(const Metrics& m) {
  const auto e = parse_exposition(m.render());
  EXPECT_TRUE(e.bad_lines.empty()) << e.bad_lines.front();
  return e.samples.size();
}

// Two targets, three prompt series: one with labels, one without.
config::Config two_targets() {
  auto a = make_target("a", "m1", {"short", "long"});
  a.labels = {{"provider", "openai"}, {"team", "search"}};
  auto b = make_target("b", "m2", {"short"});
  return make_config({a, b});
}

// Every finish reason of every series set, so the counters made on first
// sight exist too.
void record_every_finish_reason(Metrics& m, const config::Config& c) {
  for (const auto& t : c.targets)
    for (const auto& p : t.prompts)
      for (const char* reason :
           {"stop", "length", "content_filter", "tool_calls", "function_call", "unheard-of"}) {
        auto r = success(t.name, t.model, p);
        r.finish_reason = reason;
        m.record(r);
      }
}

void expect_counted(const config::Config& c, const std::string& what) {
  Metrics m{BuildInfo{"1", "r"}, fixed_process_stats};
  m.apply_config(c);
  const config::SeriesCount n = config::series_count(c);
  EXPECT_EQ(rendered_series(m), n.at_start) << what << ": at start";
  record_every_finish_reason(m, c);
  EXPECT_EQ(rendered_series(m), n.at_most) << what << ": every finish reason seen";
}

TEST(SeriesCount, IsWhatRenderWritesForEveryShapeOfTheMetricsSection) {
  auto c = two_targets();
  expect_counted(c, "defaults");
  c.metrics.phases = config::PhaseSeries::sum_count;
  expect_counted(c, "phases: sum_count");
  c.metrics.phases = config::PhaseSeries::off;
  expect_counted(c, "phases: off");
  c.metrics.phases = config::PhaseSeries::histogram;
  c.metrics.per_prompt = false;
  expect_counted(c, "per_prompt: false");
  c.metrics.phases = config::PhaseSeries::sum_count;
  expect_counted(c, "per_prompt: false, phases: sum_count");
}

TEST(SeriesCount, FollowsEveryHistogramsOwnBuckets) {
  auto c = two_targets();
  // A different number of bounds for each histogram, so a histogram built
  // with another one's buckets would miscount.
  std::size_t n = 1;
  for (std::string_view key : config::Buckets::kKeys) {
    std::vector<double> bounds;
    for (std::size_t i = 1; i <= n; ++i) bounds.push_back(0.1 * static_cast<double>(i));
    *c.buckets.named(key) = bounds;
    ++n;
  }
  expect_counted(c, "custom buckets");
}

TEST(SeriesCount, FollowsAReloadThatChangesLabelsPhasesAndPerPrompt) {
  Metrics m{BuildInfo{"1", "r"}, fixed_process_stats};
  auto c = two_targets();
  m.apply_config(c);
  c.targets[1].labels = {{"region", "eu"}};
  c.metrics.phases = config::PhaseSeries::off;
  m.apply_config(c);
  EXPECT_EQ(rendered_series(m), config::series_count(c).at_start);
  c.metrics.per_prompt = false;
  c.metrics.phases = config::PhaseSeries::sum_count;
  m.apply_config(c);
  EXPECT_EQ(rendered_series(m), config::series_count(c).at_start);
  c.metrics.per_prompt = true;
  c.targets[0].labels.clear();
  m.apply_config(c);
  EXPECT_EQ(rendered_series(m), config::series_count(c).at_start);
}

// One target with one prompt costs the exporter's own series (6 + 6
// process_*) once; every further target×prompt costs what this adds.
config::SeriesCount per_target_prompt(const config::Config& base) {
  auto one = base;
  one.targets = {make_target("t", "m", {"p"})};
  auto two = one;
  two.targets.push_back(make_target("u", "m", {"p"}));
  const auto a = config::series_count(one), b = config::series_count(two);
  return {b.at_start - a.at_start, b.at_most - a.at_most};
}

TEST(SeriesCount, FiguresPerTargetAndPrompt) {
  config::Config c;
  // Series set 300: histograms 267 (phases 6 × 17 = 102, tokens per chunk
  // 12 + 3), counters 26 (16 failure reasons), gauges 7 (diagnosis 5); per target 7 (stall
  // threshold, alert ttft/worst gap/stall share, target info, backoffs, unexpected content type).
  // Finish reasons add up to 6.
  EXPECT_EQ(per_target_prompt(c).at_start, 307u);
  EXPECT_EQ(per_target_prompt(c).at_most, 313u);
  c.metrics.phases = config::PhaseSeries::sum_count;  // 6 × 3 instead of 6 × 17
  EXPECT_EQ(per_target_prompt(c).at_most, 229u);
  c.metrics.phases = config::PhaseSeries::off;
  EXPECT_EQ(per_target_prompt(c).at_most, 211u);
  c.metrics.phases = config::PhaseSeries::histogram;
  // Native only: each of the 14 histograms is one series; failure reasons
  // (16) appear on first sight like finish reasons (6). At start: 14 + 2
  // probes + 8 counters + 2 gauges + 5 diagnosis + 7 per target = 38.
  auto native_only = c;
  native_only.metrics.classic = false;
  EXPECT_EQ(per_target_prompt(native_only).at_start, 38u);
  EXPECT_EQ(per_target_prompt(native_only).at_most, 38u + 16u + 6u);
  // The exporter's own: reload gauges, reloads by result (2), row write errors,
  // build info, shard index and count, OTLP drops, process_*.
  auto none = c;
  EXPECT_EQ(config::series_count(none).at_most, 9u + kProcessSeries);

  // per_prompt: false: a target costs one set however many prompts it has.
  c.metrics.per_prompt = false;
  c.targets = {make_target("t", "m", {"a", "b", "c"})};
  EXPECT_EQ(config::series_count(c).at_most, 313u + 9u + kProcessSeries);
}

TEST(SeriesCount, ThousandsAreGrouped) {
  EXPECT_EQ(config::with_thousands(0), "0");
  EXPECT_EQ(config::with_thousands(999), "999");
  EXPECT_EQ(config::with_thousands(1000), "1,000");
  EXPECT_EQ(config::with_thousands(1234567), "1,234,567");
}

TEST(ReservedLabels, AreEveryLabelOfTheFamiliesAndPrometheusOwn) {
  const auto names = reserved_label_names();
  for (const char* n :
       {"target", "model", "prompt", "phase", "result", "reason", "shape", "api", "host",
        "http_version", "version", "revision", "le", "quantile", "job", "instance"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(names.size(), 16u);
}

}  // namespace
}  // namespace lse::metrics
