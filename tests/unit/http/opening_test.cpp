// An exchange counts as opening (http/opening.hpp) from its start to its
// request's last byte, the steps whose instants are Clock::now() in a
// handler, and no longer: not while it waits for the answer, whose instants
// are the kernel's, and not after a step failed. The probe loop keeps every
// turn immediate while one is open (probe/probe_loop.hpp).
#include "http/opening.hpp"

#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "http/client.hpp"
#include "scripted_peer.hpp"

namespace {

namespace asio = boost::asio;
using lse::http::Clock;
using lse::test::PeerConn;
using lse::test::ScriptedPeer;
using namespace std::chrono_literals;

struct Seen {
  std::optional<std::size_t> while_waiting;  // opening, read by a timer mid-exchange
  std::optional<std::size_t> after;          // opening, once start() returned
  bool answered = false;
};

// Starts one exchange and reads the count `at` after its start and once it
// returned.
Seen observe(const std::string& url, std::chrono::milliseconds at,
             std::chrono::milliseconds deadline) {
  asio::io_context io;
  lse::http::ClientOptions options;
  options.url = *lse::net::parse_url(url);
  options.tls.insecure_skip_verify = true;
  lse::http::Client client(io, options);
  Seen seen;
  asio::steady_timer probe_point(io, at);
  probe_point.async_wait([&](boost::system::error_code ec) {
    if (!ec) seen.while_waiting = lse::http::opening_exchanges(io);
  });
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const lse::http::Request request{"/chat", "{}", {}};
        lse::http::Started started = co_await client.start(request, Clock::now() + deadline);
        seen.answered = static_cast<bool>(started.response);
        seen.after = lse::http::opening_exchanges(io);
        client.finish(false);
      },
      asio::detached);
  io.run_for(5s);
  return seen;
}

TEST(Opening, AnExchangeWaitingForItsAnswerIsNoLongerOpening) {
  ScriptedPeer peer([](PeerConn& c) {
    c.read_request();
    PeerConn::pause(300ms);  // the request is out; the answer is late
    c.send_stream_head();
    c.send("0\r\n\r\n");
  });
  const Seen seen = observe(peer.url(), 150ms, 3s);
  EXPECT_TRUE(seen.answered);
  ASSERT_TRUE(seen.while_waiting);
  EXPECT_EQ(*seen.while_waiting, 0u);
  ASSERT_TRUE(seen.after);
  EXPECT_EQ(*seen.after, 0u);
}

TEST(Opening, AHandshakeThatHangsIsOpeningUntilItFails) {
  // TCP is accepted, the ClientHello never answered.
  ScriptedPeer peer([](PeerConn& c) { c.hang(); });
  const Seen seen = observe(peer.url("https"), 100ms, 400ms);
  EXPECT_FALSE(seen.answered);
  ASSERT_TRUE(seen.while_waiting);
  EXPECT_EQ(*seen.while_waiting, 1u);
  ASSERT_TRUE(seen.after);
  EXPECT_EQ(*seen.after, 0u);  // the failed step let it go
}

}  // namespace
