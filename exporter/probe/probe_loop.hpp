// The loop a probe thread runs (issue 11): asio's run(), except that while
// the thread is busy one wake-up serves many streams.
//
// Every chunk's instant is the kernel's receive stamp, taken when the segment
// arrived, not when the read ran; so a read may wait a little without moving
// any instant of the clock. While the thread runs handlers at a high rate,
// each turn of the loop first sleeps a short window and then runs all that
// became ready meanwhile: one epoll_wait for many chunks instead of one per
// chunk, and far fewer wake-ups. While an exchange of the thread is opening
// (http/opening.hpp: instants taken by Clock::now() in a handler), or the rate
// is low, every turn waits for the next event as run() does.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>

#include <boost/asio/io_context.hpp>

namespace lse::probe {

struct WakeupSettings {
  // The sleep before a busy turn; zero: every turn waits for its event.
  std::chrono::nanoseconds window = std::chrono::milliseconds(2);
  // Handlers a window must bring on average for the sleep to pay: below it a
  // turn costs more system calls than it saves.
  double min_per_window = 4;
  // How often the rate is taken.
  std::chrono::nanoseconds period = std::chrono::milliseconds(10);
};

// Whether the next turn sleeps a window first (pure: the caller brings the
// instants and the counts).
class WakeupPolicy {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  WakeupPolicy(const WakeupSettings& settings, TimePoint start);

  // After a turn that ran `handlers`, at `now`, with `opening` exchanges of
  // the thread opening: true when the next turn sleeps a window first.
  bool after(TimePoint now, std::size_t handlers, std::size_t opening);

 private:
  WakeupSettings settings_;
  TimePoint since_;
  std::size_t count_ = 0;
  bool busy_ = false;  // the rate of the last period was high enough
};

struct LoopStats {
  std::uint64_t turns = 0;     // run_one() calls, and poll() calls after a sleep
  std::uint64_t handlers = 0;  // handlers run
  std::uint64_t sleeps = 0;    // turns that slept a window first
};

// Runs `io` until it is stopped or out of work, as io.run() would.
LoopStats run_probe_loop(boost::asio::io_context& io, const WakeupSettings& settings = {});

}  // namespace lse::probe
