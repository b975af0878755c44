// Metrics: series lifecycle across reloads and the exact values record()
// produces, read back through a parse of render()'s exposition text.
#include "metrics/metrics.hpp"
#include "metrics/serializer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "exposition.hpp"
#include "metrics_fixtures.hpp"

namespace lse::metrics {
namespace {

using lse::testing::count_samples;
using lse::testing::Exposition;
using lse::testing::fixed_process_stats;
using lse::testing::make_config;
using lse::testing::make_target;
using lse::testing::parse_exposition;
using lse::testing::plus;
using lse::testing::series;
using lse::testing::series_sorted;
using lse::testing::success;
using lse::testing::value_of;
using Labels = std::map<std::string, std::string>;

class MetricsTest : public ::testing::Test {
 protected:
  // A fixed process_* reading keeps two renders comparable sample by sample.
  Metrics metrics{BuildInfo{"1.2.3", "abcdef"}, fixed_process_stats};
  Exposition scrape() const {
    auto e = parse_exposition(metrics.render());
    EXPECT_TRUE(e.bad_lines.empty()) << e.bad_lines.front();
    return e;
  }
};

TEST_F(MetricsTest, BuildInfoAndReloadGauges) {
  metrics.set_reload_result(true, 1234.5);
  auto e = scrape();
  EXPECT_EQ(
      value_of(e, "llm_stream_exporter_build_info", {{"version", "1.2.3"}, {"revision", "abcdef"}}),
      1.0);
  EXPECT_EQ(value_of(e, "llm_stream_exporter_config_last_reload_successful", {}), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_exporter_config_last_reload_success_timestamp_seconds", {}),
            1234.5);
  metrics.set_reload_result(false, 9999);
  e = scrape();
  EXPECT_EQ(value_of(e, "llm_stream_exporter_config_last_reload_successful", {}), 0.0);
  // A failed reload keeps the time of the last good one.
  EXPECT_EQ(value_of(e, "llm_stream_exporter_config_last_reload_success_timestamp_seconds", {}),
            1234.5);
  EXPECT_EQ(e.type["llm_stream_exporter_build_info"], "gauge");
}

// Always exported: 0 of 1 when not sharded, else the flags' values; a
// replica's gauges do not move with its config.
TEST_F(MetricsTest, ShardGauges) {
  auto e = scrape();
  EXPECT_EQ(value_of(e, "llm_stream_shard_index", {}), 0.0);
  EXPECT_EQ(value_of(e, "llm_stream_shards", {}), 1.0);
  EXPECT_EQ(e.type["llm_stream_shard_index"], "gauge");
  EXPECT_EQ(e.type["llm_stream_shards"], "gauge");
  Metrics sharded{BuildInfo{"1", "r", 2, 3}, fixed_process_stats};
  sharded.apply_config(make_config({make_target("a", "m", {"short"})}));
  e = parse_exposition(sharded.render());
  EXPECT_EQ(value_of(e, "llm_stream_shard_index", {}), 2.0);
  EXPECT_EQ(value_of(e, "llm_stream_shards", {}), 3.0);
  EXPECT_EQ(count_samples(e, "llm_stream_shard_index"), 1u);
}

// Both results exist at zero from the start, and only reload attempts
// count (the startup load's set_reload_result does not).
TEST_F(MetricsTest, ReloadsAreCountedByResult) {
  constexpr const char* kReloads = "llm_stream_exporter_config_reloads_total";
  metrics.set_reload_result(true, 1);
  auto e = scrape();
  EXPECT_EQ(e.type[kReloads], "counter");
  EXPECT_EQ(value_of(e, kReloads, {{"result", "success"}}), 0.0);
  EXPECT_EQ(value_of(e, kReloads, {{"result", "failure"}}), 0.0);
  metrics.count_reload(true);
  metrics.count_reload(false);
  metrics.count_reload(false);
  e = scrape();
  EXPECT_EQ(value_of(e, kReloads, {{"result", "success"}}), 1.0);
  EXPECT_EQ(value_of(e, kReloads, {{"result", "failure"}}), 2.0);
  EXPECT_EQ(count_samples(e, kReloads), 2u);
}

TEST_F(MetricsTest, EveryConfiguredSeriesExistsAtZeroBeforeAnyProbe) {
  auto t = make_target("openai", "gpt-4o-mini", {"short", "long"});
  t.stall_threshold = std::chrono::milliseconds(300);
  metrics.apply_config(make_config({t}));
  auto e = scrape();

  for (const char* prompt : {"short", "long"}) {
    auto l = series("openai", "gpt-4o-mini", prompt);
    EXPECT_EQ(value_of(e, "llm_stream_probes_total", plus(l, "result", "success")), 0.0);
    EXPECT_EQ(value_of(e, "llm_stream_probes_total", plus(l, "result", "failure")), 0.0);
    for (auto reason : probe::kAllFailureReasons)
      EXPECT_EQ(value_of(e, "llm_stream_probe_failures_total",
                         plus(l, "reason", std::string(probe::to_string(reason)))),
                0.0)
          << probe::to_string(reason);
    for (const char* c : {"llm_stream_stalls_total", "llm_stream_stall_seconds_total",
                          "llm_stream_stalled_probes_total", "llm_stream_chunks_total",
                          "llm_stream_output_tokens_total", "llm_stream_input_tokens_total",
                          "llm_stream_warmup_probes_total", "llm_stream_last_probe_success",
                          "llm_stream_last_probe_timestamp_seconds"})
      EXPECT_EQ(value_of(e, c, l), 0.0) << c;
    for (const char* h : {"llm_stream_time_to_first_token_seconds",
                          "llm_stream_inter_chunk_gap_seconds", "llm_stream_probe_gap_p95_seconds",
                          "llm_stream_probe_max_gap_seconds", "llm_stream_tail_seconds",
                          "llm_stream_duration_seconds", "llm_stream_output_tokens_per_second"}) {
      EXPECT_EQ(value_of(e, std::string(h) + "_count", l), 0.0) << h;
      EXPECT_EQ(value_of(e, std::string(h) + "_sum", l), 0.0) << h;
      EXPECT_EQ(value_of(e, std::string(h) + "_bucket", plus(l, "le", "+Inf")), 0.0) << h;
    }
    for (auto phase : probe::kAllPhases)
      EXPECT_EQ(
          value_of(e, "llm_stream_phase_seconds_count", plus(l, "phase", probe::to_string(phase))),
          0.0);
    for (const char* shape : {"queue", "transport", "long_answer", "shared_capacity"})
      EXPECT_EQ(value_of(e, "llm_stream_diagnosis", plus(l, "shape", shape)), 0.0) << shape;
  }
  EXPECT_EQ(value_of(e, "llm_stream_stall_threshold_seconds", {{"target", "openai"}}), 0.3);
  // The on-call thresholds the rules read: the built-in alert: values.
  EXPECT_EQ(value_of(e, "llm_stream_alert_ttft_seconds", {{"target", "openai"}}), 5.0);
  EXPECT_EQ(value_of(e, "llm_stream_alert_worst_gap_seconds", {{"target", "openai"}}), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_alert_stall_share", {{"target", "openai"}}), 0.2);
  // Finish reasons only appear once seen.
  EXPECT_EQ(count_samples(e, "llm_stream_finish_reasons_total"), 0u);

  // Types and help texts are there for every family.
  EXPECT_EQ(e.type["llm_stream_inter_chunk_gap_seconds"], "histogram");
  EXPECT_EQ(e.type["llm_stream_stalls_total"], "counter");
  EXPECT_EQ(e.type["llm_stream_last_probe_success"], "gauge");
  EXPECT_EQ(e.type["llm_stream_diagnosis"], "gauge");
  for (const auto& [name, type] : e.type) EXPECT_FALSE(e.help[name].empty()) << name;
}

TEST_F(MetricsTest, DefaultBucketsComeFromConfig) {
  auto c = make_config({make_target("t", "m", {"p"})});
  metrics.apply_config(c);
  auto e = scrape();
  auto l = series("t", "m", "p");
  auto bounds = [&](const std::string& name, const Labels& labels) {
    std::vector<double> les;
    for (const auto& s : e.samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels)
        if (s.labels.count(k) == 0 || s.labels.at(k) != v) match = false;
      if (match && s.labels.at("le") != "+Inf")
        les.push_back(lse::testing::parse_number(s.labels.at("le")));
    }
    return les;
  };
  EXPECT_EQ(bounds("llm_stream_inter_chunk_gap_seconds_bucket", l), c.buckets.gap);
  EXPECT_EQ(bounds("llm_stream_probe_gap_p95_seconds_bucket", l), c.buckets.probe_gap_p95);
  EXPECT_EQ(bounds("llm_stream_probe_max_gap_seconds_bucket", l), c.buckets.probe_max_gap);
  EXPECT_EQ(bounds("llm_stream_time_to_first_token_seconds_bucket", l), c.buckets.ttft);
  EXPECT_EQ(bounds("llm_stream_duration_seconds_bucket", l), c.buckets.duration);
  EXPECT_EQ(bounds("llm_stream_tail_seconds_bucket", l), c.buckets.tail);
  EXPECT_EQ(bounds("llm_stream_phase_seconds_bucket", plus(l, "phase", "tls")), c.buckets.phase);
  EXPECT_EQ(bounds("llm_stream_output_tokens_per_second_bucket", l), c.buckets.tokens_per_second);
  // DESIGN §3: the default stall threshold is a gap bucket boundary, and the
  // per-probe gap histograms default to the gap buckets.
  EXPECT_NE(std::find(c.buckets.gap.begin(), c.buckets.gap.end(), 0.25), c.buckets.gap.end());
  EXPECT_EQ(c.buckets.probe_gap_p95, c.buckets.gap);
  EXPECT_EQ(c.buckets.probe_max_gap, c.buckets.gap);

  // Each histogram is built with its own setting (a different length each).
  std::size_t n = 1;
  for (std::string_view key : config::Buckets::kKeys) {
    c.buckets.named(key)->resize(n++);
  }
  metrics.apply_config(c);
  e = scrape();
  EXPECT_EQ(bounds("llm_stream_inter_chunk_gap_seconds_bucket", l), c.buckets.gap);
  EXPECT_EQ(bounds("llm_stream_probe_gap_p95_seconds_bucket", l), c.buckets.probe_gap_p95);
  EXPECT_EQ(bounds("llm_stream_probe_max_gap_seconds_bucket", l), c.buckets.probe_max_gap);
  EXPECT_EQ(bounds("llm_stream_time_to_first_token_seconds_bucket", l), c.buckets.ttft);
  EXPECT_EQ(bounds("llm_stream_duration_seconds_bucket", l), c.buckets.duration);
  EXPECT_EQ(bounds("llm_stream_tail_seconds_bucket", l), c.buckets.tail);
  EXPECT_EQ(bounds("llm_stream_phase_seconds_bucket", plus(l, "phase", "tls")), c.buckets.phase);
  EXPECT_EQ(bounds("llm_stream_output_tokens_per_second_bucket", l), c.buckets.tokens_per_second);
}

// A stream under another Content-Type (or none) is measured and counted per
// target, whatever its outcome; the other target's counter stays at 0.
TEST_F(MetricsTest, AStreamUnderAnUnexpectedContentTypeIsCountedPerTarget) {
  metrics.apply_config(
      make_config({make_target("t", "m", {"p", "q"}), make_target("u", "m", {"p"})}));
  EXPECT_EQ(value_of(scrape(), "llm_stream_unexpected_content_type_total", {{"target", "t"}}), 0.0);
  auto r = success("t", "m", "p");
  r.unexpected_content_type = true;
  metrics.record(r);
  r.prompt = "q";
  r.ok = false;
  r.reason = probe::FailureReason::truncated;
  metrics.record(r);
  metrics.record(success("t", "m", "p"));  // the stream type: not counted
  auto e = scrape();
  EXPECT_EQ(value_of(e, "llm_stream_unexpected_content_type_total", {{"target", "t"}}), 2.0);
  EXPECT_EQ(value_of(e, "llm_stream_unexpected_content_type_total", {{"target", "u"}}), 0.0);
  EXPECT_EQ(
      value_of(e, "llm_stream_probes_total", plus(series("t", "m", "p"), "result", "success")),
      2.0);
}

TEST_F(MetricsTest, SuccessfulProbeRecordsEverything) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  metrics.record(success("t", "m", "p"));
  auto e = scrape();
  auto l = series("t", "m", "p");

  EXPECT_EQ(value_of(e, "llm_stream_probes_total", plus(l, "result", "success")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_probes_total", plus(l, "result", "failure")), 0.0);
  EXPECT_EQ(value_of(e, "llm_stream_stalls_total", l), 3.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_stall_seconds_total", l), 1.2);
  EXPECT_EQ(value_of(e, "llm_stream_stalled_probes_total", l), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_chunks_total", l), 6.0);
  EXPECT_EQ(value_of(e, "llm_stream_input_tokens_total", l), 12.0);
  EXPECT_EQ(value_of(e, "llm_stream_output_tokens_total", l), 40.0);
  EXPECT_EQ(value_of(e, "llm_stream_finish_reasons_total", plus(l, "reason", "stop")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_last_probe_success", l), 1.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_last_probe_timestamp_seconds", l), 1700000001.6);

  // Gap histogram: one observation per gap; 0.3 lands in le=0.3, not le=0.25.
  const std::string gap = "llm_stream_inter_chunk_gap_seconds";
  EXPECT_EQ(value_of(e, gap + "_count", l), 5.0);
  EXPECT_DOUBLE_EQ(*value_of(e, gap + "_sum", l), 1.26);
  EXPECT_EQ(value_of(e, gap + "_bucket", plus(l, "le", "0.01")), 1.0);
  EXPECT_EQ(value_of(e, gap + "_bucket", plus(l, "le", "0.25")), 2.0);
  EXPECT_EQ(value_of(e, gap + "_bucket", plus(l, "le", "0.3")), 4.0);
  EXPECT_EQ(value_of(e, gap + "_bucket", plus(l, "le", "0.5")), 4.0);
  EXPECT_EQ(value_of(e, gap + "_bucket", plus(l, "le", "0.75")), 5.0);
  EXPECT_EQ(value_of(e, gap + "_bucket", plus(l, "le", "+Inf")), 5.0);

  // One observation per probe for the per-stream summaries.
  EXPECT_EQ(value_of(e, "llm_stream_probe_gap_p95_seconds_count", l), 1.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_probe_gap_p95_seconds_sum", l), 0.6);
  EXPECT_EQ(value_of(e, "llm_stream_probe_max_gap_seconds_bucket", plus(l, "le", "0.5")), 0.0);
  EXPECT_EQ(value_of(e, "llm_stream_probe_max_gap_seconds_bucket", plus(l, "le", "0.75")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_time_to_first_token_seconds_count", l), 1.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_time_to_first_token_seconds_sum", l), 0.3065);
  EXPECT_EQ(value_of(e, "llm_stream_tail_seconds_count", l), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_duration_seconds_count", l), 1.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_duration_seconds_sum", l), 1.6);
  EXPECT_EQ(value_of(e, "llm_stream_output_tokens_per_second_count", l), 1.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_output_tokens_per_second_sum", l), 31.25);

  // Phases: present ones observed once, tls (reused connection) not at all.
  EXPECT_EQ(value_of(e, "llm_stream_phase_seconds_count", plus(l, "phase", "resolve")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_phase_seconds_count", plus(l, "phase", "headers")), 1.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_phase_seconds_sum", plus(l, "phase", "headers")), 0.2);
  EXPECT_EQ(value_of(e, "llm_stream_phase_seconds_count", plus(l, "phase", "tls")), 0.0);
}

// render() writes one family at a time, the per-series ones from the live
// series; what it writes is what the registry's whole collection serializes
// to, family order included, in both formats (OpenMetrics: the same lines
// apart from the notes render adds, `_created` and exemplars, and `# EOF`
// last). Within a family the live series go out in target and prompt
// order, the collection's in prometheus-cpp's hash order: compared sorted.
TEST_F(MetricsTest, RenderingOneFamilyAtATimeWritesTheWholeCollection) {
  metrics.apply_config(
      make_config({make_target("t", "m", {"p", "q"}), make_target("u", "m", {"p"})}));
  metrics.record(success("t", "m", "p"));
  metrics.record(success("u", "m", "p"));
  EXPECT_EQ(
      series_sorted(metrics.render(lse::metrics::Exposition::text)),
      series_sorted(lse::metrics::serialize(metrics.collect(), lse::metrics::Exposition::text)));
  const std::string om = metrics.render(lse::metrics::Exposition::openmetrics);
  const std::string plain_om =
      lse::metrics::serialize(metrics.collect(), lse::metrics::Exposition::openmetrics);
  // Without the notes, in the same order: drop `_created` lines and exemplars.
  std::string stripped;
  std::istringstream lines(om);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("_created") != std::string::npos) continue;
    if (const auto hash = line.find(" # {"); hash != std::string::npos) line.resize(hash);
    stripped += line + "\n";
  }
  EXPECT_EQ(series_sorted(stripped), series_sorted(plain_om));
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
  // A second render, sized from the first, writes the same.
  EXPECT_EQ(metrics.render(lse::metrics::Exposition::openmetrics), om);
}

TEST_F(MetricsTest, ASinkTakesTheSameExpositionAFamilyAtATime) {
  metrics.apply_config(
      make_config({make_target("t", "m", {"p", "q"}), make_target("u", "m", {"p"})}));
  metrics.record(success("t", "m", "p"));
  for (auto format : {lse::metrics::Exposition::text, lse::metrics::Exposition::openmetrics}) {
    std::vector<std::string> pieces;
    EXPECT_TRUE(metrics.render(format, [&](std::string_view piece) {
      pieces.emplace_back(piece);
      return true;
    }));
    std::string joined;
    std::size_t families = 0;
    for (const auto& p : pieces) {
      joined += p;
      std::istringstream lines(p);
      for (std::string line; std::getline(lines, line);)
        if (line.rfind("# TYPE ", 0) == 0) ++families;
    }
    EXPECT_EQ(joined, metrics.render(format));
    // Never the whole text in one piece: about one family each (the last
    // piece carries process_* and the end).
    EXPECT_GT(pieces.size(), 20u);
    EXPECT_LE(pieces.size(), families + 1);
  }
}

// A family larger than a piece (the phases of 100 targets x 3 prompts are
// ~3 MB of text) goes out in pieces of about 1 MiB, cut between series.
TEST_F(MetricsTest, ALargeFamilyGoesOutInPiecesOfAboutOneMebibyte) {
  std::vector<config::Target> targets;
  targets.reserve(100);
  for (int i = 0; i < 100; ++i)
    targets.push_back(make_target("t" + std::to_string(i), "m", {"a", "b", "c"}));
  metrics.apply_config(make_config(targets));
  for (auto format : {lse::metrics::Exposition::text, lse::metrics::Exposition::openmetrics}) {
    std::string joined;
    std::size_t largest = 0, pieces = 0;
    EXPECT_TRUE(metrics.render(format, [&](std::string_view piece) {
      largest = std::max(largest, piece.size());
      ++pieces;
      EXPECT_EQ(piece.back(), '\n');  // cut at the end of a series' lines
      joined += piece;
      return true;
    }));
    EXPECT_EQ(joined, metrics.render(format));
    EXPECT_GT(joined.size(), 7u << 20);
    EXPECT_LE(largest, (1u << 20) + 4096);
    EXPECT_GT(pieces, joined.size() >> 20);
  }
}

TEST_F(MetricsTest, ASinkThatSaysStopEndsTheRenderThere) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  metrics.record(success("t", "m", "p"));
  int calls = 0;
  std::string taken;
  EXPECT_FALSE(metrics.render(lse::metrics::Exposition::text, [&](std::string_view piece) {
    taken += piece;
    return ++calls < 3;
  }));
  EXPECT_EQ(calls, 3);
  const std::string whole = metrics.render(lse::metrics::Exposition::text);
  EXPECT_EQ(whole.substr(0, taken.size()), taken);
  EXPECT_LT(taken.size(), whole.size());
}

TEST_F(MetricsTest, FailedProbeCountsWhatHappenedBeforeTheFailure) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  metrics.record(success("t", "m", "p"));
  auto r = success("t", "m", "p");
  r.ok = false;
  r.reason = probe::FailureReason::timeout_idle;
  r.gaps = {0.02, 0.4};
  r.chunks = 3;
  r.stalls = 1;
  r.stall_seconds = 0.4;
  r.tail.reset();
  r.prompt_tokens = -1;
  r.completion_tokens = -1;
  r.output_tokens_per_second.reset();
  r.finish_reason.clear();
  r.duration = 30.5;
  r.ts = 1700000100;
  metrics.record(r);
  auto e = scrape();
  auto l = series("t", "m", "p");

  EXPECT_EQ(value_of(e, "llm_stream_probes_total", plus(l, "result", "success")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_probes_total", plus(l, "result", "failure")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_probe_failures_total", plus(l, "reason", "timeout_idle")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_probe_failures_total", plus(l, "reason", "timeout_total")),
            0.0);
  EXPECT_EQ(value_of(e, "llm_stream_last_probe_success", l), 0.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_last_probe_timestamp_seconds", l), 1700000130.5);
  EXPECT_EQ(value_of(e, "llm_stream_duration_seconds_count", l), 2.0);
  EXPECT_EQ(value_of(e, "llm_stream_inter_chunk_gap_seconds_count", l), 7.0);
  EXPECT_EQ(value_of(e, "llm_stream_stalls_total", l), 4.0);
  EXPECT_DOUBLE_EQ(*value_of(e, "llm_stream_stall_seconds_total", l), 1.6);
  EXPECT_EQ(value_of(e, "llm_stream_stalled_probes_total", l), 2.0);
  EXPECT_EQ(value_of(e, "llm_stream_chunks_total", l), 9.0);
  EXPECT_EQ(value_of(e, "llm_stream_phase_seconds_count", plus(l, "phase", "first_token")), 2.0);
  EXPECT_EQ(value_of(e, "llm_stream_time_to_first_token_seconds_count", l), 2.0);
  // Whole-stream summaries of a cut-off stream are not observed.
  EXPECT_EQ(value_of(e, "llm_stream_probe_gap_p95_seconds_count", l), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_probe_max_gap_seconds_count", l), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_tail_seconds_count", l), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_output_tokens_per_second_count", l), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_output_tokens_total", l), 40.0);
}

TEST_F(MetricsTest, ConnectFailureOnlyCountsTheFailureAndCompletedPhases) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  probe::ProbeResult r;
  r.target = "t";
  r.model = "m";
  r.prompt = "p";
  r.ok = false;
  r.reason = probe::FailureReason::connect;
  r.phases[static_cast<int>(probe::Phase::resolve)] = 0.001;
  r.duration = 0.05;
  metrics.record(r);
  auto e = scrape();
  auto l = series("t", "m", "p");
  EXPECT_EQ(value_of(e, "llm_stream_probe_failures_total", plus(l, "reason", "connect")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_phase_seconds_count", plus(l, "phase", "resolve")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_phase_seconds_count", plus(l, "phase", "connect")), 0.0);
  EXPECT_EQ(value_of(e, "llm_stream_time_to_first_token_seconds_count", l), 0.0);
  EXPECT_EQ(value_of(e, "llm_stream_stalled_probes_total", l), 0.0);
  EXPECT_EQ(value_of(e, "llm_stream_input_tokens_total", l), 0.0);
  EXPECT_EQ(count_samples(e, "llm_stream_finish_reasons_total"), 0u);
}

TEST_F(MetricsTest, WarmupOnlyCountsTheWarmupCounter) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  const std::string before = metrics.render();
  auto r = success("t", "m", "p");
  r.warmup = true;
  metrics.record(r);
  metrics.record(r);
  auto e = scrape();
  auto l = series("t", "m", "p");
  EXPECT_EQ(value_of(e, "llm_stream_warmup_probes_total", l), 2.0);

  // Every other sample is unchanged.
  auto b = parse_exposition(before);
  ASSERT_EQ(b.samples.size(), e.samples.size());
  for (std::size_t i = 0; i < e.samples.size(); ++i) {
    if (e.samples[i].name == "llm_stream_warmup_probes_total") continue;
    EXPECT_EQ(e.samples[i].name, b.samples[i].name);
    EXPECT_EQ(e.samples[i].value, b.samples[i].value) << e.samples[i].name;
  }
}

TEST_F(MetricsTest, FinishReasonsAreBoundedToKnownValues) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  auto r = success("t", "m", "p");
  for (const char* reason :
       {"length", "MAX_TOKENS", "content_filter", "end_turn", "weird\"value", "stop", "banana"}) {
    r.finish_reason = reason;
    metrics.record(r);
  }
  auto e = scrape();
  auto l = series("t", "m", "p");
  EXPECT_EQ(value_of(e, "llm_stream_finish_reasons_total", plus(l, "reason", "length")), 2.0);
  EXPECT_EQ(value_of(e, "llm_stream_finish_reasons_total", plus(l, "reason", "content_filter")),
            1.0);
  EXPECT_EQ(value_of(e, "llm_stream_finish_reasons_total", plus(l, "reason", "other")), 2.0);
  // Dialect synonyms count under the OpenAI name.
  EXPECT_EQ(value_of(e, "llm_stream_finish_reasons_total", plus(l, "reason", "stop")), 2.0);
  EXPECT_EQ(count_samples(e, "llm_stream_finish_reasons_total"), 4u);
}

TEST_F(MetricsTest, UnconfiguredResultsAreDropped) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  metrics.record(success("t", "m", "nope"));
  metrics.record(success("other", "m", "p"));
  auto e = scrape();
  EXPECT_EQ(
      value_of(e, "llm_stream_probes_total", plus(series("t", "m", "p"), "result", "success")),
      0.0);
  for (const auto& s : e.samples) {
    if (s.labels.count("target")) {
      EXPECT_EQ(s.labels.at("target"), "t");
    }
  }
}

TEST_F(MetricsTest, ReloadRemovingAPromptRemovesItsSeriesAndKeepsOthers) {
  metrics.apply_config(
      make_config({make_target("t", "m", {"a", "b"}), make_target("u", "m2", {"a"})}));
  metrics.record(success("t", "m", "a"));
  metrics.record(success("t", "m", "b"));
  metrics.record(success("u", "m2", "a"));
  auto r = success("t", "m", "b");
  r.finish_reason = "length";
  metrics.record(r);

  metrics.apply_config(make_config({make_target("t", "m", {"a"}), make_target("u", "m2", {"a"})}));
  auto e = scrape();
  for (const auto& s : e.samples) {
    if (s.labels.count("prompt")) {
      EXPECT_NE(s.labels.at("prompt"), "b") << s.name;
    }
  }
  EXPECT_EQ(
      value_of(e, "llm_stream_probes_total", plus(series("t", "m", "a"), "result", "success")),
      1.0);
  EXPECT_EQ(value_of(e, "llm_stream_inter_chunk_gap_seconds_count", series("t", "m", "a")), 5.0);
  EXPECT_EQ(
      value_of(e, "llm_stream_probes_total", plus(series("u", "m2", "a"), "result", "success")),
      1.0);

  // A late result for the removed prompt is dropped, not resurrected.
  metrics.record(success("t", "m", "b"));
  e = scrape();
  EXPECT_FALSE(
      value_of(e, "llm_stream_probes_total", plus(series("t", "m", "b"), "result", "success")));

  // Adding it back starts from zero.
  metrics.apply_config(
      make_config({make_target("t", "m", {"a", "b"}), make_target("u", "m2", {"a"})}));
  e = scrape();
  EXPECT_EQ(
      value_of(e, "llm_stream_probes_total", plus(series("t", "m", "b"), "result", "success")),
      0.0);
  EXPECT_EQ(count_samples(e, "llm_stream_finish_reasons_total"), 2u);  // t/a and u/a stop; t/b gone
}

TEST_F(MetricsTest, ReloadRemovingATargetRemovesItsThresholdAndSeries) {
  metrics.apply_config(make_config({make_target("t", "m", {"a"}), make_target("u", "m", {"a"})}));
  metrics.apply_config(make_config({make_target("u", "m", {"a"})}));
  auto e = scrape();
  EXPECT_FALSE(value_of(e, "llm_stream_stall_threshold_seconds", {{"target", "t"}}));
  EXPECT_EQ(value_of(e, "llm_stream_stall_threshold_seconds", {{"target", "u"}}), 0.25);
  for (const char* g : {"llm_stream_alert_ttft_seconds", "llm_stream_alert_worst_gap_seconds",
                        "llm_stream_alert_stall_share"}) {
    EXPECT_FALSE(value_of(e, g, {{"target", "t"}})) << g;
    EXPECT_EQ(count_samples(e, g), 1u) << g;
  }
  for (const auto& s : e.samples) {
    if (s.labels.count("target")) {
      EXPECT_EQ(s.labels.at("target"), "u") << s.name;
    }
  }
}

TEST_F(MetricsTest, ModelChangeReplacesTheTargetsSeries) {
  metrics.apply_config(make_config({make_target("t", "old", {"a"})}));
  metrics.record(success("t", "old", "a"));
  metrics.apply_config(make_config({make_target("t", "new", {"a"})}));
  auto e = scrape();
  for (const auto& s : e.samples) {
    if (s.labels.count("model")) {
      EXPECT_EQ(s.labels.at("model"), "new") << s.name;
    }
  }
  EXPECT_EQ(
      value_of(e, "llm_stream_probes_total", plus(series("t", "new", "a"), "result", "success")),
      0.0);
}

TEST_F(MetricsTest, TargetInfoNamesDialectModelAndUpstreamHost) {
  auto t = make_target("t", "m", {"a"});
  t.url = "https://api.anthropic.com/v1";
  t.api = api::Dialect::anthropic_messages;
  auto u = make_target("u", "m2", {"a"});  // openai-chat on a non-default port
  metrics.apply_config(make_config({t, u}));
  auto e = scrape();
  // No probe answered yet: http_version is "".
  EXPECT_EQ(value_of(e, "llm_stream_target_info",
                     {{"target", "t"},
                      {"api", "anthropic-messages"},
                      {"model", "m"},
                      {"host", "api.anthropic.com"},
                      {"http_version", ""}}),
            1.0);
  EXPECT_EQ(value_of(e, "llm_stream_target_info",
                     {{"target", "u"},
                      {"api", "openai-chat"},
                      {"model", "m2"},
                      {"host", "127.0.0.1:1"},
                      {"http_version", ""}}),
            1.0);
  EXPECT_EQ(count_samples(e, "llm_stream_target_info"), 2u);

  // A reload that changes the dialect replaces the series; removing a target drops it.
  t.api = api::Dialect::openai_chat;
  metrics.apply_config(make_config({t}));
  e = scrape();
  EXPECT_EQ(count_samples(e, "llm_stream_target_info"), 1u);
  EXPECT_EQ(value_of(e, "llm_stream_target_info",
                     {{"target", "t"},
                      {"api", "openai-chat"},
                      {"model", "m"},
                      {"host", "api.anthropic.com"},
                      {"http_version", ""}}),
            1.0);
}

// llm_stream_target_info{http_version}: what the target's latest answered
// probe spoke; a probe without an answer leaves it; a reload that keeps the
// target keeps it; the registry's collect() agrees with the render.
TEST_F(MetricsTest, TargetInfoFollowsTheHttpVersionOfTheLatestAnsweredProbe) {
  const auto config = make_config({make_target("t", "m", {"a"})});
  metrics.apply_config(config);
  auto info = [](const std::string& version) {
    return std::map<std::string, std::string>{{"target", "t"},
                                              {"api", "openai-chat"},
                                              {"model", "m"},
                                              {"host", "127.0.0.1:1"},
                                              {"http_version", version}};
  };
  auto r = success("t", "m", "a");
  r.http_version = "2";
  metrics.record(r);
  auto e = scrape();
  EXPECT_EQ(value_of(e, "llm_stream_target_info", info("2")), 1.0);
  EXPECT_EQ(count_samples(e, "llm_stream_target_info"), 1u);

  probe::ProbeResult refused = success("t", "m", "a");
  refused.ok = false;
  refused.reason = probe::FailureReason::connect;
  refused.http_version.clear();  // no answer: says nothing of the protocol
  metrics.record(refused);
  EXPECT_EQ(value_of(scrape(), "llm_stream_target_info", info("2")), 1.0);

  r.http_version = "1.1";
  metrics.record(r);
  metrics.apply_config(config);
  e = scrape();
  EXPECT_EQ(value_of(e, "llm_stream_target_info", info("1.1")), 1.0);
  EXPECT_EQ(count_samples(e, "llm_stream_target_info"), 1u);
  std::size_t collected = 0;
  for (const auto& family : metrics.collect()) {
    if (family.name != "llm_stream_target_info") continue;
    for (const auto& m : family.metric) {
      ++collected;
      for (const auto& l : m.label) {
        if (l.name == "http_version") {
          EXPECT_EQ(l.value, "1.1");
        }
      }
    }
  }
  EXPECT_EQ(collected, 1u);
}

// Probe threads change the info series under the shared lock while scrapes
// read it: every scrape sees exactly one info series of the target.
TEST_F(MetricsTest, TargetInfoChangesWhileScrapedStayOneSeries) {
  metrics.apply_config(make_config({make_target("t", "m", {"a"})}));
  std::atomic<bool> stop{false};
  std::vector<std::thread> probes;
  probes.reserve(2);
  for (int k = 0; k < 2; ++k)
    probes.emplace_back([&, k] {
      auto r = success("t", "m", "a");
      for (int i = 0; !stop.load(); ++i) {
        r.http_version = (i + k) % 2 ? "2" : "1.1";
        metrics.record(r);
      }
    });
  for (int i = 0; i < 40; ++i) {
    const auto e = scrape();
    EXPECT_EQ(count_samples(e, "llm_stream_target_info"), 1u);
  }
  stop = true;
  for (auto& t : probes) t.join();
}

TEST_F(MetricsTest, BucketOverrideTakesEffectOnReload) {
  auto c = make_config({make_target("t", "m", {"p"})});
  metrics.apply_config(c);
  metrics.record(success("t", "m", "p"));

  c.buckets.gap = {0.1, 0.5, 1};
  c.buckets.probe_max_gap = {0.5, 1};
  metrics.apply_config(c);
  auto e = scrape();
  auto l = series("t", "m", "p");
  // Histograms whose buckets changed are rebuilt with the new bounds (and start over) ...
  EXPECT_EQ(count_samples(e, "llm_stream_inter_chunk_gap_seconds_bucket"), 4u);
  EXPECT_EQ(value_of(e, "llm_stream_inter_chunk_gap_seconds_bucket", plus(l, "le", "0.5")), 0.0);
  EXPECT_EQ(count_samples(e, "llm_stream_probe_max_gap_seconds_bucket"), 3u);
  EXPECT_EQ(value_of(e, "llm_stream_probe_max_gap_seconds_count", l), 0.0);
  // ... while other histograms (the gap p95 has its own setting, unchanged)
  // and the counters keep their values.
  EXPECT_EQ(count_samples(e, "llm_stream_probe_gap_p95_seconds_bucket"),
            config::Buckets{}.probe_gap_p95.size() + 1);
  EXPECT_EQ(value_of(e, "llm_stream_probe_gap_p95_seconds_count", l), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_time_to_first_token_seconds_count", l), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_stalls_total", l), 3.0);

  metrics.record(success("t", "m", "p"));
  e = scrape();
  EXPECT_EQ(value_of(e, "llm_stream_inter_chunk_gap_seconds_bucket", plus(l, "le", "0.1")), 2.0);
  EXPECT_EQ(value_of(e, "llm_stream_inter_chunk_gap_seconds_bucket", plus(l, "le", "0.5")), 4.0);
  EXPECT_EQ(value_of(e, "llm_stream_inter_chunk_gap_seconds_bucket", plus(l, "le", "1")), 5.0);

  c.buckets.ttft = {1, 2};
  c.buckets.phase = {0.5};
  metrics.apply_config(c);
  e = scrape();
  EXPECT_EQ(count_samples(e, "llm_stream_time_to_first_token_seconds_bucket"), 3u);
  EXPECT_EQ(count_samples(e, "llm_stream_phase_seconds_bucket"), 6u * 2u);
  EXPECT_EQ(value_of(e, "llm_stream_inter_chunk_gap_seconds_count", l), 5.0);
}

TEST_F(MetricsTest, InvalidBucketsAreRejectedAndTheOldSeriesKept) {
  auto c = make_config({make_target("t", "m", {"p"})});
  metrics.apply_config(c);
  metrics.record(success("t", "m", "p"));
  auto bad = c;
  bad.buckets.gap = {0.5, 0.1};
  bad.targets.push_back(make_target("u", "m", {"p"}));
  EXPECT_THROW(metrics.apply_config(bad), std::invalid_argument);
  bad.buckets.gap = {};
  EXPECT_THROW(metrics.apply_config(bad), std::invalid_argument);
  auto e = scrape();
  EXPECT_EQ(value_of(e, "llm_stream_inter_chunk_gap_seconds_count", series("t", "m", "p")), 5.0);
  EXPECT_EQ(count_samples(e, "llm_stream_inter_chunk_gap_seconds_bucket"),
            c.buckets.gap.size() + 1);
  EXPECT_FALSE(value_of(e, "llm_stream_stall_threshold_seconds", {{"target", "u"}}));
}

TEST_F(MetricsTest, StallThresholdFollowsReload) {
  auto t = make_target("t", "m", {"p"});
  metrics.apply_config(make_config({t}));
  t.stall_threshold = std::chrono::milliseconds(500);
  metrics.apply_config(make_config({t}));
  EXPECT_EQ(value_of(scrape(), "llm_stream_stall_threshold_seconds", {{"target", "t"}}), 0.5);
}

// A reasoning model gets its own TTFT bar; a reload moves the gauges the
// alerts compare with, with the target's own labels.
TEST_F(MetricsTest, AlertThresholdsFollowTheTargetAndReload) {
  auto t = make_target("reasoner", "m", {"p"});
  t.labels = {{"team", "llm"}};
  t.alert.ttft = std::chrono::seconds(20);
  t.alert.worst_gap = std::chrono::milliseconds(1500);
  t.alert.stall_share = 0.05;
  metrics.apply_config(make_config({t, make_target("chat", "m", {"p"})}));
  auto e = scrape();
  const std::map<std::string, std::string> reasoner = {{"target", "reasoner"}, {"team", "llm"}};
  EXPECT_EQ(value_of(e, "llm_stream_alert_ttft_seconds", reasoner), 20.0);
  EXPECT_EQ(value_of(e, "llm_stream_alert_worst_gap_seconds", reasoner), 1.5);
  EXPECT_EQ(value_of(e, "llm_stream_alert_stall_share", reasoner), 0.05);
  EXPECT_EQ(value_of(e, "llm_stream_alert_ttft_seconds", {{"target", "chat"}}), 5.0);

  t.alert.ttft = std::chrono::seconds(30);
  metrics.apply_config(make_config({t, make_target("chat", "m", {"p"})}));
  e = scrape();
  EXPECT_EQ(value_of(e, "llm_stream_alert_ttft_seconds", reasoner), 30.0);
  EXPECT_EQ(count_samples(e, "llm_stream_alert_ttft_seconds"), 2u);
}

report::Verdict verdict(report::Shape shape, bool holds, bool enough_probes = true) {
  report::Verdict v;
  v.shape = shape;
  v.answer = !enough_probes ? report::Answer::cannot_tell
             : holds        ? report::Answer::holds
                            : report::Answer::not_holds;
  v.enough_probes = enough_probes;
  return v;
}

TEST_F(MetricsTest, DiagnosisVerdicts) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  metrics.set_diagnosis(
      {"t", "p"},
      {verdict(report::Shape::transport, true), verdict(report::Shape::long_answer, true),
       verdict(report::Shape::queue, false), verdict(report::Shape::shared_capacity, true, false)});
  metrics.set_diagnosis({"gone", "p"}, {verdict(report::Shape::transport, true)});  // ignored
  auto e = scrape();
  auto l = series("t", "m", "p");
  EXPECT_EQ(value_of(e, "llm_stream_diagnosis", plus(l, "shape", "transport")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_diagnosis", plus(l, "shape", "long_answer")), 1.0);
  EXPECT_EQ(value_of(e, "llm_stream_diagnosis", plus(l, "shape", "queue")), 0.0);
  // Too few probes: cannot tell, so NaN (neither == 1 nor == 0 in PromQL).
  const auto unknown = value_of(e, "llm_stream_diagnosis", plus(l, "shape", "shared_capacity"));
  ASSERT_TRUE(unknown.has_value());
  EXPECT_TRUE(std::isnan(*unknown));
  EXPECT_EQ(value_of(e, "llm_stream_diagnosis", plus(l, "shape", "generation")), 0.0);
  EXPECT_EQ(count_samples(e, "llm_stream_diagnosis"), 5u);

  // A later window where transport no longer holds flips it back.
  metrics.set_diagnosis({"t", "p"}, {verdict(report::Shape::transport, false)});
  EXPECT_EQ(value_of(scrape(), "llm_stream_diagnosis", plus(l, "shape", "transport")), 0.0);
}

TEST_F(MetricsTest, RowWriteErrorsCountFromZero) {
  EXPECT_EQ(value_of(scrape(), "llm_stream_row_write_errors_total", {}), 0.0);
  metrics.count_row_write_error();
  metrics.count_row_write_error();
  EXPECT_EQ(value_of(scrape(), "llm_stream_row_write_errors_total", {}), 2.0);
}

TEST_F(MetricsTest, OtlpDropsCountDataPointsFromZero) {
  EXPECT_EQ(value_of(scrape(), "llm_stream_otlp_dropped_total", {}), 0.0);
  metrics.count_otlp_dropped(40);
  metrics.count_otlp_dropped(2);
  EXPECT_EQ(value_of(scrape(), "llm_stream_otlp_dropped_total", {}), 42.0);
}

TEST_F(MetricsTest, RenderOfTenTargetsByThreePromptsIsWellFormed) {
  std::vector<config::Target> targets;
  targets.reserve(10);
  for (int i = 0; i < 10; ++i)
    targets.push_back(make_target("target-" + std::to_string(i),
                                  "model \"q\"\\" + std::to_string(i),
                                  {"short", "medium", "long"}));
  metrics.apply_config(make_config(targets));
  for (const auto& t : targets)
    for (const auto& p : t.prompts) metrics.record(success(t.name, t.model, p));
  const std::string text = metrics.render();

  const std::regex help(R"(^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* \S.*$)");
  const std::regex type(R"(^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram)$)");
  const std::regex sample(
      R"re(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\})? (-?[0-9.eE+-]+|\+Inf|-Inf|NaN)$)re");
  std::istringstream in(text);
  std::string line, current_family;
  std::set<std::string> families;
  std::size_t samples = 0;
  while (std::getline(in, line)) {
    ASSERT_FALSE(line.empty());
    if (std::regex_match(line, help)) {
      current_family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(families.insert(current_family).second) << "family twice: " << current_family;
    } else if (std::regex_match(line, type)) {
      EXPECT_EQ(line.substr(7, line.find(' ', 7) - 7), current_family);
    } else {
      ASSERT_TRUE(std::regex_match(line, sample)) << line;
      // Every sample belongs to the family announced above it.
      EXPECT_EQ(line.rfind(current_family, 0), 0u) << line;
      ++samples;
    }
  }
  // 27 + row_write_errors_total + config_reloads_total + target_info + 3 alert thresholds
  // + shard index and count + otlp_dropped_total + 6 process_*
  EXPECT_EQ(families.size(), 44u);
  auto e = parse_exposition(text);
  EXPECT_TRUE(e.bad_lines.empty());
  EXPECT_EQ(e.samples.size(), samples);
  EXPECT_EQ(count_samples(e, "llm_stream_probes_total"), 10u * 3u * 2u);
  EXPECT_EQ(count_samples(e, "llm_stream_probe_failures_total"),
            std::size_t{10} * 3 * probe::kAllFailureReasons.size());
  EXPECT_EQ(count_samples(e, "llm_stream_stall_threshold_seconds"), 10u);
  // Label escaping survives the round trip.
  EXPECT_EQ(value_of(e, "llm_stream_chunks_total", series("target-3", "model \"q\"\\3", "medium")),
            6.0);
}

TEST_F(MetricsTest, ConcurrentRecordRenderAndReload) {
  auto full = make_config({make_target("t", "m", {"a", "b"}), make_target("u", "m", {"a"})});
  auto part = make_config({make_target("t", "m", {"a"})});
  part.buckets.gap = {0.1, 1};
  metrics.apply_config(full);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  threads.reserve(3);
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&, i] {
      auto r = success(i == 2 ? "u" : "t", "m", i == 1 ? "b" : "a");
      r.finish_reason = i == 0 ? "stop" : "length";
      while (!done) metrics.record(r);
    });
  threads.emplace_back([&] {
    while (!done) EXPECT_FALSE(metrics.render().empty());
  });
  for (int i = 0; i < 200; ++i) metrics.apply_config(i % 2 ? full : part);
  done = true;
  for (auto& t : threads) t.join();
  auto e = scrape();
  EXPECT_TRUE(
      value_of(e, "llm_stream_probes_total", plus(series("t", "m", "b"), "result", "success")));
}

}  // namespace
}  // namespace lse::metrics
