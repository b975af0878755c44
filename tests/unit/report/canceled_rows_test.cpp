// A probe cut short by shutdown or reload is no failure: the rows `run`
// keeps of it (reason canceled) are left out of every summary.
#include <gtest/gtest.h>

#include <vector>

#include "report/compare.hpp"
#include "report/summary.hpp"

namespace lse::report {
namespace {

probe::ProbeResult row(const char* target, bool ok, probe::FailureReason reason) {
  probe::ProbeResult r;
  r.target = target;
  r.prompt = "p";
  r.ok = ok;
  r.reason = reason;
  if (ok) {
    r.ttft = 0.1;
    r.duration = 0.5;
    r.chunks = 3;
  }
  return r;
}

TEST(CanceledRows, AreNoRunsAndNoFailuresOfTheSummary) {
  const std::vector<probe::ProbeResult> rows = {
      row("t", true, probe::FailureReason::none),
      row("t", false, probe::FailureReason::timeout_idle),
      row("t", false, probe::FailureReason::canceled),
      row("t", false, probe::FailureReason::canceled),
  };
  const Summary s = summarize(rows, config::DiagnosisThresholds{});
  EXPECT_EQ(s.runs, 2u);
  EXPECT_EQ(s.ok, 1u);
  ASSERT_EQ(s.series.size(), 1u);
  EXPECT_EQ(s.series[0].runs, 2u);
  EXPECT_EQ(s.series[0].failures.count(probe::FailureReason::canceled), 0u);
  EXPECT_EQ(s.series[0].failures_text, "timeout_idle 1");
  // Only canceled rows: no series at all, nothing failed.
  const Summary none = summarize({rows[2]}, config::DiagnosisThresholds{});
  EXPECT_EQ(none.runs, 0u);
  EXPECT_TRUE(none.failures.empty());
}

TEST(CanceledRows, AreNoRowsOfACompare) {
  const std::vector<probe::ProbeResult> a = {row("t", true, probe::FailureReason::none),
                                             row("t", false, probe::FailureReason::canceled)};
  const std::vector<probe::ProbeResult> b = {row("t", true, probe::FailureReason::none)};
  const Comparison c = compare(a, b);
  ASSERT_EQ(c.series.size(), 1u);
  EXPECT_EQ(c.series[0].rows_a, 1u);
  EXPECT_EQ(c.series[0].ok_a, 1u);
}

}  // namespace
}  // namespace lse::report
