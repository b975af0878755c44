// The prometheus-cpp families of DESIGN §3 (metrics/families.hpp) and the
// series sets behind them: one per (target, prompt), or one per target with
// metrics.per_prompt: false. prometheus-cpp 1.0.1 invalidates a series reference when it is
// removed, so every cached pointer lives in a map guarded by a shared_mutex:
// probe threads record under the shared lock, reload rebuilds under the
// exclusive one. What OpenMetrics adds (when a series started, the probe
// behind a bucket) is kept beside those pointers and handed to the serializer.
// This file records probes, diagnoses and the exporter's own counters; the
// state is metrics_impl.hpp, turning a config into series
// series_config.cpp, rendering exposition_writer.cpp, creating and removing
// one set's series series_factory.cpp, recording a probe into them
// recording.cpp.
#include "metrics/metrics.hpp"

#include <algorithm>
#include <limits>
#include <mutex>

#include "metrics/metrics_impl.hpp"
#include "metrics/recording.hpp"

namespace lse::metrics {

Series* Metrics::Impl::find(std::string_view target, std::string_view prompt) const {
  auto t = targets.find(target);
  if (t == targets.end()) return nullptr;
  const TargetSeries& ts = t->second;
  if (!ts.per_prompt) {
    const auto& names = ts.prompt_names;
    if (!prompt.empty() && std::find(names.begin(), names.end(), prompt) == names.end())
      return nullptr;
    prompt = {};
  }
  auto p = ts.prompts.find(prompt);
  return p == ts.prompts.end() ? nullptr : p->second.get();
}

void Metrics::Impl::show_verdicts(Series& s) {
  for (std::size_t i = 0; i < kShapeCount; ++i) {
    bool holds = false, unknown = false;
    for (const auto& [prompt, v] : s.verdicts) {
      holds = holds || v[i] == report::Answer::holds;
      unknown = unknown || v[i] == report::Answer::cannot_tell;
    }
    s.diagnosis[i]->Set(holds ? 1 : unknown ? std::numeric_limits<double>::quiet_NaN() : 0);
  }
}

void Metrics::Impl::note_http_version(std::string_view target, std::string_view version) {
  auto it = targets.find(target);
  if (it == targets.end()) return;
  TargetSeries& t = it->second;
  std::lock_guard lock(t.info_mutex);
  if (t.http_version == version) return;
  t.http_version = std::string(version);
  Labels labels = t.info_labels;
  labels.insert_or_assign("http_version", t.http_version);
  replace_info(t, std::move(labels));
}

void Metrics::Impl::count_unexpected_content_type(std::string_view target) {
  auto t = targets.find(target);
  if (t != targets.end() && t->second.unexpected_content_type)
    t->second.unexpected_content_type->Increment();
}

Metrics::Metrics(const BuildInfo& build, ProcessReader read_process)
    : impl_(std::make_unique<Impl>(build)), read_process_(std::move(read_process)) {}
Metrics::~Metrics() = default;

void Metrics::record(const probe::ProbeResult& r) {
  auto lock = impl_->read_lock();
  Series* s = impl_->find(r.target, r.prompt);
  if (!s) return;
  // What the target speaks is state, not a measurement: a warmup probe's
  // answer tells it too.
  if (!r.http_version.empty()) impl_->note_http_version(r.target, r.http_version);
  if (r.warmup) {
    s->warmup->Increment();
    return;
  }
  if (r.unexpected_content_type) impl_->count_unexpected_content_type(r.target);
  record_into(*s, r, impl_->factory);
}

void Metrics::set_diagnosis(const SeriesKey& key, const std::vector<report::Verdict>& verdicts) {
  auto lock = impl_->read_lock();
  Series* s = impl_->find(key.target, key.prompt);
  if (!s) return;
  std::lock_guard verdicts_lock(s->verdicts_mutex);
  auto& mine = s->verdicts[key.prompt];
  // Too few probes is "cannot tell" too (Answer::cannot_tell from diagnose()).
  for (const auto& v : verdicts) mine[shape_index(v.shape)] = v.answer;
  Impl::show_verdicts(*s);
}

void Metrics::set_reload_result(bool ok, double unix_seconds) {
  impl_->exporter.reload_ok.Set(ok ? 1 : 0);
  if (ok) impl_->exporter.reload_timestamp.Set(unix_seconds);
}

void Metrics::count_backoff(std::string_view target) {
  auto lock = impl_->read_lock();
  auto t = impl_->targets.find(target);
  if (t != impl_->targets.end() && t->second.backoffs) t->second.backoffs->Increment();
}

void Metrics::count_reload(bool ok) {
  (ok ? impl_->exporter.reloads_ok : impl_->exporter.reloads_failed).Increment();
}

void Metrics::count_row_write_error() { impl_->exporter.row_write_errors.Increment(); }

void Metrics::count_otlp_dropped(std::uint64_t data_points) {
  impl_->exporter.otlp_dropped.Increment(static_cast<double>(data_points));
}

}  // namespace lse::metrics
