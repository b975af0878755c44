// The HTML report: one timeline row per measured run, stalls and failures
// drawn, text escaped, nothing referenced outside the file, and the inline
// self-check the browser test relies on.
#include "report/html.hpp"

#include <gtest/gtest.h>

#include <regex>

#include "report_fixtures.hpp"

namespace lse::report {
namespace {

using testing::failed;
using testing::planted;
using testing::repeat;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

Summary sample() {
  std::vector<probe::ProbeResult> rs;
  std::vector<double> gaps = repeat(0.02, 30);
  gaps[10] = 0.4;
  for (int i = 0; i < 5; ++i) rs.push_back(planted(0.1, gaps, 0.01, "svc", "short"));
  for (int i = 0; i < 3; ++i)
    rs.push_back(planted(0.2, repeat(0.015, 12), 0.0, "svc", "<b>long</b>"));
  rs.push_back(failed(probe::FailureReason::truncated, "svc", "<b>long</b>"));
  auto warm = planted(0.1, gaps, 0, "svc", "short");
  warm.warmup = true;
  rs.push_back(warm);
  return summarize(rs, {}, {{"svc", "short"}, {"svc", "<b>long</b>"}});
}

TEST(ReportHtml, OneTimelineRowPerMeasuredRun) {
  const std::string html = render_html(sample(), {});
  EXPECT_EQ(count(html, "data-run=\""), 9u);
  EXPECT_NE(html.find("data-expected-runs=\"9\" data-expected-series=\"2\""), std::string::npos);
  EXPECT_EQ(count(html, "<section class=\"series\""), 2u);
  EXPECT_EQ(count(html, "<g class=\"run failed\""), 1u);
  EXPECT_EQ(count(html, "<rect class=\"stall\""), 5u);  // one planted stall in each short run
  EXPECT_EQ(count(html, "<path class=\"ticks\""), 8u);  // the failed run had no chunk
  EXPECT_NE(html.find("data-selfcheck=\"pending\""), std::string::npos);
  EXPECT_NE(html.find("setAttribute('data-selfcheck', 'ok')"), std::string::npos);
}

TEST(ReportHtml, EscapesNamesAndLoadsNothing) {
  const std::string html = render_html(sample(), {});
  EXPECT_EQ(html.find("<b>long</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;long&lt;/b&gt;"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?(https?:|//))")));
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
}

TEST(ReportHtml, ShowsThresholdDiagnosisAndInterruption) {
  ReportMeta meta;
  meta.interrupted = true;
  meta.host = "probe-host";
  const std::string html = render_html(sample(), meta);
  EXPECT_NE(html.find("stall threshold 250.0 ms"), std::string::npos);
  EXPECT_NE(html.find("data-shape=\"transport\""), std::string::npos);
  EXPECT_NE(html.find("This run was interrupted"), std::string::npos);
  EXPECT_NE(html.find("probe-host"), std::string::npos);
  EXPECT_EQ(html_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST(ReportHtml, EmptySummaryStillRenders) {
  const std::string html = render_html(Summary{}, {});
  EXPECT_NE(html.find("data-expected-runs=\"0\""), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

}  // namespace
}  // namespace lse::report
