// Percentile helpers and per-probe field access for reports.
#include "report/stats.hpp"

#include <algorithm>

#include "probe/timeline.hpp"

namespace lse::report {

std::optional<double> percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return probe::nearest_rank(values, q);
}

Spread spread_of(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.n = values.size();
  s.p50 = probe::nearest_rank(values, 0.50);
  s.p95 = probe::nearest_rank(values, 0.95);
  s.max = values.back();
  return s;
}

std::string_view to_string(Field f) {
  switch (f) {
    case Field::ttft: return "ttft";
    case Field::duration: return "duration";
    case Field::tail: return "tail";
    case Field::chunks: return "chunks";
    case Field::stalls: return "stalls";
    case Field::gap_p50: return "gap_p50";
    case Field::gap_p95: return "gap_p95";
    case Field::gap_max: return "gap_max";
    case Field::tokens_per_second: return "tokens/s";
    case Field::tokens_per_chunk: return "tokens/chunk";
  }
  return "";
}

bool is_time(Field f) {
  return f != Field::chunks && f != Field::stalls && f != Field::tokens_per_second &&
         f != Field::tokens_per_chunk;
}

std::optional<double> field_value(const probe::ProbeResult& r, Field f) {
  switch (f) {
    case Field::ttft: return r.ttft;
    case Field::duration: return r.duration;
    case Field::tail: return r.tail;
    case Field::chunks: return static_cast<double>(r.chunks);
    case Field::stalls: return static_cast<double>(r.stalls);
    case Field::gap_p50: return r.gap_p50;
    case Field::gap_p95: return r.gap_p95;
    case Field::gap_max: return r.gap_max;
    case Field::tokens_per_second: return r.output_tokens_per_second;
    case Field::tokens_per_chunk: return r.tokens_per_chunk;
  }
  return std::nullopt;
}

bool counts_as_measurement(const probe::ProbeResult& r) { return r.ok && !r.warmup; }

std::vector<double> field_values(const std::vector<probe::ProbeResult>& runs, Field f) {
  std::vector<double> out;
  out.reserve(runs.size());
  for (const auto& r : runs) {
    if (!counts_as_measurement(r)) continue;
    if (auto v = field_value(r, f)) out.push_back(*v);
  }
  return out;
}

}  // namespace lse::report
