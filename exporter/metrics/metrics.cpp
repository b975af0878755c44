// The prometheus-cpp families of DESIGN §3 (metrics/families.hpp) and the
// series sets behind them: one per (target, prompt), or one per target with
// metrics.per_prompt: false. prometheus-cpp 1.0.1 invalidates a series reference when it is
// removed, so every cached pointer lives in a map guarded by a shared_mutex:
// probe threads record under the shared lock, reload rebuilds under the
// exclusive one. What OpenMetrics adds (when a series started, the probe
// behind a bucket) is kept beside those pointers and handed to the serializer.
// This file diffs configs and renders; creating and removing one set's series
// is series_factory.cpp, recording a probe into them recording.cpp.
#include "metrics/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <utility>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string_view>
#include <variant>
#include <vector>

#include "metrics/exemplars.hpp"
#include "metrics/families.hpp"
#include "metrics/family_set.hpp"
#include "metrics/live_series.hpp"
#include "metrics/recording.hpp"
#include "metrics/serializer.hpp"
#include "metrics/series.hpp"
#include "metrics/series_factory.hpp"
#include "metrics/wanted_series.hpp"
#include "util/text.hpp"
#include "util/wall_clock.hpp"

namespace lse::metrics {

// Where a render hands the text formats over inside a family.
constexpr std::size_t kPieceBytes = std::size_t{1} << 20;
// How many series a per-series family's slice collects before writing them.
constexpr std::size_t kSliceSeries = 256;

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  FamilySet families{*registry};
  SeriesFactory factory{families};
  ExporterSeries exporter;

  mutable std::shared_mutex mutex;
  // glibc's rwlock prefers readers: with probes recording and scrapes
  // rendering back to back, a reload could wait indefinitely. Writers hold
  // the gate while they wait, so new readers queue behind them.
  mutable std::mutex gate;
  std::map<std::string, TargetSeries, std::less<>> targets;
  HistogramBounds bounds;  // what the existing histograms were built with
  NativeSettings native;   // and their native histograms
  bool classic = true;     // metrics.classic: histograms show buckets, failure reasons start at 0
  mutable std::atomic<std::size_t> last_render_bytes{0};    // sizes the next whole render
  mutable std::atomic<std::size_t> largest_piece_bytes{0};  // sizes the next render's piece

  explicit Impl(const BuildInfo& build) : exporter(families, build) {}

  void remove_target(TargetSeries& t) {
    for (auto& [name, s] : t.prompts) factory.remove(*s);
    t.prompts.clear();
    if (t.stall_threshold) families.gauge(F::stall_threshold).Remove(t.stall_threshold);
    t.stall_threshold = nullptr;
    for (std::size_t i = 0; i < t.alert.size(); ++i) {
      if (t.alert[i]) families.gauge(kAlertRows[i]).Remove(t.alert[i]);
      t.alert[i] = nullptr;
    }
    if (t.info) families.gauge(F::target_info).Remove(t.info);
    t.info = nullptr;
    if (t.backoffs) families.counter(F::backoffs).Remove(t.backoffs);
    t.backoffs = nullptr;
    if (t.unexpected_content_type)
      families.counter(F::unexpected_content_type).Remove(t.unexpected_content_type);
    t.unexpected_content_type = nullptr;
  }

  // Caller holds the shared lock; nullptr when the combination is not
  // configured (a probe that finished after a reload removed it, say). With
  // per_prompt: false every configured prompt of the target (and the empty
  // prompt label of its series) finds the target's one set.
  Series* find(std::string_view target, std::string_view prompt) const {
    auto t = targets.find(target);
    if (t == targets.end()) return nullptr;
    const TargetSeries& ts = t->second;
    if (!ts.per_prompt) {
      const auto& names = ts.prompt_names;
      if (!prompt.empty() && std::find(names.begin(), names.end(), prompt) == names.end())
        return nullptr;
      prompt = {};
    }
    auto p = ts.prompts.find(prompt);
    return p == ts.prompts.end() ? nullptr : p->second.get();
  }

  // --- apply_config, step by step (caller holds the write lock) -------------

  // Targets that are gone, or whose model or labels changed, or all of them
  // when per_prompt did (labels are part of a series' identity, so their
  // series are different series).
  void remove_gone_targets(const WantedSeries& wanted) {
    for (auto it = targets.begin(); it != targets.end();) {
      auto w = wanted.find(it->first);
      const TargetSeries& t = it->second;
      if (w == wanted.end() || w->second.model != t.model || w->second.own_labels != t.own_labels ||
          w->second.per_prompt != t.per_prompt) {
        remove_target(it->second);
        it = targets.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Prompts that are gone from targets that stay: their series, or with
  // per_prompt: false their verdicts in the shared set.
  void remove_gone_prompts(const WantedSeries& wanted) {
    for (auto& [name, t] : targets) {
      const auto& keep = wanted.at(name).prompts;
      auto gone = [&](const std::string& prompt) {
        return std::find(keep.begin(), keep.end(), prompt) == keep.end();
      };
      t.prompt_names = keep;
      if (!t.per_prompt) {
        for (auto& [key, s] : t.prompts) forget_verdicts(*s, gone);
        continue;
      }
      for (auto it = t.prompts.begin(); it != t.prompts.end();) {
        if (gone(it->first)) {
          factory.remove(*it->second);
          it = t.prompts.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  // Family::Add would hand back an existing histogram with its old bounds, so
  // a histogram whose bounds changed is removed and added again. Other
  // series (counters, histograms whose bounds stay) keep their values.
  // New native settings rebuild every histogram (a native histogram cannot
  // change its zero threshold or bucket limit with its counts kept).
  void rebuild_changed_histograms(const HistogramBounds& next, const NativeSettings& next_native) {
    for (std::size_t i = 0; i < kHistogramCount; ++i) {
      if (bounds[i] == next[i] && native == next_native) continue;
      for (auto& [tname, t] : targets)
        for (auto& [pname, s] : t.prompts) {
          factory.remove_histograms(*s, static_cast<F>(i));
          factory.add_histograms(*s, static_cast<F>(i), next[i], next_native);
        }
    }
    bounds = next;
    native = next_native;
  }

  // New targets and prompts, zero-initialised; thresholds always refreshed.
  void add_new_series(const WantedSeries& wanted, const HistogramBounds& b) {
    for (const auto& [name, w] : wanted) {
      auto& t = targets[name];
      t.model = w.model;
      t.own_labels = w.own_labels;
      t.per_prompt = w.per_prompt;
      t.prompt_names = w.prompts;
      const Labels set_labels = merged({{"target", name}, {"model", w.model}}, w.own_labels);
      if (!w.per_prompt && t.prompts.empty())
        t.prompts.emplace("", factory.create(set_labels, b, native, classic));
      for (const auto& prompt : w.per_prompt ? w.prompts : std::vector<std::string>{}) {
        if (t.prompts.count(prompt)) continue;
        t.prompts.emplace(prompt,
                          factory.create(with(set_labels, "prompt", prompt), b, native, classic));
      }
      if (!t.stall_threshold)
        t.stall_threshold =
            &families.gauge(F::stall_threshold).Add(merged({{"target", name}}, w.own_labels));
      t.stall_threshold->Set(w.stall_threshold);
      set_alert_thresholds(t, name, w);
      if (!t.backoffs)
        t.backoffs = &families.counter(F::backoffs).Add(merged({{"target", name}}, w.own_labels));
      if (!t.unexpected_content_type)
        t.unexpected_content_type = &families.counter(F::unexpected_content_type)
                                         .Add(merged({{"target", name}}, w.own_labels));
      set_info(t, w.info);
    }
  }

  // The llm_stream_alert_* gauges the rules compare with, refreshed like
  // the stall threshold.
  void set_alert_thresholds(TargetSeries& t, const std::string& name, const WantedTarget& w) {
    for (std::size_t i = 0; i < t.alert.size(); ++i) {
      if (!t.alert[i])
        t.alert[i] = &families.gauge(kAlertRows[i]).Add(merged({{"target", name}}, w.own_labels));
      t.alert[i]->Set(w.alert[i]);
    }
  }

  // The info series changes its labels when the target's API or URL does.
  void set_info(TargetSeries& t, const Labels& labels) {
    if (t.info && t.info_labels == labels) return;
    if (t.info) families.gauge(F::target_info).Remove(t.info);
    t.info = &families.gauge(F::target_info).Add(labels);
    t.info->Set(1);
    t.info_labels = labels;
  }

  // --- diagnosis ---------------------------------------------------------------

  // Each shape's gauge: 1 when it holds for any prompt's window, else NaN
  // when some window cannot tell (never == 1 nor == 0), else 0.
  static void show_verdicts(Series& s) {
    for (std::size_t i = 0; i < kShapeCount; ++i) {
      bool holds = false, unknown = false;
      for (const auto& [prompt, v] : s.verdicts) {
        holds = holds || v[i] == report::Answer::holds;
        unknown = unknown || v[i] == report::Answer::cannot_tell;
      }
      s.diagnosis[i]->Set(holds ? 1 : unknown ? std::numeric_limits<double>::quiet_NaN() : 0);
    }
  }

  template <class Gone>
  static void forget_verdicts(Series& s, const Gone& gone) {
    std::lock_guard lock(s.verdicts_mutex);
    for (auto it = s.verdicts.begin(); it != s.verdicts.end();)
      it = gone(it->first) ? s.verdicts.erase(it) : std::next(it);
    show_verdicts(s);
  }

  std::shared_lock<std::shared_mutex> read_lock() const {
    std::lock_guard g(gate);
    return std::shared_lock(mutex);
  }
  std::unique_lock<std::shared_mutex> write_lock() const {
    std::lock_guard g(gate);
    return std::unique_lock(mutex);
  }

  // A stream under another Content-Type (or none), measured all the same
  // (caller holds the read lock).
  void count_unexpected_content_type(std::string_view target) {
    auto t = targets.find(target);
    if (t != targets.end() && t->second.unexpected_content_type)
      t->second.unexpected_content_type->Increment();
  }

  // The registry's families, then `process` (caller holds the read lock).
  std::vector<prometheus::MetricFamily> collect(
      std::vector<prometheus::MetricFamily> process) const {
    auto families = registry->Collect();
    families.insert(families.end(), std::make_move_iterator(process.begin()),
                    std::make_move_iterator(process.end()));
    return families;
  }

  // The exposition, one family collected, written, handed to `sink` and let
  // go at a time: a scrape of 1,000 targets (~290 k series) never holds every
  // family's collected copy, nor (with a sink that compresses) the whole
  // text. `piece` is reused, sized once from the largest family of the last
  // render (caller holds the read lock).
  bool write(const Sink& sink, Exposition format,
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

  // A per-series family read from the live series a slice of targets at a
  // time (about kSliceSeries series): never the whole family collected. As
  // Family::Collect(), a family without series writes nothing, not even its
  // header (caller holds the read lock).
  bool write_live(std::string& piece, Exposition format, F row, const NotesLookup& notes,
                  const SeriesBoundary& boundary) const {
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

  static prometheus::MetricType prometheus_type(Type t) {
    switch (t) {
      case Type::histogram: return prometheus::MetricType::Histogram;
      case Type::counter: return prometheus::MetricType::Counter;
      case Type::gauge: break;
    }
    return prometheus::MetricType::Gauge;
  }

  // --- OpenMetrics notes (caller holds the read lock) ------------------------

  static std::string_view label_value(const prometheus::ClientMetric& m, std::string_view name) {
    for (const auto& l : m.label)
      if (l.name == name) return l.value;
    return {};
  }

  // `_created` of every counter and histogram, exemplars of the three
  // histograms that carry them.
  void notes_of(F f, const prometheus::ClientMetric& m, SeriesNotes& notes) const {
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

  // The native histogram behind series `m` of histogram row `f`, if any.
  static const NativeHistogram* native_of(const Series& s, F f, const prometheus::ClientMetric& m) {
    if (f != F::phase) return s.native[index_of(f)].get();
    const std::string_view phase = label_value(m, "phase");
    for (std::size_t i = 0; i < probe::kAllPhases.size(); ++i)
      if (probe::to_string(probe::kAllPhases[i]) == phase) return s.native_phase[i].get();
    return nullptr;
  }

  // The serializer's view of Impl's notes; remembers the row of the family
  // being written, which it is asked about once per series.
  class NotesReader {
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
};

Metrics::Metrics(const BuildInfo& build, ProcessReader read_process)
    : impl_(std::make_unique<Impl>(build)), read_process_(std::move(read_process)) {}
Metrics::~Metrics() = default;

void Metrics::apply_config(const config::Config& config) {
  validate_buckets(config.buckets);
  const auto wanted = wanted_series(config);
  const auto bounds = planned_bounds(config);
  auto lock = impl_->write_lock();
  impl_->remove_gone_targets(wanted);
  impl_->remove_gone_prompts(wanted);
  impl_->rebuild_changed_histograms(bounds, config.metrics.native);
  impl_->classic = config.metrics.classic;
  impl_->add_new_series(wanted, bounds);
}

void Metrics::record(const probe::ProbeResult& r) {
  auto lock = impl_->read_lock();
  Series* s = impl_->find(r.target, r.prompt);
  if (!s) return;
  if (r.warmup) {
    s->warmup->Increment();
    return;
  }
  if (r.unexpected_content_type) impl_->count_unexpected_content_type(r.target);
  record_into(*s, r, impl_->factory);
}

void Metrics::set_diagnosis(const SeriesKey& key, const std::vector<report::Verdict>& verdicts) {
  auto lock = impl_->read_lock();
  Series* s = impl_->find(key.target, key.prompt);
  if (!s) return;
  std::lock_guard verdicts_lock(s->verdicts_mutex);
  auto& mine = s->verdicts[key.prompt];
  // Too few probes is "cannot tell" too (Answer::cannot_tell from diagnose()).
  for (const auto& v : verdicts) mine[shape_index(v.shape)] = v.answer;
  Impl::show_verdicts(*s);
}

void Metrics::set_reload_result(bool ok, double unix_seconds) {
  impl_->exporter.reload_ok.Set(ok ? 1 : 0);
  if (ok) impl_->exporter.reload_timestamp.Set(unix_seconds);
}

void Metrics::count_backoff(std::string_view target) {
  auto lock = impl_->read_lock();
  auto t = impl_->targets.find(target);
  if (t != impl_->targets.end() && t->second.backoffs) t->second.backoffs->Increment();
}

void Metrics::count_reload(bool ok) {
  (ok ? impl_->exporter.reloads_ok : impl_->exporter.reloads_failed).Increment();
}

void Metrics::count_row_write_error() { impl_->exporter.row_write_errors.Increment(); }

void Metrics::count_otlp_dropped(std::uint64_t data_points) {
  impl_->exporter.otlp_dropped.Increment(static_cast<double>(data_points));
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
