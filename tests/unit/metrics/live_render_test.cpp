// A render writes the per-series families from the live series a slice at a
// time instead of through prometheus-cpp's Family::Collect() copy of a whole
// family: the same series with the same values as the collected path
// (Metrics::collect(), kept for benchmarks), in every format, and a family
// far larger than a slice never held whole in the text formats.
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/metrics.hpp"
#include "metrics/serializer.hpp"
#include "metrics_fixtures.hpp"
#include "prometheus/metrics.pb.h"
#include "protobuf_decode.hpp"

namespace lse::metrics {
namespace {

namespace pb = io::prometheus::client;
using testing::fixed_process_stats;
using testing::make_config;
using testing::make_target;
using testing::series_sorted;
using testing::success;

std::vector<pb::MetricFamily> decode(const std::string& bytes) {
  return testing::decode_protobuf(bytes);
}

// What a render adds from its notes (created timestamps, exemplars, native
// histograms), which the collected path without notes has not.
void strip_notes(pb::Metric& m) {
  if (m.has_counter()) m.mutable_counter()->clear_created_timestamp();
  if (!m.has_histogram()) return;
  pb::Histogram& h = *m.mutable_histogram();
  h.clear_created_timestamp();
  h.clear_schema();
  h.clear_zero_threshold();
  h.clear_zero_count();
  h.clear_positive_span();
  h.clear_positive_delta();
  h.clear_negative_span();
  h.clear_negative_delta();
  h.clear_exemplars();
  for (auto& b : *h.mutable_bucket()) b.clear_exemplar();
}

// Each family's header and its metrics as a sorted list of encodings: the
// same series with the same values whatever their order within the family.
using Decoded = std::vector<std::pair<std::string, std::vector<std::string>>>;
Decoded comparable(std::vector<pb::MetricFamily> families, bool strip) {
  Decoded out;
  for (auto& f : families) {
    std::vector<std::string> metrics;
    for (auto& m : *f.mutable_metric()) {
      if (strip) strip_notes(m);
      metrics.push_back(m.SerializeAsString());
    }
    std::sort(metrics.begin(), metrics.end());
    out.emplace_back(f.name() + "|" + f.help() + "|" + std::to_string(f.type()), metrics);
  }
  return out;
}

class LiveRenderTest : public ::testing::Test {
 protected:
  Metrics metrics{BuildInfo{"1.2.3", "abcdef"}, fixed_process_stats};

  // `n` targets x 3 prompts, some probes recorded, a failure or two.
  void populate(int n) {
    std::vector<config::Target> targets;
    targets.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
      targets.push_back(make_target("t" + std::to_string(i), "m", {"a", "b", "c"}));
    metrics.apply_config(make_config(targets));
    for (int i = 0; i < n; i += 7) {
      auto r = success("t" + std::to_string(i), "m", "b");
      r.id = "probe-" + std::to_string(i);
      metrics.record(r);
    }
    metrics.count_backoff("t3");
  }

  // The pieces a render hands its sink, in order.
  std::vector<std::string> pieces(Exposition format) const {
    std::vector<std::string> out;
    EXPECT_TRUE(metrics.render(format, [&](std::string_view piece) {
      out.emplace_back(piece);
      return true;
    }));
    return out;
  }
};

TEST_F(LiveRenderTest, TextIsTheCollectedFamiliesSeriesForSeries) {
  populate(40);
  const std::string live = metrics.render(Exposition::text);
  const std::string collected = serialize(metrics.collect(), Exposition::text);
  EXPECT_EQ(live.size(), collected.size());
  EXPECT_EQ(series_sorted(live), series_sorted(collected));
  // 40 targets x 3 prompts x 15 failure reasons, far more than one slice.
  std::size_t failures = 0;
  std::istringstream lines(live);
  for (std::string line; std::getline(lines, line);)
    failures += line.rfind("llm_stream_probe_failures_total{", 0) == 0;
  EXPECT_EQ(failures, std::size_t{40} * 3 * probe::kAllFailureReasons.size());
  EXPECT_GT(failures, 256u * 4);
}

TEST_F(LiveRenderTest, OpenMetricsIsTheCollectedFamiliesWithTheirNotes) {
  populate(40);
  const std::string live = metrics.render(Exposition::openmetrics);
  // Without the notes the collected path has not: `_created` and exemplars.
  std::string stripped;
  std::istringstream lines(live);
  std::size_t exemplars = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("_created") != std::string::npos) continue;
    if (const auto hash = line.find(" # {"); hash != std::string::npos) {
      line.resize(hash);
      ++exemplars;
    }
    stripped += line + "\n";
  }
  EXPECT_EQ(series_sorted(stripped),
            series_sorted(serialize(metrics.collect(), Exposition::openmetrics)));
  // t0, t7, ..., t35 recorded one probe each: an exemplar on a TTFT, a gap
  // and a max gap bucket of each.
  EXPECT_EQ(exemplars, 6u * 3);
}

TEST_F(LiveRenderTest, ProtobufDecodesToTheCollectedFamilies) {
  populate(40);
  const auto live = decode(metrics.render(Exposition::protobuf));
  const auto collected = decode(serialize(metrics.collect(), Exposition::protobuf));
  ASSERT_EQ(live.size(), collected.size());
  EXPECT_EQ(comparable(live, true), comparable(collected, false));
  // The notes are there: a native histogram on each recorded TTFT series.
  std::size_t native = 0;
  for (const auto& f : live)
    if (f.name() == "llm_stream_time_to_first_token_seconds")
      for (const auto& m : f.metric()) native += m.histogram().positive_delta_size() > 0;
  EXPECT_EQ(native, 6u);
}

// A family far larger than a slice and than a piece: 400 targets x 3
// prompts x 15 failure reasons are 18,000 series (~1.7 MB of text).
TEST_F(LiveRenderTest, AFamilyFarLargerThanASliceGoesOutInSeveralPieces) {
  populate(400);
  for (auto format : {Exposition::text, Exposition::openmetrics}) {
    const auto all = pieces(format);
    std::size_t holding = 0, largest = 0;
    std::string joined;
    for (const auto& p : all) {
      holding += p.find("llm_stream_probe_failures_total{") != std::string::npos;
      largest = std::max(largest, p.size());
      joined += p;
    }
    EXPECT_GE(holding, 2u);
    EXPECT_LE(largest, (1u << 20) + 4096);
    EXPECT_EQ(joined, metrics.render(format));
  }
  // A protobuf family stays one length-delimited message: each piece is
  // whole families, and together they decode to the collected ones.
  std::string joined;
  for (const auto& p : pieces(Exposition::protobuf)) {
    EXPECT_FALSE(decode(p).empty());
    joined += p;
  }
  const auto live = decode(joined);
  EXPECT_EQ(comparable(live, true),
            comparable(decode(serialize(metrics.collect(), Exposition::protobuf)), false));
}

// The live series go out in a deterministic order: targets by name, then
// prompts by name, then the family's own label in its table's order (the
// collected path gave prometheus-cpp's hash order, different per config).
TEST_F(LiveRenderTest, SeriesGoOutByTargetThenPromptThenRow) {
  populate(12);
  std::vector<std::string> seen;
  std::istringstream lines(metrics.render(Exposition::text));
  const std::regex failure(
      R"re(^llm_stream_probe_failures_total\{model="m",prompt="(\w)",reason="(\w+)",target="(t\d+)"\})re");
  for (std::string line; std::getline(lines, line);)
    if (std::smatch m; std::regex_search(line, m, failure))
      seen.push_back(m[3].str() + "/" + m[1].str() + "/" + m[2].str());
  std::vector<std::string> expected;
  std::vector<std::string> names;
  names.reserve(12);
  for (int i = 0; i < 12; ++i) names.push_back("t" + std::to_string(i));
  std::sort(names.begin(), names.end());  // t0, t1, t10, t11, t2, ...
  for (const auto& t : names)
    for (const char* p : {"a", "b", "c"})
      for (const auto reason : probe::kAllFailureReasons)
        expected.push_back(t + "/" + p + "/" + std::string(probe::to_string(reason)));
  EXPECT_EQ(seen, expected);
}

// A family without series (no target has a finish reason yet) is left out,
// header and all, as Family::Collect() leaves it out.
TEST_F(LiveRenderTest, AFamilyWithoutSeriesIsLeftOut) {
  metrics.apply_config(make_config({make_target("t", "m", {"p"})}));
  const std::string before = metrics.render(Exposition::text);
  EXPECT_EQ(before.find("llm_stream_finish_reasons_total"), std::string::npos);
  metrics.record(success("t", "m", "p"));
  const std::string after = metrics.render(Exposition::text);
  EXPECT_NE(after.find("# TYPE llm_stream_finish_reasons_total counter"), std::string::npos);
  EXPECT_EQ(series_sorted(after), series_sorted(serialize(metrics.collect(), Exposition::text)));
}

}  // namespace
}  // namespace lse::metrics
