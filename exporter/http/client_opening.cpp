// Client: opening a connection, in clock order: resolve, connect, the proxy's
// CONNECT tunnel, the TLS handshake with the protocol chosen by ALPN. Each
// step reports facts (http/fault.hpp) and a proxy's failures name the proxy.
#include "http/client.hpp"
#include "http/client_conn.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>

#include "dns/resolver.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/write.hpp>

namespace lse::http {

namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::redirect_error;
using asio::use_awaitable;

namespace {

constexpr std::size_t kMaxProxyAnswer = 16384;

// name the proxy and the CONNECT target.
std::string host_port(const net::Url& url) {
  const bool ipv6 = url.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + url.host + "]" : url.host) + ":" + url.port;
}

// The proxy's answer to CONNECT: its status and reason phrase (printable
// ASCII only, cut: it is the proxy's text), or nullopt when it is not HTTP.
struct ProxyStatus {
  int code = 0;
  std::string reason;
};
std::optional<ProxyStatus> proxy_status(std::string_view answer) {
  const std::string_view line = answer.substr(0, answer.find("\r\n"));
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ') return std::nullopt;
  ProxyStatus s;
  for (const char c : line.substr(9, 3)) {
    if (c < '0' || c > '9') return std::nullopt;
    s.code = s.code * 10 + (c - '0');
  }
  constexpr std::size_t kMaxReason = 60;
  for (const char c : line.substr(12)) {
    if (s.reason.size() == kMaxReason) break;
    if (c >= ' ' && c <= '~') s.reason += c;
  }
  while (!s.reason.empty() && s.reason.front() == ' ') s.reason.erase(0, 1);
  return s;
}

// The protocol of a connection whose handshake offered h2: h2 when the server
// picked it, else HTTP/1.1, which only http_version "2" refuses.
std::optional<Fault> chosen_protocol(const std::string& alpn, HttpVersion wanted, bool& http2) {
  http2 = alpn == "h2";
  if (http2 || wanted != HttpVersion::http2) return std::nullopt;
  return Fault{
      Stage::tls, Interrupt::none, make_error_code(Errc::h2_not_negotiated),
      (alpn.empty() ? std::string("the server offered no protocol") : "the server chose " + alpn) +
          " by ALPN; http_version \"2\" needs h2"};
}

}  // namespace

awaitable<Client::Step> Client::open(TimePoint deadline, Stamps& stamps) {
  const bool h2_asked = options_.http_version == HttpVersion::http2;
  // An HTTP proxy forwards an http:// target's request as HTTP/1.1: no h2c
  // goes through it (https:// tunnels, and ALPN is end to end).
  if (h2_asked && options_.proxy && !options_.url.tls)
    co_return Fault{Stage::connect, Interrupt::none, make_error_code(Errc::h2_not_negotiated),
                    "http_version \"2\" for an http:// target through an HTTP proxy: the proxy "
                    "forwards HTTP/1.1 (h2 needs https:// or no proxy)"};
  auto endpoints = co_await resolve(deadline);
  if (!endpoints) co_return endpoints.fault();
  stamps.resolved = Clock::now();
  if (Step f = co_await connect(endpoints.value(), deadline)) co_return f;
  if (options_.proxy && options_.url.tls) {
    if (Step f = co_await tunnel(deadline)) co_return f;
  }
  stamps.connected = Clock::now();
  // http:// with http_version "2": prior-knowledge h2c, the preface first.
  conn_->http2 = h2_asked && !options_.url.tls;
  if (options_.url.tls) {
    if (Step f = co_await handshake(deadline)) co_return f;
    stamps.tls_done = Clock::now();
  }
  if (conn_->http2) conn_->h2 = std::make_unique<h2::Session>(options_.http2);
  co_return std::nullopt;
}

// IP literals need no lookup; a name is looked up on this io_context
// (dns/resolver.hpp), so a slow or dead name server delays nobody else, and
// the deadline or cancel() ends the lookup at once.
awaitable<Result<Client::Endpoints>> Client::resolve(TimePoint deadline) {
  const net::Url& hop = options_.proxy ? *options_.proxy : options_.url;
  const auto port = static_cast<std::uint16_t>(std::stoul(hop.port));  // 1..65535 (net/url)
  if (auto literal = dns::ip_literal(hop.host, port)) co_return Endpoints{*literal};
  const TimePoint began = Clock::now();
  std::shared_ptr<dns::Lookup> lookup;
  arm(deadline, [&lookup] {
    if (lookup) lookup->abort();
  });
  dns::Answer answer = co_await dns::async_lookup(io_, hop.host, port, lookup, use_awaitable);
  disarm();
  // A proxy's failures name the proxy: the target was never reached.
  const std::string who = options_.proxy ? "proxy " + hop.host + ": dns: " : "dns: ";
  const error_code ec = answer.failure == dns::Failure::none
                            ? error_code{}
                            : make_error_code(Errc::name_not_resolved);
  const double waited =
      static_cast<double>(
          std::chrono::round<std::chrono::milliseconds>(Clock::now() - began).count()) /
      1000.0;
  if (Step f =
          outcome(Stage::resolve, ec,
                  fmt::format("{}timed out after {:g}s resolving {}", who, waited, hop.host), "")) {
    if (f->interrupt == Interrupt::none) f->detail = who + answer.error;
    co_return std::move(*f);
  }
  co_return std::move(answer.endpoints);
}

awaitable<Client::Step> Client::connect(const Endpoints& endpoints, TimePoint deadline) {
  const net::Url& hop = options_.proxy ? *options_.proxy : options_.url;
  conn_ = std::make_unique<Conn>(io_);
  conn_pooled_ = false;
  arm_close(deadline);
  error_code ec;
  co_await asio::async_connect(conn_->socket, endpoints, redirect_error(use_awaitable, ec));
  disarm();
  const bool proxy = options_.proxy.has_value();
  if (Step f = outcome(
          Stage::connect, ec,
          proxy ? "proxy " + host_port(hop) + ": timeout connecting"
                : "timeout connecting to " + hop.authority(),
          proxy ? "proxy " + host_port(hop) + ": connect: " : "connect " + hop.authority() + ": "))
    co_return f;
  conn_->socket.set_option(tcp::no_delay(true), ec);
  // Kernel receive timestamps for the arrival instants; without them reads
  // fall back to Clock::now() at completion.
  conn_->reader.enable_timestamps();
  conn_->reader.enable_queue_hints();
  co_return std::nullopt;
}

// HTTP CONNECT tunnel for https through a proxy; the proxy's answer is read
// here, not by the response parser.
awaitable<Client::Step> Client::tunnel(TimePoint deadline) {
  Conn* c = conn_.get();
  const ConnectMessage request = build_connect(options_.url);
  arm_close(deadline);
  error_code ec;
  co_await bhttp::async_write(c->socket, request, redirect_error(use_awaitable, ec));
  std::string answer;
  while (!ec && answer.find("\r\n\r\n") == std::string::npos && answer.size() < kMaxProxyAnswer) {
    char buf[1024];
    const std::size_t n =
        co_await c->socket.async_read_some(asio::buffer(buf), redirect_error(use_awaitable, ec));
    answer.append(buf, n);
  }
  disarm();
  // Named as the proxy's doing, never with what we sent (no credentials).
  const std::string proxy = "proxy " + host_port(*options_.proxy);
  const std::string target(request.target().data(), request.target().size());
  Step f = outcome(Stage::proxy_connect, ec, proxy + ": timeout in CONNECT " + target,
                   proxy + ": CONNECT " + target + ": ");
  if (f && f->interrupt == Interrupt::none && closed_by_peer(ec))
    f->detail = proxy + ": CONNECT " + target + ": connection closed by the proxy";
  if (f) co_return f;
  const auto status = proxy_status(answer);
  if (!status)
    co_return Fault{Stage::proxy_connect, Interrupt::none, make_error_code(Errc::proxy_refused),
                    proxy + " did not answer CONNECT " + target + " in HTTP"};
  if (status->code < 200 || status->code > 299)
    co_return Fault{Stage::proxy_connect, Interrupt::none, make_error_code(Errc::proxy_refused),
                    proxy + " answered " + std::to_string(status->code) +
                        (status->reason.empty() ? "" : " (" + status->reason + ")") +
                        " to CONNECT " + target};
  co_return std::nullopt;
}

awaitable<Client::Step> Client::handshake(TimePoint deadline) {
  Conn* c = conn_.get();
  c->tls.emplace(c->reader, *ssl_);
  SSL* s = c->tls->native_handle();
  configure_peer_check(s, options_.tls, options_.url.host);
  const bool offer_h2 = options_.http_version != HttpVersion::http1_1;
  if (offer_h2) offer_h2_by_alpn(s);
  arm_close(deadline);
  error_code ec;
  co_await c->tls->async_handshake(redirect_error(use_awaitable, ec));
  disarm();
  Step f = outcome(Stage::tls, ec, "timeout in TLS handshake", "");
  if (f && f->interrupt == Interrupt::none) {
    f->detail = ec == ssl::error::stream_truncated
                    ? "tls: connection closed by the server during the handshake, without a TLS "
                      "alert"
                    : "tls: " + tls_failure_detail(ec, s);
  }
  if (f || !offer_h2) co_return f;
  co_return chosen_protocol(alpn_selected(s), options_.http_version, c->http2);
}

}  // namespace lse::http
