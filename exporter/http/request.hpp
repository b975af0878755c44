// The HTTP/1.1 request of one probe as a Beast message; Beast's serializer
// writes it (http::async_write). Measured (Boost 1.74): one request through
// ssl::stream this way is one TCP write, as the hand-built bytes were, since
// asio linearises small buffer sequences into one SSL_write.
#pragma once
#include <utility>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>
#include <vector>

#include "h2/session.hpp"
#include "net/url.hpp"

namespace lse::http {

struct Request {
  std::string path;  // appended to the base URL path
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Host/Content-*
};

using RequestMessage = boost::beast::http::request<boost::beast::http::string_body>;
using ConnectMessage = boost::beast::http::request<boost::beast::http::empty_body>;

// "POST <target> HTTP/1.1" with Host, the request's headers in order, then
// Content-Type: application/json, Content-Length and Connection: keep-alive.
// Plain http through a proxy uses the absolute form of the target; https
// tunnels through CONNECT and keeps the origin form.
RequestMessage build_request(const net::Url& url, bool via_proxy, const Request& request);

// The same request over HTTP/2: :method POST, :scheme and :authority of the
// URL, :path as build_request's origin form, the request's headers in order,
// then content-type: application/json (the session adds content-length).
// No absolute form: h2 never goes through an HTTP proxy in clear.
h2::Request build_h2_request(const net::Url& url, const Request& request);

// "CONNECT host:port HTTP/1.1" with the same Host: always with the port,
// IPv6 hosts in brackets ("CONNECT [::1]:443").
ConnectMessage build_connect(const net::Url& url);

}  // namespace lse::http
