// The page of one probe: the verdict and its evidence on top, the chunk
// arrivals on a time axis, the gap bars (0-ms gaps drawn and counted, stalls
// and the threshold), a bounded page for a huge row, escaping of everything
// that came from config or upstream, no external assets.
#include <gtest/gtest.h>

#include <regex>

#include "server/probe_page.hpp"

namespace lse::server {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

probe::ProbeResult stalled_probe() {
  probe::ProbeResult r;
  r.id = "0123456789abcdef";
  r.ts = 1700000000;
  r.target = "openai-mini";
  r.model = "gpt-4o-mini";
  r.prompt = "short";
  r.host = "probe-1";
  r.ok = true;
  r.http_status = 200;
  r.phases[static_cast<int>(probe::Phase::connect)] = 0.01;
  r.phases[static_cast<int>(probe::Phase::headers)] = 0.2;
  r.phases[static_cast<int>(probe::Phase::first_token)] = 0.19;
  r.ttft = 0.4;
  r.gaps = {0.02, 0.6, 0.03, 0.25, 0.01};  // 0.6 and 0.25 are stalls at 250 ms
  r.chunks = 6;
  r.stalls = 2;
  r.stall_seconds = 0.85;
  r.stall_threshold = 0.25;
  r.gap_p50 = 0.03;
  r.gap_p95 = 0.6;
  r.gap_max = 0.6;
  r.tail = 0.005;
  r.duration = 1.4;
  r.prompt_tokens = 12;
  r.completion_tokens = 5;
  r.finish_reason = "stop";
  return r;
}

TEST(ProbePage, IdentityOutcomeClockAndPhases) {
  const std::string html = render_probe_page(stalled_probe());
  for (const char* text :
       {"probe 0123456789abcdef", "openai-mini", "gpt-4o-mini", "probe-1",
        "2023-11-14 22:13:20 UTC", "<td class=\"ok\">ok</td>", "400.0 ms", "600.0 ms", "1.40 s",
        "stop", "12 / 5", "first_token", "50%", "api/v1/probes?id=0123456789abcdef"})
    EXPECT_NE(html.find(text), std::string::npos) << text;
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(ProbePage, GapTimelineMarksStallsAndTheThreshold) {
  const std::string html = render_probe_page(stalled_probe());
  EXPECT_EQ(count(html, "<rect class=\"gap\""), 3u);
  EXPECT_EQ(count(html, "<rect class=\"stall\""), 2u);  // a gap equal to the threshold is one
  EXPECT_EQ(count(html, "<line class=\"threshold\""), 1u);
  EXPECT_NE(html.find("stall threshold 250.0 ms"), std::string::npos);
  EXPECT_NE(html.find("<title>gap 2: 600.0 ms (stall)</title>"), std::string::npos);

  // Bar heights follow the gaps and the threshold line sits at 250 ms on the same scale.
  const std::regex bar(
      R"re(<rect class="(gap|stall|together)" x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)")re");
  std::vector<double> heights;
  double bottom = 0;
  for (std::sregex_iterator it(html.begin(), html.end(), bar), end; it != end; ++it) {
    heights.push_back(std::stod((*it)[3]));
    bottom = std::stod((*it)[2]) + heights.back();
  }
  ASSERT_EQ(heights.size(), 5u);
  EXPECT_NEAR(heights[1] / heights[0], 0.6 / 0.02, 0.01 * 30);
  std::smatch line;
  ASSERT_TRUE(std::regex_search(html, line,
                                std::regex(R"re(<line class="threshold"[^>]* y1="([0-9.]+)")re")));
  EXPECT_NEAR(bottom - std::stod(line[1]), heights[3], 0.02);  // the 250 ms bar reaches it
}

TEST(ProbePage, EverythingIsEscapedAndNothingIsLoaded) {
  auto r = stalled_probe();
  r.id = "<id>&\"";
  r.target = "<script>alert(1)</script>";
  r.model = "m\"'";
  r.ok = false;
  r.reason = probe::FailureReason::http_5xx;
  r.error_detail = "upstream said <b>\"no\"</b>";
  const std::string html = render_probe_page(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>\"no\"</b>"), std::string::npos);
  EXPECT_NE(html.find("upstream said &lt;b&gt;&quot;no&quot;&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("m&quot;&#39;"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"fail\">http_5xx</td>"), std::string::npos);
  EXPECT_NE(html.find("probe &lt;id&gt;&amp;&quot;"), std::string::npos);
  EXPECT_NE(html.find("api/v1/probes?id=%3Cid%3E%26%22"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
}

TEST(ProbePage, FewerThanTwoChunksHaveNoTimeline) {
  auto r = stalled_probe();
  r.gaps.clear();
  r.gap_p50.reset();
  r.gap_p95.reset();
  r.gap_max.reset();
  r.stalls = 0;
  const std::string html = render_probe_page(r);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("data-verdict=\"ok\""), std::string::npos);
  EXPECT_NE(html.find("No gaps"), std::string::npos);
}

// A hop that held the stream: 60 chunks, 50 of them in their predecessor's read.
probe::ProbeResult held_probe() {
  auto r = stalled_probe();
  r.chunks = 60;
  r.gaps.assign(59, 0.02);
  for (std::size_t i = 0; i < 50; ++i) r.gaps[i + 5] = 0;  // gaps 6..55 are 0 ms
  r.coalesced_chunks = 50;
  r.stalls = 0;
  r.gap_max = 0.02;
  return r;
}

TEST(ProbePage, TheVerdictAndItsEvidenceComeFirst) {
  const std::string stalled = render_probe_page(stalled_probe());
  const auto banner = stalled.find("<p class=\"banner\" data-verdict=\"stalling\">");
  ASSERT_NE(banner, std::string::npos) << stalled;
  EXPECT_LT(banner, stalled.find("<h2"));
  EXPECT_NE(stalled.find("2 stalls among 5 gaps (max gap 600.0 ms)"), std::string::npos);

  const std::string held = render_probe_page(held_probe());
  EXPECT_NE(held.find("data-verdict=\"buffered\""), std::string::npos);
  EXPECT_NE(held.find("transport: 50 of 59 chunks arrived together"), std::string::npos);

  auto failed = stalled_probe();
  failed.ok = false;
  failed.reason = probe::FailureReason::http_5xx;
  failed.http_status = 503;
  EXPECT_NE(render_probe_page(failed).find("data-verdict=\"failing\""), std::string::npos);
}

TEST(ProbePage, ZeroMsGapsAreDrawnAndCounted) {
  const std::string html = render_probe_page(held_probe());
  // 50 bars of their own, each visible (a fixed height), and the count said in words.
  EXPECT_EQ(count(html, "<rect class=\"together\""), 50u);
  EXPECT_EQ(count(html, "<rect class=\"gap\""), 9u);
  const std::regex held_bar(R"re(<rect class="together" [^>]*height="([0-9.]+)")re");
  for (std::sregex_iterator it(html.begin(), html.end(), held_bar), end; it != end; ++it)
    EXPECT_GE(std::stod((*it)[1]), 3.0);
  EXPECT_NE(html.find("data-together=\"50\""), std::string::npos);
  EXPECT_NE(html.find("59 gaps: <b>50</b> of 0 ms"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>came with the one before</th><td>50 of 59</td></tr>"),
            std::string::npos);
}

TEST(ProbePage, ChunkArrivalsSitOnATimeAxis) {
  const auto r = stalled_probe();  // TTFT 400 ms, 6 chunks, 1.40 s
  const std::string html = render_probe_page(r);
  ASSERT_NE(html.find("<svg class=\"arrivals\""), std::string::npos);
  // Ticks every 200 ms from 0 to past the 1.40 s end.
  for (const char* label : {">0 ms</text>", ">200 ms</text>", ">1000 ms</text>", ">1400 ms</text>"})
    EXPECT_NE(html.find(label), std::string::npos) << label;
  // One tick per chunk, none together, and one band per stall.
  std::smatch ticks;
  ASSERT_TRUE(std::regex_search(html, ticks, std::regex(R"re(<path class="ticks" d="([^"]*)")re")));
  EXPECT_EQ(count(ticks[1], "M"), 6u);
  EXPECT_EQ(count(html, "<rect class=\"band\""), 2u);
  EXPECT_NE(html.find("<title>stall before chunk 3: 600.0 ms</title>"), std::string::npos);
}

TEST(ProbePage, AHugeRowIsSummarisedAndLinksToTheFullRow) {
  auto r = stalled_probe();
  r.chunks = 100001;
  r.gaps.assign(100000, 0.02);
  for (std::size_t i = 999; i < r.gaps.size(); i += 1000) r.gaps[i] = 0.5;  // 100 stalls
  for (std::size_t i = 0; i < r.gaps.size(); i += 10) r.gaps[i] = 0;        // 10,000 together
  r.stalls = 100;
  r.duration = 2100;
  const std::string html = render_probe_page(r);
  EXPECT_LT(html.size(), 300u * 1024) << "the page of a 100,000-chunk row";
  ::testing::Test::RecordProperty("page_bytes", static_cast<int>(html.size()));
  EXPECT_NE(html.find("data-summarised=\"1\""), std::string::npos);
  EXPECT_NE(html.find("<a href=\"api/v1/probes?id=0123456789abcdef\">the full row (JSON)</a>"),
            std::string::npos);
  // The counts stay exact when the bars are binned.
  EXPECT_NE(html.find("data-gaps=\"100000\" data-together=\"10000\" data-stalls=\"100\""),
            std::string::npos);
  EXPECT_EQ(count(html, "<rect class=\"stall\""), 100u);    // one bin per stall here
  EXPECT_LE(count(html, "<rect class="), 500u + 100u + 1);  // bins, stall bands, the wait

  // At the limit the page is still drawn gap by gap.
  r.gaps.resize(kProbePageDetailedGaps);
  const std::string detailed = render_probe_page(r);
  EXPECT_EQ(detailed.find("data-summarised"), std::string::npos);
  EXPECT_LT(detailed.size(), 300u * 1024);
}

TEST(ProbePage, TheTargetsDiagnosisInThreeStates) {
  const auto r = stalled_probe();  // openai-mini, prompt "short"
  TargetStatus t{"openai-mini", "gpt-4o-mini", "http://x", {"short"}, 30, {}, {}};
  TargetStatus::PromptDiagnosis d;
  d.prompt = "short";
  d.window.probes = 7;
  for (auto shape : report::kAllShapes)
    d.verdicts.push_back({shape, report::Answer::not_holds, true, "ruled out", {}, {}});
  d.verdicts[0] = {
      report::Shape::queue, report::Answer::cannot_tell, true, "hidden <by> a hop", {}, {}};
  d.verdicts[4] = {
      report::Shape::generation, report::Answer::holds, true, "the source paused", {}, {}};
  t.prompt_diagnosis = {d};
  const std::string html = render_probe_page(r, {t});
  EXPECT_NE(html.find("its 7 recent successful probes"), std::string::npos);
  EXPECT_NE(html.find("<tr data-shape=\"queue\" data-answer=\"cannot tell\"><td class=\"mark "
                      "a-unknown\">[?]</td><th>queue</th><td>hidden &lt;by&gt; a hop</td></tr>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"mark a-holds\">[x]</td><th>generation</th>"), std::string::npos);
  EXPECT_EQ(count(html, "<td class=\"mark\">[ ]</td>"), 3u);
  // Another prompt's diagnosis is not this probe's.
  t.prompt_diagnosis[0].prompt = "long";
  EXPECT_EQ(render_probe_page(r, {t}).find("data-answer"), std::string::npos);
}

}  // namespace
}  // namespace lse::server
