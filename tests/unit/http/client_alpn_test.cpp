// The protocol a connection speaks, chosen in the TLS handshake (ALPN):
// http_version "auto" speaks HTTP/1.1 with a server that picks http/1.1 or
// nothing, "2" refuses such a server at the TLS stage with what it picked,
// "1.1" offers nothing by ALPN (its ClientHello is as it always was), and "2"
// for an http:// target through an HTTP proxy fails before any connection.
#include <gtest/gtest.h>

#include <utility>  // before asio awaitable with GCC 12
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "h2_peer.hpp"
#include "http/client.hpp"
#include "scripted_peer.hpp"

namespace {

namespace asio = boost::asio;
using lse::http::Clock;
using lse::http::Errc;
using lse::http::HttpVersion;
using lse::http::Stage;
using lse::test::H2Peer;
using lse::test::H2PeerConn;
using namespace std::chrono_literals;

// An HTTP/1.1 answer over TLS, whatever ALPN picked.
void answer_http1(H2PeerConn& c) {
  c.read_http1_request();
  c.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok");
  c.hang();
}

// One exchange of a client for `url` with `version`: the response or the fault.
lse::http::Started exchange(const std::string& url, HttpVersion version,
                            std::optional<std::string> proxy = std::nullopt) {
  asio::io_context io;
  lse::http::ClientOptions options;
  options.url = *lse::net::parse_url(url);
  options.tls.ca_file = lse::test::h2_pki().ca;
  options.http_version = version;
  if (proxy) options.proxy = *lse::net::parse_url(*proxy);
  lse::http::Client client(io, options);
  lse::http::Started started{{}, lse::http::Fault{}};
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const lse::http::Request request{
            "/chat", "{}", {}};  // named: GCC 12 frees a temporary twice
        started = co_await client.start(request, Clock::now() + 3s);
        client.finish(false);
      },
      asio::detached);
  io.run_for(5s);
  return started;
}

TEST(ClientAlpn, AutoSpeaksHttp11WithAServerThatPicksIt) {
  H2Peer peer(answer_http1, {.tls = true, .alpn = {"http/1.1"}});
  const auto s = exchange(peer.url(), HttpVersion::automatic);
  ASSERT_TRUE(s.response) << s.response.fault().detail;
  EXPECT_EQ(s.response->http_version, "1.1");
  EXPECT_EQ(s.response->status, 200);
  EXPECT_TRUE(peer.alpn_offered());
}

TEST(ClientAlpn, AutoSpeaksHttp11WithAServerThatPicksNothing) {
  H2Peer peer(answer_http1, {.tls = true, .alpn = {}});
  const auto s = exchange(peer.url(), HttpVersion::automatic);
  ASSERT_TRUE(s.response) << s.response.fault().detail;
  EXPECT_EQ(s.response->http_version, "1.1");
  EXPECT_TRUE(peer.alpn_offered());
}

TEST(ClientAlpn, Http11OffersNothingByAlpn) {
  H2Peer peer(answer_http1, {.tls = true, .alpn = {"h2", "http/1.1"}});
  const auto s = exchange(peer.url(), HttpVersion::http1_1);
  ASSERT_TRUE(s.response) << s.response.fault().detail;
  EXPECT_EQ(s.response->http_version, "1.1");
  EXPECT_FALSE(peer.alpn_offered());
}

TEST(ClientAlpn, Http2RefusesAServerThatPicksHttp11) {
  H2Peer peer(answer_http1, {.tls = true, .alpn = {"http/1.1"}});
  const auto s = exchange(peer.url(), HttpVersion::http2);
  ASSERT_FALSE(s.response);
  EXPECT_EQ(s.response.fault().stage, Stage::tls);
  EXPECT_EQ(s.response.fault().ec, make_error_code(Errc::h2_not_negotiated));
  EXPECT_EQ(s.response.fault().detail,
            "the server chose http/1.1 by ALPN; http_version \"2\" needs h2");
  EXPECT_TRUE(lse::http::is_malformed(s.response.fault().ec));
  EXPECT_TRUE(s.stamps.connected.has_value());
  EXPECT_FALSE(s.stamps.tls_done.has_value());
}

TEST(ClientAlpn, Http2RefusesAServerThatPicksNothing) {
  H2Peer peer(answer_http1, {.tls = true, .alpn = {}});
  const auto s = exchange(peer.url(), HttpVersion::http2);
  ASSERT_FALSE(s.response);
  EXPECT_EQ(s.response.fault().stage, Stage::tls);
  EXPECT_EQ(s.response.fault().ec, make_error_code(Errc::h2_not_negotiated));
  EXPECT_EQ(s.response.fault().detail,
            "the server offered no protocol by ALPN; http_version \"2\" needs h2");
}

TEST(ClientAlpn, AutoOverPlainHttpIsHttp11) {
  lse::test::ScriptedPeer peer([](lse::test::PeerConn& c) {
    c.read_request();
    c.send_status(200, "{}");
  });
  const auto s = exchange(peer.url(), HttpVersion::automatic);
  ASSERT_TRUE(s.response) << s.response.fault().detail;
  EXPECT_EQ(s.response->http_version, "1.1");
}

TEST(ClientAlpn, Http2ForAPlainTargetThroughAProxyFailsBeforeConnecting) {
  lse::test::ScriptedPeer proxy([](lse::test::PeerConn& c) { c.hang(); });
  const auto s = exchange("http://127.0.0.1:9/v1", HttpVersion::http2, proxy.url());
  ASSERT_FALSE(s.response);
  EXPECT_EQ(s.response.fault().ec, make_error_code(Errc::h2_not_negotiated));
  EXPECT_EQ(s.response.fault().stage, Stage::connect);
  EXPECT_NE(s.response.fault().detail.find("through an HTTP proxy"), std::string::npos);
  EXPECT_FALSE(s.stamps.resolved.has_value());
}

}  // namespace
