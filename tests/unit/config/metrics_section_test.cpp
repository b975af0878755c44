// The `metrics:` section (buckets per histogram, phases, per_prompt,
// max_series), the older top-level `buckets:` beside it, and per-target
// `labels:`. Bad values of each have their own file in
// tests/data/config/invalid/; this file checks defaults, inheritance and
// the rules that need the whole config (the max_series guard).
#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"
#include "config/rules.hpp"
#include "metrics/families.hpp"

namespace lse::config {
namespace {

const std::string kPrompts = "prompts: {p: {text: hi}}\n";
const std::string kTarget = "targets: [{name: a, url: 'http://h', model: m}]\n";

Config parsed(const std::string& yaml) { return parse(yaml, "f.yaml", ""); }

std::string first_error(const std::string& yaml) {
  try {
    parse(yaml, "f.yaml", "");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(MetricsSection, DefaultsWithoutIt) {
  const Config c = parsed(kPrompts + kTarget);
  EXPECT_EQ(c.metrics.phases, PhaseSeries::histogram);
  EXPECT_TRUE(c.metrics.per_prompt);
  EXPECT_EQ(c.metrics.max_series, 100000u);
  EXPECT_EQ(c.metrics.max_scrape_bytes, 64u << 20);
  EXPECT_EQ(c.buckets, Buckets{});
  EXPECT_EQ(c.buckets.probe_gap_p95, Buckets{}.gap);
  EXPECT_EQ(c.buckets.probe_max_gap, Buckets{}.gap);
}

TEST(MetricsSection, EveryHistogramHasItsOwnBucketKey) {
  std::string yaml = "metrics:\n  buckets:\n";
  double first = 1;
  for (std::string_view key : Buckets::kKeys) {
    yaml += "    " + std::string(key) + ": [" + std::to_string(first) + ", 1000]\n";
    ++first;
  }
  yaml += "  phases: sum_count\n  per_prompt: false\n  max_series: 2500\n";
  const Config c = parsed(yaml + kPrompts + kTarget);
  first = 1;
  for (std::string_view key : Buckets::kKeys) {
    EXPECT_EQ(*c.buckets.named(key), (std::vector<double>{first, 1000})) << key;
    ++first;
  }
  EXPECT_EQ(c.metrics.phases, PhaseSeries::sum_count);
  EXPECT_FALSE(c.metrics.per_prompt);
  EXPECT_EQ(c.metrics.max_series, 2500u);
  // Every histogram family of the metrics module names one of these keys.
  for (const auto& spec : metrics::kFamilies) {
    if (spec.type == metrics::Type::histogram) {
      EXPECT_NE(c.buckets.named(spec.buckets), nullptr) << spec.name;
    }
  }
  EXPECT_EQ(c.buckets.named("nope"), nullptr);
}

TEST(MetricsSection, PerProbeGapBucketsFollowGapUnlessSetThemselves) {
  for (const std::string section : {"buckets:\n", "metrics:\n  buckets:\n"}) {
    const std::string indent = section.size() > 9 ? "    " : "  ";
    std::string yaml = section;
    yaml += indent + "gap: [.1, .25, 1]\n";
    yaml += indent + "probe_max_gap: [.5, 5]\n";
    yaml += kPrompts;
    yaml += kTarget;
    const Config c = parsed(yaml);
    EXPECT_EQ(c.buckets.gap, (std::vector<double>{.1, .25, 1})) << section;
    EXPECT_EQ(c.buckets.probe_gap_p95, c.buckets.gap) << section;
    EXPECT_EQ(c.buckets.probe_max_gap, (std::vector<double>{.5, 5})) << section;
  }
}

TEST(MetricsSection, StallThresholdIsCheckedAgainstTheNewGapBucketsToo) {
  const Config c = parsed("metrics:\n  buckets:\n    gap: [0.1, 0.5]\n" + kPrompts + kTarget);
  ASSERT_EQ(c.findings.warnings.size(), 1u);
  EXPECT_EQ(c.findings.warnings[0].line, 3);
  EXPECT_NE(c.findings.warnings[0].message.find("the built-in stall_threshold 250ms"),
            std::string::npos)
      << c.findings.warnings[0].message;
}

TEST(MetricsSection, PhaseBucketsUnusedByThePhasesSettingAreAWarning) {
  const Config c =
      parsed("metrics:\n  phases: off\n  buckets: {phase: [1, 2]}\n" + kPrompts + kTarget);
  ASSERT_EQ(c.findings.warnings.size(), 1u);
  EXPECT_EQ(c.findings.warnings[0].where_and_what(),
            "f.yaml:3:20: metrics.buckets.phase: unused: metrics.phases is off");
  EXPECT_TRUE(parsed("metrics: {buckets: {phase: [1, 2]}}\n" + kPrompts + kTarget)
                  .findings.warnings.empty());
}

// --- max_series ---------------------------------------------------------------------

TEST(MaxSeries, ExactlyTheLimitIsFineOneAboveIsRefusedWithTheNumber) {
  const Config c = parsed(kPrompts + kTarget);
  const std::uint64_t n = series_count(c).at_most;
  const std::string at = "metrics: {max_series: " + std::to_string(n) + "}\n";
  EXPECT_EQ(first_error(at + kPrompts + kTarget), "");
  const std::string below = "metrics: {max_series: " + std::to_string(n - 1) + "}\n";
  EXPECT_EQ(first_error(below + kPrompts + kTarget),
            "f.yaml:1:23: metrics.max_series: the config implies " + std::to_string(n) +
                " series, above metrics.max_series " + std::to_string(n - 1) +
                "; set metrics.classic: false (native histograms only), metrics.per_prompt: "
                "false or metrics.phases: sum_count, use fewer buckets, prompts or targets, or "
                "raise metrics.max_series");
}

TEST(MaxSeries, TheDefaultLimitIsBlamedOnTargets) {
  std::string yaml = kPrompts + "\ntargets:\n";
  for (int i = 0; i < 400; ++i)
    yaml += "  - {name: t" + std::to_string(i) + ", url: 'http://h', model: m}\n";
  const std::string error = first_error(yaml);
  // 400 targets × (306 per series set + 7 per target) + 15 of the exporter and process_*
  EXPECT_EQ(error.rfind("f.yaml:3:1: targets: the config implies 125,215 series", 0), 0u) << error;
  EXPECT_NE(error.find("series, above metrics.max_series 100,000 (the default); "),
            std::string::npos)
      << error;
  // per_prompt: false does not help one prompt per target; sum_count and off do.
  EXPECT_EQ(first_error("metrics: {phases: off}\n" + yaml), "");
}

TEST(MaxSeries, IsNotCountedOnAConfigWithErrors) {
  try {
    parse("metrics: {max_series: 1}\n" + kPrompts +
              "targets: [{name: a, url: 'http://h', model: m, interval: 0s}]\n",
          "f.yaml", "");
    FAIL();
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.errors().size(), 1u) << e.what();
    EXPECT_NE(e.message().find("interval"), std::string::npos) << e.what();
  }
}

// --- labels -------------------------------------------------------------------------

TEST(MaxScrapeBytes, TakesAByteSizeOfAtLeast4KiB) {
  EXPECT_EQ(
      parsed("metrics:\n  max_scrape_bytes: 16MiB\n" + kPrompts + kTarget).metrics.max_scrape_bytes,
      16u << 20);
  EXPECT_EQ(
      parsed("metrics:\n  max_scrape_bytes: 4096\n" + kPrompts + kTarget).metrics.max_scrape_bytes,
      4096u);
  EXPECT_EQ(first_error("metrics:\n  max_scrape_bytes: 4095\n" + kPrompts + kTarget),
            "f.yaml:2:21: metrics.max_scrape_bytes: must be at least 4KiB, got 4095 bytes");
  const std::string bad = first_error("metrics:\n  max_scrape_bytes: lots\n" + kPrompts + kTarget);
  EXPECT_EQ(bad.rfind("f.yaml:2:21: metrics.max_scrape_bytes: ", 0), 0u) << bad;
}

TEST(Labels, MergeWithDefaultsByNameTheTargetWinning) {
  const Config c =
      parsed("defaults: {labels: {team: search, provider: openai}}\n" + kPrompts +
             "targets:\n"
             "  - {name: a, url: 'http://h', model: m}\n"
             "  - {name: b, url: 'http://h', model: m, labels: {provider: vllm, region: eu-1}}\n");
  EXPECT_EQ(c.targets[0].labels,
            (std::map<std::string, std::string>{{"provider", "openai"}, {"team", "search"}}));
  EXPECT_EQ(c.targets[1].labels,
            (std::map<std::string, std::string>{
                {"provider", "vllm"}, {"region", "eu-1"}, {"team", "search"}}));
}

TEST(Labels, NameRules) {
  const auto reserved = metrics::reserved_label_names();
  for (const char* ok : {"team", "_x", "Region2", "a_b_c"})
    EXPECT_EQ(detail::check_label_name(ok, reserved), std::nullopt) << ok;
  for (const char* bad : {"", "2x", "team-name", "a.b", "ü"})
    EXPECT_NE(detail::check_label_name(bad, reserved), std::nullopt) << bad;
  for (const char* own :
       {"__name__", "__x", "target", "model", "prompt", "phase", "reason", "result", "shape", "api",
        "host", "http_version", "le", "quantile", "job", "instance"})
    EXPECT_NE(detail::check_label_name(own, reserved), std::nullopt) << own;
}

TEST(MetricsSection, NativeHistogramsAreOnBesideClassicBucketsByDefault) {
  const Config c = parsed(kPrompts + kTarget);
  ASSERT_TRUE(c.metrics.native.has_value());
  EXPECT_EQ(c.metrics.native->schema, 3);
  EXPECT_EQ(c.metrics.native->zero_threshold, 1e-5);
  EXPECT_EQ(c.metrics.native->max_buckets, 160u);
  EXPECT_TRUE(c.metrics.classic);
  EXPECT_EQ(c.buckets.tokens_per_chunk,
            (std::vector<double>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}));
}

TEST(MetricsSection, NativeSettingsFalseTrueAndNativeOnly) {
  const Config tuned = parsed(
      "metrics:\n  native: {schema: -1, zero_threshold: 0, max_buckets: 20}\n  classic: false\n" +
      kPrompts + kTarget);
  ASSERT_TRUE(tuned.metrics.native.has_value());
  EXPECT_EQ(tuned.metrics.native->schema, -1);
  EXPECT_EQ(tuned.metrics.native->zero_threshold, 0.0);
  EXPECT_EQ(tuned.metrics.native->max_buckets, 20u);
  EXPECT_FALSE(tuned.metrics.classic);
  // Unset keys keep their defaults.
  const Config partial = parsed("metrics:\n  native: {schema: 8}\n" + kPrompts + kTarget);
  EXPECT_EQ(partial.metrics.native->schema, 8);
  EXPECT_EQ(partial.metrics.native->max_buckets, 160u);
  EXPECT_FALSE(parsed("metrics: {native: false}\n" + kPrompts + kTarget).metrics.native);
  EXPECT_EQ(parsed("metrics: {native: true}\n" + kPrompts + kTarget).metrics.native,
            histogram::ExponentialSettings{});
}

TEST(MetricsSection, SchemaBoundsAreThoseOfPrometheus) {
  for (int schema : {-4, 0, 8}) {
    std::string yaml = "metrics: {native: {schema: " + std::to_string(schema) + "}}\n";
    yaml += kPrompts;
    yaml += kTarget;
    EXPECT_EQ(first_error(yaml), "") << schema;
  }
  EXPECT_NE(first_error("metrics: {native: {schema: -5}}\n" + kPrompts + kTarget)
                .find("must be between -4 and 8"),
            std::string::npos);
}

}  // namespace
}  // namespace lse::config
