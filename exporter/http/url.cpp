// URL splitting for targets and proxies.
#include "http/url.hpp"

#include <algorithm>
#include <cctype>

namespace lse::http {

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
  Url u;
  if (s.rfind("https://", 0) == 0) {
    u.tls = true;
    s.remove_prefix(8);
  } else if (s.rfind("http://", 0) == 0) {
    s.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  const auto slash = s.find('/');
  std::string_view auth = s.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : s.substr(slash);
  if (const auto at = auth.rfind('@'); at != std::string_view::npos) auth.remove_prefix(at + 1);
  if (auth.empty()) return std::nullopt;
  if (auth.front() == '[') {
    const auto close = auth.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    u.host = std::string(auth.substr(1, close - 1));
    auth.remove_prefix(close + 1);
    if (!auth.empty()) {
      if (auth.front() != ':') return std::nullopt;
      u.port = std::string(auth.substr(1));
    }
  } else {
    const auto colon = auth.rfind(':');
    u.host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) u.port = std::string(auth.substr(colon + 1));
  }
  if (u.host.empty()) return std::nullopt;
  if (u.port.empty()) u.port = u.tls ? "443" : "80";
  if (!std::all_of(u.port.begin(), u.port.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::nullopt;
  if (const auto q = path.find_first_of("?#"); q != std::string_view::npos)
    path = path.substr(0, q);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  u.path = std::string(path);
  return u;
}

bool no_proxy_matches(std::string_view list, const Url& url) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
      item.remove_suffix(1);
    if (item.empty()) continue;
    if (item == "*") return true;
    std::string_view host = item;
    if (const auto colon = item.rfind(':'); colon != std::string_view::npos &&
                                            item.find(']') == std::string_view::npos &&
                                            item.find(':') == colon) {
      if (item.substr(colon + 1) != url.port) continue;
      host = item.substr(0, colon);
    }
    if (!host.empty() && host.front() == '.') host.remove_prefix(1);
    if (url.host == host) return true;
    if (url.host.size() > host.size() &&
        url.host.compare(url.host.size() - host.size(), host.size(), host) == 0 &&
        url.host[url.host.size() - host.size() - 1] == '.')
      return true;
  }
  return false;
}

}  // namespace lse::http
