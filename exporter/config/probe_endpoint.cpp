// `probe_endpoint:`: how many on-demand probes GET /probe?target= may run at
// once (docs/probe-endpoint.md).
#include <fmt/format.h>

#include "config/sections.hpp"

namespace lse::config::detail {

ProbeEndpointOptions parse_probe_endpoint(const Reader& r, const Item& item) {
  ProbeEndpointOptions pe;
  Fields f(r, item, "probe_endpoint", {"max_concurrent"}, "probe_endpoint.");
  if (auto v = f.get("max_concurrent")) {
    r.attempt([&] {
      const std::int64_t n = r.integer(*v);
      if (n < 0 || static_cast<std::uint64_t>(n) > ProbeEndpointOptions::kMaxConcurrent)
        r.fail(*v, fmt::format("must be between 0 (off) and {}, got {}",
                               ProbeEndpointOptions::kMaxConcurrent, n));
      pe.max_concurrent = static_cast<std::uint64_t>(n);
    });
  }
  return pe;
}

}  // namespace lse::config::detail
