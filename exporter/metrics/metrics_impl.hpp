// Metrics' private state (metrics/metrics.hpp): the registry, every
// target's series and the lock that guards them. Its work is split by
// concern: metrics.cpp records probes and diagnoses, series_config.cpp turns
// a config into series (apply_config's steps), exposition_writer.cpp
// renders the exposition. Only those three files include this header.
#pragma once
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <utility>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/exemplars.hpp"
#include "metrics/families.hpp"
#include "metrics/family_set.hpp"
#include "metrics/live_series.hpp"
#include "metrics/metrics.hpp"
#include "metrics/serializer.hpp"
#include "metrics/series.hpp"
#include "metrics/series_factory.hpp"
#include "metrics/wanted_series.hpp"

namespace lse::metrics {

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

  // Caller holds the shared lock; nullptr when the combination is not
  // configured (a probe that finished after a reload removed it, say). With
  // per_prompt: false every configured prompt of the target (and the empty
  // prompt label of its series) finds the target's one set.
  Series* find(std::string_view target, std::string_view prompt) const;

  // --- apply_config, step by step (caller holds the write lock; series_config.cpp)

  void remove_target(TargetSeries& t);

  // Targets that are gone, or whose model or labels changed, or all of them
  // when per_prompt did (labels are part of a series' identity, so their
  // series are different series).
  void remove_gone_targets(const WantedSeries& wanted);

  // Prompts that are gone from targets that stay: their series, or with
  // per_prompt: false their verdicts in the shared set.
  void remove_gone_prompts(const WantedSeries& wanted);

  // Family::Add would hand back an existing histogram with its old bounds, so
  // a histogram whose bounds changed is removed and added again. Other
  // series (counters, histograms whose bounds stay) keep their values.
  // New native settings rebuild every histogram (a native histogram cannot
  // change its zero threshold or bucket limit with its counts kept).
  void rebuild_changed_histograms(const HistogramBounds& next, const NativeSettings& next_native);

  // New targets and prompts, zero-initialised; thresholds always refreshed.
  void add_new_series(const WantedSeries& wanted, const HistogramBounds& b);

  // The llm_stream_alert_* gauges the rules compare with, refreshed like
  // the stall threshold.
  void set_alert_thresholds(TargetSeries& t, const std::string& name, const WantedTarget& w);

  // The info series changes its labels when the target's API or URL does
  // (`configured`: target, api, model, host, the target's labels); its
  // http_version label stays what the latest answered probe spoke.
  void set_info(TargetSeries& t, const Labels& configured);
  // The info series under `labels`: re-added when they differ (the caller
  // holds t.info_mutex).
  void replace_info(TargetSeries& t, Labels labels);
  // A probe of `target` was answered over `version` ("1.1", "2"): the info
  // series' http_version label follows it (caller holds the read lock).
  void note_http_version(std::string_view target, std::string_view version);

  // --- diagnosis ---------------------------------------------------------------

  // Each shape's gauge: 1 when it holds for any prompt's window, else NaN
  // when some window cannot tell (never == 1 nor == 0), else 0.
  static void show_verdicts(Series& s);

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
  void count_unexpected_content_type(std::string_view target);

  // --- the exposition (exposition_writer.cpp) ---------------------------------

  // The registry's families, then `process` (caller holds the read lock).
  std::vector<prometheus::MetricFamily> collect(
      std::vector<prometheus::MetricFamily> process) const;

  // The exposition, one family collected, written, handed to `sink` and let
  // go at a time: a scrape of 1,000 targets (~290 k series) never holds every
  // family's collected copy, nor (with a sink that compresses) the whole
  // text. `piece` is reused, sized once from the largest family of the last
  // render (caller holds the read lock).
  bool write(const Sink& sink, Exposition format,
             const std::vector<prometheus::MetricFamily>& process) const;

  // A per-series family read from the live series a slice of targets at a
  // time (about kSliceSeries series): never the whole family collected. As
  // Family::Collect(), a family without series writes nothing, not even its
  // header (caller holds the read lock).
  bool write_live(std::string& piece, Exposition format, F row, const NotesLookup& notes,
                  const SeriesBoundary& boundary) const;

  static prometheus::MetricType prometheus_type(Type t);

  // --- OpenMetrics notes (caller holds the read lock) ------------------------

  static std::string_view label_value(const prometheus::ClientMetric& m, std::string_view name);

  // `_created` of every counter and histogram, exemplars of the three
  // histograms that carry them.
  void notes_of(F f, const prometheus::ClientMetric& m, SeriesNotes& notes) const;

  // The native histogram behind series `m` of histogram row `f`, if any.
  static const NativeHistogram* native_of(const Series& s, F f, const prometheus::ClientMetric& m);

  // The serializer's view of Impl's notes (exposition_writer.cpp).
  class NotesReader;
};

}  // namespace lse::metrics
