// Timeline maths: phases, TTFT, gaps, stalls, tail (DESIGN §2).
#include "probe/timeline.hpp"

#include <utility>
#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <string>

namespace lse::probe {
namespace {

double seconds(TimePoint from, TimePoint to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

double nearest_rank(const std::vector<double>& sorted, double q) {
  const auto n = sorted.size();
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  rank = std::clamp<std::size_t>(rank, 1, n);
  return sorted[rank - 1];
}

namespace {

// The phase boundaries in clock order, each where the phase ends; the first
// content chunk closes first_token.
struct Boundaries {
  std::array<std::optional<TimePoint>, kAllPhases.size()> at;
};

// One clock domain. Headers and content arrivals are kernel receive stamps:
// when the bytes came. resolved .. request_sent are read in user space after
// the step's completion was scheduled: a little after the step ended, never
// before. So a user-space stamp later than the next boundary is only that
// delay (a fast server's headers can arrive before our coroutine resumes
// from the write), and the true instant is no later than that boundary: each
// boundary is capped by the next present one, last to first. Phases are then
// >= 0 and still sum to TTFT.
Boundaries causal_boundaries(const Timeline& t) {
  Boundaries b;
  b.at = {t.resolved, t.connected, t.tls_done, t.request_sent, t.headers, std::nullopt};
  if (!t.content_arrivals.empty() && t.headers) b.at.back() = t.content_arrivals.front();
  std::optional<TimePoint> next;
  for (std::size_t i = b.at.size(); i-- > 0;) {
    if (!b.at[i]) continue;
    if (next && *b.at[i] > *next) b.at[i] = next;
    next = b.at[i];
  }
  return b;
}

// Phases are consecutive: each starts where the previous present one ended.
void summarize_phases(const Timeline& t, ProbeResult& out) {
  out.phases = {};
  const Boundaries b = causal_boundaries(t);
  TimePoint cursor = t.start;
  for (std::size_t i = 0; i < b.at.size(); ++i) {
    if (!b.at[i]) continue;
    const TimePoint at = std::max(*b.at[i], cursor);
    out.phases[i] = seconds(cursor, at);
    cursor = at;
  }
  out.new_connection = t.connected.has_value();
}

void clear_stream_fields(ProbeResult& out) {
  out.gaps.clear();
  out.coalesced_chunks = 0;
  out.stall_details.clear();
  out.stalls = 0;
  out.stall_seconds = 0;
  out.gap_p50.reset();
  out.gap_p95.reset();
  out.gap_max.reset();
  out.ttft.reset();
  out.tail.reset();
  out.output_tokens_per_second.reset();
  out.tokens_per_chunk.reset();
}

// Gaps between consecutive content chunks, stalls among them, and their
// nearest-rank percentiles.
void summarize_gaps(const std::vector<TimePoint>& arrivals, double stall_threshold,
                    ProbeResult& out) {
  out.gaps.reserve(arrivals.size() - 1);
  for (std::size_t i = 1; i < arrivals.size(); ++i) {
    const double gap = seconds(arrivals[i - 1], arrivals[i]);
    out.gaps.push_back(gap);
    if (gap >= stall_threshold) {
      ++out.stalls;
      out.stall_seconds += gap;
    }
  }
  if (out.gaps.empty()) return;
  std::vector<double> sorted = out.gaps;
  std::sort(sorted.begin(), sorted.end());
  out.gap_p50 = nearest_rank(sorted, 0.50);
  out.gap_p95 = nearest_rank(sorted, 0.95);
  out.gap_max = sorted.back();
}

// Release evidence: chunks stamped with their predecessor's read (gap 0:
// one socket read delivered both), and for each stall how many chunks
// followed the one that ended it within the release window.
void summarize_release(const std::vector<TimePoint>& arrivals, double stall_threshold,
                       ProbeResult& out) {
  const double window = out.gap_p50.value_or(0) * kReleaseWindowOfGapP50;
  for (std::size_t i = 1; i < arrivals.size(); ++i) {
    if (arrivals[i] == arrivals[i - 1]) ++out.coalesced_chunks;
    const double gap = out.gaps[i - 1];
    if (gap < stall_threshold) continue;
    std::size_t released = 0;
    for (std::size_t j = i + 1; j < arrivals.size() && seconds(arrivals[i], arrivals[j]) <= window;
         ++j)
      ++released;
    out.stall_details.push_back({i + 1, gap, released});
  }
}

}  // namespace

void summarize(const Timeline& t, double stall_threshold, ProbeResult& out) {
  out.stall_threshold = stall_threshold;
  const TimePoint end =
      t.end.value_or(t.content_arrivals.empty() ? t.start : t.content_arrivals.back());
  out.duration = seconds(t.start, end);
  summarize_phases(t, out);
  out.chunks = t.content_arrivals.size();
  out.first_reasoning.reset();
  if (t.first_reasoning) out.first_reasoning = seconds(t.start, *t.first_reasoning);
  clear_stream_fields(out);
  if (t.content_arrivals.empty()) return;

  const TimePoint first = t.content_arrivals.front();
  const TimePoint last = t.content_arrivals.back();
  out.ttft = seconds(t.start, first);
  if (t.end) out.tail = seconds(last, *t.end);
  summarize_gaps(t.content_arrivals, stall_threshold, out);
  summarize_release(t.content_arrivals, stall_threshold, out);
  const double generation = seconds(first, last);
  if (out.completion_tokens > 0 && generation > 0)
    out.output_tokens_per_second = static_cast<double>(out.completion_tokens) / generation;
  out.tokens_per_chunk = tokens_per_chunk({out.completion_tokens, out.reasoning_tokens, out.chunks,
                                           t.reasoning_chunks, t.first_reasoning.has_value()});
}

std::optional<double> tokens_per_chunk(const ChunkTokens& c) {
  if (c.completion_tokens < 0 || c.content_chunks == 0) return std::nullopt;
  const std::size_t chunks = c.content_chunks + c.reasoning_chunks;
  std::int64_t tokens = c.completion_tokens;
  if (!c.reasoning_streamed && c.reasoning_tokens > 0) tokens -= c.reasoning_tokens;
  if (tokens < 0) return std::nullopt;  // the usage contradicts itself
  return static_cast<double>(tokens) / static_cast<double>(chunks);
}

std::optional<std::string> clock_violation(const Timeline& t) {
  if (t.start == TimePoint{}) return "the probe's start was never stamped";
  const std::pair<const char*, const std::optional<TimePoint>*> instants[] = {
      {"resolve", &t.resolved}, {"connect", &t.connected},
      {"tls", &t.tls_done},     {"request", &t.request_sent},
      {"headers", &t.headers},  {"first reasoning chunk", &t.first_reasoning},
      {"end of stream", &t.end}};
  for (const auto& [name, at] : instants)
    if (*at && **at < t.start) return std::string(name) + " stamped before the probe started";
  // The chunk's name is written only for a violation (this runs once per
  // probe over every chunk: no allocation per chunk).
  const auto chunk = [](std::size_t i) { return "content chunk " + std::to_string(i + 1); };
  for (std::size_t i = 0; i < t.content_arrivals.size(); ++i) {
    if (t.content_arrivals[i] < t.start) return chunk(i) + " stamped before the probe started";
    if (i > 0 && t.content_arrivals[i] < t.content_arrivals[i - 1])
      return chunk(i) + " stamped before the chunk before it";
  }
  if (t.end && !t.content_arrivals.empty() && *t.end < t.content_arrivals.back())
    return "end of stream stamped before the last content chunk";
  return std::nullopt;
}

void summarize_probe(const Timeline& t, double stall_threshold, TimePoint now, ProbeResult& out) {
  const std::optional<std::string> violation = clock_violation(t);
  assert(!violation && "a probe's timeline is one causal clock (probe/timeline.hpp)");
  if (!violation) {
    summarize(t, stall_threshold, out);
    return;
  }
  // Release builds: nothing derived from the broken instants is recorded.
  Timeline trusted;
  trusted.start = t.start == TimePoint{} ? now : t.start;
  trusted.end = std::max(now, trusted.start);
  summarize(trusted, stall_threshold, out);
  out.chunks = t.content_arrivals.size();
  out.ok = false;
  out.reason = FailureReason::protocol;
  out.error_detail = "internal clock error: " + *violation + "; no time of this probe is recorded";
}

std::vector<double> arrival_offsets(const ProbeResult& r) {
  std::vector<double> at;
  if (!r.ttft) return at;
  at.reserve(r.gaps.size() + 1);
  double t = *r.ttft;
  at.push_back(t);
  for (double g : r.gaps) at.push_back(t += g);
  return at;
}

}  // namespace lse::probe
