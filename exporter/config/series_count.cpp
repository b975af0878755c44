// config::series_count: how many series /metrics holds for a config, from
// the families table the metrics module registers (metrics/families.hpp).
// One function, used by the metrics.max_series guard and check-config's
// summary; tests/unit/metrics/series_count_test.cpp holds it to what
// Metrics::render() really writes.
#include <utility>
#include <string>

#include "config/config.hpp"
#include "metrics/families.hpp"

namespace lse::config {
namespace {

using metrics::FamilySpec;
using metrics::Scope;
using metrics::Type;

// Series per label set: a histogram's buckets (+Inf included), _sum and
// _count; one for a counter or gauge. Native only (metrics.classic: false),
// a histogram is one series: a native histogram, as Prometheus stores it
// from the protobuf exposition (a text scrape of it stores _count and _sum).
std::uint64_t series_per_label_set(const Config& config, const FamilySpec& spec) {
  if (spec.type != Type::histogram) return 1;
  const auto bounds = histogram_bounds(config, spec.buckets);
  if (!bounds) return 0;
  return config.metrics.classic ? bounds->size() + 3 : 1;
}

// Label sets made when the config is applied, and how many more may appear:
// native only, failure reasons appear on first sight as finish reasons do.
std::pair<std::uint64_t, std::uint64_t> label_sets(const Config& config, const FamilySpec& spec) {
  if (spec.id == metrics::F::failures && !config.metrics.classic)
    return {0, spec.label_sets + spec.later_label_sets};
  return {spec.label_sets, spec.later_label_sets};
}

// Series sets of a scope: per (target, prompt), or per target with
// per_prompt: false; per target; one for the exporter.
std::uint64_t sets_of(const Config& config, Scope scope) {
  switch (scope) {
    case Scope::series_set: {
      if (!config.metrics.per_prompt) return config.targets.size();
      std::uint64_t n = 0;
      for (const auto& t : config.targets) n += t.prompts.size();
      return n;
    }
    case Scope::target: return config.targets.size();
    case Scope::exporter: return 1;
  }
  return 0;
}

}  // namespace

std::optional<std::vector<double>> histogram_bounds(const Config& config, std::string_view key) {
  if (key == "phase" && config.metrics.phases == PhaseSeries::off) return std::nullopt;
  if (key == "phase" && config.metrics.phases == PhaseSeries::sum_count)
    return std::vector<double>{};
  const std::vector<double>* bounds = config.buckets.named(key);
  return bounds ? std::optional(*bounds) : std::nullopt;
}

SeriesCount series_count(const Config& config) {
  SeriesCount n{metrics::kProcessSeries, metrics::kProcessSeries};
  for (const FamilySpec& spec : metrics::kFamilies) {
    const std::uint64_t each = sets_of(config, spec.scope) * series_per_label_set(config, spec);
    const auto [at_start, later] = label_sets(config, spec);
    n.at_start += each * at_start;
    n.at_most += each * (at_start + later);
  }
  return n;
}

std::string with_thousands(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace lse::config
