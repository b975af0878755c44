// Request messages: the same fields, in the same order, that the exporter has
// always sent (tests/unit/http/request_test.cpp pins the bytes).
#include "http/request.hpp"

namespace lse::http {

namespace bhttp = boost::beast::http;

RequestMessage build_request(const net::Url& url, bool via_proxy, const Request& request) {
  std::string target = url.path + request.path;
  if (target.empty()) target = "/";
  // The target's own query (?api-version=...) goes with every request, after
  // the dialect's (Gemini's ?alt=sse).
  if (!url.query.empty()) target += (target.find('?') == std::string::npos ? "?" : "&") + url.query;
  if (via_proxy && !url.tls) target = "http://" + url.authority() + target;
  RequestMessage message{bhttp::verb::post, target, 11};
  message.set(bhttp::field::host, url.authority());
  for (const auto& [name, value] : request.headers) message.insert(name, value);
  message.set(bhttp::field::content_type, "application/json");
  message.content_length(request.body.size());
  message.set(bhttp::field::connection, "keep-alive");
  message.body() = request.body;
  return message;
}

ConnectMessage build_connect(const net::Url& url) {
  // CONNECT names the port even when it is the default one; an IPv6 literal
  // (the only host with ':') goes in brackets.
  const bool ipv6 = url.host.find(':') != std::string::npos;
  const std::string target = (ipv6 ? "[" + url.host + "]" : url.host) + ":" + url.port;
  ConnectMessage message{bhttp::verb::connect, target, 11};
  message.set(bhttp::field::host, target);
  return message;
}

}  // namespace lse::http
