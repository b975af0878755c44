// The pure part of the probe loop (DESIGN §1): what a target's loop probes
// (LoopSpec, compared by value on reload) and when each round starts (first
// round spread, jittered interval, the overrun rule), the prompt order of a
// round and warmup marking. Times and randomness come in as arguments, so the
// rules are testable with a fake clock and a seeded RNG; the timers that wait
// for these instants live in scheduler.cpp.
#pragma once
#include <chrono>
#include <random>
#include <vector>

#include "config/config.hpp"

namespace lse::schedule {

using Clock = std::chrono::steady_clock;
using Rng = std::mt19937_64;

// Everything that decides how one target is probed: the target itself and
// the prompts it uses, by value. Reload restarts exactly the loops whose spec
// is no longer == (a new config field takes part without being listed here).
struct LoopSpec {
  config::Target target;
  std::vector<config::Prompt> prompts;  // in the target's order

  bool operator==(const LoopSpec&) const = default;
};

// The spec of `target` under `config`. Throws std::runtime_error naming the
// prompt when the target uses one the config does not define.
LoopSpec loop_spec(const config::Target& target, const config::Config& config);

// Plan: the first round of a target starts a random share of up to `jitter`
// intervals after `now`, so many targets started together do not probe in
// lockstep. No jitter: right away.
Clock::time_point first_round_start(Clock::time_point now, config::Duration interval, double jitter,
                                    Rng& rng);

// The schedule of one round: `nominal` is where the rhythm stands (rounds are
// `interval` apart without drift), `start` is when the round really begins
// (nominal ± jitter × interval).
struct RoundTimes {
  Clock::time_point nominal;
  Clock::time_point start;
};

// Plan: after a round that began at `previous.nominal` and ended at `now`, the
// next round is one interval later, ± jitter × interval. A round that overran
// its interval starts the next immediately and the rhythm restarts from `now`:
// no burst of catch-up rounds.
RoundTimes next_round(Clock::time_point previous_nominal, Clock::time_point now,
                      config::Duration interval, double jitter, Rng& rng);

// Plan: a server that answered 429 with Retry-After is left alone at least
// that long before the target's next probe: `planned` is pushed back to
// `now` + max(interval, min(retry_after, cap)) when it would start sooner,
// and the rhythm restarts from there. The cap keeps a wild header (a date
// next year) from silencing a target; the interval is the least backoff a
// target ever gets, so a 429 never makes it probe faster.
inline constexpr std::chrono::minutes kMaxRetryAfter{10};
RoundTimes back_off(RoundTimes planned, Clock::time_point now, double retry_after_seconds,
                    config::Duration interval, Clock::duration cap = kMaxRetryAfter);

// Plan: the prompt order of one round, a fresh shuffle every round.
void shuffle_round(std::vector<config::Prompt>& prompts, Rng& rng);

// Warmup: the first `count` completed probes of a loop are marked warmup
// (metrics count them, rows drop them).
class Warmup {
 public:
  explicit Warmup(int count) : left_(count) {}
  // True for a probe that is still warmup; counts it.
  bool take() {
    if (left_ <= 0) return false;
    --left_;
    return true;
  }

 private:
  int left_;
};

}  // namespace lse::schedule
