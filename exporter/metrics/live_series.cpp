#include "metrics/live_series.hpp"

#include <utility>
#include <array>
#include <atomic>
#include <cstddef>
#include <type_traits>

#include "metrics/family_set.hpp"
#include "metrics/series_factory.hpp"
#include "metrics/wanted_series.hpp"

namespace lse::metrics {

namespace {

using prometheus::ClientMetric;

// The series' values, then its labels in Labels' (name) order: what
// Family::CollectMetric() gives for a family without constant labels.
template <class M>
void add(std::vector<ClientMetric>& out, const Labels& labels, const M* metric) {
  if (!metric) return;
  ClientMetric m = metric->Collect();
  m.label.reserve(labels.size());
  for (const auto& [name, value] : labels) m.label.push_back({name, value});
  out.push_back(std::move(m));
}

// Family `f`'s own label, over `rows` series of one set.
template <class M, std::size_t N, class Name>
void add_rows(std::vector<ClientMetric>& out, const Labels& labels, const char* key,
              const std::array<M, N>& rows, Name&& name_of) {
  for (std::size_t i = 0; i < N; ++i) {
    const auto* metric = [&] {
      if constexpr (std::is_pointer_v<M>)
        return rows[i];
      else
        return rows[i].load(std::memory_order_acquire);
    }();
    if (metric) add(out, with(labels, key, name_of(i)), metric);
  }
}

void histograms_of(F f, Series& s, std::vector<ClientMetric>& out) {
  if (f != F::phase) {
    add(out, s.labels, histogram_slot(s, f));
    return;
  }
  add_rows(out, s.labels, "phase", s.phase,
           [](std::size_t i) { return probe::to_string(probe::kAllPhases[i]); });
}

void counters_of(F f, const Series& s, std::vector<ClientMetric>& out) {
  switch (f) {
    case F::probes:
      add(out, with(s.labels, "result", "success"), s.success);
      add(out, with(s.labels, "result", "failure"), s.failure);
      return;
    case F::failures:
      add_rows(out, s.labels, "reason", s.failures,
               [](std::size_t i) { return probe::to_string(probe::kAllFailureReasons[i]); });
      return;
    case F::finish_reasons:
      add_rows(out, s.labels, "reason", s.finish, [](std::size_t i) { return kFinishReasons[i]; });
      return;
    case F::stalls: add(out, s.labels, s.stalls); return;
    case F::stall_seconds: add(out, s.labels, s.stall_seconds); return;
    case F::stalled_probes: add(out, s.labels, s.stalled_probes); return;
    case F::chunks: add(out, s.labels, s.chunks); return;
    case F::coalesced: add(out, s.labels, s.coalesced); return;
    case F::output_tokens: add(out, s.labels, s.output_tokens); return;
    case F::input_tokens: add(out, s.labels, s.input_tokens); return;
    case F::warmup: add(out, s.labels, s.warmup); return;
    default: return;
  }
}

void set_series_of(F f, Series& s, std::vector<ClientMetric>& out) {
  if (spec_of(f).type == Type::histogram) return histograms_of(f, s, out);
  if (spec_of(f).type == Type::counter) return counters_of(f, s, out);
  switch (f) {
    case F::last_success: add(out, s.labels, s.last_success); return;
    case F::last_timestamp: add(out, s.labels, s.last_timestamp); return;
    case F::diagnosis:
      add_rows(out, s.labels, "shape", s.diagnosis,
               [](std::size_t i) { return report::to_string(report::kAllShapes[i]); });
      return;
    default: return;
  }
}

void target_series_of(F f, const std::string& name, const TargetSeries& t,
                      std::vector<ClientMetric>& out) {
  if (f == F::target_info) {
    std::lock_guard lock(t.info_mutex);  // a probe may be replacing it
    return add(out, t.info_labels, t.info);
  }
  const Labels labels = merged({{"target", name}}, t.own_labels);
  switch (f) {
    case F::stall_threshold: add(out, labels, t.stall_threshold); return;
    case F::alert_ttft: add(out, labels, t.alert[0]); return;
    case F::alert_worst_gap: add(out, labels, t.alert[1]); return;
    case F::alert_stall_share: add(out, labels, t.alert[2]); return;
    case F::backoffs: add(out, labels, t.backoffs); return;
    case F::unexpected_content_type: add(out, labels, t.unexpected_content_type); return;
    default: return;
  }
}

}  // namespace

void collect_live(F f, const std::string& name, const TargetSeries& t,
                  std::vector<ClientMetric>& out) {
  switch (spec_of(f).scope) {
    case Scope::series_set:
      for (const auto& [prompt, s] : t.prompts) set_series_of(f, *s, out);
      return;
    case Scope::target: target_series_of(f, name, t, out); return;
    case Scope::exporter: return;
  }
}

}  // namespace lse::metrics
