// The pure rules of the probe loop with a fake clock and a seeded RNG:
// first-round spread, spacing without drift, jitter bounds, the overrun rule,
// a fresh shuffle per round, warmup marking, and which config changes make a
// target's LoopSpec differ.
#include "schedule/plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace lse::schedule {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A fake "now": steady_clock's epoch plus an offset, never the real clock.
Clock::time_point at(Clock::duration offset) { return Clock::time_point{} + offset; }

// --- back_off: Retry-After of a 429 ---------------------------------------------

TEST(BackOff, WaitsAtLeastRetryAfterAndRestartsTheRhythmThere) {
  const auto now = at(seconds(100));
  const RoundTimes planned{at(seconds(110)), at(seconds(111))};
  const RoundTimes next = back_off(planned, now, 30, seconds(10));
  EXPECT_EQ(next.start, now + seconds(30));
  EXPECT_EQ(next.nominal, now + seconds(30));
}

TEST(BackOff, AShortRetryAfterKeepsThePlannedRound) {
  const auto now = at(seconds(100));
  const RoundTimes planned{at(seconds(170)), at(seconds(168))};
  const RoundTimes next = back_off(planned, now, 5, seconds(60));
  EXPECT_EQ(next.start, planned.start);
  EXPECT_EQ(next.nominal, planned.nominal);
}

TEST(BackOff, NeverSoonerThanOneIntervalFromNow) {
  // The round overran (planned: right now); Retry-After 1 s of a 60 s interval.
  const auto now = at(seconds(100));
  const RoundTimes next = back_off({now, now}, now, 1, seconds(60));
  EXPECT_EQ(next.start, now + seconds(60));
  // Nonsense values are no wait of their own either.
  EXPECT_EQ(back_off({now, now}, now, -5, seconds(60)).start, now + seconds(60));
  EXPECT_EQ(back_off({now, now}, now, std::nan(""), seconds(60)).start, now + seconds(60));
}

TEST(BackOff, CappedAtTenMinutesButNeverBelowTheInterval) {
  const auto now = at(seconds(100));
  EXPECT_EQ(back_off({now, now}, now, 86400, seconds(60)).start, now + kMaxRetryAfter);
  EXPECT_EQ(back_off({now, now}, now, 86400, seconds(60), seconds(90)).start, now + seconds(90));
  // A target probed once an hour keeps its hour.
  EXPECT_EQ(back_off({now, now}, now, 86400, std::chrono::hours(1)).start,
            now + std::chrono::hours(1));
}

TEST(FirstRoundStart, WithoutJitterStartsNow) {
  Rng rng(1);
  EXPECT_EQ(first_round_start(at(seconds(5)), seconds(60), 0.0, rng), at(seconds(5)));
}

TEST(FirstRoundStart, SpreadsOverTheJitterShareOfOneInterval) {
  Rng rng(7);
  const auto now = at(seconds(100));
  Clock::duration lo = Clock::duration::max(), hi = Clock::duration::min();
  for (int i = 0; i < 2000; ++i) {
    const auto d = first_round_start(now, seconds(10), 0.2, rng) - now;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  // Never before now, never later than jitter x interval (2 s) ...
  EXPECT_GE(lo, Clock::duration::zero());
  EXPECT_LE(hi, seconds(2));
  // ... and actually spread over that share, not a constant.
  EXPECT_LT(lo, milliseconds(100));
  EXPECT_GT(hi, milliseconds(1900));
}

TEST(NextRound, IsOneIntervalAfterThePreviousWithoutJitter) {
  Rng rng(1);
  auto r = next_round(at(seconds(0)), at(seconds(3)), seconds(10), 0.0, rng);
  EXPECT_EQ(r.nominal, at(seconds(10)));
  EXPECT_EQ(r.start, at(seconds(10)));
}

TEST(NextRound, KeepsTheRhythmWithoutDrift) {
  // Each round ends 3 s after it started and is jittered, yet nominal starts
  // stay exactly k intervals from the first: jitter does not accumulate.
  Rng rng(3);
  RoundTimes r{at(seconds(0)), at(seconds(0))};
  for (int k = 1; k <= 50; ++k) {
    r = next_round(r.nominal, r.start + seconds(3), seconds(10), 0.1, rng);
    ASSERT_EQ(r.nominal, at(seconds(10 * k))) << "round " << k;
  }
}

TEST(NextRound, JitterStaysWithinPlusMinusItsShareOfTheInterval) {
  Rng rng(11);
  Clock::duration lo = Clock::duration::max(), hi = Clock::duration::min();
  for (int i = 0; i < 2000; ++i) {
    const auto r = next_round(at(seconds(0)), at(seconds(1)), seconds(10), 0.1, rng);
    ASSERT_EQ(r.nominal, at(seconds(10)));
    lo = std::min(lo, r.start - r.nominal);
    hi = std::max(hi, r.start - r.nominal);
  }
  EXPECT_GE(lo, -seconds(1));
  EXPECT_LE(hi, seconds(1));
  EXPECT_LT(lo, -milliseconds(900));  // both sides are used
  EXPECT_GT(hi, milliseconds(900));
}

TEST(NextRound, AnOverrunStartsTheNextRoundNowWithoutCatchUp) {
  Rng rng(1);
  // The round that began at 0 took 25 s of a 10 s interval.
  auto r = next_round(at(seconds(0)), at(seconds(25)), seconds(10), 0.0, rng);
  EXPECT_EQ(r.start, at(seconds(25)));
  EXPECT_EQ(r.nominal, at(seconds(25)));  // the rhythm restarts here ...
  // ... so the round after a quick one is a full interval later, not at 20 or 30.
  r = next_round(r.nominal, at(seconds(26)), seconds(10), 0.0, rng);
  EXPECT_EQ(r.start, at(seconds(35)));
}

TEST(NextRound, ARoundThatJustFitsIsNotAnOverrun) {
  Rng rng(1);
  auto r = next_round(at(seconds(0)), at(seconds(10)), seconds(10), 0.0, rng);
  EXPECT_EQ(r.start, at(seconds(10)));
  r = next_round(at(seconds(0)), at(seconds(10) - milliseconds(1)), seconds(10), 0.0, rng);
  EXPECT_EQ(r.start, at(seconds(10)));
}

config::Prompt prompt(const std::string& name) { return {name, "text of " + name, "inline"}; }

TEST(ShuffleRound, EveryRoundIsAPermutationInAFreshOrder) {
  Rng rng(5);
  std::vector<config::Prompt> prompts{prompt("a"), prompt("b"), prompt("c"), prompt("d")};
  std::set<std::string> orders, firsts;
  for (int round = 0; round < 200; ++round) {
    shuffle_round(prompts, rng);
    std::string order;
    for (const auto& p : prompts) order += p.name;
    std::string sorted = order;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, "abcd") << "round " << round;
    orders.insert(order);
    firsts.insert(order.substr(0, 1));
  }
  EXPECT_GT(orders.size(), 12u);  // of 24 orders, most show up in 200 rounds
  EXPECT_EQ(firsts.size(), 4u);   // every prompt gets to go first
}

TEST(Warmup, MarksExactlyTheFirstProbes) {
  Warmup w(2);
  EXPECT_TRUE(w.take());
  EXPECT_TRUE(w.take());
  EXPECT_FALSE(w.take());
  EXPECT_FALSE(w.take());
  Warmup none(0);
  EXPECT_FALSE(none.take());
}

config::Config two_targets() {
  config::Config c;
  c.prompts["short"] = prompt("short");
  c.prompts["long"] = prompt("long");
  config::Target t;
  t.name = "a";
  t.url = "https://a.example/v1";
  t.prompts = {"short", "long"};
  c.targets.push_back(t);
  t.name = "b";
  t.prompts = {"short"};
  c.targets.push_back(t);
  return c;
}

TEST(LoopSpec, HoldsTheTargetAndItsPromptsInOrder) {
  const auto c = two_targets();
  const auto spec = loop_spec(c.targets[0], c);
  EXPECT_EQ(spec.target.name, "a");
  ASSERT_EQ(spec.prompts.size(), 2u);
  EXPECT_EQ(spec.prompts[0].name, "short");
  EXPECT_EQ(spec.prompts[1].text, "text of long");
}

TEST(LoopSpec, UnknownPromptIsAnError) {
  auto c = two_targets();
  c.targets[1].prompts.push_back("missing");
  EXPECT_THROW(loop_spec(c.targets[1], c), std::runtime_error);
}

TEST(LoopSpec, DiffersOnAPromptItUsesOnly) {
  const auto before = two_targets();
  auto after = before;
  after.prompts["long"].text = "a longer question";
  EXPECT_NE(loop_spec(after.targets[0], after), loop_spec(before.targets[0], before));
  EXPECT_EQ(loop_spec(after.targets[1], after), loop_spec(before.targets[1], before));
}

TEST(LoopSpec, IgnoresWhereTheTargetStandsInTheFile) {
  const auto before = two_targets();
  auto after = before;
  after.targets[0].line.value = 42;
  EXPECT_EQ(loop_spec(after.targets[0], after), loop_spec(before.targets[0], before));
}

}  // namespace
}  // namespace lse::schedule
