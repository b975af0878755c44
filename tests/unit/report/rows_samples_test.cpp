// The recorded sample rows (tests/data/rows/README.md) through the reader
// and compare: the verdict a person would get from the command.
#include <gtest/gtest.h>

#include "report/compare.hpp"
#include "report/rows_file.hpp"
#include "report/summary.hpp"

namespace lse::report {
namespace {

const std::string kRows = std::string(LSE_TEST_DATA) + "/rows/";

TEST(ReportRowsSamples, HostBHasSlowerGapsOnly) {
  const auto a = read_rows_file(kRows + "host-a.jsonl");
  const auto b = read_rows_file(kRows + "host-b.jsonl");
  ASSERT_EQ(a.size(), 24u);
  ASSERT_EQ(b.size(), 24u);
  EXPECT_EQ(a.front().host, "host-a");
  const Comparison c = compare(a, b);
  ASSERT_EQ(c.series.size(), 2u);
  for (const auto& s : c.series) {
    EXPECT_TRUE(s.gaps_moved) << s.prompt;
    EXPECT_FALSE(s.ttft_moved) << s.prompt;
    const PartChange* gap = s.find(ClockPart::gap_p50, Statistic::median);
    ASSERT_NE(gap, nullptr);
    EXPECT_NEAR(gap->change, 0.015, 0.002);
    EXPECT_GT(gap->ci_low, 0);
    const PartChange* ttft = s.find(ClockPart::ttft, Statistic::median);
    EXPECT_LE(ttft->ci_low, 0);
    EXPECT_GE(ttft->ci_high, 0);
  }
  // The verdict quotes the gaps' largest move (here the tail of the gaps).
  EXPECT_EQ(c.verdict.rfind("gaps moved (gap_p95 p95 +", 0), 0u) << c.verdict;
  EXPECT_NE(c.verdict.find("(all 2 prompts)"), std::string::npos);
}

TEST(ReportRowsSamples, SummaryOfRecordedRowsIsHealthy) {
  const Summary s = summarize(read_rows_file(kRows + "host-a.jsonl"), {});
  ASSERT_EQ(s.series.size(), 2u);
  for (const auto& ss : s.series) {
    EXPECT_EQ(ss.ok, 12u);
    EXPECT_EQ(shapes_held(ss.diagnosis), "none") << render_table(s);
    EXPECT_NEAR(ss.field(Field::ttft).p50, 0.120, 0.005);
    EXPECT_EQ(ss.field(Field::chunks).p50, 16);
  }
}

TEST(ReportRowsSamples, MalformedLineThree) {
  try {
    read_rows_file(kRows + "malformed.jsonl");
    FAIL() << "no error";
  } catch (const RowsFileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(kRows + "malformed.jsonl:3: not a probe row: ", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace lse::report
