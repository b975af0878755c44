// Metrics::render(openmetrics): strictly valid OpenMetrics that says what the
// text format says, plus `_created` per series and the exemplars that lead
// from a TTFT, gap or max-gap bucket to the probe behind it.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "exposition.hpp"
#include "metrics/metrics.hpp"
#include "metrics_fixtures.hpp"
#include "openmetrics.hpp"
#include "util/wall_clock.hpp"

namespace lse::metrics {
namespace {

using lse::testing::fixed_process_stats;
using lse::testing::make_config;
using lse::testing::make_target;
using lse::testing::plus;
using lse::testing::series;
using lse::testing::success;
namespace om = lse::testing::om;

class OpenMetricsTest : public ::testing::Test {
 protected:
  Metrics metrics{BuildInfo{"1.2.3", "abcdef"}, fixed_process_stats};

  om::Document scrape() const {
    auto d = om::read(metrics.render(Exposition::openmetrics));
    EXPECT_TRUE(d.errors.empty()) << d.errors.front();
    return d;
  }

  // The exemplar on `name`'s bucket `le` of series t/m/p, if any.
  static std::optional<om::Exemplar> exemplar(const om::Document& d, const std::string& name,
                                              const std::string& le) {
    const om::Sample* s = om::find_one(d, name + "_bucket", plus(series("t", "m", "p"), "le", le));
    EXPECT_TRUE(s) << name << " le=" << le;
    if (!s) return std::nullopt;
    return s->exemplar;
  }

  // Every bucket of `name` (series t/m/p) that carries an exemplar, by le.
  static std::map<std::string, om::Exemplar> exemplars(const om::Document& d,
                                                       const std::string& name) {
    std::map<std::string, om::Exemplar> out;
    for (const auto& s : d.samples)
      if (s.name == name + "_bucket" && s.exemplar) out[s.labels.at("le")] = *s.exemplar;
    return out;
  }

  static double created(const om::Document& d, const std::string& name,
                        const testing::Labels& labels) {
    const om::Sample* s = om::find_one(d, name + "_created", labels);
    EXPECT_TRUE(s) << name;
    return s ? s->value : -1;
  }
};

probe::ProbeResult probe_with(const std::string& id, double ttft, double ts) {
  auto r = success("t", "m", "p");
  r.id = id;
  r.ttft = ttft;
  r.ts = ts;
  return r;
}

TEST_F(OpenMetricsTest, ValidAndSaysWhatTheTextFormatSays) {
  std::vector<config::Target> targets;
  for (int i = 0; i < 10; ++i)
    targets.push_back(make_target("target-" + std::to_string(i),
                                  "model \"q\"\\\n" + std::to_string(i),
                                  {"short", "medium", "long"}));
  metrics.apply_config(make_config(targets));
  int n = 0;
  for (const auto& t : targets)
    for (const auto& p : t.prompts) {
      auto r = success(t.name, t.model, p);
      r.id = "probe-" + std::to_string(n++);
      metrics.record(r);
    }
  const std::string text = metrics.render(Exposition::text);
  const std::string open = metrics.render(Exposition::openmetrics);
  const auto e = lse::testing::parse_exposition(text);
  ASSERT_TRUE(e.bad_lines.empty());
  const auto d = om::read(open);
  ASSERT_TRUE(d.errors.empty()) << d.errors.front();

  // Every text sample is there with the same name, labels and value ...
  std::size_t created = 0;
  for (const auto& s : d.samples) created += s.name.size() > 8 && s.name.ends_with("_created");
  EXPECT_EQ(d.samples.size(), e.samples.size() + created);
  std::map<std::pair<std::string, testing::Labels>, double> open_values;
  for (const auto& s : d.samples) open_values[{s.name, s.labels}] = s.value;
  for (const auto& s : e.samples) {
    const auto o = open_values.find({s.name, s.labels});
    ASSERT_NE(o, open_values.end()) << s.name;
    EXPECT_TRUE(o->second == s.value || (std::isnan(o->second) && std::isnan(s.value))) << s.name;
  }
  // ... and `_created` for every counter and histogram series, none for gauges.
  const std::size_t counters = lse::testing::count_samples(e, "llm_stream_probes_total");
  std::size_t probes_created = 0;
  for (const auto& s : d.samples) probes_created += s.name == "llm_stream_probes_created";
  EXPECT_EQ(probes_created, counters);
  for (const auto& s : d.samples)
    EXPECT_FALSE(s.name == "llm_stream_last_probe_success_created") << s.name;
  EXPECT_EQ(om::find(d, "process_cpu_seconds_created", {}).size(), 0u);

  // Counter families are named without _total; units where the name ends in one.
  EXPECT_EQ(d.families.at("llm_stream_probes").type, "counter");
  EXPECT_EQ(d.families.count("llm_stream_probes_total"), 0u);
  EXPECT_EQ(d.families.at("llm_stream_stall_seconds").unit, "seconds");
  EXPECT_EQ(d.families.at("llm_stream_time_to_first_token_seconds").unit, "seconds");
  EXPECT_EQ(d.families.at("llm_stream_chunks").unit, "");
  EXPECT_EQ(d.families.at("process_resident_memory_bytes").unit, "bytes");
  EXPECT_EQ(d.families.at("process_cpu_seconds").help,
            "Total user and system CPU time spent in seconds.");
  // Label escaping survives (a newline in a label value included).
  EXPECT_TRUE(
      om::find_one(d, "llm_stream_chunks_total", series("target-3", "model \"q\"\\\n3", "medium")));
}

TEST_F(OpenMetricsTest, TtftExemplarIsTheLatestProbeOfEachBucket) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  metrics.record(probe_with("aaaaaaaaaaaaaaaa", 0.3065, 1700000000));
  metrics.record(probe_with("bbbbbbbbbbbbbbbb", 0.4, 1700000010));  // same bucket: replaces a
  metrics.record(probe_with("cccccccccccccccc", 2.5, 1700000020));
  const auto d = scrape();
  const std::string ttft = "llm_stream_time_to_first_token_seconds";
  const auto in_half = exemplar(d, ttft, "0.5");
  ASSERT_TRUE(in_half);
  EXPECT_EQ(in_half->labels, (testing::Labels{{"probe_id", "bbbbbbbbbbbbbbbb"}}));
  EXPECT_EQ(in_half->value, 0.4);
  ASSERT_TRUE(in_half->timestamp);
  EXPECT_DOUBLE_EQ(*in_half->timestamp, 1700000011.6);  // the end of the probe
  const auto in_three = exemplar(d, ttft, "3");
  ASSERT_TRUE(in_three);
  EXPECT_EQ(in_three->labels.at("probe_id"), "cccccccccccccccc");
  EXPECT_EQ(in_three->value, 2.5);
  EXPECT_EQ(exemplars(d, ttft).size(), 2u);  // the buckets without observations have none
}

TEST_F(OpenMetricsTest, GapAndMaxGapExemplarsAreTheLargestGap) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  auto r = success("t", "m", "p");  // gaps .01 .3 .05 .3 .6
  r.id = "0123456789abcdef";
  metrics.record(r);
  const auto d = scrape();
  for (const char* name :
       {"llm_stream_inter_chunk_gap_seconds", "llm_stream_probe_max_gap_seconds"}) {
    const auto all = exemplars(d, name);
    ASSERT_EQ(all.size(), 1u) << name;
    EXPECT_EQ(lse::testing::parse_number(all.begin()->first), 0.75) << name;
    EXPECT_EQ(all.begin()->second.labels.at("probe_id"), "0123456789abcdef");
    EXPECT_EQ(all.begin()->second.value, 0.6);
  }
  // Only those three histograms carry exemplars.
  for (const auto& s : d.samples) {
    if (!s.exemplar) continue;
    EXPECT_TRUE(s.name == "llm_stream_inter_chunk_gap_seconds_bucket" ||
                s.name == "llm_stream_probe_max_gap_seconds_bucket" ||
                s.name == "llm_stream_time_to_first_token_seconds_bucket")
        << s.name;
  }
  // The text format never carries them.
  const std::string text = metrics.render(Exposition::text);
  EXPECT_EQ(text.find(" # {"), std::string::npos);
  EXPECT_EQ(text.find("0123456789abcdef"), std::string::npos);
}

TEST_F(OpenMetricsTest, FailedProbeLeavesNoMaxGapExemplarAndNoIdLeavesNone) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  auto r = success("t", "m", "p");
  r.id = "feedfeedfeedfeed";
  r.ok = false;
  r.reason = probe::FailureReason::timeout_idle;
  r.gaps = {0.02, 0.4};
  metrics.record(r);
  auto no_id = success("t", "m", "p");
  no_id.ttft = 5;
  metrics.record(no_id);
  const auto d = scrape();
  EXPECT_EQ(exemplars(d, "llm_stream_probe_max_gap_seconds").size(), 0u);
  const auto gap = exemplars(d, "llm_stream_inter_chunk_gap_seconds");
  ASSERT_EQ(gap.size(), 1u);
  EXPECT_EQ(gap.begin()->second.value, 0.4);
  const auto ttft = exemplars(d, "llm_stream_time_to_first_token_seconds");
  ASSERT_EQ(ttft.size(), 1u);
  EXPECT_EQ(ttft.begin()->second.labels.at("probe_id"), "feedfeedfeedfeed");
}

TEST_F(OpenMetricsTest, CreatedIsPerSeriesAndRestartsWithItsHistograms) {
  const double before = wall_clock::unix_now();
  auto c = make_config({make_target("t", "m", {"p"})});
  metrics.apply_config(c);
  const double after = wall_clock::unix_now();
  auto r = success("t", "m", "p");
  r.id = "1111111111111111";
  metrics.record(r);
  auto d = scrape();
  const auto l = series("t", "m", "p");
  const double probes = created(d, "llm_stream_probes", plus(l, "result", "success"));
  EXPECT_GE(probes, std::floor(before * 1000) / 1000);
  EXPECT_LE(probes, after + 0.001);
  const double gap = created(d, "llm_stream_inter_chunk_gap_seconds", l);
  const double ttft = created(d, "llm_stream_time_to_first_token_seconds", l);
  const double max_gap = created(d, "llm_stream_probe_max_gap_seconds", l);
  EXPECT_NEAR(gap, probes, 0.05);
  EXPECT_GE(created(d, "llm_stream_row_write_errors", {}), 1e9);

  // A prompt added later starts later; a bucket change restarts only the
  // histogram of that setting (and forgets its exemplars).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.targets[0].prompts.push_back("q");
  c.prompts["q"] = config::Prompt{"q", "text of q", "inline"};
  c.buckets.gap = {0.1, 0.5, 1};
  metrics.apply_config(c);
  d = scrape();
  EXPECT_GT(created(d, "llm_stream_probes", plus(series("t", "m", "q"), "result", "success")),
            probes + 0.01);
  EXPECT_EQ(created(d, "llm_stream_probes", plus(l, "result", "success")), probes);
  EXPECT_EQ(created(d, "llm_stream_time_to_first_token_seconds", l), ttft);
  EXPECT_GT(created(d, "llm_stream_inter_chunk_gap_seconds", l), gap + 0.01);
  EXPECT_EQ(exemplars(d, "llm_stream_inter_chunk_gap_seconds").size(), 0u);
  // The largest gap has its own setting (buckets.probe_max_gap), unchanged.
  EXPECT_EQ(created(d, "llm_stream_probe_max_gap_seconds", l), max_gap);
  EXPECT_EQ(exemplars(d, "llm_stream_probe_max_gap_seconds").size(), 1u);
  EXPECT_EQ(exemplars(d, "llm_stream_time_to_first_token_seconds").size(), 1u);
}

TEST(ProcessMetrics, TheReadingInBothFormats) {
  Metrics metrics{BuildInfo{"1", "r"}, fixed_process_stats};
  const auto e = lse::testing::parse_exposition(metrics.render());
  EXPECT_EQ(lse::testing::value_of(e, "process_cpu_seconds_total", {}), 1.5);
  EXPECT_EQ(lse::testing::value_of(e, "process_resident_memory_bytes", {}), 10 << 20);
  EXPECT_EQ(lse::testing::value_of(e, "process_virtual_memory_bytes", {}), 100 << 20);
  EXPECT_EQ(lse::testing::value_of(e, "process_start_time_seconds", {}), 1700000000);
  EXPECT_EQ(lse::testing::value_of(e, "process_open_fds", {}), 12);
  EXPECT_EQ(lse::testing::value_of(e, "process_max_fds", {}), 1024);
  EXPECT_EQ(e.type.at("process_cpu_seconds_total"), "counter");
  EXPECT_EQ(e.type.at("process_open_fds"), "gauge");
  const auto d = om::read(metrics.render(Exposition::openmetrics));
  ASSERT_TRUE(d.errors.empty()) << d.errors.front();
  EXPECT_EQ(om::find_one(d, "process_cpu_seconds_total", {})->value, 1.5);
  EXPECT_EQ(d.families.at("process_start_time_seconds").unit, "seconds");
}

TEST(ProcessMetrics, WhatCouldNotBeReadIsLeftOut) {
  Metrics metrics{BuildInfo{"1", "r"}, [] {
                    ProcessStats s;
                    s.cpu_seconds = 2;
                    return s;
                  }};
  const auto e = lse::testing::parse_exposition(metrics.render());
  EXPECT_EQ(lse::testing::value_of(e, "process_cpu_seconds_total", {}), 2);
  EXPECT_EQ(lse::testing::count_samples(e, "process_open_fds"), 0u);
  EXPECT_EQ(lse::testing::count_samples(e, "process_resident_memory_bytes"), 0u);
  Metrics none{BuildInfo{"1", "r"}, nullptr};
  EXPECT_EQ(none.render().find("process_"), std::string::npos);
}

}  // namespace
}  // namespace lse::metrics
