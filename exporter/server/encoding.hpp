// Response compression for scrapes: Prometheus asks for gzip, and /metrics of
// a few dozen targets compresses about tenfold.
#pragma once
#include <string>
#include <string_view>

namespace lse::server {

// Whether an Accept-Encoding header value allows gzip ("gzip", "x-gzip" or
// "*" with a non-zero q).
bool accepts_gzip(std::string_view header);

// gzip (RFC 1952) of `data`; throws std::runtime_error if zlib fails.
std::string gzip(std::string_view data);

}  // namespace lse::server
