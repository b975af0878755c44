// One finished probe into the series of its series set: outcome, the clock
// of the stream, what the stream carried, the per-stream summaries and the
// last-probe gauges. Caller holds Metrics' shared lock.
#pragma once
#include "metrics/series.hpp"
#include "metrics/series_factory.hpp"
#include "probe/result.hpp"

namespace lse::metrics {

// A non-warmup result; `factory` creates finish-reason counters on first sight.
void record_into(Series& s, const probe::ProbeResult& r, const SeriesFactory& factory);

}  // namespace lse::metrics
