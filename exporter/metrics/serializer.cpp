// Both exposition formats straight into one string. Numbers are written the
// way prometheus-cpp 1.0.1's TextSerializer writes them (an ostream with
// precision 16: printf's %.16g), in both formats, so a bucket's `le` label is
// the same string whichever format a scraper negotiated and switching formats
// never starts new series.
#include "metrics/serializer.hpp"

#include "metrics/protobuf_serializer.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace lse::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The shared low-level writing of both formats.
class Writer {
 public:
  Writer(std::string& out, Exposition format, bool classic = true)
      : out_(out), om_(format == Exposition::openmetrics), classic_(classic) {}

  // Whether histograms show their buckets (metrics.classic).
  bool classic() const { return classic_; }
  // What has been written (a series boundary may send and clear it).
  std::string& out() { return out_; }

  void text(std::string_view s) { out_ += s; }
  void ch(char c) { out_ += c; }

  // %.16g; infinities as +Inf/-Inf; NaN as TextSerializer spells it in the
  // text format ("Nan") and as OpenMetrics requires ("NaN").
  void number(double v) {
    if (std::isnan(v)) {
      out_ += om_ ? "NaN" : "Nan";
    } else if (std::isinf(v)) {
      out_ += v < 0 ? "-Inf" : "+Inf";
    } else {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 16);
      out_.append(buf, r.ptr);
    }
  }

  void integer(std::uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }

  // Label values: backslash, double quote and newline escaped (both formats).
  void label_value(std::string_view v) {
    for (char c : v) {
      if (c == '\n') {
        out_ += "\\n";
        continue;
      }
      if (c == '\\' || c == '"') out_ += '\\';
      out_ += c;
    }
  }

  // HELP text: backslash and newline escaped; OpenMetrics also escapes the
  // double quote. (TextSerializer escapes nothing, which only differs for
  // help texts it would write as broken lines.)
  void help(std::string_view v) {
    for (char c : v) {
      if (c == '\n') {
        out_ += "\\n";
        continue;
      }
      if (c == '\\' || (om_ && c == '"')) out_ += '\\';
      out_ += c;
    }
  }

  // `name{labels[,extra="value"]} ` where the extra label's value is a number.
  template <class Extra>
  void head(std::string_view name, std::string_view suffix, const ClientMetric& m,
            std::string_view extra_name, const Extra& extra) {
    out_ += name;
    out_ += suffix;
    if (!m.label.empty() || !extra_name.empty()) {
      char sep = '{';
      for (const auto& l : m.label) {
        out_ += sep;
        sep = ',';
        out_ += l.name;
        out_ += "=\"";
        label_value(l.value);
        out_ += '"';
      }
      if (!extra_name.empty()) {
        out_ += sep;
        out_ += extra_name;
        out_ += "=\"";
        extra_value(extra);
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
  }
  void head(std::string_view name, std::string_view suffix, const ClientMetric& m) {
    head(name, suffix, m, {}, 0.0);
  }

  // The optional sample timestamp and the end of the line: milliseconds in
  // the text format, seconds in OpenMetrics.
  void tail(const ClientMetric& m) {
    if (m.timestamp_ms != 0) {
      out_ += ' ';
      if (om_)
        millis_as_seconds(m.timestamp_ms);
      else
        out_ += std::to_string(m.timestamp_ms);
    }
    out_ += '\n';
  }

  // Unix seconds with millisecond precision (OpenMetrics timestamps).
  void unix_seconds(double s) { millis_as_seconds(std::llround(s * 1000.0)); }

 private:
  void extra_value(double v) { number(v); }
  void extra_value(std::string_view v) { out_ += v; }

  void millis_as_seconds(long long ms) {
    if (ms < 0) {
      out_ += '-';
      ms = -ms;
    }
    out_ += std::to_string(ms / 1000);
    out_ += '.';
    const long long frac = ms % 1000;
    out_ += static_cast<char>('0' + frac / 100);
    out_ += static_cast<char>('0' + frac / 10 % 10);
    out_ += static_cast<char>('0' + frac % 10);
  }

  std::string& out_;
  bool om_;
  bool classic_;
};

// --- text format 0.0.4 --------------------------------------------------------

const char* text_type(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Summary: return "summary";
    case MetricType::Histogram: return "histogram";
    case MetricType::Untyped: break;
  }
  return "untyped";
}

double single_value(const MetricFamily& f, const ClientMetric& m) {
  switch (f.type) {
    case MetricType::Counter: return m.counter.value;
    case MetricType::Gauge: return m.gauge.value;
    default: return m.untyped.value;
  }
}

// TextSerializer's order: _count, _sum, the buckets, and an +Inf bucket when
// the collected buckets lack one.
void text_histogram(Writer& w, const MetricFamily& f, const ClientMetric& m) {
  const auto& h = m.histogram;
  w.head(f.name, "_count", m);
  w.integer(h.sample_count);
  w.tail(m);
  w.head(f.name, "_sum", m);
  w.number(h.sample_sum);
  w.tail(m);
  if (!w.classic()) return;
  double last = -INFINITY;
  for (const auto& b : h.bucket) {
    w.head(f.name, "_bucket", m, "le", b.upper_bound);
    last = b.upper_bound;
    w.integer(b.cumulative_count);
    w.tail(m);
  }
  if (last != INFINITY) {
    w.head(f.name, "_bucket", m, "le", std::string_view("+Inf"));
    w.integer(h.sample_count);
    w.tail(m);
  }
}

void text_summary(Writer& w, const MetricFamily& f, const ClientMetric& m) {
  w.head(f.name, "_count", m);
  w.integer(m.summary.sample_count);
  w.tail(m);
  w.head(f.name, "_sum", m);
  w.number(m.summary.sample_sum);
  w.tail(m);
  for (const auto& q : m.summary.quantile) {
    w.head(f.name, "", m, "quantile", q.quantile);
    w.number(q.value);
    w.tail(m);
  }
}

void text_metadata(Writer& w, const MetricFamily& f) {
  if (!f.help.empty()) {
    w.text("# HELP ");
    w.text(f.name);
    w.ch(' ');
    w.help(f.help);
    w.ch('\n');
  }
  w.text("# TYPE ");
  w.text(f.name);
  w.ch(' ');
  w.text(text_type(f.type));
  w.ch('\n');
}

// The series of `f`, without its HELP and TYPE.
bool text_series(Writer& w, const MetricFamily& f, const SeriesBoundary& boundary) {
  for (const auto& m : f.metric) {
    if (f.type == MetricType::Histogram) {
      text_histogram(w, f, m);
    } else if (f.type == MetricType::Summary) {
      text_summary(w, f, m);
    } else {
      w.head(f.name, "", m);
      w.number(single_value(f, m));
      w.tail(m);
    }
    if (boundary && !boundary(w.out())) return false;
  }
  return true;
}

bool text_family(Writer& w, const MetricFamily& f, const SeriesBoundary& boundary) {
  text_metadata(w, f);
  return text_series(w, f, boundary);
}

// --- OpenMetrics 1.0.0 --------------------------------------------------------

const char* om_type(MetricType t) { return t == MetricType::Untyped ? "unknown" : text_type(t); }

// A counter's family is named without `_total`; its samples carry it.
std::string_view om_family_name(const MetricFamily& f) {
  std::string_view name = f.name;
  if (f.type == MetricType::Counter && ends_with(name, "_total"))
    name.remove_suffix(std::string_view("_total").size());
  return name;
}

// The unit OpenMetrics wants declared when the name ends in a base unit.
std::string_view om_unit(std::string_view family) {
  if (ends_with(family, "_seconds")) return "seconds";
  if (ends_with(family, "_bytes")) return "bytes";
  return {};
}

void om_metadata(Writer& w, const MetricFamily& f, std::string_view name) {
  if (!f.help.empty()) {
    w.text("# HELP ");
    w.text(name);
    w.ch(' ');
    w.help(f.help);
    w.ch('\n');
  }
  w.text("# TYPE ");
  w.text(name);
  w.ch(' ');
  w.text(om_type(f.type));
  w.ch('\n');
  if (const auto unit = om_unit(name); !unit.empty()) {
    w.text("# UNIT ");
    w.text(name);
    w.ch(' ');
    w.text(unit);
    w.ch('\n');
  }
}

void om_created(Writer& w, std::string_view name, const ClientMetric& m, const SeriesNotes& n) {
  if (!n.created) return;
  w.head(name, "_created", m);
  w.unix_seconds(*n.created);
  w.ch('\n');
}

// ` # {probe_id="..."} value timestamp` after a bucket's count.
void om_exemplar(Writer& w, const SeriesNotes& n, std::size_t bucket) {
  if (bucket >= n.bucket_exemplars.size()) return;
  const Exemplar& e = n.bucket_exemplars[bucket];
  if (e.probe_id.empty()) return;
  w.text(" # {probe_id=\"");
  w.label_value(e.probe_id);
  w.text("\"} ");
  w.number(e.value);
  w.ch(' ');
  w.unix_seconds(e.unix_seconds);
}

// The buckets (with exemplars), then _count, _sum and _created.
void om_histogram(Writer& w, std::string_view name, const ClientMetric& m, const SeriesNotes& n) {
  const auto& h = m.histogram;
  // Native only, the collected histogram has just its +Inf bucket, which
  // OpenMetrics requires of every histogram (+Inf == _count): it stays.
  double last = -INFINITY;
  for (std::size_t i = 0; i < h.bucket.size(); ++i) {
    w.head(name, "_bucket", m, "le", h.bucket[i].upper_bound);
    last = h.bucket[i].upper_bound;
    w.integer(h.bucket[i].cumulative_count);
    om_exemplar(w, n, i);
    w.tail(m);
  }
  if (last != INFINITY) {
    w.head(name, "_bucket", m, "le", std::string_view("+Inf"));
    w.integer(h.sample_count);
    om_exemplar(w, n, h.bucket.size());
    w.tail(m);
  }
  w.head(name, "_count", m);
  w.integer(h.sample_count);
  w.tail(m);
  w.head(name, "_sum", m);
  w.number(h.sample_sum);
  w.tail(m);
  om_created(w, name, m, n);
}

void om_summary(Writer& w, std::string_view name, const ClientMetric& m, const SeriesNotes& n) {
  for (const auto& q : m.summary.quantile) {
    w.head(name, "", m, "quantile", q.quantile);
    w.number(q.value);
    w.tail(m);
  }
  w.head(name, "_count", m);
  w.integer(m.summary.sample_count);
  w.tail(m);
  w.head(name, "_sum", m);
  w.number(m.summary.sample_sum);
  w.tail(m);
  om_created(w, name, m, n);
}

// The series of `f`, without its metadata.
bool om_series(Writer& w, const MetricFamily& f, const NotesLookup& lookup, SeriesNotes& notes,
               const SeriesBoundary& boundary) {
  const std::string_view name = om_family_name(f);
  for (const auto& m : f.metric) {
    notes.clear();
    if (lookup && f.type != MetricType::Gauge && f.type != MetricType::Untyped) lookup(f, m, notes);
    switch (f.type) {
      case MetricType::Histogram: om_histogram(w, name, m, notes); break;
      case MetricType::Summary: om_summary(w, name, m, notes); break;
      case MetricType::Counter:
        w.head(name, "_total", m);
        w.number(m.counter.value);
        w.tail(m);
        om_created(w, name, m, notes);
        break;
      default:
        w.head(name, "", m);
        w.number(single_value(f, m));
        w.tail(m);
        break;
    }
    if (boundary && !boundary(w.out())) return false;
  }
  return true;
}

bool om_family(Writer& w, const MetricFamily& f, const NotesLookup& lookup, SeriesNotes& notes,
               const SeriesBoundary& boundary) {
  om_metadata(w, f, om_family_name(f));
  return om_series(w, f, lookup, notes, boundary);
}

// Room for the whole exposition in one allocation, judged from its shape.
std::size_t estimated_size(const std::vector<MetricFamily>& families) {
  std::size_t lines = 0;
  for (const auto& f : families)
    for (const auto& m : f.metric) lines += 4 + m.histogram.bucket.size();
  return lines * 120 + families.size() * 200;
}

}  // namespace

void write_text(std::string& out, const std::vector<MetricFamily>& families) {
  out.reserve(out.size() + estimated_size(families));
  Writer w(out, Exposition::text);
  for (const auto& f : families) text_family(w, f, {});
}

void write_openmetrics(std::string& out, const std::vector<MetricFamily>& families,
                       const NotesLookup& notes) {
  out.reserve(out.size() + estimated_size(families) * 5 / 4);
  Writer w(out, Exposition::openmetrics);
  SeriesNotes scratch;
  for (const auto& f : families) om_family(w, f, notes, scratch, {});
  out += "# EOF\n";
}

bool append_families(std::string& out, Exposition format, const std::vector<MetricFamily>& families,
                     const NotesLookup& notes, bool classic, const SeriesBoundary& boundary) {
  if (format == Exposition::protobuf) {
    append_protobuf(out, families, notes, classic);
    return true;
  }
  Writer w(out, format, classic);
  SeriesNotes scratch;
  for (const auto& f : families) {
    const bool more = format == Exposition::text ? text_family(w, f, boundary)
                                                 : om_family(w, f, notes, scratch, boundary);
    if (!more) return false;
  }
  return true;
}

std::size_t begin_family(std::string& out, Exposition format, const MetricFamily& family) {
  if (format == Exposition::protobuf) return begin_protobuf_family(out, family);
  Writer w(out, format);
  if (format == Exposition::text)
    text_metadata(w, family);
  else
    om_metadata(w, family, om_family_name(family));
  return out.size();
}

bool append_slice(std::string& out, Exposition format, const MetricFamily& slice,
                  const NotesLookup& notes, bool classic, const SeriesBoundary& boundary) {
  if (format == Exposition::protobuf) {
    append_protobuf_metrics(out, slice, notes, classic);
    return true;
  }
  Writer w(out, format, classic);
  SeriesNotes scratch;
  return format == Exposition::text ? text_series(w, slice, boundary)
                                    : om_series(w, slice, notes, scratch, boundary);
}

void end_family(std::string& out, Exposition format, std::size_t begun) {
  if (format == Exposition::protobuf) end_protobuf_family(out, begun);
}

void end_exposition(std::string& out, Exposition format) {
  if (format == Exposition::openmetrics) out += "# EOF\n";
}

std::string serialize(const std::vector<MetricFamily>& families, Exposition format,
                      const NotesLookup& notes) {
  std::string out;
  if (format == Exposition::protobuf)
    append_protobuf(out, families, notes);
  else if (format == Exposition::openmetrics)
    write_openmetrics(out, families, notes);
  else
    write_text(out, families);
  return out;
}

}  // namespace lse::metrics
