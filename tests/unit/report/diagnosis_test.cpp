// The five shapes of DESIGN §7 on planted windows: each shape alone, the
// healthy window as none, and the cases that must not fool a rule (bursts
// are not ruled a queue nor "not a queue", one hiccup per long stream is not
// transport, a uniformly slow model is not transport, a pause at the source
// is generation and not transport, too few probes give no verdict).
#include "report/diagnosis.hpp"

#include <gtest/gtest.h>

#include "report_fixtures.hpp"

namespace lse::report {
namespace {

using testing::failed;
using testing::planted;
using testing::repeat;

std::vector<std::string> held(const std::vector<Verdict>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs)
    if (v.holds()) out.emplace_back(to_string(v.shape));
  return out;
}

double number(const Verdict& v, const std::string& name) {
  for (const auto& [k, x] : v.numbers)
    if (k == name) return x;
  ADD_FAILURE() << "no number " << name;
  return 0;
}

std::vector<probe::ProbeResult> window(int n, double ttft, const std::vector<double>& gaps,
                                       double tail = 0) {
  std::vector<probe::ProbeResult> w;
  for (int i = 0; i < n; ++i) w.push_back(planted(ttft, gaps, tail));
  return w;
}

const config::DiagnosisThresholds kDefaults{};

TEST(ReportDiagnosis, HealthyWindowIsNone) {
  std::vector<probe::ProbeResult> w;
  for (int i = 0; i < 20; ++i) {
    std::vector<double> gaps;
    for (int k = 0; k < 40; ++k) gaps.push_back(0.020 + 0.002 * ((i + k) % 5));  // 20..28 ms
    w.push_back(planted(0.3 + 0.01 * (i % 3), gaps, 0.002));
  }
  const auto v = diagnose(w, kDefaults);
  ASSERT_EQ(v.size(), 5u);
  EXPECT_TRUE(held(v).empty());
  for (const auto& x : v) EXPECT_TRUE(x.enough_probes);
  EXPECT_EQ(v[0].shape, Shape::queue);
  EXPECT_EQ(v[3].shape, Shape::shared_capacity);
  EXPECT_EQ(v[4].shape, Shape::generation);
}

TEST(ReportDiagnosis, QueueIsSlowFirstTokenWithTightGaps) {
  const auto v = diagnose(window(10, 3.0, repeat(0.02, 30)), kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"queue"});
  EXPECT_DOUBLE_EQ(number(v[0], "ttft_p50_seconds"), 3.0);
  EXPECT_NE(v[0].why.find("TTFT p50 3.00 s > 2.00 s"), std::string::npos) << v[0].why;
}

TEST(ReportDiagnosis, SlowFirstTokenWithWideGapsIsNotQueue) {
  const auto v = diagnose(window(10, 3.0, repeat(0.2, 30)), kDefaults);
  EXPECT_EQ(v[0].answer, Answer::not_holds);
}

TEST(ReportDiagnosis, TransportIsAFatGapTail) {
  // 4 events per read (three 0 gaps) every 80 ms: p50 0, p95 80 ms.
  std::vector<double> gaps;
  for (int k = 0; k < 40; ++k) gaps.push_back(k % 4 == 3 ? 0.08 : 0.0);
  const auto v = diagnose(window(8, 0.2, gaps), kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"transport"});
  EXPECT_GE(number(v[1], "gap_p95_ratio"), 4.0);
}

TEST(ReportDiagnosis, APauseAtTheSourceIsGenerationNotTransport) {
  // A direct upstream that pauses by itself: one 600 ms stall per stream,
  // then chunks at its 20 ms cadence again. Nothing was held on a path.
  std::vector<double> gaps = repeat(0.02, 30);
  gaps[10] = 0.6;  // p95 of 30 gaps is still 20 ms
  auto w = window(10, 0.2, gaps);
  const auto v = diagnose(w, kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"generation"});
  EXPECT_DOUBLE_EQ(number(v[4], "stalled_share"), 1.0);
  EXPECT_DOUBLE_EQ(number(v[4], "burst_stall_share"), 0.0);
  EXPECT_NE(v[4].why.find("0 of 10 stalls ended in a burst"), std::string::npos) << v[4].why;
  EXPECT_NE(v[1].why.find("nothing was released at once"), std::string::npos) << v[1].why;
}

TEST(ReportDiagnosis, StallsThatEndInABurstAreTransport) {
  // The same stall, but what the source sent meanwhile comes right behind
  // the chunk that ends it, in one read: a hop held it.
  std::vector<double> gaps = repeat(0.02, 30);
  gaps[10] = 0.6;
  for (std::size_t k = 11; k < 16; ++k) gaps[k] = 0.0;  // 5 chunks released with chunk 12
  const auto v = diagnose(window(10, 0.2, gaps), kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"transport"});
  EXPECT_DOUBLE_EQ(number(v[1], "burst_stall_share"), 1.0);
  EXPECT_NE(v[1].why.find("10 of 10 stalls ended in a burst"), std::string::npos) << v[1].why;
}

TEST(ReportDiagnosis, ReleaseThresholdsAreSettable) {
  // Three chunks right behind each stall: a burst by default (>= 2), not
  // with burst_chunks 4; then the same pauses are the source's.
  std::vector<double> gaps = repeat(0.02, 30);
  gaps[10] = 0.6;
  for (std::size_t k = 11; k < 14; ++k) gaps[k] = 0.0;
  const auto w = window(10, 0.2, gaps);
  EXPECT_EQ(held(diagnose(w, kDefaults)), std::vector<std::string>{"transport"});
  config::DiagnosisThresholds t;
  t.burst_chunks = 4;
  const auto v = diagnose(w, t);
  EXPECT_EQ(held(v), std::vector<std::string>{"generation"});
  EXPECT_NE(v[4].why.find("0 of 10 stalls ended in a burst (>= 4 chunks"), std::string::npos)
      << v[4].why;
  // Four bursts in ten: generation by default, transport when 40% is enough.
  std::vector<probe::ProbeResult> some;
  for (int i = 0; i < 10; ++i) {
    auto g = repeat(0.02, 30);
    g[10] = 0.6;
    some.push_back(planted(0.2, i < 4 ? gaps : g));
  }
  EXPECT_EQ(held(diagnose(some, kDefaults)), std::vector<std::string>{"generation"});
  t = {};
  t.release_share = 0.4;
  EXPECT_EQ(held(diagnose(some, t)), std::vector<std::string>{"transport"});
  EXPECT_DOUBLE_EQ(number(diagnose(some, t)[1], "release_share"), 0.4);
}

TEST(ReportDiagnosis, SomeBurstsAmongManyCadenceResumesIsGeneration) {
  // Four of ten streams' stalls end in a burst: under half, so the window's
  // stalls are the source's.
  std::vector<probe::ProbeResult> w;
  for (int i = 0; i < 10; ++i) {
    std::vector<double> gaps = repeat(0.02, 30);
    gaps[10] = 0.6;
    if (i < 4)
      for (std::size_t k = 11; k < 14; ++k) gaps[k] = 0.0;
    w.push_back(planted(0.2, gaps));
  }
  const auto v = diagnose(w, kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"generation"});
  EXPECT_DOUBLE_EQ(number(v[4], "burst_stall_share"), 0.4);
}

TEST(ReportDiagnosis, WholeAnswerInOneBurstIsTransportAndDoesNotRuleOutAQueue) {
  // A buffering proxy (nginx gzip): TTFT = generation time, every gap 0.
  // Whether the server also queued cannot be seen: say so, do not rule it out.
  const auto v = diagnose(window(6, 3.5, repeat(0.0, 40)), kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"transport"});
  // Not "does not hold": the queue and the source's pauses are hidden.
  EXPECT_EQ(v[0].answer, Answer::cannot_tell) << v[0].why;
  EXPECT_EQ(v[4].answer, Answer::cannot_tell) << v[4].why;
  EXPECT_EQ(v[2].answer, Answer::not_holds) << v[2].why;
  EXPECT_NE(v[0].why.find("one burst"), std::string::npos) << v[0].why;
  EXPECT_NE(v[0].why.find("cannot be seen from here"), std::string::npos) << v[0].why;
  EXPECT_EQ(v[0].why.find("not a queue"), std::string::npos) << v[0].why;
  EXPECT_NE(v[1].why.find("buffered: whether the server also queued cannot be seen"),
            std::string::npos)
      << v[1].why;
  EXPECT_DOUBLE_EQ(number(v[1], "all_at_once_share"), 1.0);
  EXPECT_DOUBLE_EQ(number(v[1], "coalesced_share"), 1.0);
}

TEST(ReportDiagnosis, ALongThinkThenANormalStreamIsQueueNotTransport) {
  // A reasoning model read directly: 6 s before the first chunk, then 30
  // chunks 20 ms apart, none together. The wait is 91% of the duration, but
  // no chunk was held: queue, never transport nor an answer all at once.
  const auto v = diagnose(window(8, 6.0, repeat(0.02, 29)), kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"queue"}) << v[1].why;
  EXPECT_EQ(v[1].answer, Answer::not_holds) << v[1].why;
  EXPECT_EQ(v[4].answer, Answer::not_holds) << v[4].why;
  EXPECT_DOUBLE_EQ(number(v[1], "all_at_once_share"), 0.0);
  EXPECT_FALSE(is_all_at_once(planted(6.0, repeat(0.02, 29))));
  // The same 30 chunks held and released together are all at once.
  EXPECT_TRUE(is_all_at_once(planted(6.0, repeat(0.0, 29))));
}

TEST(ReportDiagnosis, SingleChunkAnswersCannotTellTransportOrGeneration) {
  const auto v = diagnose(window(6, 0.3, {}), kDefaults);
  EXPECT_EQ(v[1].answer, Answer::cannot_tell) << v[1].why;
  EXPECT_EQ(v[4].answer, Answer::cannot_tell) << v[4].why;
  EXPECT_EQ(v[0].answer, Answer::not_holds) << v[0].why;  // TTFT is seen: no queue
}

TEST(ReportDiagnosis, AnswersReadAsMarks) {
  EXPECT_EQ(mark(Answer::holds), "[x]");
  EXPECT_EQ(mark(Answer::not_holds), "[ ]");
  EXPECT_EQ(mark(Answer::cannot_tell), "[?]");
  EXPECT_EQ(to_string(Answer::cannot_tell), "cannot tell");
}

TEST(ReportDiagnosis, OneSchedulingHiccupPerLongStreamIsNotTransport) {
  std::vector<double> gaps = repeat(0.01, 300);
  gaps[150] = 0.05;  // 5 x p50, but far below a stall
  const auto v = diagnose(window(10, 0.1, gaps), kDefaults);
  EXPECT_TRUE(held(v).empty()) << v[1].why;
}

TEST(ReportDiagnosis, UniformlySlowGapsAreNotTransport) {
  // Every gap >= the stall threshold: a slow model, not a buffering path.
  const auto v = diagnose(window(10, 0.3, repeat(0.3, 20)), kDefaults);
  EXPECT_EQ(v[1].answer, Answer::not_holds) << v[1].why;
}

TEST(ReportDiagnosis, LongAnswerIsFlatButLong) {
  const auto v = diagnose(window(6, 0.4, repeat(0.03, 900)), kDefaults);  // ~27 s
  EXPECT_EQ(held(v), std::vector<std::string>{"long_answer"});
  EXPECT_GT(number(v[2], "duration_p50_seconds"), 20.0);
  EXPECT_DOUBLE_EQ(number(v[2], "chunks_p50"), 901);
}

TEST(ReportDiagnosis, LongAndBurstyIsTransportOnly) {
  std::vector<double> gaps;
  for (int k = 0; k < 900; ++k) gaps.push_back(k % 10 == 9 ? 0.3 : 0.0);
  const auto v = diagnose(window(6, 0.4, gaps), kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"transport"});
}

TEST(ReportDiagnosis, SharedCapacityIsWideSpreadOfIdenticalRuns) {
  std::vector<probe::ProbeResult> w;
  for (int i = 0; i < 20; ++i) w.push_back(planted(i % 4 == 3 ? 1.5 : 0.1, repeat(0.02, 20)));
  const auto v = diagnose(w, kDefaults);
  EXPECT_EQ(held(v), std::vector<std::string>{"shared_capacity"});
  EXPECT_NEAR(number(v[3], "ttft_spread_ratio"), 15.0, 1e-9);
}

TEST(ReportDiagnosis, ThresholdsAreSettable) {
  auto w = window(10, 1.2, repeat(0.02, 20));
  EXPECT_TRUE(held(diagnose(w, kDefaults)).empty());
  config::DiagnosisThresholds t;
  t.queue_ttft_seconds = 1.0;
  EXPECT_EQ(held(diagnose(w, t)), std::vector<std::string>{"queue"});
}

TEST(ReportDiagnosis, TooFewSuccessfulProbesGiveNoVerdict) {
  auto w = window(4, 3.0, repeat(0.02, 20));
  for (int i = 0; i < 10; ++i) w.push_back(failed(probe::FailureReason::connect));
  auto warm = planted(3.0, repeat(0.02, 20));
  warm.warmup = true;
  w.push_back(warm);
  const auto v = diagnose(w, kDefaults);
  for (const auto& x : v) {
    EXPECT_EQ(x.answer, Answer::cannot_tell);
    EXPECT_FALSE(x.enough_probes);
    EXPECT_EQ(x.why, "no verdict: 4 successful probes, 5 needed");
  }
  EXPECT_EQ(window_stats(w).probes, 4u);
}

// A window of 6 probes of 21 chunks whose usage says `tokens` each, the way
// the probe derives tokens per chunk from it.
std::vector<probe::ProbeResult> with_tokens(const std::vector<std::int64_t>& tokens) {
  std::vector<probe::ProbeResult> w;
  for (std::int64_t n : tokens) {
    probe::ProbeResult r = planted(0.2, repeat(0.02, 20));
    r.completion_tokens = n;
    r.tokens_per_chunk = probe::tokens_per_chunk({n, -1, r.chunks, 0, false});
    w.push_back(r);
  }
  return w;
}

// 84 tokens over 21 chunks is 4 a chunk in every probe: the note says so
// with the median, and leaves the verdicts as they were.
TEST(ReportDiagnosis, SeveralTokensPerChunkIsANoteNotAShape) {
  const auto w = with_tokens({84, 84, 84, 84, 84, 84});
  const WindowStats s = window_stats(w);
  ASSERT_TRUE(s.tokens_per_chunk_p50);
  EXPECT_EQ(*s.tokens_per_chunk_p50, 4.0);
  EXPECT_EQ(s.tokens_per_chunk_probes, 6u);
  const auto n = notes(s, kDefaults);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].id, "tokens_per_chunk");
  EXPECT_EQ(n[0].text,
            "the server sends 4 tokens per chunk: gaps are per chunk, not per token (tokens/s "
            "stays right)");
  EXPECT_LT(n[0].text.size(), 100u);
  EXPECT_EQ(n[0].numbers.front(), (std::pair<std::string, double>{"tokens_per_chunk_p50", 4.0}));
  EXPECT_EQ(diagnose(w, kDefaults).size(), kAllShapes.size());
  EXPECT_TRUE(held(diagnose(w, kDefaults)).empty());
}

// One token per chunk, and figures short of the ratio either way, say
// nothing; unknown usage says nothing; the median decides, not one probe.
TEST(ReportDiagnosis, TokensPerChunkNearOneOrUnknownHasNoNote) {
  EXPECT_TRUE(notes(window_stats(with_tokens({21, 21, 21, 21, 21})), kDefaults).empty());
  EXPECT_TRUE(notes(window_stats(with_tokens({41, 41, 41})), kDefaults).empty());  // 1.95
  EXPECT_EQ(notes(window_stats(with_tokens({42})), kDefaults).size(), 1u);         // exactly 2
  EXPECT_EQ(notes(window_stats(with_tokens({10, 10})), kDefaults).size(), 1u);     // <= 1/2
  EXPECT_TRUE(notes(window_stats(with_tokens({11, 11})), kDefaults).empty());      // 0.52
  EXPECT_TRUE(notes(window_stats(with_tokens({0, 0})), kDefaults).empty());  // no output tokens
  EXPECT_TRUE(notes(window_stats(window(10, 0.2, repeat(0.02, 20))), kDefaults).empty());
  EXPECT_TRUE(notes(window_stats(with_tokens({84, 21, 21})), kDefaults).empty());
  EXPECT_EQ(notes(window_stats(with_tokens({84, 84, 21})), kDefaults).size(), 1u);
  // Failed probes are not in the window, usage or not.
  auto w = with_tokens({84, 84});
  for (auto& r : w) r.ok = false;
  EXPECT_FALSE(window_stats(w).tokens_per_chunk_p50);
}

TEST(ReportDiagnosis, TokensPerChunkRatioIsSettable) {
  config::DiagnosisThresholds t;
  t.tokens_per_chunk_ratio = 5;
  EXPECT_TRUE(notes(window_stats(with_tokens({84, 84})), t).empty());
  const auto n = notes(window_stats(with_tokens({105, 105})), t);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_NE(n[0].text.find("sends 5 tokens per chunk"), std::string::npos) << n[0].text;
}

TEST(ReportDiagnosis, ShapeNamesAreStable) {
  EXPECT_EQ(to_string(Shape::queue), "queue");
  EXPECT_EQ(to_string(Shape::transport), "transport");
  EXPECT_EQ(to_string(Shape::long_answer), "long_answer");
  EXPECT_EQ(to_string(Shape::shared_capacity), "shared_capacity");
  EXPECT_EQ(to_string(Shape::generation), "generation");
  EXPECT_EQ(title(Shape::long_answer), "long answer");
}

}  // namespace
}  // namespace lse::report
