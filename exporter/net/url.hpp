// The URL grammar of the tree: "scheme://[userinfo@]host[:port][/path][?query][#fragment]"
// split once (split_url), then read leniently for requests (parse_url) or
// judged strictly by config, which phrases the messages with file:line:col.
// Also NO_PROXY matching, which compares hosts the way URLs spell them.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace lse::net {

// What is wrong with the host[:port] part, in the order it is checked.
enum class AuthorityIssue {
  none,
  no_host,     // empty authority or empty host
  bad_ipv6,    // '[' without ']' or not an IPv6 literal inside
  after_host,  // something other than ":port" after "[v6]"
  bad_host,    // not a reg-name (letters, digits, . - _ ~ %)
  bad_port,    // a ':' followed by anything but 1..65535
};

// A URL split into its parts as written. Nothing is rejected here: the flags
// and `issue` say what is off, and each caller decides what it accepts.
struct UrlParts {
  std::string scheme;     // lower case; empty without "://"
  std::string authority;  // host[:port] as written, userinfo removed
  std::string host;       // brackets removed for IPv6 literals
  std::string port;       // as written; empty when absent
  std::string path;       // from the first '/' up to '?' or '#'; may be empty
  bool has_port = false;
  bool has_userinfo = false;  // "user:password@" (a secret: never echo it)
  std::string query;          // after '?' up to '#', without the '?'; may be empty
  bool has_query = false;
  bool has_fragment = false;
  bool has_control_or_space = false;  // bytes <= 0x20 or 0x7f anywhere
  AuthorityIssue issue = AuthorityIssue::none;
  std::string offending;  // the text `issue` is about (host, port, or what follows ']')
};

UrlParts split_url(std::string_view s);

struct Url {
  bool tls = false;
  std::string host;   // without brackets for IPv6 literals
  std::string port;   // always set (default 80/443)
  std::string path;   // base path without trailing '/', may be empty
  std::string query;  // without '?', e.g. "api-version=2024-06-01"; sent with every request

  // "host:port" for Host headers and CONNECT (brackets for IPv6).
  std::string authority() const;
  // The URL with userinfo and query dropped (a query can carry a key), for
  // logs and the landing page.
  std::string redacted() const;
};

// An http(s) URL for a request: userinfo and fragment are dropped, the query is kept,
// the port defaults to 80/443, trailing '/' of the path are removed. Nullopt
// for another scheme, spaces or control characters, or a bad host or port.
std::optional<Url> parse_url(std::string_view s);

// NO_PROXY matching: a comma list of hosts, ".suffix" or "suffix" (both match
// subdomains), "host:port", "[v6]" / "v6", and "*"; hosts compare
// case-insensitively.
bool no_proxy_matches(std::string_view list, const Url& url);

}  // namespace lse::net
