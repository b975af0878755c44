// The request bytes built by Beast's serializer: the same wire the exporter
// always sent, and CONNECT targets with IPv6 literals in brackets.
#include "http/request.hpp"

#include <gtest/gtest.h>

#include <boost/beast/http/write.hpp>
#include <sstream>

namespace {

// What http::async_write puts on the wire.
template <class Message>
std::string wire(const Message& message) {
  std::ostringstream os;
  os << message;
  return os.str();
}

std::string serialize_request(const lse::net::Url& url, bool via_proxy,
                              const lse::http::Request& request) {
  return wire(lse::http::build_request(url, via_proxy, request));
}

std::string serialize_connect(const lse::net::Url& url) {
  return wire(lse::http::build_connect(url));
}

lse::net::Url url(const char* text) { return *lse::net::parse_url(text); }

TEST(Request, PostWithHeadersInOrderThenContentFields) {
  const lse::http::Request request{
      "/chat/completions", "{\"a\":1}", {{"User-Agent", "probe/1"}, {"X-Team", "probes"}}};
  EXPECT_EQ(serialize_request(url("https://api.example.com/v1"), false, request),
            "POST /v1/chat/completions HTTP/1.1\r\n"
            "Host: api.example.com\r\n"
            "User-Agent: probe/1\r\n"
            "X-Team: probes\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 7\r\n"
            "Connection: keep-alive\r\n"
            "\r\n"
            "{\"a\":1}");
}

TEST(Request, PlainHttpThroughAProxyUsesTheAbsoluteForm) {
  const lse::http::Request request{"/x", "", {}};
  const std::string wire = serialize_request(url("http://[::1]:8080/base"), true, request);
  EXPECT_EQ(wire.substr(0, wire.find("\r\n\r\n")),
            "POST http://[::1]:8080/base/x HTTP/1.1\r\n"
            "Host: [::1]:8080\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 0\r\n"
            "Connection: keep-alive");
  // https through a proxy tunnels: the origin form.
  EXPECT_EQ(serialize_request(url("https://h/base"), true, request).substr(0, 20),
            "POST /base/x HTTP/1.");
  EXPECT_EQ(serialize_request(url("http://h"), false, {"", "", {}}).substr(0, 16),
            "POST / HTTP/1.1\r");
}

TEST(Request, ConnectBracketsIpv6Hosts) {
  EXPECT_EQ(serialize_connect(url("https://[::1]/v1")),
            "CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n");
  EXPECT_EQ(serialize_connect(url("https://api.example.com:8443")),
            "CONNECT api.example.com:8443 HTTP/1.1\r\nHost: api.example.com:8443\r\n\r\n");
}

}  // namespace

TEST(Request, TheTargetsQueryGoesWithEveryRequestAfterTheDialectsOwn) {
  const auto azure = url("https://r.openai.azure.com/openai/deployments/d?api-version=2024-06-01");
  const std::string azure_wire = serialize_request(azure, false, {"/chat/completions", "", {}});
  EXPECT_EQ(azure_wire.substr(0, azure_wire.find("\r\n")),
            "POST /openai/deployments/d/chat/completions?api-version=2024-06-01 HTTP/1.1");
  const auto gemini = url("https://g.example/v1beta?x=1");
  const std::string wire =
      serialize_request(gemini, false, {"/models/m:streamGenerateContent?alt=sse", "", {}});
  EXPECT_EQ(wire.substr(0, wire.find("\r\n")),
            "POST /v1beta/models/m:streamGenerateContent?alt=sse&x=1 HTTP/1.1");
}
