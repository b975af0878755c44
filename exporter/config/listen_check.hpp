// Internal to the config module: whether the exporter could listen where
// `listen:` says, tried for real (resolve the host, bind the port, close).
// The I/O edge of validation, used only when LoadOptions::check_listen asks.
#pragma once
#include <optional>
#include <string>

#include "net/listen_address.hpp"

namespace lse::config::detail {

// Why `address` cannot be bound now.
struct ListenProblem {
  std::string message;  // "cannot resolve 'h': ...", "cannot bind 127.0.0.1:9687: ..."
  // The address is taken (EADDRINUSE): usually by this exporter, running on
  // this config, which is where a config is checked before a reload. A
  // warning, not an error; every other problem is an error.
  bool in_use = false;
};

// nullopt when `address` can be bound now; else why not. Binds the way the
// server does: the host's first address, or IPv6 any that also takes IPv4
// (IPv4 any where there is no IPv6), with SO_REUSEADDR.
std::optional<ListenProblem> try_listen(const net::ListenAddress& address);

}  // namespace lse::config::detail
