// The event-by-event record of one probe, kept only when someone asks to see
// it (GET /probe?debug=true): every framed event the stream delivered, with
// the instant of the read that brought it, its size and what the dialect
// made of it. Scheduled probes keep none (a null trace costs one branch per
// event). Pure: the prober stamps, tests build traces by hand.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "api/adapter.hpp"
#include "probe/timeline.hpp"

namespace lse::probe {

// What an event was, as bits: an event may be several at once (the last
// content chunk of an OpenAI stream often carries finish_reason too).
enum EventKind : unsigned {
  kEventContent = 1U << 0,
  kEventReasoning = 1U << 1,
  kEventUsage = 1U << 2,
  kEventFinish = 1U << 3,
  kEventDone = 1U << 4,
  kEventError = 1U << 5,      // the upstream's own error object
  kEventMalformed = 1U << 6,  // not what the dialect sends: the probe fails `protocol`
};

struct TraceEvent {
  TimePoint arrival{};         // of the read that brought it
  std::size_t bytes = 0;       // the event's data
  std::size_t text_bytes = 0;  // of it, counted text (content)
  unsigned kinds = 0;          // EventKind bits; 0: none of them (a role-only delta, a ping)
};

struct Trace {
  // Events kept at most; the rest are counted in `dropped` (a runaway
  // stream must not grow a debug answer without bound).
  static constexpr std::size_t kMaxEvents = std::size_t{1} << 16;

  TimePoint start{};  // the request's start, as the probe's timeline has it
  std::vector<TraceEvent> events;
  std::size_t dropped = 0;

  // A new attempt (a retry without stream_options starts the clock again).
  void restart(TimePoint at);
  void record(TimePoint arrival, std::size_t bytes, const api::EventMeaning& meaning);
};

// "content", "content+finish", "usage+done", "other" (no kind bit).
std::string event_kind_names(unsigned kinds);

}  // namespace lse::probe
