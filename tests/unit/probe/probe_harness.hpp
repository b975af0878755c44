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
  double wall = 0;  // seconds the probe took
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

inline void expect_failure(const Probed& p, probe::FailureReason reason) {
  EXPECT_FALSE(p.result.ok);
  EXPECT_EQ(probe::to_string(p.result.reason), probe::to_string(reason)) << p.result.error_detail;
  EXPECT_FALSE(p.result.error_detail.empty());
}

}  // namespace lse::test
