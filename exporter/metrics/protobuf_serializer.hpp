// The Prometheus protobuf exposition: length-delimited
// io.prometheus.client.MetricFamily messages (proto/prometheus/metrics.proto),
// the format Prometheus asks for to scrape native histograms. Pure: families
// and notes in, bytes out.
#pragma once
#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "metrics/serializer.hpp"

namespace lse::metrics {

// Appends one delimited MetricFamily per family to `out`. Histograms carry
// their classic buckets (unless `classic` is false) and, where `notes` gives
// one, the native histogram in the same message; counters and histograms
// their created_timestamp; buckets and native histograms their exemplars
// {probe_id}. `notes` may be empty.
void append_protobuf(std::string& out, const std::vector<prometheus::MetricFamily>& families,
                     const NotesLookup& notes, bool classic = true);

// One MetricFamily a slice of metrics at a time (serializer.hpp's
// begin_family): begin_protobuf_family() keeps room for the length and
// writes the header, returning where the family starts in `out`;
// append_protobuf_metrics() each slice's metrics; end_protobuf_family() the
// length in front of the message (`out` still holds it all).
std::size_t begin_protobuf_family(std::string& out, const prometheus::MetricFamily& family);
void append_protobuf_metrics(std::string& out, const prometheus::MetricFamily& slice,
                             const NotesLookup& lookup, bool classic);
void end_protobuf_family(std::string& out, std::size_t start);

}  // namespace lse::metrics
