// The second-host experiment (DESIGN §5 `compare`): which parts of the clock
// moved between two sets of rows A and B. Per target+prompt and per clock part,
// the change in median and p95 from A to B with a bootstrap 95% confidence
// interval (fixed seed: the same rows always give the same numbers), and a
// verdict in plain words.
//
// A change "moved" when its CI excludes 0 AND it is at least the minimum
// effect: max(5 ms, 10 % of A's value) for times, max(1, 10 %) for stall
// counts. The verdict quotes the largest move of each group (TTFT; gaps =
// gap p50/p95/max and stalls), not the first, and says when parts of a group
// moved in opposite directions (p50 down, p95 up: chunks released in batches).
// The burst rule comes first: when TTFT grew while B's gaps collapsed to ~0
// and its stalls are gone, a buffer between the hosts holds the stream and
// releases it at once.
#pragma once
#include <utility>
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
  // The minimum effect before a change counts as moved: |change| >=
  // max(floor, share × A's value); floors: min_effect_seconds for times,
  // min_effect_count for stalls per run.
  double min_effect_seconds = 0.005;
  double min_effect_share = 0.10;
  double min_effect_count = 1.0;
  // Gaps "collapsed" in B: B's gap p50 and p95 (medians over runs) at or
  // below max(this, 10 % of A's gap p50), from an A whose gap p95 was at
  // least min_effect_seconds.
  double collapsed_gap_seconds = 0.001;
  // Explicit target matching (`--pair A_TARGET=B_TARGET`): when not empty,
  // only these pairs are compared, prompt by prompt; an A target may appear
  // in several pairs, and A and B may be the same rows.
  std::vector<std::pair<std::string, std::string>> pairs;
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
  double min_effect = 0;                         // max(floor, share × |a|)
  bool comparable = false;                       // both sides have values
  bool excludes_zero = false;                    // the reported CI excludes 0
  bool moved = false;                            // excludes_zero and |change| >= min_effect
};

// The HTTP versions one side's rows spoke (the rows' http_version; rows
// without an answer have none and are not counted): "2", "1.1", or "mixed"
// when several appear, with each version's rows.
struct HttpVersions {
  std::vector<std::pair<std::string, std::size_t>> counts;  // most rows first, then by name
  // The one version, "mixed", or "" when no row got an answer.
  std::string summary() const;
  // The most common version ("" when none): what a mixed side mostly spoke.
  std::string most_common() const;
  // "2", "mixed (2: 12, 1.1: 3)", "-" when none.
  std::string text() const;
};
HttpVersions http_versions(const std::vector<const probe::ProbeResult*>& rows);

struct SeriesComparison {
  std::string target, prompt;
  std::size_t rows_a = 0, rows_b = 0, ok_a = 0, ok_b = 0;
  HttpVersions http_version_a, http_version_b;
  std::vector<PartChange> changes;  // kAllClockParts × {median, p95}
  bool ttft_moved = false, gaps_moved = false, tail_moved = false, duration_moved = false;
  // The verdict's class: buffer, transport, before-stream, both, length,
  // tail, same, or none (no successful runs on a side).
  std::string shape;
  std::string verdict;  // plain words

  const PartChange* find(ClockPart p, Statistic s) const;
};

struct Comparison {
  std::vector<SeriesComparison> series;
  std::vector<std::string> only_in_a, only_in_b;  // "target/prompt"
  // With pairs: targets in no pair, as "A: name" / "B: name" (not compared).
  std::vector<std::string> not_paired;
  std::string verdict;     // one line over all series
  CompareOptions options;  // what the intervals were made with
};

// Rows are matched by target+prompt; when A and B each hold one target (the
// same endpoint under two names), by prompt alone; with options.pairs, each
// pair's A target against its B target, by prompt. Failed rows are counted,
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
