#include "otlp/aggregation.hpp"

#include <algorithm>

namespace lse::otlp {
namespace {

Attributes with(Attributes a, std::string key, std::string value) {
  a.push_back({std::move(key), std::move(value)});
  std::sort(a.begin(), a.end());
  return a;
}

Attributes base_attributes(const probe::ProbeResult& r, const TargetAttributes& t) {
  Attributes a = {
      {"gen_ai.operation.name", t.operation},
      {"gen_ai.provider.name", t.provider},
      {"gen_ai.request.model", t.model.empty() ? r.model : t.model},
      {"llm_stream.prompt", r.prompt},
      {"llm_stream.target", r.target},
  };
  // Known only when the stream named it; a probe answered by another model
  // than the last one makes its own series, as the conventions intend.
  if (!r.response_model.empty()) a.push_back({"gen_ai.response.model", r.response_model});
  if (!t.server_address.empty()) {
    a.push_back({"server.address", t.server_address});
    a.push_back({"server.port", t.server_port});
  }
  std::sort(a.begin(), a.end());
  return a;
}

}  // namespace

void to_otlp_buckets(const histogram::Exponential::Buckets& buckets, std::int32_t& offset,
                     std::vector<std::uint64_t>& counts) {
  counts.clear();
  offset = 0;
  if (buckets.empty()) return;
  const std::int32_t first = buckets.begin()->first;
  const std::int32_t last = buckets.rbegin()->first;
  offset = first - 1;
  counts.assign(static_cast<std::size_t>(last - first) + 1, 0);
  for (const auto& [index, n] : buckets) counts[static_cast<std::size_t>(index - first)] = n;
}

Aggregator::Aggregator(Temporality temporality, histogram::ExponentialSettings settings)
    : temporality_(temporality), settings_(settings) {}

void Aggregator::set_targets(std::map<std::string, TargetAttributes> targets) {
  std::lock_guard lock(mutex_);
  targets_ = std::move(targets);
  auto gone = [&](const Key& k) {
    for (const auto& a : k.second)
      if (a.key == "llm_stream.target") return !targets_.count(std::get<std::string>(a.value));
    return true;
  };
  std::erase_if(histograms_, [&](const auto& e) { return gone(e.first); });
  std::erase_if(sums_, [&](const auto& e) { return gone(e.first); });
}

void Aggregator::observe(M m, const Attributes& a, double v, std::uint64_t now_ns) {
  auto [it, fresh] =
      histograms_.try_emplace(Key{m, a}, Histogram{histogram::Exponential(settings_)});
  Histogram& h = it->second;
  if (fresh) h.start_ns = now_ns;
  h.min = h.h.count() == 0 ? v : std::min(h.min, v);
  h.max = h.h.count() == 0 ? v : std::max(h.max, v);
  h.h.observe(v);
  h.touched = true;
}

void Aggregator::add(M m, const Attributes& a, double v, std::uint64_t now_ns) {
  auto [it, fresh] = sums_.try_emplace(Key{m, a});
  if (fresh) it->second.start_ns = now_ns;
  it->second.value += v;
  it->second.touched = true;
}

// The same choices as the Prometheus series (metrics/metrics.cpp): every
// probe's duration, phases and gaps; TTFT when there was a first chunk;
// per-stream summaries of successful probes only.
void Aggregator::record_locked(const probe::ProbeResult& r, const Attributes& base,
                               std::uint64_t now_ns) {
  observe(M::duration, r.ok ? base : with(base, "error.type", error_type(r.reason)), r.duration,
          now_ns);
  if (r.ttft) observe(M::ttft, base, *r.ttft, now_ns);
  for (double g : r.gaps) observe(M::time_per_chunk, base, g, now_ns);
  if (r.prompt_tokens >= 0)
    observe(M::token_usage, with(base, "gen_ai.token.type", "input"),
            static_cast<double>(r.prompt_tokens), now_ns);
  if (r.completion_tokens >= 0)
    observe(M::token_usage, with(base, "gen_ai.token.type", "output"),
            static_cast<double>(r.completion_tokens), now_ns);
  add(M::stalls, base, static_cast<double>(r.stalls), now_ns);
  add(M::stall_duration, base, r.stall_seconds, now_ns);
  add(M::chunks, base, static_cast<double>(r.chunks), now_ns);
  for (std::size_t i = 0; i < r.phases.size(); ++i)
    if (r.phases[i])
      observe(M::phase, with(base, "llm_stream.phase", probe::to_string(probe::kAllPhases[i])),
              *r.phases[i], now_ns);
  if (!r.ok) return;
  if (r.tail) observe(M::tail, base, *r.tail, now_ns);
  if (r.gap_max) observe(M::max_gap, base, *r.gap_max, now_ns);
  if (r.gap_p95) observe(M::gap_p95, base, *r.gap_p95, now_ns);
  if (r.tokens_per_chunk) observe(M::tokens_per_chunk, base, *r.tokens_per_chunk, now_ns);
}

void Aggregator::record(const probe::ProbeResult& r, std::uint64_t now_ns) {
  if (r.warmup || probe::was_canceled(r)) return;
  std::lock_guard lock(mutex_);
  const auto t = targets_.find(r.target);
  if (t == targets_.end()) return;
  record_locked(r, base_attributes(r, t->second), now_ns);
}

Batch Aggregator::collect(std::uint64_t now_ns) {
  Batch batch;
  batch.temporality = temporality_;
  const bool delta = temporality_ == Temporality::delta;
  std::lock_guard lock(mutex_);
  for (const MetricSpec& spec : kMetrics) {
    Metric m{spec.name, spec.description, spec.unit, spec.histogram, {}, {}};
    for (auto& [key, h] : histograms_) {
      if (key.first != spec.id || (delta && !h.touched)) continue;
      HistogramPoint p{key.second, h.start_ns, now_ns,       h.h.count(),      h.h.sum(),
                       h.min,      h.max,      h.h.schema(), h.h.zero_count(), h.h.zero_threshold(),
                       0,          {}};
      to_otlp_buckets(h.h.positive(), p.offset, p.buckets);
      m.histogram_points.push_back(std::move(p));
      if (delta) h = Histogram{histogram::Exponential(settings_), 0, 0, now_ns, false};
    }
    for (auto& [key, s] : sums_) {
      if (key.first != spec.id || (delta && !s.touched)) continue;
      m.sum_points.push_back({key.second, s.start_ns, now_ns, s.value});
      if (delta) s = Sum{0, now_ns, false};
    }
    if (m.data_points() > 0) batch.metrics.push_back(std::move(m));
  }
  return batch;
}

}  // namespace lse::otlp
