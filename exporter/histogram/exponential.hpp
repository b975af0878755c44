// A sparse exponential histogram: the bucket layout of Prometheus native
// histograms and of OTLP exponential histograms (the same boundaries; a
// Prometheus schema is an OTLP scale). Pure maths, no clock, no lock: the
// owner guards it. Observations at or below the zero threshold count in the
// zero bucket; the others in bucket i of base 2^(2^-schema), which holds
// (base^(i-1), base^i] (Prometheus numbering; OTLP's index is i - 1). When
// more than max_buckets buckets would be populated, the resolution halves
// (schema - 1, neighbouring buckets merged) until they fit, as Prometheus
// client libraries do.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace lse::histogram {

// The lowest and highest schema Prometheus accepts.
inline constexpr int kMinSchema = -4;
inline constexpr int kMaxSchema = 8;

struct ExponentialSettings {
  int schema = 3;                 // base 2^(1/8): 8 buckets per doubling, ~9% wide
  double zero_threshold = 1e-5;   // observations <= this land in the zero bucket
  std::size_t max_buckets = 160;  // populated buckets before the resolution halves

  bool operator==(const ExponentialSettings&) const = default;
};

// The index of the bucket (Prometheus numbering) that holds v > 0 at `schema`.
std::int32_t bucket_index(double v, int schema);
// The upper bound of bucket `index` at `schema`: base^index.
double bucket_upper_bound(std::int32_t index, int schema);

// Runs of populated buckets as Prometheus' protobuf format writes them: a
// span starts `offset` indices after the end of the previous span (the first
// span's offset is its first index), and `deltas` holds each bucket's count
// as the difference to the bucket before it (the first to 0).
struct Span {
  std::int32_t offset = 0;
  std::uint32_t length = 0;
};
struct SpansAndDeltas {
  std::vector<Span> spans;
  std::vector<std::int64_t> deltas;
};
SpansAndDeltas spans_and_deltas(const std::map<std::int32_t, std::uint64_t>& buckets);

class Exponential {
 public:
  using Buckets = std::map<std::int32_t, std::uint64_t>;

  explicit Exponential(ExponentialSettings settings = {});

  // One observation; NaN is ignored. Negative values go to the negative
  // buckets (mirrored), which the exporter's durations never use.
  void observe(double v);

  int schema() const { return schema_; }  // may be below the configured one
  double zero_threshold() const { return settings_.zero_threshold; }
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  std::uint64_t zero_count() const { return zero_count_; }
  const Buckets& positive() const { return positive_; }
  const Buckets& negative() const { return negative_; }

  // Back to empty at the configured schema (delta temporality).
  void reset();

 private:
  void fit();

  ExponentialSettings settings_;
  int schema_;
  std::uint64_t count_ = 0;
  double sum_ = 0;
  std::uint64_t zero_count_ = 0;
  Buckets positive_;
  Buckets negative_;
};

}  // namespace lse::histogram
