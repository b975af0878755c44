// The second-host experiment (DESIGN §5 `compare`): which parts of the clock
// moved between two sets of rows A and B. Per target+prompt and per clock part,
// the change in median and p95 from A to B with a bootstrap 95% confidence
// interval (fixed seed: the same rows always give the same numbers), and a
// verdict in plain words.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "probe/result.hpp"
#include "util/json.hpp"

namespace lse::report {

enum class ClockPart { ttft, gap_p50, gap_p95, gap_max, tail, duration, stalls };
inline constexpr ClockPart kAllClockParts[] = {
    ClockPart::ttft, ClockPart::gap_p50,  ClockPart::gap_p95, ClockPart::gap_max,
    ClockPart::tail, ClockPart::duration, ClockPart::stalls};
std::string_view to_string(ClockPart p);  // ttft, gap_p50, gap_p95, gap_max, tail, duration, stalls

struct CompareOptions {
  int resamples = 2000;
  std::uint64_t seed = 20240601;  // fixed: reproducible intervals
  double confidence = 0.95;
  // The clock's resolution between two runs: the bootstrap interval of a
  // time part is widened by this much on each side, so differences finer than
  // the clock can tell apart (a tight TTFT shifting by 0.1 ms between two
  // processes) do not count as moves. Stalls per run are counts: not widened.
  double resolution_seconds = 0.001;
};

enum class Statistic { median, p95 };
std::string_view to_string(Statistic s);

struct PartChange {
  ClockPart part = ClockPart::ttft;
  Statistic statistic = Statistic::median;
  std::size_t n_a = 0, n_b = 0;  // runs with a value for this part
  double a = 0, b = 0;           // the statistic in A and in B (seconds; stalls: count)
  double change = 0;             // b - a
  double bootstrap_low = 0, bootstrap_high = 0;  // the percentile-bootstrap interval
  double ci_low = 0, ci_high = 0;                // ... widened by the resolution: the reported CI
  bool comparable = false;                       // both sides have values
  bool moved = false;                            // the reported CI excludes 0
};

struct SeriesComparison {
  std::string target, prompt;
  std::size_t rows_a = 0, rows_b = 0, ok_a = 0, ok_b = 0;
  std::vector<PartChange> changes;  // kAllClockParts × {median, p95}
  bool ttft_moved = false, gaps_moved = false, tail_moved = false, duration_moved = false;
  std::string verdict;  // plain words

  const PartChange* find(ClockPart p, Statistic s) const;
};

struct Comparison {
  std::vector<SeriesComparison> series;
  std::vector<std::string> only_in_a, only_in_b;  // "target/prompt"
  std::string verdict;                            // one line over all series
  CompareOptions options;                         // what the intervals were made with
};

// Rows are matched by target+prompt; when A and B each hold one target (the
// same endpoint under two names), by prompt alone. Failed rows are counted,
// not measured.
Comparison compare(const std::vector<probe::ProbeResult>& a,
                   const std::vector<probe::ProbeResult>& b, const CompareOptions& options = {});

// The percentile-bootstrap interval of stat(B) - stat(A), resampling each side
// with replacement. Exposed for tests.
struct Interval {
  double low = 0, high = 0;
};
Interval bootstrap_interval(const std::vector<double>& a, const std::vector<double>& b, Statistic s,
                            const CompareOptions& options, std::uint64_t stream);

std::string render_text(const Comparison& c, const std::string& label_a,
                        const std::string& label_b);
json::Value to_json(const Comparison& c, const std::string& label_a, const std::string& label_b);

}  // namespace lse::report
