// Verdict words and their evidence for the pages (see page_verdict.hpp).
#include "server/page_verdict.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "report/diagnosis.hpp"
#include "report/format.hpp"

namespace lse::server {
namespace {

// Enough chunks to tell a held answer from a pair that happened to share a read.
constexpr std::size_t kMinChunksForHeld = 8;
// A stall that ended with at least this many chunks right behind it released held data.
constexpr std::size_t kBurstChunks = 2;
// Hover text is for a person, not a dump.
constexpr std::size_t kMaxDetail = 600;

std::string clip(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  text.resize(max);
  return text + "…";
}

bool holds(const report::Verdict& v) { return v.enough_probes && v.holds(); }

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string failing_evidence(const probe::ProbeResult& r) {
  std::string s(probe::to_string(r.reason));
  if (r.http_status > 0) s += fmt::format(" ({})", r.http_status);
  if (!r.error_detail.empty()) s += ": " + clip(r.error_detail, 160);
  return s;
}

// Chunks that came in their predecessor's read, and the stalls that ended in a burst.
bool held(const probe::ProbeResult& r) {
  if (r.chunks < kMinChunksForHeld) return false;
  if (2 * r.coalesced_chunks >= r.chunks - 1) return true;
  return std::any_of(r.stall_details.begin(), r.stall_details.end(),
                     [](const probe::StallDetail& d) { return d.released_chunks >= kBurstChunks; });
}

std::string held_evidence(const probe::ProbeResult& r) {
  std::string s = fmt::format("transport: {} of {} chunks arrived together", r.coalesced_chunks,
                              r.chunks > 0 ? r.chunks - 1 : 0);
  if (r.stalls > 0) s += fmt::format(", released after {}", plural(r.stalls, "stall", "stalls"));
  return s;
}

std::string stall_evidence(const probe::ProbeResult& r) {
  return fmt::format("{} among {} (max gap {})", plural(r.stalls, "stall", "stalls"),
                     plural(r.gaps.size(), "gap", "gaps"),
                     r.gap_max ? report::format_seconds(*r.gap_max) : "-");
}

std::string ok_evidence(const probe::ProbeResult& r) {
  return fmt::format("no stall; TTFT {}, gap p95 {}",
                     r.ttft ? report::format_seconds(*r.ttft) : "-",
                     r.gap_p95 ? report::format_seconds(*r.gap_p95) : "-");
}

// The diagnosis' own words for every verdict that holds, then its notes, for a hover.
std::string held_words(const TargetStatus& t) {
  std::string s;
  for (const auto& p : t.prompt_diagnosis)
    for (const auto& v : p.verdicts)
      if (holds(v))
        s += fmt::format("{}{}: {}: {}", s.empty() ? "" : "\n", p.prompt, report::title(v.shape),
                         v.why);
  for (const auto& p : t.prompt_diagnosis)
    for (const auto& n : p.notes)
      s += fmt::format("{}{}: {}", s.empty() ? "" : "\n", p.prompt, n.text);
  return clip(s, kMaxDetail);
}

// The first prompt (in config order) where `shape` holds, or nullptr.
const TargetStatus::PromptDiagnosis* where_holds(const TargetStatus& t, report::Shape shape) {
  for (const auto& p : t.prompt_diagnosis)
    for (const auto& v : p.verdicts)
      if (v.shape == shape && holds(v)) return &p;
  return nullptr;
}

// Recent probes with a stall, over every prompt's window: "stalls in 5 of 5 recent probes".
std::string stalled_window_evidence(const TargetStatus& t, std::size_t& stalled) {
  std::size_t probes = 0;
  stalled = 0;
  for (const auto& p : t.prompt_diagnosis) {
    probes += p.window.probes;
    stalled += p.window.stalled_probes;
  }
  if (stalled == 0) return {};
  return fmt::format("stalls in {} of {} recent probes", stalled, probes);
}

PageVerdict from_window(const TargetStatus& t, const probe::ProbeResult& last) {
  std::size_t stalled = 0;
  const std::string window = stalled_window_evidence(t, stalled);
  if (last.stalls > 0 || stalled > 0 || where_holds(t, report::Shape::generation)) {
    std::string e = window.empty() ? std::string() : window;
    if (last.stalls > 0) e += (e.empty() ? "last probe: " : "; last: ") + stall_evidence(last);
    if (e.empty()) e = "the model's own pace: generation";
    return {PageVerdictKind::stalling, e, held_words(t)};
  }
  if (const auto* p = where_holds(t, report::Shape::queue)) {
    const auto& w = p->window;
    return {PageVerdictKind::queue,
            fmt::format("queue ({}): TTFT p50 {} while gap p95 is {}", p->prompt,
                        w.ttft_p50 ? report::format_seconds(*w.ttft_p50) : "-",
                        w.gap_p95 ? report::format_seconds(*w.gap_p95) : "-"),
            held_words(t)};
  }
  return {PageVerdictKind::ok, ok_evidence(last), held_words(t)};
}

}  // namespace

std::string_view to_string(PageVerdictKind kind) {
  switch (kind) {
    case PageVerdictKind::waiting: return "waiting";
    case PageVerdictKind::ok: return "ok";
    case PageVerdictKind::stalling: return "stalling";
    case PageVerdictKind::buffered: return "buffered";
    case PageVerdictKind::queue: return "queue";
    case PageVerdictKind::failing: return "failing";
  }
  return "";
}

PageVerdict probe_verdict(const probe::ProbeResult& r) {
  if (!r.ok) return {PageVerdictKind::failing, failing_evidence(r), r.error_detail};
  if (held(r)) return {PageVerdictKind::buffered, held_evidence(r), {}};
  if (r.stalls > 0) return {PageVerdictKind::stalling, stall_evidence(r), {}};
  return {PageVerdictKind::ok, ok_evidence(r), {}};
}

PageVerdict target_verdict(const TargetStatus& target, const probe::ProbeResult* last) {
  if (last == nullptr) return {PageVerdictKind::waiting, "no probe yet", {}};
  if (!last->ok) return {PageVerdictKind::failing, failing_evidence(*last), last->error_detail};
  if (held(*last)) return {PageVerdictKind::buffered, held_evidence(*last), held_words(target)};
  if (const auto* p = where_holds(target, report::Shape::transport)) {
    const auto& w = p->window;
    return {
        PageVerdictKind::buffered,
        fmt::format("transport ({}): {} of {} stalls ended in a burst, {} of chunks together",
                    p->prompt, w.burst_stalls, w.stalls, report::format_percent(w.coalesced_share)),
        held_words(target)};
  }
  return from_window(target, *last);
}

}  // namespace lse::server
