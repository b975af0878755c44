// Value rules of DESIGN §4 (see rules.hpp). URLs are checked by hand rather
// than with a URL library: the accepted shape is deliberately narrow (no
// credentials, query or fragment) and the messages must say which part is off.
#include "config/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace lse::config::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Port 0 is only meaningful for listening (pick any), never for a peer.
std::optional<int> parse_port(std::string_view s, int min) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  int port = 0;
  for (char c : s) {
    if (!is_digit(c)) return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port < min || port > 65535) return std::nullopt;
  return port;
}

bool valid_reg_name(std::string_view host) {
  if (host.empty()) return false;
  return std::all_of(host.begin(), host.end(), [](char c) {
    return is_alnum(c) || c == '.' || c == '-' || c == '_' || c == '~' || c == '%';
  });
}

// Hex groups, colons and an embedded IPv4 part, then an optional zone id
// ("%25eth0" in URLs, "%eth0" elsewhere) that may be any unreserved text.
bool valid_ipv6_literal(std::string_view inside) {
  std::string_view address = inside.substr(0, inside.find('%'));
  std::string_view zone = inside.substr(address.size());
  if (address.find(':') == std::string_view::npos) return false;
  bool address_ok = std::all_of(address.begin(), address.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
  });
  bool zone_ok = zone.empty() ||
                 (zone.size() > 1 && std::all_of(zone.begin() + 1, zone.end(), [](char c) {
                    return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '%';
                  }));
  return address_ok && zone_ok;
}

// Splits "host[:port]" / "[v6][:port]"; returns an error or empty.
std::string check_authority(std::string_view what, std::string_view authority) {
  if (authority.empty()) return fmt::format("{} has no host", what);
  std::string_view host, port;
  bool has_port = false;
  if (authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos || !valid_ipv6_literal(authority.substr(1, close - 1))) {
      return fmt::format("{} has an invalid IPv6 host '{}'", what, authority);
    }
    host = authority.substr(0, close + 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return fmt::format("{} has garbage after the host: '{}'", what, rest);
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    auto colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      has_port = true;
    }
    if (!valid_reg_name(host)) {
      return host.empty() ? fmt::format("{} has no host", what)
                          : fmt::format("{} has an invalid host '{}'", what, host);
    }
  }
  if (has_port && !parse_port(port, 1)) {
    return fmt::format("{} has an invalid port '{}' (1..65535)", what, port);
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

struct UrlParts {
  std::string scheme;  // lower case
  std::string authority;
  std::string path;
};

// Shared shape checks; `schemes` lists the accepted schemes.
Checked split_url(std::string_view what, std::string_view url, UrlParts& parts,
                  std::initializer_list<std::string_view> schemes) {
  if (url.empty()) return {{}, fmt::format("{} must not be empty", what)};
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return {{}, fmt::format("{} must not contain spaces or control characters", what)};
    }
  }
  auto sep = url.find("://");
  std::string_view after = sep == std::string_view::npos ? url : url.substr(sep + 3);
  std::string_view authority = after.substr(0, after.find_first_of("/?#"));
  // Checked before anything echoes the URL: user:password@ is a secret.
  if (authority.find('@') != std::string_view::npos) {
    return {{}, fmt::format("{} must not contain credentials (use auth:)", what)};
  }
  std::string scheme;
  if (sep != std::string_view::npos) {
    for (char c : url.substr(0, sep))
      scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (std::find(schemes.begin(), schemes.end(), scheme) == schemes.end()) {
    std::string list;
    for (auto s : schemes) list += (list.empty() ? "" : " or ") + std::string(s) + "://";
    return {{}, fmt::format("{} must start with {}, got '{}'", what, list, shown(url))};
  }
  if (after.find_first_of("?#") != std::string_view::npos) {
    return {{},
            fmt::format("{} must not contain a query or fragment (extra parameters go in body:)",
                        what)};
  }
  if (auto err = check_authority(what, authority); !err.empty()) return {{}, err};
  parts = UrlParts{scheme, std::string(authority), std::string(after.substr(authority.size()))};
  return {};
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<std::string> check_name(std::string_view kind, std::string_view name) {
  bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return is_alnum(c) || c == '_' || c == '.' || c == '-';
  });
  if (ok) return std::nullopt;
  return fmt::format("{} name must match [A-Za-z0-9_.-]+, got '{}'", kind, name);
}

Checked normalize_target_url(std::string_view url) {
  UrlParts parts;
  if (auto c = split_url("url", url, parts, {"http", "https"}); !c.ok()) return c;
  while (!parts.path.empty() && parts.path.back() == '/') parts.path.pop_back();
  return {parts.scheme + "://" + parts.authority + parts.path, {}};
}

Checked normalize_proxy_url(std::string_view url) {
  UrlParts parts;
  if (auto c = split_url("proxy_url", url, parts, {"http"}); !c.ok()) {
    if (url.size() >= 8 && iequals(url.substr(0, 8), "https://")) {
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
  auto bad = [&] {
    return fmt::format("listen must be host:port, :port or [ipv6]:port, got '{}'", listen);
  };
  std::string_view host, port;
  if (!listen.empty() && listen.front() == '[') {
    auto close = listen.find("]:");
    if (close == std::string_view::npos || !valid_ipv6_literal(listen.substr(1, close - 1)))
      return bad();
    port = listen.substr(close + 2);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string_view::npos) return bad();
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
    if (!host.empty() && !valid_reg_name(host)) return bad();
  }
  if (!parse_port(port, 0)) return fmt::format("listen port must be 0..65535, got '{}'", port);
  return std::nullopt;
}

std::optional<std::string> check_api(std::string_view api) {
  constexpr std::string_view kSupported = "openai-chat, openai-completions";
  if (api == "openai-chat" || api == "openai-completions") return std::nullopt;
  if (api == "anthropic-messages" || api == "openai-responses" || api == "ollama-chat") {
    return fmt::format("api {} is not supported by this build (supported: {})", api, kSupported);
  }
  return fmt::format("unknown api '{}' (supported: {})", api, kSupported);
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

std::optional<std::string> check_env_name(std::string_view name) {
  bool ok = !name.empty() && !is_digit(name.front()) &&
            std::all_of(name.begin(), name.end(), [](char c) { return is_alnum(c) || c == '_'; });
  if (ok) return std::nullopt;
  return fmt::format("invalid environment variable name '{}'", name);
}

}  // namespace lse::config::detail
