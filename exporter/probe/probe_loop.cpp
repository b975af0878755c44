#include "probe/probe_loop.hpp"

#include <algorithm>
#include <thread>

#include "http/opening.hpp"

namespace lse::probe {

WakeupPolicy::WakeupPolicy(const WakeupSettings& settings, TimePoint start)
    : settings_(settings), since_(start) {}

bool WakeupPolicy::after(TimePoint now, std::size_t handlers, std::size_t opening) {
  count_ += handlers;
  const auto elapsed = now - since_;
  if (elapsed >= settings_.period) {
    const double per_window = static_cast<double>(count_) *
                              static_cast<double>(settings_.window.count()) /
                              static_cast<double>(elapsed.count());
    busy_ = per_window >= settings_.min_per_window;
    count_ = 0;
    since_ = now;
  }
  return busy_ && opening == 0 && settings_.window.count() > 0;
}

LoopStats run_probe_loop(boost::asio::io_context& io, const WakeupSettings& settings) {
  LoopStats stats;
  if (settings.window.count() <= 0) {
    stats.handlers = io.run();
    return stats;
  }
  using Clock = std::chrono::steady_clock;
  WakeupPolicy policy(settings, Clock::now());
  bool coalesce = false;
  Clock::time_point next_wake{};
  while (!io.stopped()) {
    std::size_t n = 0;
    if (coalesce) {
      // At most one wake-up per window: sleep until a window after the last
      // one (what arrives meanwhile keeps its kernel stamp); a turn that took
      // longer than that does not sleep at all, so a thread that is behind
      // never idles.
      const Clock::time_point now = Clock::now();
      if (now < next_wake) {
        ++stats.sleeps;
        std::this_thread::sleep_until(next_wake);
      }
      next_wake = std::max(now, next_wake) + settings.window;
      // All that arrived meanwhile, each read with its kernel stamp; poll()
      // asks the reactor (without waiting) until it has nothing more.
      n = io.poll();
    } else {
      n = io.run_one();  // waits for the next event, as run() does
      if (n == 0) break;
      next_wake = Clock::now() + settings.window;
    }
    ++stats.turns;
    stats.handlers += n;
    coalesce = policy.after(Clock::now(), n, http::opening_exchanges(io));
  }
  return stats;
}

}  // namespace lse::probe
