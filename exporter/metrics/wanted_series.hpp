// What a config implies for the metrics: the series each target wants and
// the bounds of each histogram family. Pure: no registry is touched here.
#pragma once
#include <prometheus/labels.h>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "metrics/families.hpp"

namespace lse::metrics {

using prometheus::Labels;

// `labels` with one more label.
Labels with(Labels labels, const char* key, std::string_view value);
// `labels` with those of `more` that it does not have.
Labels merged(Labels labels, const Labels& more);

// The bounds of each histogram family (by row) under a config; nullopt: the
// family has no series (phases: off); empty with metrics.classic: false. A reload that changes one
// histogram's bounds recreates only that histogram.
using HistogramBounds = std::array<std::optional<std::vector<double>>, kHistogramCount>;

HistogramBounds planned_bounds(const config::Config& config);

// Checked before anything is touched so a bad override leaves the old series
// intact (prometheus-cpp would throw half-way through a rebuild otherwise).
void validate_buckets(const config::Buckets& b);

// What a config implies: target -> (model, labels, threshold, prompts). The
// first definition of a duplicated name wins; config validation rejects
// those anyway.
struct WantedTarget {
  std::string model;
  Labels own_labels;  // the target's `labels:`
  bool per_prompt = true;
  double stall_threshold = 0;
  std::array<double, 3> alert{};  // ttft, worst_gap (seconds), stall_share
  std::vector<std::string> prompts;
  Labels info;  // target, api, model, host and the target's labels
};

using WantedSeries = std::map<std::string, WantedTarget, std::less<>>;

WantedSeries wanted_series(const config::Config& config);

}  // namespace lse::metrics
