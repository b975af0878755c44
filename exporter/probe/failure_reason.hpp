// Probe outcomes (DESIGN §3 `reason` label values).
#pragma once
#include <array>
#include <optional>
#include <string_view>

namespace lse::probe {

enum class FailureReason {
  none,
  dns,  // the host (or proxy) was not resolved: failed, or not within the deadline
  connect,
  tls,
  http_4xx,
  http_429,
  http_5xx,
  http_other,  // a final status of no known class (999, 1xx as final, 3xx): no stream
  timeout_first_token,
  timeout_idle,
  timeout_total,
  truncated,
  // The server (or an edge on the way) reset the HTTP/2 stream: RST_STREAM,
  // or a GOAWAY that left or cut it; the row's h2_error names its code.
  reset,
  protocol,
  upstream_error,
  empty,  // the stream ended cleanly without one content chunk
  canceled,
};

inline constexpr std::array<FailureReason, 16> kAllFailureReasons = {
    FailureReason::dns,          FailureReason::connect,
    FailureReason::tls,          FailureReason::http_4xx,
    FailureReason::http_429,     FailureReason::http_5xx,
    FailureReason::http_other,   FailureReason::timeout_first_token,
    FailureReason::timeout_idle, FailureReason::timeout_total,
    FailureReason::truncated,    FailureReason::reset,
    FailureReason::protocol,     FailureReason::upstream_error,
    FailureReason::empty,        FailureReason::canceled,
};

constexpr std::string_view to_string(FailureReason r) {
  switch (r) {
    case FailureReason::none: return "";
    case FailureReason::dns: return "dns";
    case FailureReason::connect: return "connect";
    case FailureReason::tls: return "tls";
    case FailureReason::http_4xx: return "http_4xx";
    case FailureReason::http_429: return "http_429";
    case FailureReason::http_5xx: return "http_5xx";
    case FailureReason::http_other: return "http_other";
    case FailureReason::timeout_first_token: return "timeout_first_token";
    case FailureReason::timeout_idle: return "timeout_idle";
    case FailureReason::timeout_total: return "timeout_total";
    case FailureReason::truncated: return "truncated";
    case FailureReason::reset: return "reset";
    case FailureReason::protocol: return "protocol";
    case FailureReason::upstream_error: return "upstream_error";
    case FailureReason::empty: return "empty";
    case FailureReason::canceled: return "canceled";
  }
  return "";
}

inline std::optional<FailureReason> parse_failure_reason(std::string_view s) {
  if (s.empty()) return FailureReason::none;
  if (s == "resolve") return FailureReason::dns;  // its former name, in older rows files
  for (auto r : kAllFailureReasons)
    if (to_string(r) == s) return r;
  return std::nullopt;
}

}  // namespace lse::probe
