// Round planning of the probe loop (see plan.hpp).
#include "schedule/plan.hpp"

#include <algorithm>
#include <stdexcept>

namespace lse::schedule {
namespace {

Clock::duration scaled(config::Duration interval, double factor) {
  return std::chrono::duration_cast<Clock::duration>(interval * factor);
}

}  // namespace

LoopSpec loop_spec(const config::Target& target, const config::Config& config) {
  LoopSpec spec{target, {}};
  for (const auto& name : target.prompts) {
    auto it = config.prompts.find(name);
    if (it == config.prompts.end())
      throw std::runtime_error("target " + target.name + ": unknown prompt " + name);
    spec.prompts.push_back(it->second);
  }
  return spec;
}

Clock::time_point first_round_start(Clock::time_point now, config::Duration interval, double jitter,
                                    Rng& rng) {
  if (jitter <= 0) return now;
  std::uniform_real_distribution<double> share(0.0, jitter);
  return now + scaled(interval, share(rng));
}

RoundTimes next_round(Clock::time_point previous_nominal, Clock::time_point now,
                      config::Duration interval, double jitter, Rng& rng) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  RoundTimes next;
  next.nominal = previous_nominal + std::chrono::duration_cast<Clock::duration>(interval);
  next.start = next.nominal + scaled(interval, jitter * unit(rng));
  if (next.start < now) next = {now, now};  // overran: go now, no catch-up
  return next;
}

RoundTimes back_off(RoundTimes planned, Clock::time_point now, double retry_after_seconds,
                    config::Duration interval, Clock::duration cap) {
  // NaN and negative values are no wait at all (the interval still holds).
  const double asked = retry_after_seconds > 0 ? retry_after_seconds : 0;
  const double capped = std::min(asked, std::chrono::duration<double>(cap).count());
  const auto wait =
      std::max(std::chrono::duration_cast<Clock::duration>(interval),
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(capped)));
  if (planned.start >= now + wait) return planned;
  return {now + wait, now + wait};
}

void shuffle_round(std::vector<config::Prompt>& prompts, Rng& rng) {
  std::shuffle(prompts.begin(), prompts.end(), rng);
}

}  // namespace lse::schedule
