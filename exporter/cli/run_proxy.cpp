// The route of each `run` target: proxy_url, the environment, or direct
// (see run_proxy.hpp).
#include "cli/run_proxy.hpp"

#include <stdexcept>

namespace lse::cli {
namespace {

std::string shown(const net::Url& proxy) {
  const bool ipv6 = proxy.host.find(':') != std::string::npos;
  return "http://" + (ipv6 ? "[" + proxy.host + "]" : proxy.host) + ":" + proxy.port;
}

// The proxy `value` (from `source`) as the route's; throws when unusable.
std::string usable(const std::string& value, const std::string& source) {
  const net::ProxyUrl p = net::parse_proxy_url(value);
  if (!p.url) throw std::invalid_argument(source + ": " + p.error);
  return shown(*p.url);
}

}  // namespace

std::string ProxyRoute::text() const {
  if (!proxy.empty()) return "proxy " + proxy + " (from " + source + ")";
  if (source == "--no-proxy") return "no proxy (--no-proxy)";
  if (!source.empty()) return "no proxy (" + source + " matches " + host + ")";
  return {};
}

ProxyRoute route_target(config::Target& t, bool no_proxy, const net::Getenv& getenv) {
  const auto url = net::parse_url(t.url);
  if (!url) throw std::invalid_argument("target " + t.name + ": url is not an http(s) URL");
  ProxyRoute r;
  r.host = url->host;
  const bool from_environment = t.proxy_from_environment;
  t.proxy_from_environment = false;
  if (no_proxy) {
    t.proxy_url.clear();
    r.source = "--no-proxy";
  } else if (!t.proxy_url.empty()) {
    r.source = "proxy_url";
    r.proxy = usable(t.proxy_url, "target " + t.name + ": proxy_url");
  } else if (from_environment) {
    const net::EnvProxy env = net::env_proxy_for(*url, getenv);
    if (!env.bypassed_by.empty()) {
      r.source = env.bypassed_by;
    } else if (!env.variable.empty()) {
      r.source = env.variable;
      r.proxy = usable(env.value, env.variable);
    }
  }
  t.proxy_url = r.proxy;
  return r;
}

std::string describe_routes(const std::vector<config::Target>& targets,
                            const std::vector<ProxyRoute>& routes) {
  if (routes.size() == 1) return routes.front().text();
  std::string out;
  for (std::size_t i = 0; i < routes.size() && i < targets.size(); ++i) {
    const std::string text = routes[i].text();
    if (text.empty()) continue;
    if (!out.empty()) out += ", ";
    out += targets[i].name + ": " + text;
  }
  return out;
}

}  // namespace lse::cli
