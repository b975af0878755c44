// The latest exemplar of every bucket of one histogram (as client_golang
// keeps them): which probe last put an observation in the bucket, so a
// dashboard's slow bucket leads to that probe's row. Thread-safe: probe
// threads offer, the scrape copies.
#pragma once
#include <algorithm>
#include <cmath>
#include <mutex>
#include <string_view>
#include <vector>

#include "metrics/serializer.hpp"

namespace lse::metrics {

class BucketExemplars {
 public:
  // `bounds` are the histogram's upper bounds without +Inf; forgets every exemplar.
  void reset(const std::vector<double>& bounds) {
    std::lock_guard lock(mutex_);
    bounds_ = bounds;
    slots_.assign(bounds.size() + 1, Exemplar{});
  }

  // The observation `value` of probe `probe_id` at `unix_seconds` becomes
  // the exemplar of the bucket it falls in (value <= le). Ignored without an id
  // (or a value that is no number).
  void offer(std::string_view probe_id, double value, double unix_seconds) {
    if (probe_id.empty() || std::isnan(value)) return;
    std::lock_guard lock(mutex_);
    if (slots_.empty()) return;
    const auto i = static_cast<std::size_t>(
        std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
    Exemplar& e = slots_[i];
    e.probe_id.assign(probe_id);
    e.value = value;
    e.unix_seconds = unix_seconds;
  }

  // One entry per bucket, +Inf last, into `out` (reusing its strings).
  void copy_to(std::vector<Exemplar>& out) const {
    std::lock_guard lock(mutex_);
    out.resize(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      out[i].probe_id.assign(slots_[i].probe_id);
      out[i].value = slots_[i].value;
      out[i].unix_seconds = slots_[i].unix_seconds;
    }
  }

 private:
  mutable std::mutex mutex_;
  std::vector<double> bounds_;
  std::vector<Exemplar> slots_;
};

}  // namespace lse::metrics
