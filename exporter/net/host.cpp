// Host and port grammar (see host.hpp).
#include "net/host.hpp"

#include <algorithm>

namespace lse::net {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
bool is_xdigit(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

std::optional<int> parse_port(std::string_view text, int min) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  int port = 0;
  for (char c : text) {
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

bool valid_ipv6_literal(std::string_view inside) {
  const std::string_view address = inside.substr(0, inside.find('%'));
  const std::string_view zone = inside.substr(address.size());
  if (address.find(':') == std::string_view::npos) return false;
  const bool address_ok = std::all_of(address.begin(), address.end(),
                                      [](char c) { return is_xdigit(c) || c == ':' || c == '.'; });
  const bool zone_ok =
      zone.empty() || (zone.size() > 1 && std::all_of(zone.begin() + 1, zone.end(), [](char c) {
                         return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
                                c == '%';
                       }));
  return address_ok && zone_ok;
}

}  // namespace lse::net
