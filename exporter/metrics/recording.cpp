#include "metrics/recording.hpp"

#include <algorithm>
#include <optional>

namespace lse::metrics {
namespace {

// One observation into the classic histogram of row `f` and the native one
// beside it; the probe becomes the native histogram's exemplar when
// `exemplar_at` is set.
void observe(Series& s, F f, double v, const probe::ProbeResult& r,
             std::optional<double> exemplar_at = std::nullopt) {
  histogram_slot(s, f)->Observe(v);
  NativeHistogram* n = s.native[index_of(f)].get();
  if (!n) return;
  n->observe(v);
  if (exemplar_at) n->offer_exemplar(r.id, v, *exemplar_at);
}

void count_outcome(Series& s, const probe::ProbeResult& r) {
  (r.ok ? s.success : s.failure)->Increment();
  if (r.ok) return;
  for (std::size_t i = 0; i < probe::kAllFailureReasons.size(); ++i)
    if (probe::kAllFailureReasons[i] == r.reason) s.failures[i]->Increment();
}

// The clock of the stream. TTFT and the largest gap become their buckets'
// exemplars, stamped with the end of the probe (when they were observed).
void observe_clock(Series& s, const probe::ProbeResult& r) {
  const double observed_at = r.ts + r.duration;
  observe(s, F::duration, r.duration, r);
  for (std::size_t i = 0; i < r.phases.size() && i < s.phase.size(); ++i) {
    if (!r.phases[i] || !s.phase[i]) continue;
    s.phase[i]->Observe(*r.phases[i]);
    if (s.native_phase[i]) s.native_phase[i]->observe(*r.phases[i]);
  }
  if (r.ttft) {
    observe(s, F::ttft, *r.ttft, r, observed_at);
    s.ttft_exemplars.offer(r.id, *r.ttft, observed_at);
  }
  for (double g : r.gaps) s.gap->Observe(g);
  NativeHistogram* native_gap = s.native[index_of(F::gap)].get();
  if (native_gap) native_gap->observe_all(r.gaps);
  if (r.gaps.empty()) return;
  const double largest = *std::max_element(r.gaps.begin(), r.gaps.end());
  s.gap_exemplars.offer(r.id, largest, observed_at);
  if (native_gap) native_gap->offer_exemplar(r.id, largest, observed_at);
}

void count_stream(Series& s, const probe::ProbeResult& r, const SeriesFactory& factory) {
  s.chunks->Increment(static_cast<double>(r.chunks));
  s.coalesced->Increment(static_cast<double>(r.coalesced_chunks));
  s.stalls->Increment(static_cast<double>(r.stalls));
  s.stall_seconds->Increment(r.stall_seconds);
  if (r.stalls > 0) s.stalled_probes->Increment();
  if (r.prompt_tokens >= 0) s.input_tokens->Increment(static_cast<double>(r.prompt_tokens));
  if (r.completion_tokens >= 0)
    s.output_tokens->Increment(static_cast<double>(r.completion_tokens));
  if (!r.finish_reason.empty()) factory.finish_counter(s, r.finish_reason).Increment();
}

// Per-stream summaries describe a whole stream; a cut-off stream's tail or
// p95 would describe the failure, not the stream, so only successes count.
void observe_stream_summaries(Series& s, const probe::ProbeResult& r) {
  if (!r.ok) return;
  if (r.tail) observe(s, F::tail, *r.tail, r);
  if (r.gap_p95) observe(s, F::gap_p95, *r.gap_p95, r);
  if (r.gap_max) {
    observe(s, F::max_gap, *r.gap_max, r, r.ts + r.duration);
    s.max_gap_exemplars.offer(r.id, *r.gap_max, r.ts + r.duration);
  }
  if (r.output_tokens_per_second) observe(s, F::tokens_per_second, *r.output_tokens_per_second, r);
  // How many tokens one gap spans: far from 1, gap figures are not per token.
  if (r.tokens_per_chunk) observe(s, F::tokens_per_chunk, *r.tokens_per_chunk, r);
}

}  // namespace

// What happened is counted whatever the outcome: a stall before a timeout
// was still a stall the user felt, and a first token that arrived arrived.
void record_into(Series& s, const probe::ProbeResult& r, const SeriesFactory& factory) {
  count_outcome(s, r);
  observe_clock(s, r);
  count_stream(s, r, factory);
  observe_stream_summaries(s, r);
  s.last_success->Set(r.ok ? 1 : 0);
  s.last_timestamp->Set(r.ts + r.duration);
}

}  // namespace lse::metrics
