// The one place where the facts of a finished probe become its outcome
// (DESIGN §3 failure reasons): the HTTP client's fault (stage, error code,
// deadline or cancel), which deadline the failed operation ran against, the
// HTTP status and content type, and what the event stream showed. Pure: no
// sockets, no clocks.
#pragma once
#include <chrono>
#include <optional>

#include "http/fault.hpp"
#include "probe/failure_reason.hpp"

namespace lse::probe {

// The three deadlines of a probe (config `timeout`).
enum class Deadline { first_token, idle, total };

// The deadline a read runs against: first_token until the first content
// chunk, then idle after each one, both capped by total. When the cap is the
// nearer one (or they coincide), total is the one that expires.
struct Deadlines {
  using TimePoint = std::chrono::steady_clock::time_point;
  TimePoint first_token, total;  // absolute
  std::chrono::steady_clock::duration idle{};

  struct Bound {
    TimePoint at;
    Deadline which;
  };
  static Deadlines from_start(TimePoint start, std::chrono::steady_clock::duration first_token,
                              std::chrono::steady_clock::duration idle,
                              std::chrono::steady_clock::duration total);
  // Before the first content chunk when `last_content` is empty.
  Bound next(std::optional<TimePoint> last_content) const;
};

// Everything the probe knows when it stops.
struct Ending {
  std::optional<http::Fault> fault;           // the client's, if an operation failed
  Deadline deadline = Deadline::first_token;  // what the failed operation ran against
  int http_status = 0;                        // 0 before response headers
  // Content-Type is the dialect's stream type. Not fatal: a body that is
  // the stream is measured whatever its type says, as the SDKs do; only a
  // body in which not one event came is `protocol` for it.
  bool stream_content_type = true;
  // What the event stream showed.
  bool any_event = false;        // at least one event (or NDJSON line) came
  bool content = false;          // at least one content chunk came (else `empty`)
  bool malformed_event = false;  // an event the dialect cannot read
  bool event_too_large = false;  // an event over max_event_bytes
  bool upstream_error = false;   // an error object in the stream
  bool end_marker = false;       // [DONE] or the dialect's end event
  bool finish_reason = false;    // the answer said why it finished
  bool partial_event = false;    // bytes of an unfinished event at the end of the body
};

// none for a successful probe. The order says which fact wins when several
// hold: a non-2xx status names the probe even if reading its error body then
// failed; the stream's own verdict (bad event, upstream error, end marker)
// stands even if the connection failed in the same read.
FailureReason triage(const Ending& ending);

// The reason for a client fault alone, given the deadline it ran against.
FailureReason triage(const http::Fault& fault, Deadline deadline);

// The reason for a response status that is not 2xx: http_4xx, http_429,
// http_5xx; protocol for 101, 3xx and 2xx (well formed, but no stream);
// http_other for a status of no class (< 100, > 599) and a 1xx as the
// final answer.
FailureReason triage_status(int status);

}  // namespace lse::probe
