// The exposition writer for /metrics: prometheus-cpp's collected families in
// the Prometheus text format 0.0.4 (byte for byte what prometheus-cpp 1.0.1's
// TextSerializer writes) or in OpenMetrics 1.0.0 (`_total`/`_created`,
// `# UNIT`, bucket exemplars, `# EOF`), which prometheus-cpp cannot write;
// the protobuf format is protobuf_serializer.hpp's, reached through
// append_families().
// Pure: families and notes in, text out.
#pragma once
#include <prometheus/metric_family.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "histogram/exponential.hpp"
#include "metrics/exposition.hpp"

namespace lse::metrics {

// The probe behind one histogram observation (OpenMetrics exemplar): the
// observed value and the unix time it was observed. An empty probe_id means
// the bucket has none.
struct Exemplar {
  std::string probe_id;
  double value = 0;
  double unix_seconds = 0;
};

// A native histogram as the protobuf exposition writes it (Histogram's
// schema, zero_threshold, zero_count, spans and deltas), with its own count
// and sum, read in one piece under the histogram's lock.
struct NativeNotes {
  int schema = 0;
  double zero_threshold = 0;
  std::uint64_t zero_count = 0;
  std::uint64_t count = 0;
  double sum = 0;
  histogram::SpansAndDeltas positive;
  histogram::SpansAndDeltas negative;
  Exemplar exemplar;  // the latest observation with a probe behind it; empty probe_id: none
};

// What OpenMetrics says about a series beyond its values: when it started
// from zero (counters, histograms) and, per bucket of
// ClientMetric::histogram.bucket (the +Inf bucket included), the latest
// exemplar. Buckets past the end of `bucket_exemplars` have none.
struct SeriesNotes {
  std::optional<double> created;
  std::vector<Exemplar> bucket_exemplars;
  // Asked for by the protobuf exposition only (the text formats have no
  // place for it); filled for histograms that keep a native one.
  bool want_native = false;
  std::optional<NativeNotes> native;

  // Forgets everything but keeps the strings' capacity: one SeriesNotes is
  // refilled for every series of a scrape.
  void clear() {
    created.reset();
    for (auto& e : bucket_exemplars) e.probe_id.clear();
    native.reset();
  }
};

// Fills `notes` (cleared by the caller) for one series of `family`.
using NotesLookup = std::function<void(const prometheus::MetricFamily& family,
                                       const prometheus::ClientMetric& series, SeriesNotes& notes)>;

// Text format 0.0.4, appended to `out`.
void write_text(std::string& out, const std::vector<prometheus::MetricFamily>& families);

// OpenMetrics 1.0.0 including the final `# EOF`, appended to `out`. `notes`
// may be empty: no `_created` and no exemplars then.
void write_openmetrics(std::string& out, const std::vector<prometheus::MetricFamily>& families,
                       const NotesLookup& notes);

// The pieces of one exposition written a few families at a time (a render
// that collects one family, writes it and lets it go): append_families()
// for each part, in order, then end_exposition() (OpenMetrics' `# EOF`).
// Neither reserves: the caller sizes `out` once.
// With `classic` false histograms are written without their buckets
// (metrics.classic: false): _count and _sum in the text format, those and
// the +Inf bucket OpenMetrics requires, the native histogram alone in protobuf.
// `boundary`, when given, is called after each series of the text formats
// with `out`: a render that sends and clears it there holds a piece of a
// family, not the whole family (a protobuf family, whose length comes
// first, is written whole). False from it stops the writing, and so does
// the returned false.
using SeriesBoundary = std::function<bool(std::string& out)>;
bool append_families(std::string& out, Exposition format,
                     const std::vector<prometheus::MetricFamily>& families,
                     const NotesLookup& notes = {}, bool classic = true,
                     const SeriesBoundary& boundary = {});
void end_exposition(std::string& out, Exposition format);

// One family written a slice of its series at a time, for a family too large
// to hold collected (Metrics' per-series families): begin_family() with the
// family's name, help and type (its series are not written), append_slice()
// for each slice (MetricFamily with the same name, help and type; its series
// written as append_families() would, without the header), end_family()
// with what begin_family() returned. A protobuf family stays one
// length-delimited message: its slices are not cut at `boundary` (never
// called) and `out` must hold the whole family until end_family(), which
// writes its length in front. The text formats may be sent and cleared at
// any boundary.
std::size_t begin_family(std::string& out, Exposition format,
                         const prometheus::MetricFamily& family);
bool append_slice(std::string& out, Exposition format, const prometheus::MetricFamily& slice,
                  const NotesLookup& notes, bool classic, const SeriesBoundary& boundary);
void end_family(std::string& out, Exposition format, std::size_t begun);

std::string serialize(const std::vector<prometheus::MetricFamily>& families, Exposition format,
                      const NotesLookup& notes = {});

}  // namespace lse::metrics
