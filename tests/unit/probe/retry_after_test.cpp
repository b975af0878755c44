// A 429 carries the server's Retry-After into the probe result (seconds or
// an HTTP date), for the scheduler to honour; other answers carry none.
#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>
#include <ctime>
#include <optional>
#include <string>

#include "../http/scripted_peer.hpp"
#include "probe/prober.hpp"

namespace {

namespace asio = boost::asio;
using lse::probe::FailureReason;
using lse::probe::ProbeResult;
using lse::test::PeerConn;
using lse::test::ScriptedPeer;
using namespace std::chrono_literals;

// One probe against a peer that answers `status` with `extra_headers`.
ProbeResult probe_answered(int status, const std::string& extra_headers) {
  ScriptedPeer peer([&](PeerConn& c) {
    c.read_request();
    const std::string body = "{\"error\":{\"message\":\"slow down\"}}";
    c.send("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" +
           extra_headers + "Content-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body);
  });
  lse::config::Target t;
  t.name = "t";
  t.url = peer.url();
  t.model = "m";
  t.timeout.first_token = 2s;
  t.timeout.idle = 2s;
  t.timeout.total = 5s;
  asio::io_context io;
  lse::probe::Prober prober(io, t, "host", "probe-test/1");
  const lse::config::Prompt prompt{"short", "hi", "inline"};
  ProbeResult result;
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        result = co_await prober.run(prompt);
        done = true;
      },
      asio::detached);
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (!done && std::chrono::steady_clock::now() < limit) io.run_one_for(10ms);
  EXPECT_TRUE(done) << "probe did not finish";
  return result;
}

// "Sun, 06 Nov 1994 08:49:37 GMT" for now + `seconds`.
std::string http_date_in(int seconds) {
  const std::time_t at = std::time(nullptr) + seconds;
  std::tm tm{};
  gmtime_r(&at, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return text;
}

TEST(RetryAfter, A429CarriesItsDelaySeconds) {
  const ProbeResult r = probe_answered(429, "Retry-After: 30\r\n");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, FailureReason::http_429);
  ASSERT_TRUE(r.retry_after_seconds);
  EXPECT_DOUBLE_EQ(*r.retry_after_seconds, 30);
}

TEST(RetryAfter, A429CarriesAnHttpDateAsSecondsFromNow) {
  const ProbeResult r = probe_answered(429, "Retry-After: " + http_date_in(120) + "\r\n");
  ASSERT_TRUE(r.retry_after_seconds);
  EXPECT_NEAR(*r.retry_after_seconds, 120, 2.5);
}

TEST(RetryAfter, NoneWithoutTheHeaderOrOnOtherStatuses) {
  EXPECT_FALSE(probe_answered(429, "").retry_after_seconds);
  EXPECT_FALSE(probe_answered(429, "Retry-After: soon\r\n").retry_after_seconds);
  // The scheduler backs off on 429 only (DESIGN: Retry-After on 429).
  const ProbeResult unavailable = probe_answered(503, "Retry-After: 30\r\n");
  EXPECT_EQ(unavailable.reason, FailureReason::http_5xx);
  EXPECT_FALSE(unavailable.retry_after_seconds);
}

}  // namespace
