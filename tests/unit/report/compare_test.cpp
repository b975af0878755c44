// compare: the bootstrap interval is reproducible and brackets a planted
// shift; the verdict names the part of the clock that moved, the largest move
// of it, only moves above the minimum effect, a buffer when gaps collapse
// while TTFT grows; --pair matches targets of other names, also of one file.
#include "report/compare.hpp"

#include <gtest/gtest.h>

#include "report_fixtures.hpp"

namespace lse::report {
namespace {

using testing::planted;
using testing::repeat;

// n probes with TTFT around `ttft` and gaps around `gap`, with a small
// deterministic spread so the bootstrap has something to resample.
std::vector<probe::ProbeResult> rows(int n, double ttft, double gap,
                                     const std::string& target = "svc",
                                     const std::string& prompt = "short",
                                     double ttft_step = 0.0004) {
  std::vector<probe::ProbeResult> out;
  for (int i = 0; i < n; ++i) {
    std::vector<double> gaps;
    gaps.reserve(20);
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

// Every run of a series with the same planted gaps (in this order) and TTFTs
// 0.1 ms apart, so the bootstrap has a spread to resample.
std::vector<probe::ProbeResult> runs_of(int n, double ttft, const std::vector<double>& gaps,
                                        const std::string& target = "svc",
                                        const std::string& prompt = "short") {
  std::vector<probe::ProbeResult> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    out.push_back(planted(ttft + 0.0001 * (i % 5), gaps, 0.001, target, prompt));
  return out;
}

std::vector<double> concat(std::initializer_list<std::vector<double>> parts) {
  std::vector<double> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(ReportCompare, ASmallShiftWhoseCiExcludesZeroIsNotAMove) {
  // Every gap 3.8 ms longer: the CI excludes 0, but 3.8 ms < max(5 ms, 10% of 20 ms).
  const auto c = compare(rows(20, 0.12, 0.020), rows(20, 0.12, 0.0238));
  const auto& s = c.series.at(0);
  const auto& gap = change(s, ClockPart::gap_p50, Statistic::median);
  EXPECT_NEAR(gap.change, 0.0038, 0.0002);
  EXPECT_GT(gap.ci_low, 0);
  EXPECT_TRUE(gap.excludes_zero);
  EXPECT_DOUBLE_EQ(gap.min_effect, 0.005);
  EXPECT_FALSE(gap.moved);
  EXPECT_FALSE(s.gaps_moved);
  // 20 gaps × 3.8 ms do add up: the answers take 76 ms longer (> 10% of ~0.5 s).
  EXPECT_EQ(s.shape, "length");
  EXPECT_EQ(s.verdict.rfind("TTFT and gaps did not move, duration did (duration median +76", 0), 0u)
      << s.verdict;
  const std::string text = render_text(c, "A", "B");
  EXPECT_NE(text.find("< min effect"), std::string::npos) << text;

  // The same shift is a move above a 3 ms floor.
  CompareOptions finer;
  finer.min_effect_seconds = 0.003;
  EXPECT_TRUE(
      compare(rows(20, 0.12, 0.020), rows(20, 0.12, 0.0238), finer).series.at(0).gaps_moved);
}

TEST(ReportCompare, TheMinimumEffectGrowsWithTheBaseline) {
  // TTFT 1 s: 10% is 100 ms. +60 ms is clear of the noise but not a move; +150 ms is.
  const auto gaps = repeat(0.020, 20);
  const auto small = compare(runs_of(20, 1.0, gaps), runs_of(20, 1.06, gaps));
  const auto& t1 = change(small.series.at(0), ClockPart::ttft, Statistic::median);
  EXPECT_TRUE(t1.excludes_zero);
  EXPECT_NEAR(t1.min_effect, 0.1, 0.001);
  EXPECT_FALSE(t1.moved);
  EXPECT_FALSE(small.series[0].ttft_moved);

  const auto large = compare(runs_of(20, 1.0, gaps), runs_of(20, 1.15, gaps));
  EXPECT_TRUE(change(large.series.at(0), ClockPart::ttft, Statistic::median).moved);
  EXPECT_EQ(large.series[0].verdict.rfind("TTFT moved (ttft median +150", 0), 0u)
      << large.series[0].verdict;
}

TEST(ReportCompare, TheVerdictNamesTheLargestMoveNotTheFirst) {
  // A: per run gap p50 40 ms, p95 50 ms, max 300 ms. B: p50 20 ms (-20 ms),
  // p95 253 ms (+203 ms), max 300 ms (unchanged).
  const auto a = runs_of(20, 0.12, concat({repeat(0.040, 18), {0.050, 0.300}}));
  const auto b = runs_of(20, 0.12, concat({repeat(0.020, 16), repeat(0.253, 3), {0.300}}));
  const auto c = compare(a, b);
  const auto& s = c.series.at(0);
  EXPECT_NEAR(change(s, ClockPart::gap_p50, Statistic::median).change, -0.020, 1e-6);
  EXPECT_TRUE(change(s, ClockPart::gap_p50, Statistic::median).moved);
  EXPECT_NEAR(change(s, ClockPart::gap_p95, Statistic::median).change, 0.203, 1e-6);
  EXPECT_FALSE(change(s, ClockPart::gap_max, Statistic::median).moved);
  EXPECT_EQ(s.shape, "transport");
  EXPECT_EQ(s.verdict.rfind("gaps moved (gap_p95 median +203.0 ms; gap_p50 median -20.0 ms the "
                            "other way), TTFT did not",
                            0),
            0u)
      << s.verdict;
  // p50 down, p95 up: held and released in batches, said with the parts'
  // defined names ("tail" is the end of the stream, which did not move).
  EXPECT_NE(s.verdict.find("; gap_p50 shrank while gap_p95 grew: chunks are held and released in "
                           "batches"),
            std::string::npos)
      << s.verdict;
  EXPECT_FALSE(change(s, ClockPart::tail, Statistic::median).moved);
  EXPECT_EQ(s.verdict.find("tail"), std::string::npos) << s.verdict;
}

TEST(ReportCompare, GapsCollapsingWhileTtftGrowsNameABuffer) {
  // Direct: TTFT 300 ms, gaps 30 ms with two 400 ms stalls (gap p95 400 ms). Buffered: the
  // whole answer released at once after 2.2 s: every gap 0, no stalls.
  const auto direct =
      runs_of(20, 0.30, concat({repeat(0.030, 10), {0.400}, repeat(0.030, 10), {0.400}}));
  const auto buffered = runs_of(20, 2.20, repeat(0.0, 22));
  const auto c = compare(direct, buffered);
  const auto& s = c.series.at(0);
  EXPECT_TRUE(s.ttft_moved);
  EXPECT_EQ(s.shape, "buffer");
  EXPECT_EQ(s.verdict.rfind("TTFT grew (ttft median +1.90 s) while the gaps collapsed to ~0 "
                            "(gap_p95 median 400.0 ms → 0.0 ms, stalls 2 → 0): a buffer between "
                            "the hosts holds the stream and releases it at once",
                            0),
            0u)
      << s.verdict;
  EXPECT_NE(json::dump(to_json(c, "a", "b")).find("\"shape\":\"buffer\""), std::string::npos);

  // The other way round (buffered → direct) TTFT fell: not a buffer on B's path.
  EXPECT_NE(compare(buffered, direct).series.at(0).shape, "buffer");
  // TTFT grew but the gaps stayed: the wait, not a buffer.
  const auto slower =
      runs_of(20, 2.20, concat({repeat(0.030, 10), {0.400}, repeat(0.030, 10), {0.400}}));
  EXPECT_EQ(compare(direct, slower).series.at(0).shape, "before-stream");
  // The gaps collapsed but TTFT did not grow: not the burst rule.
  EXPECT_NE(compare(direct, runs_of(20, 0.30, repeat(0.0, 22))).series.at(0).shape, "buffer");
}

TEST(ReportCompare, PairsMatchTwoTargetsOfOneFile) {
  // One `run` file with three targets: direct, behind a buffer, and another.
  auto rows_file = runs_of(10, 0.30, repeat(0.030, 20), "direct", "short");
  for (const auto& more : {runs_of(10, 2.2, repeat(0.0, 20), "via-nginx", "short"),
                           runs_of(10, 0.3, repeat(0.03, 20), "other", "short")})
    rows_file.insert(rows_file.end(), more.begin(), more.end());
  // By name, a file against itself compares each target with itself.
  const auto by_name = compare(rows_file, rows_file);
  EXPECT_EQ(by_name.series.size(), 3u);
  EXPECT_EQ(by_name.verdict.rfind("nothing moved", 0), 0u) << by_name.verdict;

  CompareOptions o;
  o.pairs = {{"direct", "via-nginx"}, {"direct", "other"}};
  const auto c = compare(rows_file, rows_file, o);
  ASSERT_EQ(c.series.size(), 2u);
  EXPECT_EQ(c.series[0].target, "direct → via-nginx");
  EXPECT_EQ(c.series[0].shape, "buffer");
  EXPECT_EQ(c.series[1].target, "direct → other");
  EXPECT_EQ(c.series[1].shape, "same");
  EXPECT_EQ(c.not_paired, (std::vector<std::string>{"A: other", "A: via-nginx", "B: direct"}));
  EXPECT_TRUE(c.only_in_a.empty());
  EXPECT_TRUE(c.only_in_b.empty());
  const std::string text = render_text(c, "rows.jsonl", "rows.jsonl");
  EXPECT_NE(text.find("targets matched by --pair: direct → via-nginx, direct → other"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("in no --pair (not compared): A: other"), std::string::npos);
}

TEST(ReportCompare, APairWithAPromptOnOneSideOnlyListsIt) {
  auto a = runs_of(10, 0.3, repeat(0.03, 20), "x", "short");
  auto a2 = runs_of(10, 0.3, repeat(0.03, 20), "x", "long");
  a.insert(a.end(), a2.begin(), a2.end());
  CompareOptions o;
  o.pairs = {{"x", "y"}};
  const auto c = compare(a, runs_of(10, 0.3, repeat(0.03, 20), "y", "short"), o);
  ASSERT_EQ(c.series.size(), 1u);
  EXPECT_EQ(c.only_in_a, std::vector<std::string>{"x/long"});
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

// Each side's HTTP version: the one its answered rows spoke, or "mixed"
// with the count of each; rows without an answer count for neither.
TEST(ReportCompare, EachSideShowsItsHttpVersion) {
  auto a = rows(12, 0.12, 0.020);
  for (auto& r : a) r.http_version = "2";
  a.push_back(testing::failed(probe::FailureReason::connect, "svc", "short"));  // no answer
  auto b = rows(12, 0.12, 0.020);
  for (std::size_t i = 0; i < b.size(); ++i) b[i].http_version = i < 9 ? "1.1" : "2";
  const auto c = compare(a, b);
  const auto& s = c.series.at(0);
  EXPECT_EQ(s.http_version_a.summary(), "2");
  EXPECT_EQ(s.http_version_a.counts, (std::vector<std::pair<std::string, std::size_t>>{{"2", 12}}));
  EXPECT_EQ(s.http_version_b.summary(), "mixed");
  EXPECT_EQ(s.http_version_b.most_common(), "1.1");
  EXPECT_EQ(s.http_version_b.text(), "mixed (1.1: 9, 2: 3)");

  const std::string text = render_text(c, "A", "B");
  EXPECT_NE(text.find("  http_version  A: 2  B: mixed (1.1: 9, 2: 3)  (the sides spoke different "
                      "HTTP"),
            std::string::npos)
      << text;
  const std::string j = json::dump(to_json(c, "a", "b"));
  EXPECT_NE(j.find("\"http_version_a\":\"2\",\"http_version_b\":\"mixed\","
                   "\"http_versions_a\":{\"2\":12},\"http_versions_b\":{\"1.1\":9,\"2\":3}"),
            std::string::npos)
      << j;

  // Rows from before the field (or with no answer at all): nothing to show.
  const auto none = compare(rows(10, 0.12, 0.02), rows(10, 0.12, 0.02));
  EXPECT_EQ(none.series.at(0).http_version_a.text(), "-");
  EXPECT_NE(render_text(none, "A", "B").find("  http_version  A: -  B: -\n"), std::string::npos);
  EXPECT_NE(json::dump(to_json(none, "a", "b")).find("\"http_version_a\":null"), std::string::npos);
}

}  // namespace
}  // namespace lse::report
