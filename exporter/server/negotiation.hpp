// Which exposition format a scrape gets from its Accept header, by q-values
// (RFC 9110 §12.5.1): each format takes the weight of the most specific
// media range that matches it (exact type, then type/*, then */*); the
// highest weight wins, a tie goes to the range listed first (the scraper's
// own order of preference), q=0 means "not acceptable". OpenMetrics matches
// only version 1.x (or no version); the protobuf format only its exact type
// with proto=io.prometheus.client.MetricFamily and encoding=delimited (what
// Prometheus sends to scrape native histograms), never a wildcard. With nothing acceptable, or no
// header, the answer is the text format, as Prometheus' client libraries do. Pure.
#pragma once
#include <string_view>

#include "metrics/exposition.hpp"

namespace lse::server {

metrics::Exposition choose_exposition(std::string_view accept);

}  // namespace lse::server
