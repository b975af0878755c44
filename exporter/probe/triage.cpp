// Facts → FailureReason (DESIGN §3). Each rule is one line; the order of the
// rules is the precedence documented in triage.hpp.
#include "probe/triage.hpp"

#include <algorithm>

namespace lse::probe {

Deadlines Deadlines::from_start(TimePoint start, std::chrono::steady_clock::duration first_token,
                                std::chrono::steady_clock::duration idle,
                                std::chrono::steady_clock::duration total) {
  Deadlines d;
  d.total = start + total;
  d.first_token = std::min(d.total, start + first_token);
  d.idle = idle;
  return d;
}

Deadlines::Bound Deadlines::next(std::optional<TimePoint> last_content) const {
  const TimePoint own = last_content ? *last_content + idle : first_token;
  const TimePoint at = std::min(total, own);
  if (at == total) return {at, Deadline::total};
  return {at, last_content ? Deadline::idle : Deadline::first_token};
}

FailureReason triage_status(int status) {
  if (status == 429) return FailureReason::http_429;
  if (status < 100 || status > 599) return FailureReason::http_other;  // no class HTTP defines
  if (status >= 500) return FailureReason::http_5xx;
  if (status >= 400) return FailureReason::http_4xx;
  // 101 leaves HTTP, a redirect is not followed, another 2xx is no stream:
  // each answer is well formed but not a stream.
  if (status == 101 || status >= 200) return FailureReason::protocol;
  return FailureReason::http_other;  // an interim 1xx sent as the final answer
}

FailureReason triage(const http::Fault& f, Deadline deadline) {
  if (f.interrupt == http::Interrupt::canceled) return FailureReason::canceled;
  // A lookup is its own reason whether it failed or outlived the deadline.
  if (f.stage == http::Stage::resolve) return FailureReason::dns;
  if (f.interrupt == http::Interrupt::deadline) {
    switch (deadline) {
      case Deadline::first_token: return FailureReason::timeout_first_token;
      case Deadline::idle: return FailureReason::timeout_idle;
      case Deadline::total: return FailureReason::timeout_total;
    }
  }
  // HTTP/2: the server's reset of our stream is its own outcome; a broken
  // h2 session or h2 not negotiated is the protocol's, at whatever stage.
  if (f.ec == http::Errc::stream_reset) return FailureReason::reset;
  if (f.ec == http::Errc::h2_protocol || f.ec == http::Errc::h2_not_negotiated)
    return FailureReason::protocol;
  if (http::is_malformed(f.ec)) return FailureReason::protocol;
  switch (f.stage) {
    case http::Stage::resolve: return FailureReason::dns;
    case http::Stage::connect:
    case http::Stage::proxy_connect: return FailureReason::connect;
    case http::Stage::tls: return FailureReason::tls;
    case http::Stage::send:
    case http::Stage::headers:
    case http::Stage::body: break;
  }
  return http::is_connection_lost(f) ? FailureReason::truncated : FailureReason::tls;
}

FailureReason triage(const Ending& e) {
  const bool status_ok = e.http_status >= 200 && e.http_status <= 299;
  if (e.http_status != 0 && !status_ok) return triage_status(e.http_status);
  if (e.malformed_event || e.event_too_large) return FailureReason::protocol;
  if (e.upstream_error) return FailureReason::upstream_error;
  if (e.end_marker) return e.content ? FailureReason::none : FailureReason::empty;
  if (e.fault) return triage(*e.fault, e.deadline);
  if (!e.stream_content_type && !e.any_event) return FailureReason::protocol;
  if (!e.finish_reason || e.partial_event) return FailureReason::truncated;
  return e.content ? FailureReason::none : FailureReason::empty;
}

}  // namespace lse::probe
