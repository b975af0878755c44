// Creating and removing the series of one series set (metrics/series.hpp) in
// the registered families: every histogram, counter and gauge a (target,
// prompt) has, zero-initialised, and the finish-reason counters created on
// first sight. Caller holds Metrics' lock (exclusive, except for
// finish_counter, which is safe under the shared one).
#pragma once
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "metrics/exemplars.hpp"
#include "metrics/family_set.hpp"
#include "metrics/series.hpp"
#include "metrics/wanted_series.hpp"

namespace lse::metrics {

// The pointer of a histogram family other than phase (an array of six).
Histogram*& histogram_slot(Series& s, F f);

// The bucket exemplars of the three histograms that carry them, else nullptr.
BucketExemplars* exemplars_of(Series& s, F f);

using NativeSettings = std::optional<histogram::ExponentialSettings>;

class SeriesFactory {
 public:
  explicit SeriesFactory(const FamilySet& families) : families_(families) {}

  // `native`: the settings of the native histogram beside each classic one
  // (nullopt: none).
  std::unique_ptr<Series> create(Labels labels, const HistogramBounds& b,
                                 const NativeSettings& native) const;
  void remove(Series& s) const;

  // New histograms start from zero: their `_created` is now, their
  // exemplars none. No bounds: the family has no series (phases: off).
  void add_histograms(Series& s, F f, const std::optional<std::vector<double>>& bounds,
                      const NativeSettings& native) const;
  void remove_histograms(Series& s, F f) const;

  // The finish-reason counter of `reason`, created on first sight.
  Counter& finish_counter(Series& s, std::string_view reason) const;

 private:
  const FamilySet& families_;
};

}  // namespace lse::metrics
