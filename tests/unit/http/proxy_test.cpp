// The proxy CONNECT path: IPv6 targets in brackets in the CONNECT line and
// Host header, a refusal is a connect fault, and Client::cancel() during
// CONNECT ends the exchange as canceled, promptly, like the direct path.
// A failing proxy is named as the proxy (issue 12); the environment's proxy
// variables are read as curl reads them, and userinfo is never shown.
#include "http/client.hpp"

#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "net/proxy_env.hpp"
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
  EXPECT_EQ(o.fault->detail, "proxy 127.0.0.1:" + std::to_string(proxy.peer.port()) +
                                 " answered 403 (Forbidden) to CONNECT [::1]:8443");
}

TEST(Proxy, A407IsNamedAsTheProxysAnswer) {
  ProxyPeer proxy([](PeerConn& c) {
    c.send(
        "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic "
        "realm=\"x\"\r\nContent-Length: 0\r\n\r\n");
  });
  const Outcome o = start(via_proxy("https://api.example/v1", proxy.peer.port()));
  ASSERT_TRUE(o.fault);
  EXPECT_EQ(o.fault->stage, Stage::proxy_connect);
  EXPECT_EQ(o.fault->detail, "proxy 127.0.0.1:" + std::to_string(proxy.peer.port()) +
                                 " answered 407 (Proxy Authentication Required) to CONNECT "
                                 "api.example:443");
}

TEST(Proxy, TheProxysReasonPhraseIsCutAndPrintableOnly) {
  ProxyPeer proxy([](PeerConn& c) {
    c.send("HTTP/1.1 502 Bad\x1b[31m Gateway " + std::string(200, 'x') + "\r\n\r\n");
  });
  const Outcome o = start(via_proxy("https://api.example/v1", proxy.peer.port()));
  ASSERT_TRUE(o.fault);
  EXPECT_NE(o.fault->detail.find(" answered 502 (Bad[31m Gateway xxx"), std::string::npos)
      << o.fault->detail;
  EXPECT_EQ(o.fault->detail.find('\x1b'), std::string::npos);
  EXPECT_LT(o.fault->detail.size(), 140U);
}

TEST(Proxy, AnAnswerThatIsNotHttpIsNamed) {
  ProxyPeer proxy([](PeerConn& c) { c.send("SSH-2.0-OpenSSH_9.2\r\n\r\n"); });
  const Outcome o = start(via_proxy("https://api.example/v1", proxy.peer.port()));
  ASSERT_TRUE(o.fault);
  EXPECT_EQ(o.fault->detail, "proxy 127.0.0.1:" + std::to_string(proxy.peer.port()) +
                                 " did not answer CONNECT api.example:443 in HTTP");
}

TEST(Proxy, AProxyThatClosesDuringConnectIsNamed) {
  ProxyPeer proxy([](PeerConn&) {});  // reads the CONNECT, closes
  const Outcome o = start(via_proxy("https://api.example/v1", proxy.peer.port()));
  ASSERT_TRUE(o.fault);
  EXPECT_EQ(o.fault->stage, Stage::proxy_connect);
  EXPECT_EQ(o.fault->interrupt, Interrupt::none);
  EXPECT_EQ(o.fault->detail, "proxy 127.0.0.1:" + std::to_string(proxy.peer.port()) +
                                 ": CONNECT api.example:443: connection closed by the proxy");
}

TEST(Proxy, ARefusedProxyIsNamedAsTheProxy) {
  const unsigned short port = lse::test::closed_port();
  for (const char* target : {"https://api.example/v1", "http://api.example/v1"}) {
    const Outcome o = start(via_proxy(target, port));
    ASSERT_TRUE(o.fault);
    EXPECT_EQ(o.fault->stage, Stage::connect);
    EXPECT_EQ(o.fault->detail,
              "proxy 127.0.0.1:" + std::to_string(port) + ": connect: Connection refused");
  }
}

TEST(Proxy, ARefusedDirectConnectionStaysUnchanged) {
  const unsigned short port = lse::test::closed_port();
  lse::http::ClientOptions o;
  o.url = *lse::net::parse_url("http://127.0.0.1:" + std::to_string(port) + "/v1");
  const Outcome out = start(o);
  ASSERT_TRUE(out.fault);
  EXPECT_EQ(out.fault->detail,
            "connect 127.0.0.1:" + std::to_string(port) + ": Connection refused");
}

// --- the environment's proxy variables ----------------------------------------

lse::net::Getenv fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ProxyEnv, TheSchemeChoosesTheVariableUpperCaseFirst) {
  const auto https = *lse::net::parse_url("https://api.example/v1");
  const auto http = *lse::net::parse_url("http://127.0.0.1:8080/v1");
  const auto env = fake_env(
      {{"HTTPS_PROXY", "http://a:1"}, {"https_proxy", "http://b:2"}, {"http_proxy", "http://c:3"}});
  auto e = lse::net::env_proxy_for(https, env);
  EXPECT_EQ(e.variable, "HTTPS_PROXY");
  EXPECT_EQ(e.value, "http://a:1");
  EXPECT_TRUE(e.applies());
  e = lse::net::env_proxy_for(http, env);
  EXPECT_EQ(e.variable, "http_proxy");
  EXPECT_EQ(e.value, "http://c:3");
  e = lse::net::env_proxy_for(http, fake_env({{"HTTPS_PROXY", "http://a:1"}, {"HTTP_PROXY", ""}}));
  EXPECT_EQ(e.variable, "");  // an empty variable is unset; https's proxy is not http's
  EXPECT_FALSE(e.applies());
}

TEST(ProxyEnv, NoProxyBypasses) {
  const auto url = *lse::net::parse_url("http://127.0.0.1:8080/v1");
  auto e = lse::net::env_proxy_for(
      url, fake_env({{"HTTP_PROXY", "http://p:3128"}, {"no_proxy", "localhost,127.0.0.1"}}));
  EXPECT_EQ(e.variable, "HTTP_PROXY");
  EXPECT_EQ(e.bypassed_by, "no_proxy");
  EXPECT_FALSE(e.applies());
  e = lse::net::env_proxy_for(url,
                              fake_env({{"HTTP_PROXY", "http://p:3128"}, {"NO_PROXY", "example"}}));
  EXPECT_TRUE(e.applies());
}

TEST(ProxyEnv, ProxyUrlsAsTheVariablesSpellThem) {
  auto p = lse::net::parse_proxy_url("proxy.corp:3128");
  ASSERT_TRUE(p.url);
  EXPECT_EQ(p.url->host, "proxy.corp");
  EXPECT_EQ(p.url->port, "3128");
  p = lse::net::parse_proxy_url("http://user:s3cret@proxy.corp:3128/");
  ASSERT_TRUE(p.url);
  EXPECT_EQ(p.url->redacted(), "http://proxy.corp:3128");
  EXPECT_EQ(p.url->path, "");
  for (const char* bad : {"https://user:s3cret@proxy.corp:3128", "socks5://user:s3cret@h:1080",
                          "http://user:s3cret@bad host:1"}) {
    p = lse::net::parse_proxy_url(bad);
    EXPECT_FALSE(p.url) << bad;
    EXPECT_FALSE(p.error.empty()) << bad;
    EXPECT_EQ(p.error.find("s3cret"), std::string::npos) << p.error;
  }
}

TEST(ProxyEnv, RedactUserinfo) {
  EXPECT_EQ(lse::net::redact_userinfo("http://u:pw@h:3128/x"), "http://<secret>@h:3128/x");
  EXPECT_EQ(lse::net::redact_userinfo("u:pw@h:3128"), "<secret>@h:3128");
  EXPECT_EQ(lse::net::redact_userinfo("http://h:3128/a@b"), "http://h:3128/a@b");
  EXPECT_EQ(lse::net::redact_userinfo("http://h:3128"), "http://h:3128");
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
