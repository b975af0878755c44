// What the prober tests share: a target pointed at a scripted peer, one probe
// run to its end on a fresh io_context (optionally canceled), and the check
// of a failure's reason and message.
#pragma once
#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "../http/scripted_peer.hpp"
#include "probe/prober.hpp"

namespace lse::test {

using namespace std::chrono_literals;

inline config::Target target_for(const std::string& url) {
  config::Target t;
  t.name = "t";
  t.url = url;
  t.model = "m";
  t.timeout.first_token = 2s;
  t.timeout.idle = 2s;
  t.timeout.total = 5s;
  return t;
}

struct Probed {
  probe::ProbeResult result;
  std::chrono::steady_clock::time_point begin;  // before the probe started
  double wall = 0;                              // seconds the probe took
};

// Runs one probe on a fresh io_context; cancels it after `cancel_after`.
inline Probed probe(const config::Target& target,
                    std::optional<std::chrono::milliseconds> cancel_after = std::nullopt) {
  namespace asio = boost::asio;
  asio::io_context io;
  probe::Prober prober(io, target, "host", "probe-test/1");
  const config::Prompt prompt{"short", "hi", "inline"};
  Probed out;
  bool done = false;
  const auto begin = std::chrono::steady_clock::now();
  out.begin = begin;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        out.result = co_await prober.run(prompt);
        done = true;
      },
      asio::detached);
  asio::steady_timer cancel_timer(io);
  if (cancel_after) {
    cancel_timer.expires_after(*cancel_after);
    cancel_timer.async_wait([&](boost::system::error_code ec) {
      if (!ec) prober.cancel();
    });
  }
  const auto limit = begin + 10s;
  while (!done && std::chrono::steady_clock::now() < limit) io.run_one_for(10ms);
  cancel_timer.cancel();
  io.poll();
  out.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_TRUE(done) << "probe did not finish";
  return out;
}

// Timing checks against what the scripted peer really did (PeerTimes), so a
// peer woken late on a loaded machine moves the bounds with it. The lower
// bounds allow 1 ms for the kernel stamp's conversion to the steady clock;
// `slack` is how late an arrival may be read after its write ended.
constexpr double kStampSlack = 0.001;

// A wait from the probe's request to the arrival of write `send`: at least
// what the peer waited after reading request `request`, at most the time from
// the probe's start to the end of that write.
inline void expect_wait_until_write(double measured, const Probed& p, const ScriptedPeer& peer,
                                    std::size_t send, double slack, std::size_t request = 0) {
  const PeerTimes times = peer.times(send + 1);
  ASSERT_LT(request, times.requests.size());
  ASSERT_LT(send, times.sends.size());
  EXPECT_GE(measured,
            PeerTimes::seconds(times.requests[request], times.sends[send].begin) - kStampSlack);
  EXPECT_LE(measured, PeerTimes::seconds(p.begin, times.sends[send].end) + slack);
}

// A gap between the arrivals of writes `a` and `b`: at least the time between
// the end of one and the start of the other, at most the span of both.
inline void expect_gap_between_writes(double measured, const ScriptedPeer& peer, std::size_t a,
                                      std::size_t b, double slack) {
  const PeerTimes times = peer.times(b + 1);
  ASSERT_LT(b, times.sends.size());
  ASSERT_LT(a, b);
  EXPECT_GE(measured, PeerTimes::seconds(times.sends[a].end, times.sends[b].begin) - kStampSlack);
  EXPECT_LE(measured, PeerTimes::seconds(times.sends[a].begin, times.sends[b].end) + slack);
}

inline void expect_failure(const Probed& p, probe::FailureReason reason) {
  EXPECT_FALSE(p.result.ok);
  EXPECT_EQ(probe::to_string(p.result.reason), probe::to_string(reason)) << p.result.error_detail;
  EXPECT_FALSE(p.result.error_detail.empty());
}

}  // namespace lse::test
