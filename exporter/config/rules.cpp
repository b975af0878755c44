// Value rules of DESIGN §4 (see rules.hpp). The URL and listen-address
// grammar is net/'s; config only decides what it accepts (deliberately narrow:
// no credentials, query or fragment) and says which part is off.
#include "config/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include "net/listen_address.hpp"
#include "net/url.hpp"
#include "util/text.hpp"

namespace lse::config::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// The message for the first host[:port] issue net::split_url found.
std::string authority_error(std::string_view what, const net::UrlParts& parts) {
  switch (parts.issue) {
    case net::AuthorityIssue::none: return {};
    case net::AuthorityIssue::no_host: return fmt::format("{} has no host", what);
    case net::AuthorityIssue::bad_ipv6:
      return fmt::format("{} has an invalid IPv6 host '{}'", what, parts.offending);
    case net::AuthorityIssue::after_host:
      return fmt::format("{} has garbage after the host: '{}'", what, parts.offending);
    case net::AuthorityIssue::bad_host:
      return fmt::format("{} has an invalid host '{}'", what, parts.offending);
    case net::AuthorityIssue::bad_port:
      return fmt::format("{} has an invalid port '{}' (1..65535)", what, parts.offending);
  }
  return {};
}

// The URL as messages may show it: a query can carry an API key
// (?key=...), so everything from '?' or '#' on is elided.
std::string shown(std::string_view url) {
  auto cut = url.find_first_of("?#");
  if (cut == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, cut)) + "?...";
}

// Shared shape checks, in the order a reader fixes them; `schemes` lists the
// accepted schemes.
Checked check_url(std::string_view what, std::string_view url, const net::UrlParts& parts,
                  std::initializer_list<std::string_view> schemes, bool query_allowed) {
  if (url.empty()) return {{}, fmt::format("{} must not be empty", what)};
  if (parts.has_control_or_space)
    return {{}, fmt::format("{} must not contain spaces or control characters", what)};
  // Checked before anything echoes the URL: user:password@ is a secret.
  if (parts.has_userinfo)
    return {{}, fmt::format("{} must not contain credentials (use auth:)", what)};
  if (std::find(schemes.begin(), schemes.end(), parts.scheme) == schemes.end()) {
    std::string list;
    for (auto s : schemes) list += (list.empty() ? "" : " or ") + std::string(s) + "://";
    return {{}, fmt::format("{} must start with {}, got '{}'", what, list, shown(url))};
  }
  if (parts.has_fragment) return {{}, fmt::format("{} must not contain a fragment", what)};
  if (parts.has_query && !query_allowed)
    return {{}, fmt::format("{} must not contain a query", what)};
  return {{}, authority_error(what, parts)};
}

}  // namespace

std::optional<std::string> check_name(std::string_view kind, std::string_view name) {
  bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return is_alnum(c) || c == '_' || c == '.' || c == '-';
  });
  if (ok) return std::nullopt;
  return fmt::format("{} name must match [A-Za-z0-9_.-]+, got '{}'", kind, name);
}

Checked normalize_target_url(std::string_view url) {
  const net::UrlParts parts = net::split_url(url);
  // A query is kept and sent with every request (Azure OpenAI's ?api-version=).
  if (auto c = check_url("url", url, parts, {"http", "https"}, true); !c.ok()) return c;
  std::string path = parts.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  const std::string query = parts.has_query && !parts.query.empty() ? "?" + parts.query : "";
  return {parts.scheme + "://" + parts.authority + path + query, {}};
}

Checked normalize_proxy_url(std::string_view url) {
  const net::UrlParts parts = net::split_url(url);
  if (auto c = check_url("proxy_url", url, parts, {"http"}, false); !c.ok()) {
    if (text::istarts_with(url, "https://")) {
      c.error = "proxy_url must start with http:// (TLS to the proxy itself is not supported)";
    }
    return c;
  }
  if (!parts.path.empty() && parts.path != "/") {
    return {{}, fmt::format("proxy_url must not have a path, got '{}'", url)};
  }
  return {"http://" + parts.authority, {}};
}

std::optional<std::string> check_listen(std::string_view listen) {
  std::string error;
  if (net::parse_listen_address(listen, &error)) return std::nullopt;
  return error;
}

Parsed<api::Dialect> parse_api(std::string_view name) {
  if (auto d = api::parse_dialect(name)) return {*d, {}};
  return {{}, fmt::format("unknown api '{}' (supported: {})", name, api::dialect_list())};
}

std::optional<std::string> check_header_name(std::string_view name) {
  static constexpr std::string_view kTokenPunct = "!#$%&'*+-.^_`|~";
  bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return is_alnum(c) || kTokenPunct.find(c) != std::string_view::npos;
  });
  if (ok) return std::nullopt;
  return fmt::format("invalid header name '{}'", name);
}

std::optional<std::string> check_header_value(std::string_view name, std::string_view value) {
  if (value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos)
    return std::nullopt;
  return fmt::format("value of header '{}' contains a line break or NUL", name);
}

BucketPlace bucket_place(const std::vector<double>& bounds, std::chrono::nanoseconds threshold) {
  BucketPlace place;
  for (double bound : bounds) {
    // Bounds are decimal seconds, thresholds whole nanoseconds: 0.25 is 250ms.
    const auto ns = static_cast<std::int64_t>(std::llround(bound * 1e9));
    if (ns == threshold.count()) return {true, std::nullopt, std::nullopt};
    if (ns < threshold.count()) place.below = bound;
    if (ns > threshold.count() && !place.above) place.above = bound;
  }
  return place;
}

std::optional<std::string> check_label_name(std::string_view name,
                                            const std::vector<std::string>& reserved) {
  const bool grammar =
      !name.empty() && !is_digit(name.front()) &&
      std::all_of(name.begin(), name.end(), [](char c) { return is_alnum(c) || c == '_'; });
  if (!grammar) return fmt::format("label name '{}' must match [a-zA-Z_][a-zA-Z0-9_]*", name);
  if (name.rfind("__", 0) == 0)
    return fmt::format("label name '{}' is reserved: names starting with __ are Prometheus' own",
                       name);
  if (std::find(reserved.begin(), reserved.end(), name) != reserved.end()) {
    std::string list;
    for (const auto& r : reserved) list += (list.empty() ? "" : ", ") + r;
    return fmt::format("label name '{}' is reserved: the exporter sets it (reserved: {})", name,
                       list);
  }
  return std::nullopt;
}

std::optional<std::string> check_env_name(std::string_view name) {
  bool ok = !name.empty() && !is_digit(name.front()) &&
            std::all_of(name.begin(), name.end(), [](char c) { return is_alnum(c) || c == '_'; });
  if (ok) return std::nullopt;
  return fmt::format("invalid environment variable name '{}'", name);
}

}  // namespace lse::config::detail
