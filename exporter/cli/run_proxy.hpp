// How each target of `run` reaches its host (DESIGN §5): its proxy_url, else
// the proxy the environment names (HTTP_PROXY / HTTPS_PROXY / NO_PROXY, as
// curl and every SDK read them; always in MC_* mode, with proxy_from_environment
// in a config), else directly; --no-proxy connects directly whatever is set.
// The route is decided once, before the first probe, written into the target
// (the prober then does exactly that) and shown in the run's header line.
#pragma once
#include <string>
#include <vector>

#include "config/config.hpp"
#include "net/proxy_env.hpp"

namespace lse::cli {

struct ProxyRoute {
  std::string proxy;   // "http://host:port" (userinfo never kept); empty: direct
  std::string source;  // "proxy_url", "HTTPS_PROXY", ...; "--no-proxy"; "NO_PROXY" or
                       // "no_proxy" (it matched); empty: nothing asks for a proxy
  std::string host;    // the target's host (what NO_PROXY matched)

  // "proxy http://p:3128 (from HTTPS_PROXY)", "no proxy (--no-proxy)",
  // "no proxy (NO_PROXY matches api.example)"; empty when nothing asked for one.
  std::string text() const;
};

// Decides the route of `t` and fixes it in the target (proxy_url set to the
// proxy, or cleared; proxy_from_environment off). Throws std::invalid_argument
// (a message without the proxy's userinfo) when the variable is not a usable
// proxy or the target's url is not a URL.
ProxyRoute route_target(config::Target& t, bool no_proxy,
                        const net::Getenv& getenv = net::process_env);

// For the header line: one target's route text, or "name: text" for each
// target with something to say, comma-separated; empty when none has.
std::string describe_routes(const std::vector<config::Target>& targets,
                            const std::vector<ProxyRoute>& routes);

}  // namespace lse::cli
