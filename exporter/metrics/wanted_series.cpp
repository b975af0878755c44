#include "metrics/wanted_series.hpp"

#include <utility>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "api/adapter.hpp"
#include "net/url.hpp"

namespace lse::metrics {
namespace {

// The upstream host of a target URL ("api.openai.com", "127.0.0.1:8080"):
// what a dashboard shows beside the target name.
std::string upstream_host(const std::string& url) {
  const auto u = net::parse_url(url);
  if (!u) return "";
  const bool default_port = u->port == (u->tls ? "443" : "80");
  return default_port ? u->host : u->authority();
}

}  // namespace

Labels with(Labels labels, const char* key, std::string_view value) {
  labels.emplace(key, std::string(value));
  return labels;
}

Labels merged(Labels labels, const Labels& more) {
  labels.insert(more.begin(), more.end());
  return labels;
}

HistogramBounds planned_bounds(const config::Config& config) {
  HistogramBounds out;
  for (std::size_t i = 0; i < kHistogramCount; ++i) {
    out[i] = config::histogram_bounds(config, kFamilies[i].buckets);
    // Native only: the classic histogram keeps its _count and _sum.
    if (out[i] && !config.metrics.classic) out[i]->clear();
  }
  return out;
}

void validate_buckets(const config::Buckets& b) {
  for (std::string_view key : config::Buckets::kKeys) {
    const auto& v = *b.named(key);
    const std::string where = "buckets." + std::string(key);
    if (v.empty()) throw std::invalid_argument(where + ": must not be empty");
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) throw std::invalid_argument(where + ": bounds must be finite");
      if (i > 0 && !(v[i - 1] < v[i]))
        throw std::invalid_argument(where + ": bounds must be strictly increasing");
    }
  }
}

WantedSeries wanted_series(const config::Config& config) {
  WantedSeries wanted;
  for (const auto& t : config.targets) {
    if (wanted.count(t.name)) continue;
    const Labels own(t.labels.begin(), t.labels.end());
    Labels info = merged({{"target", t.name},
                          {"api", std::string(api::dialect_name(t.api))},
                          {"model", t.model},
                          {"host", upstream_host(t.url)}},
                         own);
    using Seconds = std::chrono::duration<double>;
    wanted.emplace(t.name, WantedTarget{t.model,
                                        own,
                                        config.metrics.per_prompt,
                                        Seconds(t.stall_threshold).count(),
                                        {Seconds(t.alert.ttft).count(),
                                         Seconds(t.alert.worst_gap).count(), t.alert.stall_share},
                                        t.prompts,
                                        std::move(info)});
  }
  return wanted;
}

}  // namespace lse::metrics
