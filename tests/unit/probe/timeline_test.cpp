// Timeline maths on hand-made timelines: every expected value is computed
// from the instants the test plants, not from the code under test.
#include "probe/timeline.hpp"

#include <gtest/gtest.h>

using namespace lse::probe;
using std::chrono::milliseconds;

namespace {

Timeline planted(const std::vector<int>& gaps_ms, int ttft_ms, int tail_ms) {
  Timeline t;
  t.start = TimePoint{} + std::chrono::seconds(100);
  t.resolved = t.start + milliseconds(2);
  t.connected = t.start + milliseconds(5);
  t.tls_done = t.start + milliseconds(15);
  t.request_sent = t.start + milliseconds(16);
  t.headers = t.start + milliseconds(40);
  TimePoint at = t.start + milliseconds(ttft_ms);
  t.content_arrivals.push_back(at);
  for (int g : gaps_ms) t.content_arrivals.push_back(at += milliseconds(g));
  t.end = at + milliseconds(tail_ms);
  return t;
}

}  // namespace

TEST(Timeline, ClockPartsFromPlantedInstants) {
  std::vector<int> gaps(29, 20);
  gaps[9] = 300;   // planted stall before chunk 10
  gaps[19] = 400;  // and before chunk 20
  ProbeResult r;
  r.completion_tokens = 30;
  summarize(planted(gaps, 150, 7), 0.25, r);
  EXPECT_DOUBLE_EQ(*r.ttft, 0.150);
  EXPECT_EQ(r.chunks, 30u);
  ASSERT_EQ(r.gaps.size(), 29u);
  EXPECT_NEAR(r.gaps[9], 0.300, 1e-9);
  EXPECT_EQ(r.stalls, 2u);
  EXPECT_NEAR(r.stall_seconds, 0.700, 1e-9);
  EXPECT_NEAR(*r.gap_max, 0.400, 1e-9);
  EXPECT_NEAR(*r.gap_p50, 0.020, 1e-9);
  // 29 gaps: nearest rank of p95 is ceil(27.55)=28th smallest = 0.300
  EXPECT_NEAR(*r.gap_p95, 0.300, 1e-9);
  EXPECT_NEAR(*r.tail, 0.007, 1e-9);
  const double last = 0.150 + 27 * 0.020 + 0.300 + 0.400;
  EXPECT_NEAR(r.duration, last + 0.007, 1e-9);
  EXPECT_NEAR(*r.output_tokens_per_second, 30 / (last - 0.150), 1e-9);
}

TEST(Timeline, PhasesAreConsecutiveAndSumToTtft) {
  ProbeResult r;
  summarize(planted({20, 20}, 150, 0), 0.25, r);
  double sum = 0;
  for (auto p : kAllPhases) {
    ASSERT_TRUE(r.phases[static_cast<int>(p)].has_value()) << to_string(p);
    sum += *r.phases[static_cast<int>(p)];
  }
  EXPECT_NEAR(sum, *r.ttft, 1e-12);
  EXPECT_NEAR(*r.phases[static_cast<int>(Phase::tls)], 0.010, 1e-9);
  EXPECT_NEAR(*r.phases[static_cast<int>(Phase::first_token)], 0.110, 1e-9);
  EXPECT_TRUE(r.new_connection);
}

// A fast server: its headers (kernel receive stamp) arrive before the
// user-space stamp taken when our write's completion ran. No phase may be
// negative and they still add up to TTFT.
TEST(Timeline, UserSpaceStampAfterTheKernelsArrivalIsCappedByIt) {
  Timeline t = planted({20}, 100, 0);
  t.request_sent = t.start + milliseconds(16) + std::chrono::microseconds(80);
  t.headers = t.start + milliseconds(16);  // 80 us "before" the send stamp
  ProbeResult r;
  summarize(t, 0.25, r);
  double sum = 0;
  for (auto p : kAllPhases) {
    const auto& v = r.phases[static_cast<int>(p)];
    ASSERT_TRUE(v.has_value()) << to_string(p);
    EXPECT_GE(*v, 0.0) << to_string(p);
    sum += *v;
  }
  EXPECT_NEAR(sum, *r.ttft, 1e-12);
  EXPECT_NEAR(*r.phases[static_cast<int>(Phase::request)], 0.001, 1e-9);  // tls_done 15 -> 16
  EXPECT_EQ(*r.phases[static_cast<int>(Phase::headers)], 0.0);
  EXPECT_NEAR(*r.phases[static_cast<int>(Phase::first_token)], 0.084, 1e-9);
}

// Headers and the first chunk in one read, both before the send stamp.
TEST(Timeline, HeadersAndFirstChunkInOneReadBeforeTheSendStamp) {
  Timeline t = planted({20}, 16, 0);
  t.headers = t.start + milliseconds(16);
  t.request_sent = t.start + milliseconds(17);
  ProbeResult r;
  summarize(t, 0.25, r);
  for (auto p : kAllPhases) EXPECT_GE(*r.phases[static_cast<int>(p)], 0.0) << to_string(p);
  EXPECT_EQ(*r.phases[static_cast<int>(Phase::first_token)], 0.0);
  EXPECT_NEAR(*r.ttft, 0.016, 1e-12);
}

TEST(Timeline, ReusedConnectionHasNoConnectPhases) {
  Timeline t = planted({20}, 100, 0);
  t.resolved.reset();
  t.connected.reset();
  t.tls_done.reset();
  ProbeResult r;
  summarize(t, 0.25, r);
  EXPECT_FALSE(r.phases[static_cast<int>(Phase::connect)].has_value());
  EXPECT_NEAR(*r.phases[static_cast<int>(Phase::request)], 0.016, 1e-9);
  EXPECT_FALSE(r.new_connection);
}

TEST(Timeline, GapExactlyAtThresholdIsAStall) {
  ProbeResult r;
  summarize(planted({250, 249}, 100, 0), 0.25, r);
  EXPECT_EQ(r.stalls, 1u);
}

TEST(Timeline, SameReadGivesZeroGap) {
  ProbeResult r;
  summarize(planted({0, 0, 30}, 100, 0), 0.25, r);
  EXPECT_EQ(r.chunks, 4u);
  EXPECT_DOUBLE_EQ(r.gaps[0], 0.0);
  EXPECT_DOUBLE_EQ(*r.gap_p50, 0.0);
}

TEST(Timeline, NoContentMeansNoTtftNoGaps) {
  Timeline t;
  t.start = TimePoint{} + std::chrono::seconds(1);
  t.end = t.start + milliseconds(500);
  ProbeResult r;
  summarize(t, 0.25, r);
  EXPECT_FALSE(r.ttft.has_value());
  EXPECT_FALSE(r.tail.has_value());
  EXPECT_TRUE(r.gaps.empty());
  EXPECT_NEAR(r.duration, 0.5, 1e-9);
}

TEST(NearestRank, MatchesDefinition) {
  std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(nearest_rank(v, 0.5), 5);
  EXPECT_EQ(nearest_rank(v, 0.95), 10);
  EXPECT_EQ(nearest_rank(v, 0.9), 9);
  EXPECT_EQ(nearest_rank({7}, 0.95), 7);
}

// Release evidence: a pause at the source resumes at the stream's cadence
// (nothing released), a hold in transit releases what it held in one read.
TEST(Timeline, StallResumedAtCadenceReleasesNothing) {
  std::vector<int> gaps(29, 20);
  gaps[9] = 300;  // the source pauses before chunk 11, then streams on at 20 ms
  ProbeResult r;
  summarize(planted(gaps, 150, 7), 0.25, r);
  EXPECT_EQ(r.coalesced_chunks, 0u);
  ASSERT_EQ(r.stall_details.size(), 1u);
  EXPECT_EQ(r.stall_details[0].at_chunk, 11u);
  EXPECT_NEAR(r.stall_details[0].gap, 0.300, 1e-9);
  EXPECT_EQ(r.stall_details[0].released_chunks, 0u);
}

TEST(Timeline, HeldChunksReleasedTogetherAreABurst) {
  // 20 ms cadence; then a 400 ms hold after chunk 10 releases chunks 11..15
  // in one socket read (the same stamp), and the stream goes on.
  std::vector<int> gaps(29, 20);
  gaps[9] = 400;
  for (int i = 10; i < 14; ++i) gaps[static_cast<std::size_t>(i)] = 0;
  ProbeResult r;
  summarize(planted(gaps, 150, 7), 0.25, r);
  EXPECT_EQ(r.coalesced_chunks, 4u);  // chunks 12..15 came with their predecessor
  ASSERT_EQ(r.stall_details.size(), 1u);
  EXPECT_EQ(r.stall_details[0].at_chunk, 11u);
  EXPECT_EQ(r.stall_details[0].released_chunks, 4u);
  EXPECT_EQ(r.stalls, 1u);
}

TEST(Timeline, ReleaseWindowIsATenthOfTheGapP50) {
  // Cadence 100 ms; after a 500 ms stall, chunks 9 and 10 arrive 5 and 9 ms
  // behind chunk 8 (within 10 ms, a tenth of p50); chunk 11 at 100 ms is not.
  std::vector<int> gaps = {100, 100, 100, 100, 100, 100, 500, 5, 4, 91, 100, 100, 100};
  ProbeResult r;
  summarize(planted(gaps, 150, 7), 0.25, r);
  ASSERT_EQ(r.stall_details.size(), 1u);
  EXPECT_EQ(r.stall_details[0].at_chunk, 8u);
  EXPECT_EQ(r.stall_details[0].released_chunks, 2u);
  EXPECT_EQ(r.coalesced_chunks, 0u);  // 5 ms apart is another read
}

TEST(Timeline, AllAtOnceAnswerIsCoalescedWithoutStalls) {
  std::vector<int> gaps(19, 0);  // a buffered answer: 20 chunks in one read
  ProbeResult r;
  summarize(planted(gaps, 2000, 1), 0.25, r);
  EXPECT_EQ(r.coalesced_chunks, 19u);
  EXPECT_TRUE(r.stall_details.empty());
}

// --- the clock's own consistency ----------------------------------------------------

TEST(Timeline, ASoundTimelineHasNoClockViolation) {
  EXPECT_EQ(clock_violation(planted({20, 300, 20}, 150, 7)), std::nullopt);
  Timeline reused = planted({20}, 80, 0);  // a pooled connection: no connection phases
  reused.resolved.reset();
  reused.connected.reset();
  reused.tls_done.reset();
  EXPECT_EQ(clock_violation(reused), std::nullopt);
  Timeline coalesced = planted({0, 0}, 80, 0);  // one read: equal instants are causal
  EXPECT_EQ(clock_violation(coalesced), std::nullopt);
}

TEST(Timeline, ClockViolationsNameTheInstant) {
  Timeline unset = planted({20, 20}, 150, 7);
  unset.content_arrivals[0] = TimePoint{};  // a content chunk recorded with no stamp
  EXPECT_EQ(clock_violation(unset), "content chunk 1 stamped before the probe started");

  Timeline backwards = planted({20, 20}, 150, 7);
  backwards.content_arrivals[2] = backwards.content_arrivals[1] - milliseconds(1);
  EXPECT_EQ(clock_violation(backwards), "content chunk 3 stamped before the chunk before it");

  Timeline early_headers = planted({20}, 150, 7);
  early_headers.headers = early_headers.start - milliseconds(5);
  EXPECT_EQ(clock_violation(early_headers), "headers stamped before the probe started");

  Timeline early_end = planted({20}, 150, 7);
  early_end.end = early_end.content_arrivals.back() - milliseconds(1);
  EXPECT_EQ(clock_violation(early_end), "end of stream stamped before the last content chunk");

  Timeline no_start = planted({20}, 150, 7);
  no_start.start = TimePoint{};
  EXPECT_EQ(clock_violation(no_start), "the probe's start was never stamped");
}

TEST(Timeline, SummarizeProbeOfASoundTimelineIsSummarize) {
  const Timeline t = planted({20, 300, 20}, 150, 7);
  ProbeResult plain, checked;
  plain.ok = checked.ok = true;
  summarize(t, 0.25, plain);
  summarize_probe(t, 0.25, *t.end + milliseconds(1), checked);
  EXPECT_TRUE(checked.ok);
  EXPECT_EQ(checked.ttft, plain.ttft);
  EXPECT_EQ(checked.gaps, plain.gaps);
  EXPECT_EQ(checked.duration, plain.duration);
  EXPECT_EQ(checked.phases, plain.phases);
}

// The old bug: content recorded with an unset stamp gave TTFT = −uptime.
// Debug builds stop at the assertion; release builds fail the probe
// `protocol` and keep no time but the duration up to `now`.
TEST(Timeline, SummarizeProbeOfAViolationRecordsNoNegativeTime) {
  Timeline t = planted({20, 20}, 150, 7);
  t.content_arrivals[0] = TimePoint{};
  const TimePoint now = t.start + milliseconds(400);
  ProbeResult r;
  r.ok = true;
  EXPECT_DEBUG_DEATH(summarize_probe(t, 0.25, now, r), "causal clock");
#ifdef NDEBUG
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, FailureReason::protocol);
  EXPECT_EQ(r.error_detail,
            "internal clock error: content chunk 1 stamped before the probe started; no time of "
            "this probe is recorded");
  EXPECT_FALSE(r.ttft);
  EXPECT_FALSE(r.tail);
  EXPECT_TRUE(r.gaps.empty());
  EXPECT_FALSE(r.gap_max);
  EXPECT_EQ(r.stalls, 0u);
  for (const auto& phase : r.phases) EXPECT_FALSE(phase);
  EXPECT_DOUBLE_EQ(r.duration, 0.400);
  EXPECT_EQ(r.chunks, 3u);
#endif
}

TEST(Timeline, ArrivalOffsetsAddTheGapsToTheTtft) {
  ProbeResult r;
  EXPECT_TRUE(arrival_offsets(r).empty());  // no first chunk, nothing to place
  r.ttft = 0.150;
  r.gaps = {0.020, 0.0, 0.450};  // a coalesced chunk, then a stall
  const auto at = arrival_offsets(r);
  ASSERT_EQ(at.size(), 4u);
  EXPECT_DOUBLE_EQ(at[0], 0.150);
  EXPECT_DOUBLE_EQ(at[1], 0.170);
  EXPECT_DOUBLE_EQ(at[2], 0.170);
  EXPECT_DOUBLE_EQ(at[3], 0.620);
}

// Tokens per chunk: 40 tokens over 10 content chunks is 4, whatever the clock.
TEST(Timeline, TokensPerChunkIsCompletionTokensOverContentChunks) {
  ProbeResult r;
  r.completion_tokens = 40;
  summarize(planted(std::vector<int>(9, 20), 100, 0), 0.25, r);
  ASSERT_EQ(r.chunks, 10u);
  ASSERT_TRUE(r.tokens_per_chunk);
  EXPECT_EQ(*r.tokens_per_chunk, 4.0);
  // One token per event: exactly 1.
  r = ProbeResult{};
  r.completion_tokens = 10;
  summarize(planted(std::vector<int>(9, 20), 100, 0), 0.25, r);
  ASSERT_TRUE(r.tokens_per_chunk);
  EXPECT_EQ(*r.tokens_per_chunk, 1.0);
}

TEST(Timeline, TokensPerChunkNeedsUsageAndAContentChunk) {
  ProbeResult r;  // usage unknown (-1)
  summarize(planted({20, 20}, 100, 0), 0.25, r);
  EXPECT_FALSE(r.tokens_per_chunk);
  // Usage but no content chunk: nothing to divide by.
  Timeline empty;
  empty.start = TimePoint{} + std::chrono::seconds(5);
  empty.end = empty.start + milliseconds(30);
  r.completion_tokens = 12;
  summarize(empty, 0.25, r);
  EXPECT_FALSE(r.tokens_per_chunk);
  // A result summarized again does not keep an earlier figure.
  r.completion_tokens = 6;
  summarize(planted({20, 20}, 100, 0), 0.25, r);
  ASSERT_TRUE(r.tokens_per_chunk);
  EXPECT_EQ(*r.tokens_per_chunk, 2.0);
  r.completion_tokens = -1;
  summarize(planted({20, 20}, 100, 0), 0.25, r);
  EXPECT_FALSE(r.tokens_per_chunk);
}

// Streamed thinking the target does not count as content still carried
// tokens: 8 reasoning events + 4 content chunks for 24 tokens is 2 a chunk,
// not 6.
TEST(Timeline, UncountedReasoningChunksCarryTokensToo) {
  Timeline t = planted({20, 20, 20}, 300, 0);
  t.first_reasoning = t.start + milliseconds(100);
  t.reasoning_chunks = 8;
  ProbeResult r;
  r.completion_tokens = 24;
  r.reasoning_tokens = 16;  // reported, and streamed: already in the chunks
  summarize(t, 0.25, r);
  ASSERT_TRUE(r.tokens_per_chunk);
  EXPECT_EQ(*r.tokens_per_chunk, 2.0);
}

// Thinking the server counted but never streamed (OpenAI's o-series) is no
// chunk's: 100 hidden reasoning tokens + 12 visible over 4 chunks is 3.
TEST(Timeline, HiddenReasoningTokensAreLeftOut) {
  ProbeResult r;
  r.completion_tokens = 112;
  r.reasoning_tokens = 100;
  summarize(planted({20, 20, 20}, 100, 0), 0.25, r);
  ASSERT_TRUE(r.tokens_per_chunk);
  EXPECT_EQ(*r.tokens_per_chunk, 3.0);
  EXPECT_EQ(tokens_per_chunk({10, 30, 4, 0, false}), std::nullopt);  // usage contradicts itself
  EXPECT_EQ(tokens_per_chunk({10, 0, 4, 0, false}), 2.5);
  EXPECT_EQ(tokens_per_chunk({0, -1, 4, 0, false}), 0.0);
  EXPECT_EQ(tokens_per_chunk({10, -1, 0, 5, true}), std::nullopt);  // no content chunk
}
