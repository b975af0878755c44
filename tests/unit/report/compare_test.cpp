// compare: the bootstrap interval is reproducible and brackets a planted
// shift; the verdict names the part of the clock that moved.
#include "report/compare.hpp"

#include <gtest/gtest.h>

#include "report_fixtures.hpp"

namespace lse::report {
namespace {

using testing::planted;

// n probes with TTFT around `ttft` and gaps around `gap`, with a small
// deterministic spread so the bootstrap has something to resample.
std::vector<probe::ProbeResult> rows(int n, double ttft, double gap,
                                     const std::string& target = "svc",
                                     const std::string& prompt = "short",
                                     double ttft_step = 0.0004) {
  std::vector<probe::ProbeResult> out;
  for (int i = 0; i < n; ++i) {
    std::vector<double> gaps;
    for (int k = 0; k < 20; ++k) gaps.push_back(gap + 0.001 * ((i * 7 + k * 3) % 5) - 0.002);
    out.push_back(planted(ttft + ttft_step * ((i * 5) % 7), gaps, 0.001, target, prompt));
  }
  return out;
}

const PartChange& change(const SeriesComparison& s, ClockPart p, Statistic st) {
  const PartChange* c = s.find(p, st);
  EXPECT_NE(c, nullptr);
  return *c;
}

TEST(ReportCompare, GapsMovedTtftDidNot) {
  const auto c = compare(rows(20, 0.12, 0.020), rows(20, 0.12, 0.035));
  ASSERT_EQ(c.series.size(), 1u);
  const auto& s = c.series[0];
  const auto& gap = change(s, ClockPart::gap_p50, Statistic::median);
  EXPECT_TRUE(gap.moved);
  EXPECT_GT(gap.ci_low, 0);
  EXPECT_NEAR(gap.change, 0.015, 0.0015);
  const auto& ttft = change(s, ClockPart::ttft, Statistic::median);
  EXPECT_FALSE(ttft.moved);
  EXPECT_LE(ttft.ci_low, 0);
  EXPECT_GE(ttft.ci_high, 0);
  EXPECT_TRUE(s.gaps_moved);
  EXPECT_FALSE(s.ttft_moved);
  EXPECT_EQ(s.verdict.rfind("gaps moved (gap_p50 median +15", 0), 0u) << s.verdict;
  EXPECT_NE(s.verdict.find("TTFT did not: transport between the hosts"), std::string::npos);
  EXPECT_EQ(c.verdict, s.verdict);
}

TEST(ReportCompare, TtftMovedGapsDidNot) {
  const auto c = compare(rows(20, 0.12, 0.020), rows(20, 0.40, 0.020));
  const auto& s = c.series.at(0);
  EXPECT_TRUE(s.ttft_moved);
  EXPECT_FALSE(s.gaps_moved);
  EXPECT_EQ(s.verdict.rfind("TTFT moved (ttft median +280", 0), 0u) << s.verdict;
}

TEST(ReportCompare, BothMoved) {
  const auto c = compare(rows(20, 0.12, 0.020), rows(20, 0.40, 0.040));
  EXPECT_EQ(c.series.at(0).verdict.rfind("TTFT and gaps both moved", 0), 0u)
      << c.series.at(0).verdict;
}

TEST(ReportCompare, IdenticalRowsMoveNothing) {
  const auto a = rows(20, 0.12, 0.020);
  const auto c = compare(a, a);
  for (const auto& ch : c.series.at(0).changes) {
    EXPECT_FALSE(ch.moved) << to_string(ch.part);
    EXPECT_DOUBLE_EQ(ch.change, 0);
  }
  EXPECT_EQ(c.verdict.rfind("nothing moved", 0), 0u);
}

TEST(ReportCompare, SubResolutionShiftIsNotAMove) {
  // Every TTFT 0.2 ms later: the bootstrap alone excludes 0, the clock cannot tell.
  const auto c = compare(rows(20, 0.12, 0.020, "svc", "short", 0.00001),
                         rows(20, 0.1202, 0.020, "svc", "short", 0.00001));
  const auto& ttft = change(c.series.at(0), ClockPart::ttft, Statistic::median);
  EXPECT_GT(ttft.bootstrap_low, 0);
  EXPECT_FALSE(ttft.moved);
  EXPECT_LT(ttft.ci_low, 0);
}

TEST(ReportCompare, IntervalsAreReproducible) {
  const auto a = rows(15, 0.12, 0.020), b = rows(15, 0.12, 0.030);
  const auto c1 = compare(a, b), c2 = compare(a, b);
  ASSERT_EQ(c1.series.at(0).changes.size(), c2.series.at(0).changes.size());
  for (std::size_t i = 0; i < c1.series[0].changes.size(); ++i) {
    EXPECT_EQ(c1.series[0].changes[i].ci_low, c2.series[0].changes[i].ci_low);
    EXPECT_EQ(c1.series[0].changes[i].ci_high, c2.series[0].changes[i].ci_high);
  }
  CompareOptions other;
  other.seed = 7;
  const auto c3 = compare(a, b, other);
  bool any_different = false;
  for (std::size_t i = 0; i < c1.series[0].changes.size(); ++i)
    any_different |= c1.series[0].changes[i].bootstrap_low != c3.series[0].changes[i].bootstrap_low;
  EXPECT_TRUE(any_different);
}

TEST(ReportCompare, BootstrapIntervalBracketsTheShift) {
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) {
    a.push_back(0.010 + 0.001 * (i % 10));
    b.push_back(0.030 + 0.001 * (i % 10));
  }
  const Interval ci = bootstrap_interval(a, b, Statistic::median, {}, 1);
  EXPECT_LE(ci.low, 0.020);
  EXPECT_GE(ci.high, 0.020);
  EXPECT_GT(ci.low, 0.015);
}

TEST(ReportCompare, MatchesByPromptWhenEachSideHasOneTargetUnderAnotherName) {
  const auto c = compare(rows(10, 0.12, 0.02, "host-a"), rows(10, 0.12, 0.02, "host-b"));
  ASSERT_EQ(c.series.size(), 1u);
  EXPECT_EQ(c.series[0].target, "host-a → host-b");
}

TEST(ReportCompare, PerPromptSeriesAndUnmatched) {
  auto a = rows(10, 0.12, 0.02, "svc", "short");
  auto a2 = rows(10, 0.12, 0.02, "svc", "long");
  a.insert(a.end(), a2.begin(), a2.end());
  auto b = rows(10, 0.12, 0.04, "svc", "short");
  auto b2 = rows(10, 0.12, 0.02, "svc", "medium");
  b.insert(b.end(), b2.begin(), b2.end());
  const auto c = compare(a, b);
  ASSERT_EQ(c.series.size(), 1u);
  EXPECT_EQ(c.series[0].prompt, "short");
  EXPECT_EQ(c.only_in_a, std::vector<std::string>{"svc/long"});
  EXPECT_EQ(c.only_in_b, std::vector<std::string>{"svc/medium"});
  const std::string text = render_text(c, "A.jsonl", "B.jsonl");
  EXPECT_NE(text.find("only in A (not compared): svc/long"), std::string::npos);
  EXPECT_NE(text.find("verdict: gaps moved"), std::string::npos) << text;
}

TEST(ReportCompare, FailedRowsAreCountedNotMeasured) {
  auto a = rows(10, 0.12, 0.02);
  a.push_back(testing::failed(probe::FailureReason::timeout_idle, "svc", "short"));
  const auto c = compare(a, rows(10, 0.12, 0.02));
  EXPECT_EQ(c.series.at(0).rows_a, 11u);
  EXPECT_EQ(c.series.at(0).ok_a, 10u);
  EXPECT_EQ(change(c.series[0], ClockPart::ttft, Statistic::median).n_a, 10u);
}

TEST(ReportCompare, JsonCarriesIntervalsInMilliseconds) {
  const auto c = compare(rows(20, 0.12, 0.020), rows(20, 0.12, 0.035));
  const std::string j = json::dump(to_json(c, "a", "b"));
  EXPECT_NE(j.find("\"part\":\"gap_p50\",\"statistic\":\"median\",\"unit\":\"ms\""),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"gaps_moved\":true"), std::string::npos);
  EXPECT_NE(j.find("\"resolution_ms\":1"), std::string::npos);
}

}  // namespace
}  // namespace lse::report
