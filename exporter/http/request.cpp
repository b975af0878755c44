// Request messages: the same fields, in the same order, that the exporter has
// always sent (tests/unit/http/request_test.cpp pins the bytes).
#include "http/request.hpp"

namespace lse::http {

namespace bhttp = boost::beast::http;

namespace {

// The origin form: the URL's path, the request's, the queries.
std::string origin_form(const net::Url& url, const Request& request) {
  std::string target = url.path + request.path;
  if (target.empty()) target = "/";
  // The target's own query (?api-version=...) goes with every request, after
  // the dialect's (Gemini's ?alt=sse).
  if (!url.query.empty()) target += (target.find('?') == std::string::npos ? "?" : "&") + url.query;
  return target;
}

}  // namespace

RequestMessage build_request(const net::Url& url, bool via_proxy, const Request& request) {
  std::string target = origin_form(url, request);
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

h2::Request build_h2_request(const net::Url& url, const Request& request) {
  h2::Request out;
  out.method = "POST";
  out.scheme = url.tls ? "https" : "http";
  out.authority = url.authority();
  out.path = origin_form(url, request);
  out.fields.reserve(request.headers.size() + 1);
  for (const auto& [name, value] : request.headers) out.fields.push_back({name, value});
  out.fields.push_back({"content-type", "application/json"});
  out.body = request.body;
  return out;
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
