// One export's worth of metrics as plain values (the OTLP data model without
// its wire format): what the aggregation collects and both encodings
// (encode.hpp) lay out, so protobuf and JSON say the same numbers.
#pragma once
#include <utility>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace lse::otlp {

enum class Temporality { cumulative, delta };

struct Attribute {
  std::string key;
  std::variant<std::string, std::int64_t> value;
  bool operator==(const Attribute&) const = default;
  // By key, then value: attribute sets are map keys (otlp/aggregation.hpp).
  bool operator<(const Attribute& o) const { return key != o.key ? key < o.key : value < o.value; }
};
using Attributes = std::vector<Attribute>;  // sorted by key

// An exponential histogram point in OTLP's numbering: positive bucket
// `offset + k` holds (base^(offset+k), base^(offset+k+1)], base 2^(2^-scale).
struct HistogramPoint {
  Attributes attributes;
  std::uint64_t start_ns = 0, time_ns = 0;
  std::uint64_t count = 0;
  double sum = 0, min = 0, max = 0;
  int scale = 0;
  std::uint64_t zero_count = 0;
  double zero_threshold = 0;
  std::int32_t offset = 0;
  std::vector<std::uint64_t> buckets;  // dense from offset
};

struct SumPoint {
  Attributes attributes;
  std::uint64_t start_ns = 0, time_ns = 0;
  double value = 0;
};

struct Metric {
  std::string name, description, unit;
  bool histogram = true;  // exponential histogram; else a monotonic sum
  std::vector<HistogramPoint> histogram_points;
  std::vector<SumPoint> sum_points;

  std::size_t data_points() const { return histogram_points.size() + sum_points.size(); }
};

struct Batch {
  Attributes resource;
  std::string scope_name, scope_version;
  Temporality temporality = Temporality::cumulative;
  std::vector<Metric> metrics;

  std::size_t data_points() const {
    std::size_t n = 0;
    for (const auto& m : metrics) n += m.data_points();
    return n;
  }
};

}  // namespace lse::otlp
