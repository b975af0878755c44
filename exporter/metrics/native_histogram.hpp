// The native (sparse, exponential) histogram kept beside a classic one
// (metrics.native): a histogram::Exponential behind its own lock, so probe
// threads recording different series sets never wait on each other, and the
// latest exemplar (the protobuf format's Histogram.exemplars).
#pragma once
#include <mutex>
#include <string_view>
#include <vector>

#include "histogram/exponential.hpp"
#include "metrics/serializer.hpp"

namespace lse::metrics {

class NativeHistogram {
 public:
  explicit NativeHistogram(const histogram::ExponentialSettings& settings) : h_(settings) {}

  void observe(double v) {
    std::lock_guard lock(mutex_);
    h_.observe(v);
  }

  // Every value of one probe under one lock (a stream's gaps).
  void observe_all(const std::vector<double>& values) {
    std::lock_guard lock(mutex_);
    for (double v : values) h_.observe(v);
  }

  // `value` of probe `probe_id`, observed at `unix_seconds`, becomes the
  // histogram's exemplar; ignored without an id.
  void offer_exemplar(std::string_view probe_id, double value, double unix_seconds) {
    if (probe_id.empty()) return;
    std::lock_guard lock(mutex_);
    exemplar_.probe_id.assign(probe_id);
    exemplar_.value = value;
    exemplar_.unix_seconds = unix_seconds;
  }

  NativeNotes snapshot() const {
    std::lock_guard lock(mutex_);
    NativeNotes n;
    n.schema = h_.schema();
    n.zero_threshold = h_.zero_threshold();
    n.zero_count = h_.zero_count();
    n.count = h_.count();
    n.sum = h_.sum();
    n.positive = histogram::spans_and_deltas(h_.positive());
    n.negative = histogram::spans_and_deltas(h_.negative());
    n.exemplar = exemplar_;
    return n;
  }

 private:
  mutable std::mutex mutex_;
  histogram::Exponential h_;
  Exemplar exemplar_;
};

}  // namespace lse::metrics
