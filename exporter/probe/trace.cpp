// Recording one probe's events (trace.hpp).
#include "probe/trace.hpp"

#include <utility>
#include <array>

namespace lse::probe {

void Trace::restart(TimePoint at) {
  start = at;
  events.clear();
  dropped = 0;
}

void Trace::record(TimePoint arrival, std::size_t bytes, const api::EventMeaning& m) {
  if (events.size() >= kMaxEvents) {
    ++dropped;
    return;
  }
  unsigned kinds = 0;
  if (m.content) kinds |= kEventContent;
  if (m.reasoning) kinds |= kEventReasoning;
  if (m.usage) kinds |= kEventUsage;
  if (!m.finish_reason.empty()) kinds |= kEventFinish;
  if (m.done) kinds |= kEventDone;
  if (m.upstream_error) kinds |= kEventError;
  if (m.protocol_error) kinds |= kEventMalformed;
  events.push_back({arrival, bytes, m.text_bytes, kinds});
}

std::string event_kind_names(unsigned kinds) {
  static constexpr std::array<std::pair<unsigned, const char*>, 7> kNames = {{
      {kEventContent, "content"},
      {kEventReasoning, "reasoning"},
      {kEventUsage, "usage"},
      {kEventFinish, "finish"},
      {kEventDone, "done"},
      {kEventError, "error"},
      {kEventMalformed, "malformed"},
  }};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((kinds & bit) == 0) continue;
    if (!out.empty()) out += '+';
    out += name;
  }
  return out.empty() ? "other" : out;
}

}  // namespace lse::probe
