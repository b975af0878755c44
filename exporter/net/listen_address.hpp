// Listen addresses of the exporter's own HTTP server (`listen:`,
// --web.listen-address): ":9687", "127.0.0.1:9687", "[::1]:9687",
// "localhost:0". One grammar for config validation and for binding.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace lse::net {

struct ListenAddress {
  std::string host;  // empty: all interfaces; IPv6 without brackets
  std::string port;  // "0".."65535" ("0": any free port)
};

// The address, or nullopt with `error` set to a sentence naming what is off.
std::optional<ListenAddress> parse_listen_address(std::string_view listen, std::string* error);

}  // namespace lse::net
