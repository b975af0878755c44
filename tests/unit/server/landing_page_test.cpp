// The landing page: the verdict first and coloured, its evidence beside it,
// a target whose probes stall never "ok", names opening the last probe's
// page, long endpoints shortened with the full one on hover, numbers that do
// not wrap, the diagnosis per prompt, escaping.
#include <gtest/gtest.h>

#include <regex>

#include "server/landing_page.hpp"
#include "server/page_verdict.hpp"

namespace lse::server {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A healthy probe: 40 chunks at 25 ms, no stall.
probe::ProbeResult healthy_probe(const std::string& target) {
  probe::ProbeResult r;
  r.id = "00000000000000a1";
  r.ts = 1700000000;
  r.target = target;
  r.ok = true;
  r.ttft = 0.1503;
  r.chunks = 40;
  r.gaps.assign(39, 0.025);
  r.gap_p95 = 0.025;
  r.gap_max = 0.025;
  r.duration = 1.2;
  return r;
}

// The demo's pausing-model: 60 chunks at its own pace, two stalls (450 and 700 ms).
probe::ProbeResult pausing_probe(const std::string& target) {
  auto r = healthy_probe(target);
  r.id = "00000000000000b2";
  r.chunks = 60;
  r.gaps.assign(59, 0.02);
  r.gaps[14] = 0.45;
  r.gaps[39] = 0.7;
  r.stalls = 2;
  r.stall_details = {{15, 0.45, 0}, {40, 0.7, 0}};
  r.gap_p95 = 0.03;
  r.gap_max = 0.7;
  return r;
}

TargetStatus target(const std::string& name, const std::string& url = "http://127.0.0.1:1/v1") {
  return TargetStatus{name, "demo-model", url, {"short"}, 5, {"short: none"}, {}};
}

// A prompt's diagnosis where nothing holds, over `probes` probes of which `stalled` stalled.
TargetStatus::PromptDiagnosis window(std::size_t probes, std::size_t stalled) {
  TargetStatus::PromptDiagnosis d;
  d.prompt = "short";
  d.window.probes = probes;
  d.window.stalled_probes = stalled;
  for (auto shape : report::kAllShapes)
    d.verdicts.push_back({shape, report::Answer::not_holds, true, "no", {}, {}});
  return d;
}

std::string row_of(const std::string& html, const std::string& name) {
  const auto at = html.find(" data-target=\"" + name + "\"");
  if (at == std::string::npos) return {};
  return html.substr(at, html.find("</tr>", at) - at);
}

TEST(LandingPage, AStallingTargetIsNeverOk) {
  auto paused = target("pausing-model");
  paused.prompt_diagnosis = {window(5, 5)};
  auto healthy = target("healthy");
  healthy.prompt_diagnosis = {window(5, 0)};
  const std::string html = render_landing_page(
      {paused, healthy},
      {{"pausing-model", pausing_probe("pausing-model")}, {"healthy", healthy_probe("healthy")}},
      1700000010);
  const std::string row = row_of(html, "pausing-model");
  ASSERT_FALSE(row.empty()) << html;
  EXPECT_NE(row.find("data-verdict=\"stalling\""), std::string::npos) << row;
  // The verdict is the first cell, coloured, the evidence beside it.
  EXPECT_NE(row.find("><td><span class=\"verdict v-stalling\""), std::string::npos) << row;
  // Figures never break from their unit.
  EXPECT_NE(row.find("stalls in 5 of 5 recent probes; last: 2 stalls among 59 gaps (max gap "
                     "700.0&nbsp;ms)"),
            std::string::npos)
      << row;
  EXPECT_EQ(row.find("v-ok"), std::string::npos);
  EXPECT_NE(row_of(html, "healthy").find("data-verdict=\"ok\""), std::string::npos);

  // The last probe was clean, but earlier ones stalled: still not ok.
  paused.prompt_diagnosis = {window(5, 1)};
  const std::string later = render_landing_page(
      {paused}, {{"pausing-model", healthy_probe("pausing-model")}}, 1700000010);
  EXPECT_NE(later.find("data-verdict=\"stalling\""), std::string::npos);
  EXPECT_NE(later.find("stalls in 1 of 5 recent probes"), std::string::npos);
}

// The diagnosis' notes ride with their prompt's marks, escaped, and in the
// verdict's hover: gap figures of a batching server read per chunk.
TEST(LandingPage, ANoteShowsBesideItsPromptsDiagnosis) {
  auto batching = target("vllm<batched>");
  batching.prompt_diagnosis = {window(5, 0)};
  batching.prompt_diagnosis[0].notes = {
      {"tokens_per_chunk",
       "the server sends 4 tokens per chunk: gaps are per chunk & not per token",
       {{"tokens_per_chunk", 4.0}}}};
  auto plain = target("plain");
  plain.prompt_diagnosis = {window(5, 0)};
  const std::string html = render_landing_page(
      {batching, plain},
      {{"vllm<batched>", healthy_probe("vllm<batched>")}, {"plain", healthy_probe("plain")}},
      1700000010);
  const std::string row = row_of(html, "vllm&lt;batched&gt;");
  ASSERT_FALSE(row.empty()) << html;
  EXPECT_EQ(count(row,
                  "<span class=\"note\">the server sends 4 tokens per chunk: gaps are per chunk "
                  "&amp; not per token</span>"),
            1u)
      << row;
  EXPECT_EQ(row_of(html, "plain").find("class=\"note\""), std::string::npos);
  const auto last = healthy_probe("vllm<batched>");
  const PageVerdict v = target_verdict(batching, &last);
  EXPECT_NE(v.detail.find("short: the server sends 4 tokens per chunk"), std::string::npos)
      << v.detail;
}

TEST(LandingPage, BufferedQueueFailingAndWaiting) {
  auto held = healthy_probe("gz");
  held.chunks = 25;
  held.gaps.assign(24, 0);
  held.coalesced_chunks = 24;
  auto failed = healthy_probe("down");
  failed.ok = false;
  failed.reason = probe::FailureReason::http_5xx;
  failed.http_status = 503;
  failed.error_detail = "upstream said <no>";
  auto queued = target("queued");
  queued.prompt_diagnosis = {window(5, 0)};
  queued.prompt_diagnosis[0].verdicts[0] = {
      report::Shape::queue, report::Answer::holds, true, "TTFT p50 2.6 s", {}, {}};
  queued.prompt_diagnosis[0].window.ttft_p50 = 2.6;
  queued.prompt_diagnosis[0].window.gap_p95 = 0.015;
  const std::string html = render_landing_page(
      {target("gz"), target("down"), queued, target("new")},
      {{"gz", held}, {"down", failed}, {"queued", healthy_probe("queued")}}, 1700000010);
  EXPECT_NE(row_of(html, "gz").find("data-verdict=\"buffered\""), std::string::npos);
  EXPECT_NE(row_of(html, "gz").find("transport: 24 of 24 chunks arrived together"),
            std::string::npos);
  EXPECT_NE(row_of(html, "down").find("data-verdict=\"failing\""), std::string::npos);
  EXPECT_NE(row_of(html, "down").find("http_5xx (503): upstream said &lt;no&gt;"),
            std::string::npos);
  EXPECT_NE(row_of(html, "queued").find("data-verdict=\"queue\""), std::string::npos);
  EXPECT_NE(row_of(html, "queued").find("TTFT p50 2.60&nbsp;s while gap p95 is 15.0&nbsp;ms"),
            std::string::npos)
      << row_of(html, "queued");
  EXPECT_NE(row_of(html, "queued").find("title=\"short: queue: TTFT p50 2.6 s\""),
            std::string::npos);
  EXPECT_NE(row_of(html, "new").find("data-verdict=\"waiting\""), std::string::npos);
  EXPECT_NE(row_of(html, "new").find("no probe yet"), std::string::npos);
}

TEST(LandingPage, TheTargetNameOpensTheLastProbesPage) {
  auto without_id = healthy_probe("b");
  without_id.id.clear();
  const std::string html =
      render_landing_page({target("a"), target("b & c")},
                          {{"a", healthy_probe("a")}, {"b & c", without_id}}, 1700000010);
  EXPECT_NE(row_of(html, "a").find("<a class=\"name\" href=\"probe?id=00000000000000a1\" "
                                   "title=\"the last probe\">a</a>"),
            std::string::npos);
  EXPECT_NE(html.find("<a class=\"name\" href=\"api/v1/probes?target=b%20%26%20c\""),
            std::string::npos);
  EXPECT_EQ(count(html, "probe?id="), 1u);
  // The anchor a dashboard's data link opens (`<exporter>/#target-<name>`).
  EXPECT_NE(html.find("<tr id=\"target-a\" data-target=\"a\""), std::string::npos);
  EXPECT_NE(html.find("<tr id=\"target-b &amp; c\""), std::string::npos);
}

TEST(LandingPage, LongEndpointsAreShortenedAndNumbersDoNotWrap) {
  const std::string url =
      "https://a-very-long-gateway-name.internal.example.com/openai/deployments/"
      "gpt-4o-mini-2024-07-18/v1";
  const std::string html =
      render_landing_page({target("gw", url)}, {{"gw", healthy_probe("gw")}}, 1700000010);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      html, m, std::regex(R"re(<code class="endpoint" title="([^"]*)">([^<]*)</code>)re")));
  EXPECT_EQ(m[1], url);               // the full one on hover
  EXPECT_LE(m[2].length(), 40u + 2);  // "…" is 3 bytes
  EXPECT_NE(std::string(m[2]).find("…"), std::string::npos);
  EXPECT_EQ(std::string(m[2]).rfind("https://a-very-long-gate", 0), 0u);
  // Every figure of the last probe sits in a cell that does not wrap.
  for (const char* cell : {"<td class=\"num\">150.3 ms</td>", "<td class=\"num\">25.0 ms</td>",
                           "<td class=\"num\">0</td>", "<td class=\"num\">0 of 39</td>",
                           "<td class=\"num\">9s ago</td>"})
    EXPECT_NE(html.find(cell), std::string::npos) << cell;
  EXPECT_NE(html.find(".num{white-space:nowrap"), std::string::npos);
}

TEST(LandingPage, ShowsTheDiagnosisPerPromptEscaped) {
  auto t = target("gz");
  t.prompts = {"short", "long"};
  t.diagnosis = {"short: transport", "long: no verdict yet <5>"};
  const std::string html = render_landing_page({t}, {}, 1700000010);
  EXPECT_NE(
      html.find("<div class=\"sub\">short: transport<br>long: no verdict yet &lt;5&gt;</div>"),
      std::string::npos)
      << html;
}

TEST(LandingPage, TheDiagnosisShowsThreeStates) {
  auto t = target("gz");
  t.prompts = {"short", "long", "medium"};
  auto held = window(5, 0);  // transport holds, queue cannot be told, the rest ruled out
  held.verdicts[1] = {report::Shape::transport, report::Answer::holds, true, "held", {}, {}};
  held.verdicts[0] = {report::Shape::queue, report::Answer::cannot_tell, true, "hidden", {}, {}};
  auto clean = window(5, 0);
  clean.prompt = "long";
  auto young = window(2, 0);
  young.prompt = "medium";
  for (auto& v : young.verdicts) v = {v.shape, report::Answer::cannot_tell, false, "few", {}, {}};
  t.prompt_diagnosis = {held, clean, young};
  const std::string html = render_landing_page({t}, {}, 1700000010);
  EXPECT_NE(
      html.find("short: <span class=\"mark a-unknown\" title=\"hidden\">[?]</span>&nbsp;queue "
                "<span class=\"mark a-holds\" title=\"held\">[x]</span>&nbsp;transport<br>"
                "long: <span class=\"mark\">[ ]</span>&nbsp;none<br>"
                "medium: <span class=\"mark a-unknown\">[?]</span>&nbsp;too few probes yet"),
      std::string::npos)
      << html;
}

}  // namespace
}  // namespace lse::server

namespace lse::server {
namespace {

// "probe now" per target and prompt: the debug timeline of GET /probe,
// names URL-encoded in the query and the whole href HTML-escaped.
TEST(LandingPage, ProbeNowLinksPerPromptEncodedAndEscaped) {
  TargetStatus t;
  t.name = "a&b <x>";
  t.prompts = {"short", "lo ng"};
  t.interval_seconds = 60;
  const std::string page = render_landing_page({t}, {}, 1700000000);
  EXPECT_NE(page.find("probe now: <a class=\"probe-now\" "
                      "href=\"probe?target=a%26b%20%3Cx%3E&amp;prompt=short&amp;debug=true\""),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("href=\"probe?target=a%26b%20%3Cx%3E&amp;prompt=lo%20ng&amp;debug=true\""),
            std::string::npos)
      << page;
  EXPECT_EQ(count(page, "class=\"probe-now\""), 2u);
  EXPECT_EQ(page.find("<x>"), std::string::npos) << "unescaped name";
}

}  // namespace
}  // namespace lse::server
