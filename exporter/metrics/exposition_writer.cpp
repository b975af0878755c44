// The exposition of Metrics: each family collected (or read from the live
// series) and written in turn, handed to the sink in pieces, with the
// OpenMetrics notes (`_created`, exemplars, native histograms) read beside
// the values. The caller holds the read lock.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <algorithm>
#include <iterator>
#include <optional>

#include "metrics/metrics_impl.hpp"

namespace lse::metrics {

// Where a render hands the text formats over inside a family.
constexpr std::size_t kPieceBytes = std::size_t{1} << 20;
// How many series a per-series family's slice collects before writing them.
constexpr std::size_t kSliceSeries = 256;

// The serializer's view of Impl's notes; remembers the row of the family
// being written, which it is asked about once per series.
class Metrics::Impl::NotesReader {
 public:
  explicit NotesReader(const Impl& impl) : impl_(impl) {}
  void operator()(const prometheus::MetricFamily& family, const prometheus::ClientMetric& m,
                  SeriesNotes& notes) {
    if (&family != family_) {
      family_ = &family;
      row_ = family_named(family.name);
    }
    if (row_) impl_.notes_of(*row_, m, notes);
  }

 private:
  const Impl& impl_;
  const prometheus::MetricFamily* family_ = nullptr;
  std::optional<F> row_;
};

std::vector<prometheus::MetricFamily> Metrics::Impl::collect(
    std::vector<prometheus::MetricFamily> process) const {
  auto families = registry->Collect();
  families.insert(families.end(), std::make_move_iterator(process.begin()),
                  std::make_move_iterator(process.end()));
  return families;
}

bool Metrics::Impl::write(const Sink& sink, Exposition format,
                          const std::vector<prometheus::MetricFamily>& process) const {
  std::string piece;
  piece.reserve(largest_piece_bytes.load(std::memory_order_relaxed) * 9 / 8 + 4096);
  std::size_t largest = 0;
  auto hand_over = [&] {
    if (piece.empty()) return true;
    largest = std::max(largest, piece.size());
    const bool more = sink(piece);
    piece.clear();
    return more;
  };
  // The text formats go out in pieces of about kPieceBytes even inside a
  // family (the phases of 1,000 targets x 3 prompts are ~36 MB of text).
  const SeriesBoundary boundary = [&](std::string& out) {
    return out.size() < kPieceBytes || hand_over();
  };
  std::vector<prometheus::MetricFamily> one;
  bool more = true;
  // The text format has no place for notes; OpenMetrics and protobuf do.
  // A reader per family: it remembers its family by address, and `one`
  // is reused.
  auto notes = [&] {
    return format == Exposition::text ? NotesLookup{} : NotesLookup(NotesReader(*this));
  };
  families.each_in_registry_order([&](F row, const prometheus::Collectable& family) {
    if (!more) return;
    if (spec_of(row).scope != Scope::exporter) {
      more = write_live(piece, format, row, notes(), boundary) && hand_over();
      return;
    }
    one.clear();  // let the last family go before collecting the next
    one = family.Collect();
    more = append_families(piece, format, one, notes(), classic, boundary) && hand_over();
  });
  if (!more) return false;
  if (!append_families(piece, format, process, notes(), classic, boundary)) return false;
  end_exposition(piece, format);
  largest_piece_bytes.store(std::max(largest, piece.size()), std::memory_order_relaxed);
  return hand_over();
}

bool Metrics::Impl::write_live(std::string& piece, Exposition format, F row,
                               const NotesLookup& notes, const SeriesBoundary& boundary) const {
  const FamilySpec& spec = spec_of(row);
  prometheus::MetricFamily slice{spec.name, spec.help, prometheus_type(spec.type), {}};
  slice.metric.reserve(kSliceSeries + 64);
  std::optional<std::size_t> begun;
  auto flush = [&] {
    if (slice.metric.empty()) return true;
    if (!begun) begun = begin_family(piece, format, slice);
    const bool more = append_slice(piece, format, slice, notes, classic, boundary);
    slice.metric.clear();
    return more;
  };
  for (const auto& [name, t] : targets) {
    collect_live(row, name, t, slice.metric);
    if (slice.metric.size() >= kSliceSeries && !flush()) return false;
  }
  if (!flush()) return false;
  if (begun) end_family(piece, format, *begun);
  return true;
}

prometheus::MetricType Metrics::Impl::prometheus_type(Type t) {
  switch (t) {
    case Type::histogram: return prometheus::MetricType::Histogram;
    case Type::counter: return prometheus::MetricType::Counter;
    case Type::gauge: break;
  }
  return prometheus::MetricType::Gauge;
}

std::string_view Metrics::Impl::label_value(const prometheus::ClientMetric& m,
                                            std::string_view name) {
  for (const auto& l : m.label)
    if (l.name == name) return l.value;
  return {};
}

void Metrics::Impl::notes_of(F f, const prometheus::ClientMetric& m, SeriesNotes& notes) const {
  if (f == F::row_write_errors || f == F::reloads || f == F::otlp_dropped) {
    notes.created = exporter.created;
    return;
  }
  Series* s = find(label_value(m, "target"), label_value(m, "prompt"));
  if (!s) return;
  if (spec_of(f).type == Type::counter) notes.created = s->created;
  if (spec_of(f).type != Type::histogram) return;
  notes.created = s->histogram_created[index_of(f)];
  if (const BucketExemplars* e = exemplars_of(*s, f)) e->copy_to(notes.bucket_exemplars);
  if (!notes.want_native) return;
  if (const NativeHistogram* n = native_of(*s, f, m)) notes.native = n->snapshot();
}

const NativeHistogram* Metrics::Impl::native_of(const Series& s, F f,
                                                const prometheus::ClientMetric& m) {
  if (f != F::phase) return s.native[index_of(f)].get();
  const std::string_view phase = label_value(m, "phase");
  for (std::size_t i = 0; i < probe::kAllPhases.size(); ++i)
    if (probe::to_string(probe::kAllPhases[i]) == phase) return s.native_phase[i].get();
  return nullptr;
}

std::string Metrics::render() const { return render(Exposition::text); }

std::vector<prometheus::MetricFamily> Metrics::collect() const {
  // /proc is read before any lock is taken.
  auto process =
      read_process_ ? process_families(read_process_()) : std::vector<prometheus::MetricFamily>{};
  // Shared lock: a scrape sees either the old or the new config's series,
  // never half a reload.
  auto lock = impl_->read_lock();
  return impl_->collect(std::move(process));
}

std::string Metrics::render(Exposition format) const {
  std::string out;
  out.reserve(impl_->last_render_bytes.load(std::memory_order_relaxed) * 9 / 8 + 4096);
  render(format, [&out](std::string_view piece) {
    out.append(piece);
    return true;
  });
  impl_->last_render_bytes.store(out.size(), std::memory_order_relaxed);
  return out;
}

bool Metrics::render(Exposition format, const Sink& sink) const {
  // /proc is read before any lock is taken.
  const auto process =
      read_process_ ? process_families(read_process_()) : std::vector<prometheus::MetricFamily>{};
  // One shared lock from the first family to the last: a scrape sees either
  // the old or the new config's series, and OpenMetrics notes (read from
  // the live series) describe the same series as the values.
  auto lock = impl_->read_lock();
  return impl_->write(sink, format, process);
}

}  // namespace lse::metrics
