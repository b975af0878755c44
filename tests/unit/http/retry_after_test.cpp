// Retry-After as the client reads it: the header kept on http::Response and
// its value in seconds from now (delay-seconds or any of the three HTTP-date
// forms RFC 9110 says a recipient must accept).
#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>

#include "http/client.hpp"
#include "scripted_peer.hpp"

namespace lse::http {
namespace {

using namespace std::chrono_literals;

// 1994-11-06T08:49:37Z, the RFC's own example date.
constexpr double kRfcExample = 784111777;

TEST(RetryAfterSeconds, DelaySeconds) {
  EXPECT_EQ(retry_after_seconds("120", 0), 120);
  EXPECT_EQ(retry_after_seconds(" 0 ", 0), 0);
  EXPECT_EQ(retry_after_seconds("86400000", 5), 86400000);  // capped by the scheduler, not here
}

TEST(RetryAfterSeconds, HttpDatesInAllThreeForms) {
  const double now = kRfcExample - 90;
  EXPECT_EQ(retry_after_seconds("Sun, 06 Nov 1994 08:49:37 GMT", now), 90);
  EXPECT_EQ(retry_after_seconds("Sunday, 06-Nov-94 08:49:37 GMT", now), 90);
  EXPECT_EQ(retry_after_seconds("Sun Nov  6 08:49:37 1994", now), 90);
  // A date already past means: now.
  EXPECT_EQ(retry_after_seconds("Sun, 06 Nov 1994 08:49:37 GMT", kRfcExample + 60), 0);
}

TEST(RetryAfterSeconds, AbsentOrUnreadable) {
  for (const char* bad : {"", "  ", "-5", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 PST",
                          "Sun, 06 Nov 1994 08:49:37 GMT trailing", "12s"}) {
    EXPECT_FALSE(retry_after_seconds(bad, kRfcExample)) << "'" << bad << "'";
  }
}

TEST(ClientResponse, KeepsRetryAfterUntilFinish) {
  test::ScriptedPeer peer([](test::PeerConn& c) {
    c.read_request();
    c.send(
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n");
  });
  asio::io_context io;
  ClientOptions options;
  options.url = *net::parse_url(peer.url());
  Client client(io, options);
  EXPECT_EQ(client.response(), nullptr);
  bool done = false;
  std::string seen;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        Request request;
        request.path = "/v1/chat/completions";
        request.body = "{}";
        Started s = co_await client.start(request, Clock::now() + 5s);
        EXPECT_TRUE(s.response) << s.response.fault().detail;
        if (s.response) {
          EXPECT_EQ(s.response.value().status, 429);
          EXPECT_EQ(s.response.value().retry_after, "7");
        }
        if (client.response()) seen = client.response()->retry_after;
        client.finish(false);
        done = true;
      },
      asio::detached);
  const auto limit = Clock::now() + 10s;
  while (!done && Clock::now() < limit) io.run_one_for(10ms);
  ASSERT_TRUE(done);
  EXPECT_EQ(seen, "7");
  EXPECT_EQ(client.response(), nullptr);  // finish() let it go
}

}  // namespace
}  // namespace lse::http
