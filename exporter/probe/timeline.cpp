// Timeline maths: phases, TTFT, gaps, stalls, tail (DESIGN §2).
#include "probe/timeline.hpp"

#include <algorithm>
#include <cmath>

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

// Phases are consecutive: each starts where the previous present one ended.
void summarize_phases(const Timeline& t, ProbeResult& out) {
  out.phases = {};
  TimePoint cursor = t.start;
  auto phase = [&](Phase p, const std::optional<TimePoint>& at) {
    if (!at) return;
    out.phases[static_cast<std::size_t>(p)] = seconds(cursor, *at);
    cursor = *at;
  };
  phase(Phase::resolve, t.resolved);
  phase(Phase::connect, t.connected);
  phase(Phase::tls, t.tls_done);
  phase(Phase::request, t.request_sent);
  phase(Phase::headers, t.headers);
  out.new_connection = t.connected.has_value();
}

void clear_stream_fields(ProbeResult& out) {
  out.gaps.clear();
  out.stalls = 0;
  out.stall_seconds = 0;
  out.gap_p50.reset();
  out.gap_p95.reset();
  out.gap_max.reset();
  out.ttft.reset();
  out.tail.reset();
  out.output_tokens_per_second.reset();
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
  if (t.headers)
    out.phases[static_cast<std::size_t>(Phase::first_token)] = seconds(*t.headers, first);
  if (t.end) out.tail = seconds(last, *t.end);
  summarize_gaps(t.content_arrivals, stall_threshold, out);
  const double generation = seconds(first, last);
  if (out.completion_tokens > 0 && generation > 0)
    out.output_tokens_per_second = static_cast<double>(out.completion_tokens) / generation;
}

}  // namespace lse::probe
