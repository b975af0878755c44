// The HTML report: one timeline row per measured run, stalls and failures
// drawn, text escaped, nothing referenced outside the file, the inline
// self-check the browser test relies on; a header that says what the report
// was made from; A/B sections on shared axes and bins; a log count axis.
#include "report/html.hpp"

#include <gtest/gtest.h>

#include <cmath>
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
  // Three states, marked as the table and the landing page mark them: every
  // shape of both series once, "<b>long</b>" (3 successful runs) cannot tell.
  const std::size_t holds = count(html, "data-answer=\"holds\"><span class=\"mark\">[x]</span>");
  const std::size_t not_holds =
      count(html, "data-answer=\"does not hold\"><span class=\"mark\">[ ]</span>");
  const std::size_t cannot_tell =
      count(html, "data-answer=\"cannot tell\"><span class=\"mark\">[?]</span>");
  EXPECT_EQ(holds + not_holds + cannot_tell, 10u);
  EXPECT_GE(cannot_tell, 5u);
  EXPECT_GE(not_holds, 1u);
  EXPECT_NE(html.find("This run was interrupted"), std::string::npos);
  EXPECT_NE(html.find("probe-host"), std::string::npos);
  EXPECT_EQ(html_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

// The tokens-per-chunk note sits under its series' diagnosis, once, and
// the field table has the figure.
TEST(ReportHtml, TokensPerChunkNoteUnderTheDiagnosis) {
  std::vector<probe::ProbeResult> rs;
  for (int i = 0; i < 5; ++i) {
    auto r = planted(0.1, repeat(0.02, 7), 0, "vllm", "short");
    r.completion_tokens = 24;  // 8 chunks
    r.tokens_per_chunk = probe::tokens_per_chunk({24, -1, r.chunks, 0, false});
    rs.push_back(r);
  }
  const std::string html = render_html(summarize(rs, {}), {});
  EXPECT_EQ(count(html, R"(<p class="note" data-note="tokens_per_chunk">note: the server sends 3 )"
                        R"(tokens per chunk: gaps are per chunk, not per token)"),
            1u)
      << html;
  EXPECT_EQ(count(render_html(sample(), {}), "data-note="), 0u);  // no usage: no note
  EXPECT_NE(html.find("<tr><td>tokens/chunk</td><td>3</td><td>3</td><td>3</td><td>5</td></tr>"),
            std::string::npos);
}

TEST(ReportHtml, EmptySummaryStillRenders) {
  const std::string html = render_html(Summary{}, {});
  EXPECT_NE(html.find("data-expected-runs=\"0\""), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

// The axis labels of one section: time ticks, histogram bin edges and counts.
std::vector<std::string> axis_labels(const std::string& section) {
  static const std::regex label(
      R"re(<text class="tick[^"]*" [^>]*text-anchor="(?:middle|end)"[^>]*>([^<]*)</text>)re");
  std::vector<std::string> out;
  for (std::sregex_iterator it(section.begin(), section.end(), label), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

std::vector<std::string> sections(const std::string& html) {
  std::vector<std::string> out;
  for (auto at = html.find("<section class=\"series\""); at != std::string::npos;) {
    const auto next = html.find("<section class=\"series\"", at + 1);
    out.push_back(html.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  return out;
}

TEST(ReportHtml, ABSectionsShareAxesAndBins) {
  // B's runs are three times as long, with slower gaps and more of them.
  std::vector<probe::ProbeResult> rs;
  for (int i = 0; i < 4; ++i) rs.push_back(planted(0.1, repeat(0.02, 30), 0, "svc @ a", "short"));
  for (int i = 0; i < 4; ++i) rs.push_back(planted(0.3, repeat(0.06, 40), 0, "svc @ b", "short"));
  const Summary s = summarize(rs, {}, {{"svc @ a", "short"}, {"svc @ b", "short"}});
  const auto parts = sections(render_html(s, {}));
  ASSERT_EQ(parts.size(), 2u);
  const auto a = axis_labels(parts[0]), b = axis_labels(parts[1]);
  EXPECT_GT(a.size(), 10u);
  EXPECT_EQ(a, b);  // the same time ticks, bins and count ticks
  EXPECT_EQ(count(parts[0], "<rect class=\"bar"), count(parts[1], "<rect class=\"bar"));
  // The longest run (B: 0.3 + 40 x 0.06 = 2.7 s) sets both time axes.
  EXPECT_NE(parts[0].find(">2.5 s</text>"), std::string::npos);
}

TEST(ReportHtml, AHandfulOfStallsStaysVisibleBesideManySmallGaps) {
  // 4 runs of 100 gaps of 5 ms and 4 stalls of 500 ms: 400 small gaps, 16 stalls.
  std::vector<probe::ProbeResult> rs;
  std::vector<double> gaps = repeat(0.005, 104);
  for (std::size_t i : {20u, 40u, 60u, 80u}) gaps[i] = 0.5;
  for (int i = 0; i < 4; ++i) rs.push_back(planted(0.1, gaps, 0, "svc", "short"));
  const std::string html = render_html(summarize(rs, {}), {});
  static const std::regex bar(
      R"re(<rect class="bar( stallbar)?" x="[0-9.]+" y="[0-9.]+" width="[0-9.]+" height="([0-9.]+)"><title>[^<]*: ([0-9]+) gaps)re");
  double tallest = 0, stall_bar = 0;
  std::size_t stall_count = 0;
  for (std::sregex_iterator it(html.begin(), html.end(), bar), end; it != end; ++it) {
    const double h = std::stod((*it)[2]);
    tallest = std::max(tallest, h);
    if ((*it)[1].matched && std::stoul((*it)[3]) > 0) {
      stall_bar = h;
      stall_count += std::stoul((*it)[3]);
    }
  }
  EXPECT_EQ(stall_count, 16u);
  ASSERT_GT(tallest, 0);
  // Linear, 16 of 400 would be 4% of the height; on the log axis it is log(17)/log(401).
  EXPECT_NEAR(stall_bar / tallest, std::log1p(16.0) / std::log1p(400.0), 0.02);
  EXPECT_NE(html.find("gaps (log scale)"), std::string::npos);
  EXPECT_NE(html.find(">400</text>"), std::string::npos);  // the top count is labelled
}

TEST(ReportHtml, AReportFromRowsFilesSaysWhatItWasMadeFrom) {
  ReportMeta meta;
  meta.sources = {
      {"before.jsonl", "runs/before.jsonl", {"probe-a"}, 1700000000, 1700000030.5, 40, 38, 0},
      {"after.jsonl", "after.jsonl", {"probe-b", "probe-c"}, 1700086400, 1700086436, 40, 40, 0}};
  const std::string html = render_html(sample(), meta);
  for (const char* text :
       {"made from 2 rows files",
        "<b>before.jsonl</b> (runs/before.jsonl) · host <b>probe-a</b> · "
        "<b>2023-11-14 22:13:20</b> – <b>2023-11-14 22:13:50 UTC</b> "
        "(30.50 s) · 40 rows (38 ok)",
        "host <b>probe-b, probe-c</b> · <b>2023-11-15 22:13:20</b> – <b>2023-11-15 22:13:56 "
        "UTC</b> (36.00 s) · 40 rows (40 ok)",
        "warmups: none in the rows"})
    EXPECT_NE(html.find(text), std::string::npos) << text;
  // Neither one "took" for two separate runs nor a warmup count the rows cannot tell.
  EXPECT_EQ(html.find("took"), std::string::npos);
  EXPECT_EQ(html.find("warmup runs discarded"), std::string::npos);

  meta.sources[1].warmups = 4;
  EXPECT_NE(render_html(sample(), meta).find("4 warmup rows left out"), std::string::npos);
}

}  // namespace
}  // namespace lse::report
