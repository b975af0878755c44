// The proxy CONNECT path: IPv6 targets in brackets in the CONNECT line and
// Host header, a refusal is a connect fault, and Client::cancel() during
// CONNECT ends the exchange as canceled, promptly, like the direct path.
#include "http/client.hpp"

#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <mutex>
#include <optional>

#include "scripted_peer.hpp"

namespace {

namespace asio = boost::asio;
using lse::http::Clock;
using lse::http::Fault;
using lse::http::Interrupt;
using lse::http::Stage;
using lse::test::PeerConn;
using lse::test::ScriptedPeer;
using namespace std::chrono_literals;

// A proxy peer that reads the CONNECT head, keeps it, then runs `then`.
struct ProxyPeer {
  explicit ProxyPeer(std::function<void(PeerConn&)> then)
      : peer([this, then = std::move(then)](PeerConn& c) {
          {
            std::lock_guard lock(mu);
            connect_head = c.read_request();
          }
          then(c);
        }) {}
  std::string head() {
    std::lock_guard lock(mu);
    return connect_head;
  }
  std::mutex mu;
  std::string connect_head;
  ScriptedPeer peer;
};

lse::http::ClientOptions via_proxy(const std::string& target, unsigned short proxy_port) {
  lse::http::ClientOptions o;
  o.url = *lse::net::parse_url(target);
  o.proxy = *lse::net::parse_url("http://127.0.0.1:" + std::to_string(proxy_port));
  o.tls.insecure_skip_verify = true;
  return o;
}

struct Outcome {
  std::optional<Fault> fault;
  double wall = 0;
};

// Starts one exchange; cancels the client after `cancel_after` if set.
Outcome start(const lse::http::ClientOptions& options,
              std::optional<std::chrono::milliseconds> cancel_after = std::nullopt) {
  asio::io_context io;
  lse::http::Client client(io, options);
  Outcome out;
  bool done = false;
  const auto begin = Clock::now();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // A named request: GCC 12 mishandles temporaries inside co_await.
        const lse::http::Request request{"/chat", "{}", {}};
        lse::http::Started s = co_await client.start(request, Clock::now() + 5s);
        if (!s.response) out.fault = s.response.fault();
        client.finish(false);
        done = true;
      },
      asio::detached);
  asio::steady_timer timer(io);
  if (cancel_after) {
    timer.expires_after(*cancel_after);
    timer.async_wait([&](boost::system::error_code ec) {
      if (!ec) client.cancel();
    });
  }
  while (!done && Clock::now() < begin + 10s) io.run_one_for(10ms);
  timer.cancel();
  io.poll();
  out.wall = std::chrono::duration<double>(Clock::now() - begin).count();
  EXPECT_TRUE(done);
  return out;
}

TEST(Proxy, ConnectBracketsAnIpv6Target) {
  ProxyPeer proxy([](PeerConn& c) { c.send("HTTP/1.1 403 Forbidden\r\n\r\n"); });
  const Outcome o = start(via_proxy("https://[::1]:8443/v1", proxy.peer.port()));
  EXPECT_EQ(proxy.head(), "CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\n\r\n");
  ASSERT_TRUE(o.fault);
  EXPECT_EQ(o.fault->stage, Stage::proxy_connect);
  EXPECT_EQ(o.fault->interrupt, Interrupt::none);
  EXPECT_EQ(o.fault->ec, make_error_code(lse::http::Errc::proxy_refused));
  EXPECT_EQ(o.fault->detail, "proxy CONNECT refused: HTTP/1.1 403 Forbidden");
}

TEST(Proxy, CancelDuringConnectEndsCanceled) {
  ProxyPeer proxy([](PeerConn& c) { c.hang(); });  // never answers the CONNECT
  const Outcome o = start(via_proxy("https://example.test/v1", proxy.peer.port()), 150ms);
  ASSERT_TRUE(o.fault);
  EXPECT_EQ(o.fault->stage, Stage::proxy_connect);
  EXPECT_EQ(o.fault->interrupt, Interrupt::canceled);
  EXPECT_EQ(o.fault->detail, "canceled");
  EXPECT_LT(o.wall, 1.0);
  EXPECT_EQ(proxy.head().substr(0, 31), "CONNECT example.test:443 HTTP/1");
}

TEST(Proxy, DeadlineDuringConnectIsATimeout) {
  ProxyPeer proxy([](PeerConn& c) { c.hang(); });
  asio::io_context io;
  lse::http::Client client(io, via_proxy("https://example.test/v1", proxy.peer.port()));
  std::optional<Fault> fault;
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const lse::http::Request request{"/chat", "{}", {}};
        lse::http::Started s = co_await client.start(request, Clock::now() + 150ms);
        if (!s.response) fault = s.response.fault();
        client.finish(false);
        done = true;
      },
      asio::detached);
  const auto limit = Clock::now() + 5s;
  while (!done && Clock::now() < limit) io.run_one_for(10ms);
  ASSERT_TRUE(done);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->stage, Stage::proxy_connect);
  EXPECT_EQ(fault->interrupt, Interrupt::deadline);
}

TEST(Proxy, CancelDuringADirectReadEndsCanceledToo) {
  ScriptedPeer origin([](PeerConn& c) {
    c.read_request();
    c.hang();
  });
  lse::http::ClientOptions o;
  o.url = *lse::net::parse_url(origin.url());
  const Outcome out = start(o, 150ms);
  ASSERT_TRUE(out.fault);
  EXPECT_EQ(out.fault->stage, Stage::headers);
  EXPECT_EQ(out.fault->interrupt, Interrupt::canceled);
  EXPECT_LT(out.wall, 1.0);
}

}  // namespace
