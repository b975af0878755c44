// Written a metric at a time: each Metric message is built with the
// generated classes and serialized as field 4 of its family, behind the
// family's header; the length goes in front once the metrics are written. No
// MetricFamily message holding every metric of a large family is built.
#include "metrics/protobuf_serializer.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/timestamp.pb.h>

#include <cmath>
#include <cstdint>
#include <string_view>

#include "prometheus/metrics.pb.h"

namespace lse::metrics {
namespace {

namespace pb = io::prometheus::client;
using google::protobuf::io::CodedOutputStream;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Field 4 (Metric metric) of MetricFamily, length-delimited: (4 << 3) | 2.
constexpr std::uint32_t kMetricTag = (4u << 3) | 2u;

void append_varint(std::string& out, std::uint64_t v) {
  std::uint8_t buf[10];
  const std::uint8_t* end = CodedOutputStream::WriteVarint64ToArray(v, buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(end - buf));
}

pb::MetricType proto_type(MetricType t) {
  switch (t) {
    case MetricType::Counter: return pb::COUNTER;
    case MetricType::Gauge: return pb::GAUGE;
    case MetricType::Summary: return pb::SUMMARY;
    case MetricType::Histogram: return pb::HISTOGRAM;
    case MetricType::Untyped: break;
  }
  return pb::UNTYPED;
}

void set_time(google::protobuf::Timestamp& t, double unix_seconds) {
  const double whole = std::floor(unix_seconds);
  t.set_seconds(static_cast<std::int64_t>(whole));
  t.set_nanos(static_cast<std::int32_t>(std::lround((unix_seconds - whole) * 1e9) % 1000000000));
}

void set_exemplar(pb::Exemplar& out, const Exemplar& e) {
  pb::LabelPair* l = out.add_label();
  l->set_name("probe_id");
  l->set_value(e.probe_id);
  out.set_value(e.value);
  set_time(*out.mutable_timestamp(), e.unix_seconds);
}

void set_spans(const histogram::SpansAndDeltas& from,
               google::protobuf::RepeatedPtrField<pb::BucketSpan>& spans,
               google::protobuf::RepeatedField<std::int64_t>& deltas) {
  for (const auto& s : from.spans) {
    pb::BucketSpan* span = spans.Add();
    span->set_offset(s.offset);
    span->set_length(s.length);
  }
  for (std::int64_t d : from.deltas) deltas.Add(d);
}

// The native fields. An empty histogram gets a span of length 0 so that a
// scraper that tells native from classic by spans still sees a native one
// (Prometheus 2.42 tells them by a zero threshold > 0 or any bucket).
void set_native(pb::Histogram& h, const NativeNotes& n) {
  h.set_sample_count(n.count);
  h.set_sample_sum(n.sum);
  h.set_schema(n.schema);
  h.set_zero_threshold(n.zero_threshold);
  h.set_zero_count(n.zero_count);
  set_spans(n.positive, *h.mutable_positive_span(), *h.mutable_positive_delta());
  set_spans(n.negative, *h.mutable_negative_span(), *h.mutable_negative_delta());
  if (n.positive.spans.empty() && n.negative.spans.empty()) {
    pb::BucketSpan* noop = h.add_positive_span();
    noop->set_offset(0);
    noop->set_length(0);
  }
  if (!n.exemplar.probe_id.empty()) set_exemplar(*h.add_exemplars(), n.exemplar);
}

void set_histogram(pb::Histogram& h, const ClientMetric& m, const SeriesNotes& notes,
                   bool classic) {
  h.set_sample_count(m.histogram.sample_count);
  h.set_sample_sum(m.histogram.sample_sum);
  if (classic) {
    for (std::size_t i = 0; i < m.histogram.bucket.size(); ++i) {
      pb::Bucket* b = h.add_bucket();
      b->set_cumulative_count(m.histogram.bucket[i].cumulative_count);
      b->set_upper_bound(m.histogram.bucket[i].upper_bound);
      if (i < notes.bucket_exemplars.size() && !notes.bucket_exemplars[i].probe_id.empty())
        set_exemplar(*b->mutable_exemplar(), notes.bucket_exemplars[i]);
    }
  }
  // One count and sum for both: the native histogram's, read in one piece.
  if (notes.native) set_native(h, *notes.native);
  if (notes.created) set_time(*h.mutable_created_timestamp(), *notes.created);
}

void set_metric(pb::Metric& out, const MetricFamily& f, const ClientMetric& m,
                const SeriesNotes& notes, bool classic) {
  for (const auto& l : m.label) {
    pb::LabelPair* p = out.add_label();
    p->set_name(l.name);
    p->set_value(l.value);
  }
  if (m.timestamp_ms != 0) out.set_timestamp_ms(m.timestamp_ms);
  switch (f.type) {
    case MetricType::Counter: {
      pb::Counter* c = out.mutable_counter();
      c->set_value(m.counter.value);
      if (notes.created) set_time(*c->mutable_created_timestamp(), *notes.created);
      break;
    }
    case MetricType::Gauge: out.mutable_gauge()->set_value(m.gauge.value); break;
    case MetricType::Summary: {
      pb::Summary* s = out.mutable_summary();
      s->set_sample_count(m.summary.sample_count);
      s->set_sample_sum(m.summary.sample_sum);
      for (const auto& q : m.summary.quantile) {
        pb::Quantile* pq = s->add_quantile();
        pq->set_quantile(q.quantile);
        pq->set_value(q.value);
      }
      if (notes.created) set_time(*s->mutable_created_timestamp(), *notes.created);
      break;
    }
    case MetricType::Histogram: set_histogram(*out.mutable_histogram(), m, notes, classic); break;
    case MetricType::Untyped: out.mutable_untyped()->set_value(m.untyped.value); break;
  }
}

}  // namespace

// A varint of up to 2^35 - 1: the room kept for a family's length.
constexpr std::size_t kLengthRoom = 5;

// Room for the longest length varint, then the header; the metrics follow
// and the real length is written in front by end_protobuf_family(), the
// message moved up against it (no second buffer of the family's bytes).
std::size_t begin_protobuf_family(std::string& out, const MetricFamily& family) {
  const std::size_t start = out.size();
  out.append(kLengthRoom, '\0');
  pb::MetricFamily header;
  header.set_name(family.name);
  if (!family.help.empty()) header.set_help(family.help);
  header.set_type(proto_type(family.type));
  header.AppendToString(&out);
  return start;
}

void append_protobuf_metrics(std::string& out, const MetricFamily& slice, const NotesLookup& lookup,
                             bool classic) {
  SeriesNotes notes;
  notes.want_native = true;
  pb::Metric metric;
  const bool noted = lookup && slice.type != MetricType::Gauge && slice.type != MetricType::Untyped;
  for (const auto& m : slice.metric) {
    notes.clear();
    if (noted) lookup(slice, m, notes);
    metric.Clear();
    set_metric(metric, slice, m, notes, classic);
    append_varint(out, kMetricTag);
    append_varint(out, metric.ByteSizeLong());
    metric.AppendToString(&out);
  }
}

void end_protobuf_family(std::string& out, std::size_t start) {
  const std::size_t length = out.size() - start - kLengthRoom;
  std::uint8_t prefix[10];
  const auto* end = CodedOutputStream::WriteVarint64ToArray(length, prefix);
  const auto prefix_size = static_cast<std::size_t>(end - prefix);
  out.replace(start, kLengthRoom, reinterpret_cast<const char*>(prefix), prefix_size);
}

void append_protobuf(std::string& out, const std::vector<MetricFamily>& families,
                     const NotesLookup& notes, bool classic) {
  for (const auto& f : families) {
    const std::size_t start = begin_protobuf_family(out, f);
    append_protobuf_metrics(out, f, notes, classic);
    end_protobuf_family(out, start);
  }
}

}  // namespace lse::metrics
