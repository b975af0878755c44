// Sparse exponential histogram (see exponential.hpp).
#include "histogram/exponential.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lse::histogram {
namespace {

// Indices stay well inside int32 (and the bounds inside double) whatever the value.
constexpr double kIndexLimit = 1 << 30;

double clamp_index(double i) { return std::clamp(i, -kIndexLimit, kIndexLimit); }

// Floor division by 2^bits for negative indices too.
std::int32_t floor_shift(std::int32_t i, int bits) {
  return static_cast<std::int32_t>(std::floor(std::ldexp(static_cast<double>(i), -bits)));
}

}  // namespace

double bucket_upper_bound(std::int32_t index, int schema) {
  if (schema <= 0) return std::ldexp(1.0, static_cast<int>(std::ldexp(index, -schema)));
  const std::int32_t whole = floor_shift(index, schema);
  const double part = std::ldexp(static_cast<double>(index - (whole << schema)), -schema);
  return std::ldexp(std::exp2(part), whole);
}

std::int32_t bucket_index(double v, int schema) {
  const double scaled = clamp_index(std::ceil(std::ldexp(std::log2(v), schema)));
  auto i = static_cast<std::int32_t>(scaled);
  // log2 may round across a boundary; the bounds decide.
  if (std::abs(scaled) < kIndexLimit) {
    while (v > bucket_upper_bound(i, schema)) ++i;
    while (v <= bucket_upper_bound(i - 1, schema)) --i;
  }
  return i;
}

SpansAndDeltas spans_and_deltas(const std::map<std::int32_t, std::uint64_t>& buckets) {
  SpansAndDeltas out;
  std::int32_t next = 0;  // the index after the end of the last span
  std::int64_t previous = 0;
  for (const auto& [index, count] : buckets) {
    if (out.spans.empty() || index != next) {
      out.spans.push_back({out.spans.empty() ? index : index - next, 0});
    }
    ++out.spans.back().length;
    next = index + 1;
    out.deltas.push_back(static_cast<std::int64_t>(count) - previous);
    previous = static_cast<std::int64_t>(count);
  }
  return out;
}

Exponential::Exponential(ExponentialSettings settings)
    : settings_(settings), schema_(std::clamp(settings.schema, kMinSchema, kMaxSchema)) {
  settings_.schema = schema_;
  settings_.zero_threshold = std::max(settings_.zero_threshold, 0.0);
  settings_.max_buckets = std::max<std::size_t>(settings_.max_buckets, 1);
}

void Exponential::observe(double v) {
  if (std::isnan(v)) return;
  ++count_;
  sum_ += v;
  if (std::abs(v) <= settings_.zero_threshold) {
    ++zero_count_;
    return;
  }
  Buckets& side = v > 0 ? positive_ : negative_;
  ++side[bucket_index(std::abs(v), schema_)];
  fit();
}

void Exponential::reset() {
  schema_ = settings_.schema;
  count_ = 0;
  sum_ = 0;
  zero_count_ = 0;
  positive_.clear();
  negative_.clear();
}

// Halves the resolution until the populated buckets fit: bucket i at schema
// s lies inside bucket ceil(i / 2) at s - 1.
void Exponential::fit() {
  auto halve = [](const Buckets& from) {
    Buckets to;
    for (const auto& [i, n] : from) to[floor_shift(i + 1, 1)] += n;
    return to;
  };
  while (positive_.size() + negative_.size() > settings_.max_buckets && schema_ > kMinSchema) {
    positive_ = halve(positive_);
    negative_ = halve(negative_);
    --schema_;
  }
}

}  // namespace lse::histogram
