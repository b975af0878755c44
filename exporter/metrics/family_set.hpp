// The prometheus-cpp families of kFamilies (metrics/families.hpp), registered
// once per registry, and the exporter's own series.
#pragma once
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstddef>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "metrics/families.hpp"
#include "metrics/metrics.hpp"
#include "util/wall_clock.hpp"

namespace lse::metrics {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

constexpr std::size_t index_of(F f) { return static_cast<std::size_t>(f); }

// The row of a collected family, by name; nullopt for families not in the
// table (process_*).
std::optional<F> family_named(std::string_view name);

// The registered families of kFamilies; typed access by row.
class FamilySet {
 public:
  explicit FamilySet(prometheus::Registry& r);

  // Each family and its row, in the order Registry::Collect() gives them
  // (its counters, then gauges, then histograms, each kind in registration
  // order).
  template <class Fn>
  void each_in_registry_order(Fn&& fn) const {
    for (const Type kind : {Type::counter, Type::gauge, Type::histogram})
      for (std::size_t i = 0; i < all_.size(); ++i)
        if (kFamilies[i].type == kind)
          std::visit([&](const auto* family) { fn(kFamilies[i].id, *family); }, all_[i]);
  }

  Family<Histogram>& histogram(F f) const { return get<Histogram>(f); }
  Family<Counter>& counter(F f) const { return get<Counter>(f); }
  Family<Gauge>& gauge(F f) const { return get<Gauge>(f); }

 private:
  template <class M>
  Family<M>& get(F f) const {
    return *std::get<Family<M>*>(all_[static_cast<std::size_t>(f)]);
  }
  std::vector<std::variant<Family<Histogram>*, Family<Counter>*, Family<Gauge>*>> all_;
};

// The exporter itself: one series each (reloads: one per result), created
// at startup.
struct ExporterSeries {
  Gauge& reload_ok;
  Gauge& reload_timestamp;
  Counter& reloads_ok;
  Counter& reloads_failed;
  Counter& row_write_errors;
  Counter& otlp_dropped;
  double created = wall_clock::unix_now();  // of the counters

  ExporterSeries(const FamilySet& families, const BuildInfo& build);
};

}  // namespace lse::metrics
