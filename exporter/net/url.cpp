// URL splitting for targets and proxies, and NO_PROXY matching (see url.hpp).
#include "net/url.hpp"

#include <algorithm>

#include "net/host.hpp"
#include "util/text.hpp"

namespace lse::net {
namespace {

bool is_control_or_space(char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; }

// host[:port] or [v6][:port] into parts.host / parts.port, with the first issue.
void split_authority(std::string_view authority, UrlParts& parts) {
  auto issue = [&](AuthorityIssue i, std::string_view text) {
    parts.issue = i;
    parts.offending = std::string(text);
  };
  if (authority.empty()) return issue(AuthorityIssue::no_host, {});
  std::string_view port;
  if (authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos || !valid_ipv6_literal(authority.substr(1, close - 1)))
      return issue(AuthorityIssue::bad_ipv6, authority);
    parts.host = std::string(authority.substr(1, close - 1));
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return issue(AuthorityIssue::after_host, rest);
    parts.has_port = !rest.empty();
    if (parts.has_port) port = rest.substr(1);
  } else {
    const auto colon = authority.find(':');
    const std::string_view host = authority.substr(0, colon);
    parts.has_port = colon != std::string_view::npos;
    if (parts.has_port) port = authority.substr(colon + 1);
    if (host.empty()) return issue(AuthorityIssue::no_host, {});
    if (!valid_reg_name(host)) return issue(AuthorityIssue::bad_host, host);
    parts.host = std::string(host);
  }
  parts.port = std::string(port);
  if (parts.has_port && !parse_port(port, 1)) issue(AuthorityIssue::bad_port, port);
}

}  // namespace

UrlParts split_url(std::string_view s) {
  UrlParts parts;
  parts.has_control_or_space = std::any_of(s.begin(), s.end(), is_control_or_space);
  const auto sep = s.find("://");
  if (sep != std::string_view::npos) parts.scheme = text::to_lower(s.substr(0, sep));
  const std::string_view after = sep == std::string_view::npos ? s : s.substr(sep + 3);
  const auto end_of_path = after.find_first_of("?#");
  const auto hash = after.find('#');
  parts.has_fragment = hash != std::string_view::npos;
  if (end_of_path != std::string_view::npos && after[end_of_path] == '?') {
    parts.has_query = true;
    parts.query = std::string(after.substr(end_of_path + 1, hash - end_of_path - 1));
  }
  std::string_view authority = after.substr(0, after.find_first_of("/?#"));
  parts.path = std::string(after.substr(authority.size(), end_of_path - authority.size()));
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    parts.has_userinfo = true;
    authority.remove_prefix(at + 1);
  }
  parts.authority = std::string(authority);
  split_authority(authority, parts);
  return parts;
}

std::string Url::authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string h = v6 ? "[" + host + "]" : host;
  const bool default_port = (tls && port == "443") || (!tls && port == "80");
  return default_port ? h : h + ":" + port;
}

std::string Url::redacted() const {
  return std::string(tls ? "https://" : "http://") + authority() + path;
}

std::optional<Url> parse_url(std::string_view s) {
  UrlParts parts = split_url(s);
  if (parts.scheme != "http" && parts.scheme != "https") return std::nullopt;
  if (parts.has_control_or_space) return std::nullopt;
  // "host:" (an empty port) means the default port (RFC 3986 §3.2.3).
  const bool empty_port = parts.issue == AuthorityIssue::bad_port && parts.port.empty();
  if (parts.issue != AuthorityIssue::none && !empty_port) return std::nullopt;
  Url u;
  u.tls = parts.scheme == "https";
  u.host = std::move(parts.host);
  u.port = parts.port.empty() ? (u.tls ? "443" : "80") : std::move(parts.port);
  while (!parts.path.empty() && parts.path.back() == '/') parts.path.pop_back();
  u.path = std::move(parts.path);
  u.query = std::move(parts.query);
  return u;
}

namespace {

struct NoProxyItem {
  std::string_view host;  // brackets and a leading '.' removed
  std::string_view port;  // empty: any port
};

// "host", ".suffix", "host:port", "[v6]", "[v6]:port", "v6" (a bare IPv6
// address has several colons, so none of them is a port separator).
NoProxyItem split_item(std::string_view item) {
  NoProxyItem out{item, {}};
  if (!item.empty() && item.front() == '[') {
    const auto close = item.find(']');
    if (close != std::string_view::npos) {
      out.host = item.substr(1, close - 1);
      if (item.substr(close + 1).size() > 1 && item[close + 1] == ':')
        out.port = item.substr(close + 2);
    }
  } else if (const auto colon = item.rfind(':');
             colon != std::string_view::npos && item.find(':') == colon) {
    out.host = item.substr(0, colon);
    out.port = item.substr(colon + 1);
  }
  if (!out.host.empty() && out.host.front() == '.') out.host.remove_prefix(1);
  return out;
}

// The host itself or a subdomain of it ("example.com" covers "api.example.com",
// not "notexample.com").
bool host_matches(std::string_view pattern, std::string_view host) {
  if (pattern.empty()) return false;
  if (text::iequals(host, pattern)) return true;
  return host.size() > pattern.size() && host[host.size() - pattern.size() - 1] == '.' &&
         text::iequals(host.substr(host.size() - pattern.size()), pattern);
}

}  // namespace

bool no_proxy_matches(std::string_view list, const Url& url) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = text::trim_blanks(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (item.empty()) continue;
    if (item == "*") return true;
    const NoProxyItem p = split_item(item);
    if (!p.port.empty() && p.port != url.port) continue;
    if (host_matches(p.host, url.host)) return true;
  }
  return false;
}

}  // namespace lse::net
