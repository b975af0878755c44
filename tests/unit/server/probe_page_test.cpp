// The page of one probe: what it shows, the gap timeline's bars and stall
// threshold, escaping of everything that came from config or upstream, no
// external assets; and the landing page's link to it.
#include <gtest/gtest.h>

#include <regex>

#include "server/landing_page.hpp"

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
      R"re(<rect class="(gap|stall)" x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)")re");
  std::vector<double> heights;
  double bottom = 0;
  for (std::sregex_iterator it(html.begin(), html.end(), bar), end; it != end; ++it) {
    heights.push_back(std::stod((*it)[3]));
    bottom = std::stod((*it)[2]) + heights.back();
  }
  ASSERT_EQ(heights.size(), 5u);
  EXPECT_NEAR(heights[1] / heights[0], 0.6 / 0.02, 0.01 * 30);
  std::smatch line;
  ASSERT_TRUE(std::regex_search(html, line, std::regex(R"re(y1="([0-9.]+)")re")));
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
  EXPECT_EQ(html.find("<b>"), std::string::npos);
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
  EXPECT_NE(html.find("No gaps"), std::string::npos);
}

TEST(ProbePage, TheLandingPageLinksToIt) {
  std::vector<TargetStatus> targets{{"a", "m", "http://a", {"p"}, 30, {}},
                                    {"b", "m", "http://b", {"p"}, 30, {}}};
  auto with_id = stalled_probe();
  with_id.target = "a";
  auto without = stalled_probe();
  without.target = "b";
  without.id.clear();
  without.ok = false;
  without.reason = probe::FailureReason::connect;
  without.http_status = 0;
  const std::string html =
      render_landing_page(targets, {{"a", with_id}, {"b", without}}, 1700000100);
  EXPECT_NE(html.find("<td class=\"ok\"><a href=\"probe?id=0123456789abcdef\">ok</a></td>"),
            std::string::npos);
  EXPECT_EQ(count(html, "probe?id="), 1u);
  EXPECT_NE(html.find(">connect</td>"), std::string::npos);
}

TEST(LandingPage, ShowsTheDiagnosisAndChunksThatCameTogether) {
  TargetStatus t{"gz", "m", "http://gz", {"short", "long"}, 30, {}};
  t.diagnosis = {"short: transport", "long: no verdict yet <5>"};
  probe::ProbeResult held;  // a buffered answer: 25 chunks, 24 in their predecessor's read
  held.id = "0123456789abcdef";
  held.target = "gz";
  held.ok = true;
  held.ts = 1700000000;
  held.chunks = 25;
  held.coalesced_chunks = 24;
  held.ttft = 2.0;
  held.duration = 2.01;
  probe::ProbeResult cadence = held;  // the same at its own pace
  cadence.target = "direct";
  cadence.coalesced_chunks = 0;
  cadence.ttft = 0.1;
  TargetStatus d{"direct", "m", "http://d", {"short"}, 30, {}};
  const std::string html =
      render_landing_page({t, d}, {{"gz", held}, {"direct", cadence}}, 1700000100);
  EXPECT_NE(html.find("<th>diagnosis</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>short: transport<br>long: no verdict yet &lt;5&gt;</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td>24 of 24 (all at once)</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>0 of 24</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>-</td><td class=\"ok\">"), std::string::npos) << html;  // no diagnosis
}

}  // namespace
}  // namespace lse::server
