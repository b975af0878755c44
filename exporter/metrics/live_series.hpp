// The series of one per-series family (Scope::series_set and Scope::target
// of metrics/families.hpp) read straight from the live series Metrics keeps
// pointers to, one target at a time: what Family::Collect() gives, without
// its copy of the whole family (45,000 failure counters at 1,000 targets x
// 3 prompts are ~47 MB as collected ClientMetrics). Targets in name order,
// prompts in name order, a family's own label in its table's order.
// Caller holds Metrics' shared lock.
#pragma once
#include <prometheus/client_metric.h>

#include <string>
#include <vector>

#include "metrics/families.hpp"
#include "metrics/series.hpp"

namespace lse::metrics {

// Appends to `out` one ClientMetric (labels and value, as Family::Collect()
// builds it) for each series of family `f` that target `name` holds.
// Nothing for exporter-scope families.
void collect_live(F f, const std::string& name, const TargetSeries& t,
                  std::vector<prometheus::ClientMetric>& out);

}  // namespace lse::metrics
