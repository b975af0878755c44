// The one word a person reads first on the landing page and the probe page
// (ok / stalling / buffered / queue / failing) and the one line of evidence
// beside it. Pure: a probe or a target's diagnosis in, words out. A probe or
// target with a stall is never "ok".
#pragma once
#include <string>
#include <string_view>

#include "probe/result.hpp"
#include "server/server.hpp"

namespace lse::server {

enum class PageVerdictKind { waiting, ok, stalling, buffered, queue, failing };

// "waiting", "ok", "stalling", "buffered", "queue", "failing" (also the CSS class suffix).
std::string_view to_string(PageVerdictKind kind);

struct PageVerdict {
  PageVerdictKind kind = PageVerdictKind::waiting;
  std::string
      evidence;  // one line with the numbers, e.g. "transport: 50 of 59 chunks arrived together"
  std::string detail;  // longer text for a hover (the diagnosis' own words), may be ""
};

// One probe on its own: failing when it failed; buffered when its chunks
// came held (all at once, or at least half of them in their predecessor's
// read around a stall); stalling with any stall; else ok.
PageVerdict probe_verdict(const probe::ProbeResult& r);

// A target: its last probe (nullptr: none yet) and the diagnosis of its
// recent probes per prompt. Failing when the last probe failed; buffered
// when transport holds for a prompt or the last probe was held; stalling
// when any recent probe stalled (or generation holds); queue when queue holds.
PageVerdict target_verdict(const TargetStatus& target, const probe::ProbeResult* last);

}  // namespace lse::server
