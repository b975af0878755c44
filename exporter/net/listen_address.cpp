// Listen-address grammar (see listen_address.hpp).
#include "net/listen_address.hpp"

#include <fmt/format.h>

#include "net/host.hpp"

namespace lse::net {

std::optional<ListenAddress> parse_listen_address(std::string_view listen, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<ListenAddress> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  auto bad = [&] {
    return fail(fmt::format("listen must be host:port, :port or [ipv6]:port, got '{}'", listen));
  };
  ListenAddress a;
  std::string_view port;
  if (!listen.empty() && listen.front() == '[') {
    const auto close = listen.find("]:");
    if (close == std::string_view::npos || !valid_ipv6_literal(listen.substr(1, close - 1)))
      return bad();
    a.host = std::string(listen.substr(1, close - 1));
    port = listen.substr(close + 2);
  } else {
    const auto colon = listen.rfind(':');
    if (colon == std::string_view::npos) return bad();
    const auto host = listen.substr(0, colon);
    if (!host.empty() && !valid_reg_name(host)) {
      // The config's message, with the likely fix for a bare IPv6 address.
      if (host.find(':') != std::string_view::npos)
        return fail(fmt::format(
            "listen must be host:port, :port or [ipv6]:port, got '{}' (IPv6 addresses need "
            "brackets: [::1]:9687)",
            listen));
      return bad();
    }
    a.host = std::string(host);
    port = listen.substr(colon + 1);
  }
  if (!parse_port(port, 0))
    return fail(fmt::format("listen port must be 0..65535, got '{}'", port));
  a.port = std::string(port);
  return a;
}

}  // namespace lse::net
