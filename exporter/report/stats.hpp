// Percentiles over a window of probes (DESIGN §2, §5: "p95 reported, never
// the mean"). Every percentile in reports is nearest-rank, the same rule the
// probe uses for one stream's gap p50/p95 (probe::nearest_rank).
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "probe/result.hpp"

namespace lse::report {

// Nearest-rank percentile (q in (0,1]) of an unsorted list; nullopt when empty.
std::optional<double> percentile(std::vector<double> values, double q);

// p50 / p95 / max of one field across the runs of a window.
struct Spread {
  std::size_t n = 0;
  double p50 = 0, p95 = 0, max = 0;
};
// Empty input gives n == 0 (and zeros).
Spread spread_of(std::vector<double> values);

// The per-probe fields a summary reports, in table order. Times in seconds.
enum class Field {
  ttft,
  duration,
  tail,
  chunks,
  stalls,
  gap_p50,
  gap_p95,
  gap_max,
  tokens_per_second,
  tokens_per_chunk
};
inline constexpr Field kAllFields[] = {Field::ttft,
                                       Field::duration,
                                       Field::tail,
                                       Field::chunks,
                                       Field::stalls,
                                       Field::gap_p50,
                                       Field::gap_p95,
                                       Field::gap_max,
                                       Field::tokens_per_second,
                                       Field::tokens_per_chunk};

std::string_view to_string(Field f);
// True for fields measured in seconds (shown as ms / s); false for counts and rates.
bool is_time(Field f);

// The value of `f` for one probe, or nullopt when the probe has none (a
// stream with one chunk has no gaps; tokens/s and tokens/chunk need usage).
std::optional<double> field_value(const probe::ProbeResult& r, Field f);

// Values of `f` over the successful, non-warmup probes of `runs`.
std::vector<double> field_values(const std::vector<probe::ProbeResult>& runs, Field f);

// Successful, non-warmup probes: the ones a window's statistics are made of.
bool counts_as_measurement(const probe::ProbeResult& r);

}  // namespace lse::report
