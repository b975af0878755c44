// The on-demand probe's guard (guard.hpp).
#include "ondemand/guard.hpp"

#include <cmath>

namespace lse::ondemand {

Admission Guard::admit(const std::string& target, double now, double min_interval_seconds,
                       std::size_t max_concurrent) {
  std::lock_guard lock(mutex_);
  if (max_concurrent == 0) return {Admission::Verdict::off, 0};
  if (auto it = last_start_.find(target); it != last_start_.end()) {
    const double wait = it->second + min_interval_seconds - now;
    if (wait > 0) {
      const double whole = std::ceil(wait);
      return {Admission::Verdict::too_soon, whole < 1 ? 1U : static_cast<unsigned>(whole)};
    }
  }
  if (running_ >= max_concurrent) return {Admission::Verdict::busy, 0};
  ++running_;
  last_start_[target] = now;
  return {};
}

void Guard::finish() {
  std::lock_guard lock(mutex_);
  if (running_ > 0) --running_;
}

std::size_t Guard::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

}  // namespace lse::ondemand
