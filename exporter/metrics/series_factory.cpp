#include "metrics/series_factory.hpp"

#include <utility>
#include <atomic>
#include <stdexcept>

#include "util/wall_clock.hpp"

namespace lse::metrics {

Histogram*& histogram_slot(Series& s, F f) {
  switch (f) {
    case F::ttft: return s.ttft;
    case F::gap: return s.gap;
    case F::gap_p95: return s.gap_p95;
    case F::max_gap: return s.max_gap;
    case F::tail: return s.tail;
    case F::duration: return s.duration;
    case F::tokens_per_second: return s.tokens_per_second;
    case F::tokens_per_chunk: return s.tokens_per_chunk;
    default: break;
  }
  throw std::logic_error("no single histogram for this family");
}

BucketExemplars* exemplars_of(Series& s, F f) {
  switch (f) {
    case F::ttft: return &s.ttft_exemplars;
    case F::gap: return &s.gap_exemplars;
    case F::max_gap: return &s.max_gap_exemplars;
    default: return nullptr;
  }
}

void SeriesFactory::add_histograms(Series& s, F f, const std::optional<std::vector<double>>& bounds,
                                   const NativeSettings& native) const {
  if (!bounds) return;
  s.histogram_created[index_of(f)] = wall_clock::unix_now();
  Family<Histogram>& family = families_.histogram(f);
  auto native_one = [&] { return native ? std::make_unique<NativeHistogram>(*native) : nullptr; };
  if (f == F::phase) {
    for (std::size_t i = 0; i < probe::kAllPhases.size(); ++i) {
      s.phase[i] =
          &family.Add(with(s.labels, "phase", probe::to_string(probe::kAllPhases[i])), *bounds);
      s.native_phase[i] = native_one();
    }
    return;
  }
  histogram_slot(s, f) = &family.Add(s.labels, *bounds);
  s.native[index_of(f)] = native_one();
  if (BucketExemplars* e = exemplars_of(s, f)) e->reset(*bounds);
}

void SeriesFactory::remove_histograms(Series& s, F f) const {
  auto drop = [&](Histogram*& h) {
    if (h) families_.histogram(f).Remove(h);
    h = nullptr;
  };
  if (f == F::phase) {
    for (auto& h : s.phase) drop(h);
    for (auto& n : s.native_phase) n.reset();
  } else {
    drop(histogram_slot(s, f));
    s.native[index_of(f)].reset();
  }
}

std::unique_ptr<Series> SeriesFactory::create(Labels labels, const HistogramBounds& b,
                                              const NativeSettings& native) const {
  auto s = std::make_unique<Series>();
  s->labels = std::move(labels);
  s->created = wall_clock::unix_now();
  for (std::size_t i = 0; i < kHistogramCount; ++i)
    add_histograms(*s, static_cast<F>(i), b[i], native);
  s->success = &families_.counter(F::probes).Add(with(s->labels, "result", "success"));
  s->failure = &families_.counter(F::probes).Add(with(s->labels, "result", "failure"));
  for (std::size_t i = 0; i < probe::kAllFailureReasons.size(); ++i)
    s->failures[i] =
        &families_.counter(F::failures)
             .Add(with(s->labels, "reason", probe::to_string(probe::kAllFailureReasons[i])));
  s->stalls = &families_.counter(F::stalls).Add(s->labels);
  s->stall_seconds = &families_.counter(F::stall_seconds).Add(s->labels);
  s->stalled_probes = &families_.counter(F::stalled_probes).Add(s->labels);
  s->chunks = &families_.counter(F::chunks).Add(s->labels);
  s->coalesced = &families_.counter(F::coalesced).Add(s->labels);
  s->output_tokens = &families_.counter(F::output_tokens).Add(s->labels);
  s->input_tokens = &families_.counter(F::input_tokens).Add(s->labels);
  s->warmup = &families_.counter(F::warmup).Add(s->labels);
  s->last_success = &families_.gauge(F::last_success).Add(s->labels);
  s->last_timestamp = &families_.gauge(F::last_timestamp).Add(s->labels);
  for (std::size_t i = 0; i < kShapeCount; ++i)
    s->diagnosis[i] = &families_.gauge(F::diagnosis)
                           .Add(with(s->labels, "shape", report::to_string(report::kAllShapes[i])));
  return s;
}

void SeriesFactory::remove(Series& s) const {
  for (std::size_t i = 0; i < kHistogramCount; ++i) remove_histograms(s, static_cast<F>(i));
  families_.counter(F::probes).Remove(s.success);
  families_.counter(F::probes).Remove(s.failure);
  for (Counter* c : s.failures) families_.counter(F::failures).Remove(c);
  families_.counter(F::stalls).Remove(s.stalls);
  families_.counter(F::stall_seconds).Remove(s.stall_seconds);
  families_.counter(F::stalled_probes).Remove(s.stalled_probes);
  families_.counter(F::chunks).Remove(s.chunks);
  families_.counter(F::coalesced).Remove(s.coalesced);
  families_.counter(F::output_tokens).Remove(s.output_tokens);
  families_.counter(F::input_tokens).Remove(s.input_tokens);
  families_.counter(F::warmup).Remove(s.warmup);
  for (auto& f : s.finish)
    if (Counter* c = f.load()) families_.counter(F::finish_reasons).Remove(c);
  families_.gauge(F::last_success).Remove(s.last_success);
  families_.gauge(F::last_timestamp).Remove(s.last_timestamp);
  for (Gauge* g : s.diagnosis) families_.gauge(F::diagnosis).Remove(g);
}

Counter& SeriesFactory::finish_counter(Series& s, std::string_view reason) const {
  std::size_t i = finish_reason_index(reason);
  Counter* c = s.finish[i].load(std::memory_order_acquire);
  if (!c) {
    c = &families_.counter(F::finish_reasons).Add(with(s.labels, "reason", kFinishReasons[i]));
    s.finish[i].store(c, std::memory_order_release);
  }
  return *c;
}

}  // namespace lse::metrics
