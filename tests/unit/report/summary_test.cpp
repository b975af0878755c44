// Summary: grouping by target+prompt in config order, p50/p95/max per field,
// warmups counted and left out, failures by reason, both renderings.
#include "report/summary.hpp"

#include <gtest/gtest.h>

#include "report/stats.hpp"
#include "report_fixtures.hpp"

namespace lse::report {
namespace {

using testing::failed;
using testing::planted;
using testing::repeat;

TEST(ReportStats, NearestRankPercentiles) {
  EXPECT_FALSE(percentile({}, 0.5).has_value());
  std::vector<double> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(*percentile(v, 0.50), 10);
  EXPECT_EQ(*percentile(v, 0.95), 19);
  const Spread s = spread_of(v);
  EXPECT_EQ(s.n, 20u);
  EXPECT_EQ(s.p50, 10);
  EXPECT_EQ(s.p95, 19);
  EXPECT_EQ(s.max, 20);
  EXPECT_EQ(spread_of({}).n, 0u);
}

std::vector<probe::ProbeResult> experiment() {
  std::vector<probe::ProbeResult> rs;
  auto warm = planted(9.0, repeat(0.02, 5), 0, "svc", "short");
  warm.warmup = true;
  rs.push_back(warm);
  for (int i = 1; i <= 20; ++i)
    rs.push_back(planted(0.1 * i, repeat(0.02, 10), 0.005, "svc", "short"));
  for (int i = 0; i < 5; ++i) rs.push_back(planted(0.2, repeat(0.03, 3), 0, "svc", "long"));
  rs.push_back(failed(probe::FailureReason::timeout_idle, "svc", "long"));
  rs.push_back(failed(probe::FailureReason::connect, "other", "short"));
  return rs;
}

TEST(ReportSummary, GroupsInGivenOrderAndSkipsWarmup) {
  const Summary s = summarize(experiment(), {}, {{"svc", "long"}, {"svc", "short"}});
  ASSERT_EQ(s.series.size(), 3u);
  EXPECT_EQ(s.series[0].prompt, "long");
  EXPECT_EQ(s.series[1].prompt, "short");
  EXPECT_EQ(s.series[2].target, "other");
  EXPECT_EQ(s.warmup_discarded, 1u);
  EXPECT_EQ(s.runs, 27u);
  EXPECT_EQ(s.ok, 25u);
  EXPECT_EQ(s.failures.at(probe::FailureReason::timeout_idle), 1u);
  EXPECT_EQ(s.failures.at(probe::FailureReason::connect), 1u);

  const auto& shortp = s.series[1];
  EXPECT_EQ(shortp.runs, 20u);
  const Spread& ttft = shortp.field(Field::ttft);
  EXPECT_NEAR(ttft.p50, 1.0, 1e-9);  // 10th of 0.1..2.0
  EXPECT_NEAR(ttft.p95, 1.9, 1e-9);  // 19th
  EXPECT_NEAR(ttft.max, 2.0, 1e-9);  // the 9 s warmup is not in it
  EXPECT_EQ(shortp.field(Field::chunks).p50, 11);
  EXPECT_NEAR(shortp.field(Field::tail).p50, 0.005, 1e-9);
  EXPECT_EQ(shortp.field(Field::tokens_per_second).n, 0u);  // no usage
  EXPECT_EQ(shortp.probes.size(), 20u);

  EXPECT_EQ(s.series[0].failures.at(probe::FailureReason::timeout_idle), 1u);
  EXPECT_EQ(s.series[0].ok, 5u);
}

TEST(ReportSummary, ExplainedTableNamesEveryFieldAndTheFailures) {
  const Summary s = summarize(experiment(), {});
  const std::string t = render_table(s, {.explain = true});
  for (const char* f : {"ttft", "duration", "tail", "chunks", "stalls", "gap_p50", "gap_p95",
                        "gap_max", "tokens/s", "tokens/chunk"})
    EXPECT_NE(t.find(std::string("\n  ") + f + " "), std::string::npos) << f;
  EXPECT_NE(t.find("target other  model m  prompt short  (1 run, 0 ok)\n  no successful run: "
                   "nothing measured"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("failures: connect 1 (first: connect 127.0.0.1: Connection refused)"),
            std::string::npos);
  EXPECT_NE(
      t.find("total: 27 runs, 25 ok, 2 failed (connect 1, timeout_idle 1); 1 warmup run discarded"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find("diagnosis: no verdict"), std::string::npos);  // "other" has no successful probe
}

TEST(ReportSummary, JsonUsesRowUnits) {
  const Summary s = summarize(experiment(), {});
  const std::string j = json::dump(to_json(s));
  EXPECT_NE(j.find("\"warmup_discarded\":1"), std::string::npos);
  EXPECT_NE(j.find("\"ttft_ms\":{\"n\":20,\"p50\":1000"), std::string::npos) << j.substr(0, 600);
  EXPECT_NE(j.find("\"tokens_per_second\":null"), std::string::npos);
  EXPECT_NE(j.find("\"failures\":{\"connect\":1"), std::string::npos);
  EXPECT_NE(j.find("\"shape\":\"shared_capacity\""), std::string::npos);
}

// A queue behind a buffer that delivers the whole answer at once: the queue
// cannot be told, which JSON says as null and the table as [?].
TEST(ReportSummary, CannotTellIsNullAndAQuestionMark) {
  std::vector<probe::ProbeResult> probes;
  for (int i = 0; i < 6; ++i) probes.push_back(planted(3.5, repeat(0.0, 40)));
  const Summary s = summarize(probes, {});
  const std::string j = json::dump(to_json(s));
  EXPECT_NE(j.find("{\"shape\":\"queue\",\"holds\":null,"), std::string::npos) << j;
  EXPECT_NE(j.find("{\"shape\":\"transport\",\"holds\":true,"), std::string::npos) << j;
  EXPECT_NE(j.find("{\"shape\":\"long_answer\",\"holds\":false,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"verdict\":\"transport, queue?, generation?\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"evidence\":\"6 of 6 answers arrived all at once"), std::string::npos) << j;
  EXPECT_NE(render_table(s, {.explain = true}).find("    [?] queue "), std::string::npos);
  EXPECT_NE(
      render_table(s, {.explain = true}).find("  diagnosis: transport, queue?, generation?\n"),
      std::string::npos);
  // The short table: the verdict column, then the evidence of each shape that
  // holds or cannot be told.
  const std::string t = render_table(s);
  EXPECT_NE(t.find("  transport, queue?, generation?\n"
                   "    queue (cannot tell): TTFT p50 3.50 s, but each answer came at once"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("\n    transport: 6 of 6 answers arrived all at once (240 of 240 chunks arrived "
                   "together); no stall\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("\n    generation (cannot tell): each answer came at once"), std::string::npos)
      << t;
}

// The short table: a header, one line per series, one of evidence per verdict
// that holds (and per series with failures), the total; nothing over 120 columns.
TEST(ReportSummary, ShortTableIsOneLinePerSeriesAndOnePerVerdict) {
  config::DiagnosisThresholds spread;
  spread.spread_ratio = 1.5;
  const Summary s = summarize(experiment(), spread, {{"svc", "long"}, {"svc", "short"}});
  const std::string t = render_table(s);
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = t.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(t.substr(at, nl - at));
  // svc/long: 5 ok + 1 failure (a failures line); svc/short: TTFT 0.1..2.0 s
  // (shared capacity, one evidence line); other/short: no successful run.
  ASSERT_EQ(lines.size(), 1u + 3u + 1u + 1u + 1u + 1u) << t;
  EXPECT_EQ(lines[0],
            "target  prompt  runs ok   TTFT p50   TTFT p95    gap p95  worst gap  stalls  verdict");
  EXPECT_EQ(lines[1],
            "svc     long        5/6   200.0 ms   200.0 ms    30.0 ms    30.0 ms       0  none");
  EXPECT_EQ(lines[2].rfind("    failures: timeout_idle 1", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3],
            "svc     short     20/20     1.00 s     1.90 s    20.0 ms    20.0 ms       0  "
            "shared capacity");
  EXPECT_EQ(lines[4], "    shared capacity: TTFT p95/p50 1.9 (1.90 s / 1.00 s) > 1.5") << t;
  EXPECT_EQ(lines[5],
            "other   short       0/1          -          -          -          -       -  failing");
  EXPECT_EQ(lines[6].rfind("    failures: connect 1 (first: connect 127.0.0.1:", 0), 0u);
  EXPECT_EQ(lines[7],
            "total: 27 runs, 25 ok, 2 failed (connect 1, timeout_idle 1); 1 warmup run discarded; "
            "--explain shows every rule");
  for (const auto& l : lines) EXPECT_LE(l.size(), 120u) << l;
}

// The view: the strings every renderer lays out are made once, from the
// figures, and failure reasons (an enum) are listed by name.
TEST(ReportSummary, ViewHoldsTheStringsReadersSee) {
  auto rs = experiment();
  rs.push_back(failed(probe::FailureReason::empty, "svc", "long"));
  rs.push_back(failed(probe::FailureReason::empty, "svc", "long"));
  const Summary s = summarize(rs, {}, {{"svc", "long"}, {"svc", "short"}});
  // Enum order would be connect, timeout_idle, empty: readers get names in order.
  EXPECT_EQ(s.failures_text, "connect 1, empty 2, timeout_idle 1");
  EXPECT_EQ(s.series[0].failures_text, "empty 2, timeout_idle 1");
  EXPECT_EQ(join_failures(s.series[0].failure_list, " ×"), "empty ×2, timeout_idle ×1");
  const auto& shortp = s.series[1];
  EXPECT_EQ(shortp.cell(Field::ttft).p50, "1.00 s");
  EXPECT_EQ(shortp.cell(Field::ttft).p95, "1.90 s");
  EXPECT_EQ(shortp.cell(Field::chunks).max, "11");
  EXPECT_EQ(shortp.cell(Field::tokens_per_second).n, 0u);
  EXPECT_EQ(shortp.cell(Field::tokens_per_second).p50, "");
  EXPECT_EQ(shortp.shapes, shapes_held(shortp.diagnosis));
  EXPECT_EQ(shortp.stall_threshold_text, "250.0 ms");
  EXPECT_EQ(shortp.model_label, "m");
  // The table and the JSON show the same view.
  const std::string t = render_table(s, {.explain = true});
  EXPECT_NE(t.find("  ttft              1.00 s      1.90 s      2.00 s\n"), std::string::npos) << t;
  EXPECT_NE(t.find("total: 29 runs, 25 ok, 4 failed (connect 1, empty 2, timeout_idle 1)"),
            std::string::npos)
      << t;
  EXPECT_NE(
      json::dump(to_json(s)).find("\"failures\":{\"connect\":1,\"empty\":2,\"timeout_idle\":1}"),
      std::string::npos);
}

// A server that sends 4 tokens per chunk: every output says so, from the
// one note summarize() made, and shows the field beside tokens/s.
TEST(ReportSummary, TokensPerChunkNoteInEveryOutput) {
  std::vector<probe::ProbeResult> rs;
  for (int i = 0; i < 5; ++i) {
    auto r = planted(0.2, repeat(0.02, 9), 0, "vllm", "short");
    r.completion_tokens = 40;  // 10 chunks
    r.tokens_per_chunk = probe::tokens_per_chunk({40, -1, r.chunks, 0, false});
    rs.push_back(r);
    rs.push_back(planted(0.2, repeat(0.02, 9), 0, "plain", "short"));  // no usage: no note
  }
  const Summary s = summarize(rs, {});
  ASSERT_EQ(s.series.size(), 2u);
  const SeriesSummary& batched = s.series[1];
  ASSERT_EQ(batched.target, "vllm");
  ASSERT_EQ(batched.notes.size(), 1u);
  EXPECT_TRUE(s.series[0].notes.empty());
  EXPECT_EQ(batched.cell(Field::tokens_per_chunk).p50, "4");
  EXPECT_EQ(batched.field(Field::tokens_per_chunk).n, 5u);
  const std::string note =
      "note: the server sends 4 tokens per chunk: gaps are per chunk, not per token (tokens/s "
      "stays right)\n";
  const std::string t = render_table(s);
  const auto at = t.find("vllm ");
  ASSERT_NE(at, std::string::npos) << t;
  EXPECT_NE(t.find("    " + note, at), std::string::npos) << t;
  EXPECT_EQ(t.find(note), t.rfind(note)) << t;  // once: the plain series has none
  const std::string x = render_table(s, {.explain = true});
  EXPECT_NE(x.find("\n  " + note), std::string::npos) << x;
  EXPECT_NE(x.find("  tokens/chunk           4           4           4\n"), std::string::npos) << x;
  const std::string j = json::dump(to_json(s));
  EXPECT_NE(j.find(R"("tokens_per_chunk":{"n":5,"p50":4.0,"p95":4.0,"max":4.0})"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("notes":[{"note":"tokens_per_chunk","text":"the server sends 4 tokens)"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("notes":[])"), std::string::npos) << j;
}

TEST(ReportSummary, ShapesHeldInWords) {
  std::vector<Verdict> v(4);
  for (std::size_t i = 0; i < 4; ++i) v[i].shape = kAllShapes[i];
  EXPECT_EQ(shapes_held(v), "none");
  v[1].answer = v[2].answer = Answer::holds;
  v[3].answer = Answer::cannot_tell;  // not held: not listed
  EXPECT_EQ(shapes_held(v), "transport, long answer");
  v[0].enough_probes = false;
  EXPECT_EQ(shapes_held(v), "no verdict");
}

}  // namespace
}  // namespace lse::report
