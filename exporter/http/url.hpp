// Base URLs of targets and proxies: split once at startup, used per request.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace lse::http {

struct Url {
  bool tls = false;
  std::string host;  // without brackets for IPv6 literals
  std::string port;  // always set (default 80/443)
  std::string path;  // base path without trailing '/', may be empty

  // "host:port" for Host headers and CONNECT (brackets for IPv6).
  std::string authority() const;
  // The URL with any userinfo dropped, for logs and the landing page.
  std::string redacted() const;
};

std::optional<Url> parse_url(std::string_view text);

// NO_PROXY matching (comma list of hosts, .suffixes, *, host:port).
bool no_proxy_matches(std::string_view no_proxy, const Url& url);

}  // namespace lse::http
